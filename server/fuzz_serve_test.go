package server

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// FuzzServeRequest sends arbitrary frames to a running single-node broker over a real
// socket, seeded with a default request of every key × version the broker advertises,
// and after each checks that the broker still answers ApiVersions on another
// connection within a few seconds: no request, however malformed, may crash the broker
// or stop it from serving others. (A decoder is fuzzed on its own in protocol; this is
// the whole path a request takes: frame, header, decode, handler, response.)
func FuzzServeRequest(f *testing.F) {
	for _, a := range brokerAPIs.list {
		for v := a.min; v <= a.max; v++ {
			f.Add(requestFrame(a.key, v, 7))
		}
	}
	b, err := Start(DefaultConfig(f.TempDir()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	ctl, err := net.Dial("tcp", b.Addr())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ctl.Close() })
	ctlR := bufio.NewReader(ctl)
	corr := int32(1 << 20)

	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatalf("the broker no longer accepts connections: %v", err)
		}
		size := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(append(size, frame...)); err == nil {
			// Whatever comes back, or nothing: read briefly, then hang up.
			c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			io.Copy(io.Discard, c)
		}
		c.Close()

		corr++
		ctl.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := ctl.Write(sized(apiVersionsFrame(corr))); err != nil {
			t.Fatalf("ApiVersions after the fuzzed request: %v", err)
		}
		var n [4]byte
		if _, err := io.ReadFull(ctlR, n[:]); err != nil {
			t.Fatalf("no ApiVersions answer after the fuzzed request: %v", err)
		}
		resp := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(ctlR, resp); err != nil {
			t.Fatalf("short ApiVersions answer after the fuzzed request: %v", err)
		}
		if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
			t.Fatalf("ApiVersions answered correlation id %d, want %d", got, corr)
		}
		av := kmsg.NewPtrApiVersionsResponse()
		av.Version = 3
		if err := av.ReadFrom(resp[4:]); err != nil || av.ErrorCode != 0 {
			t.Fatalf("ApiVersions after the fuzzed request: error code %d, %v", av.ErrorCode, err)
		}
	})
}

// requestFrame is a request of key at version v with kmsg's defaults, header included
// (client id "fuzz"), without the size prefix.
func requestFrame(key, v int16, corr int32) []byte {
	req := protocol.RequestForKey(key)
	req.SetVersion(v)
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(v))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "fuzz"...)
	if req.IsFlexible() {
		frame = append(frame, 0) // no tagged fields in the header
	}
	return req.AppendTo(frame)
}

// apiVersionsFrame is a valid ApiVersions v3 request.
func apiVersionsFrame(corr int32) []byte {
	frame := requestFrame(int16(kmsg.ApiVersions), 3, corr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gokafkad-fuzz", "1"
	empty := kmsg.NewPtrApiVersionsRequest()
	empty.Version = 3
	head := frame[:len(frame)-len(empty.AppendTo(nil))]
	return req.AppendTo(head)
}

func sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}
