package server

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// FuzzServeStreamsRequest is FuzzServeRequest for the streams-group APIs, which only
// a broker with Hooks.StreamsGroups serves: arbitrary frames, seeded with every
// streams key × version, must never stop the broker answering ApiVersions.
func FuzzServeStreamsRequest(f *testing.F) {
	for _, a := range streamsAPIs {
		for v := a.min; v <= a.max; v++ {
			f.Add(requestFrame(a.key, v, 7))
		}
	}
	cfg := DefaultConfig(f.TempDir())
	cfg.Hooks = &Hooks{StreamsGroups: true}
	b, err := Start(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatalf("the broker no longer accepts connections: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err == nil {
			c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			io.Copy(io.Discard, c)
		}
		ctl, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatalf("the broker no longer accepts connections: %v", err)
		}
		defer ctl.Close()
		ctl.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := ctl.Write(sized(apiVersionsFrame(1))); err != nil {
			t.Fatalf("ApiVersions after the fuzzed request: %v", err)
		}
		var n [4]byte
		if _, err := io.ReadFull(ctl, n[:]); err != nil {
			t.Fatalf("no ApiVersions answer after the fuzzed request: %v", err)
		}
	})
}
