package protocol

import (
	"testing"
)

func TestFramePoolClasses(t *testing.T) {
	for _, tc := range []struct {
		n, wantCap int
	}{
		{0, 0},
		{100, 100},
		{1 << 11, 1 << 11}, // small: allocated exactly
		{1<<11 + 1, 1 << 12},
		{16000, 1 << 14},
		{1 << 16, 1 << 16},
		{1000012, 1 << 20},
		{1 << 26, 1 << 26},
		{1<<26 + 1, 1<<26 + 1}, // too large to pool
	} {
		var p FramePool
		b := p.Get(tc.n)
		if len(b) != tc.n || cap(b) != tc.wantCap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", tc.n, len(b), cap(b), tc.n, tc.wantCap)
		}
	}
}

func TestFramePoolPutDropsForeignBuffers(t *testing.T) {
	var p FramePool
	p.Put(make([]byte, 100, 1<<16+1)) // not a class size: dropped
	if b := p.Get(1 << 16); cap(b) != 1<<16 {
		t.Fatalf("Get returned a foreign buffer of cap %d", cap(b))
	}
}
