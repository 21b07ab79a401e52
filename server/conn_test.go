package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/gokafkad/gokafkad/storage"
)

// bufConn is a net.Conn that only collects what is written (not a raw socket, so
// sendFile takes its copying fallback and setCork reports false).
type bufConn struct {
	net.Conn
	out bytes.Buffer
}

func (c *bufConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// TestWriteChunks checks that a response with file slices goes out byte for byte
// whichever way it is sent: whole through the write buffer, or with sendfile for a
// large slice, and zero-filled where the file turned out shorter than the slice.
func TestWriteChunks(t *testing.T) {
	data := make([]byte, 200<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "segment.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name   string
		slices []storage.FileSlice
	}{
		{"small, copied whole", []storage.FileSlice{{File: f, Pos: 100, Len: 5000}, {File: f, Pos: 9000, Len: 20000}}},
		{"large, sendfile", []storage.FileSlice{{File: f, Pos: 10, Len: 150 << 10}}},
		{"large and small mixed", []storage.FileSlice{{File: f, Pos: 0, Len: 1000}, {File: f, Pos: 1000, Len: 100 << 10}, {}}},
		{"past the file's end, zero-filled", []storage.FileSlice{{File: f, Pos: int64(len(data)) - 100, Len: 300}}},
		{"large past the file's end", []storage.FileSlice{{File: f, Pos: 100 << 10, Len: 150 << 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := make([][]byte, len(tc.slices)+1)
			for i := range chunks {
				chunks[i] = bytes.Repeat([]byte{byte(0xA0 + i)}, 10+i)
			}
			var want bytes.Buffer
			want.WriteString("earlier response")
			var body bytes.Buffer
			body.Write([]byte{1, 2, 3})
			for i, ch := range chunks {
				body.Write(ch)
				if i < len(tc.slices) {
					s := tc.slices[i]
					part := make([]byte, s.Len)
					if s.Pos < int64(len(data)) {
						copy(part, data[s.Pos:])
					}
					body.Write(part)
				}
			}
			want.Write(binary.BigEndian.AppendUint32(nil, uint32(body.Len())))
			want.Write(body.Bytes())

			write := func(nc net.Conn) {
				t.Helper()
				c := &conn{nc: nc}
				bw := bufio.NewWriterSize(nc, 64<<10)
				bw.WriteString("earlier response")
				hdr := []byte{0, 0, 0, 0, 1, 2, 3} // size prefix, then a response header
				if err := c.writeChunks(bw, hdr, &response{chunks: chunks, slices: tc.slices}); err != nil {
					t.Fatal(err)
				}
				if err := bw.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			// Through a plain writer (sendFile's copying fallback).
			bc := &bufConn{}
			write(bc)
			if !bytes.Equal(bc.out.Bytes(), want.Bytes()) {
				t.Fatalf("copying: wrote %d bytes, want %d (or same length, other bytes)", bc.out.Len(), want.Len())
			}
			// Through a TCP socket (sendfile(2) and TCP_CORK).
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []byte, 1)
			go func() {
				sc, err := ln.Accept()
				if err != nil {
					got <- nil
					return
				}
				defer sc.Close()
				b, _ := io.ReadAll(sc)
				got <- b
			}()
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			write(cc)
			cc.Close()
			if b := <-got; !bytes.Equal(b, want.Bytes()) {
				t.Fatalf("socket: wrote %d bytes, want %d (or same length, other bytes)", len(b), want.Len())
			}
		})
	}
}
