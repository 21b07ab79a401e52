package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gokafkad/gokafkad/storage"
)

// sendFile writes exactly s.Len bytes of s.File from s.Pos to nc with sendfile(2),
// without touching the file's offset (several connections send from one file at once).
// If the file turns out shorter (the range was truncated meanwhile), the rest is
// zero-filled so the frame keeps the length already announced; the client sees a
// partial trailing batch and discards it, as with Kafka.
func sendFile(nc net.Conn, s storage.FileSlice) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return copySlice(nc, s)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	// The file's descriptor is held (not merely its number read with Fd) for each
	// sendfile call: storage may close an inactive segment's descriptor once it has
	// not been handed out for a while, and a send still running then fails with
	// "file already closed" instead of reading whatever file reuses the number.
	src, err := s.File.SyscallConn()
	if err != nil {
		return err
	}
	off, remain := s.Pos, s.Len
	var serr error
	for remain > 0 && serr == nil {
		werr := raw.Write(func(fd uintptr) bool {
			var n int
			var err error
			// Control only adds a reference (Read would also serialize the
			// connections sending from one file).
			if rerr := src.Control(func(sfd uintptr) {
				n, err = unix.Sendfile(int(fd), int(sfd), &off, int(min(remain, 1<<30)))
			}); rerr != nil {
				serr = rerr
				return true
			}
			if n > 0 {
				remain -= int64(n)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until writable
			case err != nil:
				serr = err
			case n == 0:
				serr = io.ErrUnexpectedEOF
			}
			return true
		})
		if werr != nil {
			return werr
		}
	}
	if errors.Is(serr, io.ErrUnexpectedEOF) {
		_, err := nc.Write(make([]byte, remain))
		return err
	}
	if serr != nil {
		return fmt.Errorf("sendfile: %w", serr)
	}
	return nil
}

// copyBufs are the buffers copySlice reads file ranges through: a TLS connection
// cannot take sendfile, and io.Copy would allocate 32 KiB for every slice.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copySlice is the fallback for connections that are not raw sockets (TLS: the bytes
// must go through crypto/tls to be encrypted).
func copySlice(w io.Writer, s storage.FileSlice) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	n, err := io.CopyBuffer(onlyWriter{w}, io.NewSectionReader(s.File, s.Pos, s.Len), *bp)
	if err == nil && n < s.Len {
		_, err = w.Write(make([]byte, s.Len-n))
	}
	return err
}

// setCork sets or clears TCP_CORK on nc, and reports whether it could (TLS
// connections are not raw sockets). While corked, the kernel sends only full
// segments, so a response written in several calls leaves as one stream.
func setCork(nc net.Conn, on bool) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v)
	}); err != nil {
		return false
	}
	return serr == nil
}

// onlyWriter hides a ReaderFrom, so io.CopyBuffer uses the buffer it is given.
type onlyWriter struct{ io.Writer }
