package protocol

import (
	"encoding/binary"
	"testing"
)

// FuzzReadRequest feeds arbitrary frames through the request decoder, seeded with a
// default request of every key × version kmsg knows, and UnregisterController. Decoding must never panic.
func FuzzReadRequest(f *testing.F) {
	for key := int16(0); key < 100; key++ {
		req := RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			frame := binary.BigEndian.AppendUint16(nil, uint16(key))
			frame = binary.BigEndian.AppendUint16(frame, uint16(v))
			frame = binary.BigEndian.AppendUint32(frame, 7)
			frame = binary.BigEndian.AppendUint16(frame, 3)
			frame = append(frame, "cli"...)
			if req.IsFlexible() {
				frame = append(frame, 0)
			}
			f.Add(req.AppendTo(frame))
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := PeekHeader(frame)
		if err != nil {
			return
		}
		req := RequestForKey(h.APIKey)
		if req == nil || h.APIVersion < 0 || h.APIVersion > req.MaxVersion() {
			return
		}
		_, _ = ParseRequest(frame, req)
	})
}
