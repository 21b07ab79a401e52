package storage

import (
	"testing"
	"time"
)

// The produce and fetch hot paths of one partition: AppendAsLeader of a 1 KiB batch
// (an index entry every index.interval.bytes, as by default) and Read of the batch just
// written (a caught-up consumer), and of an older offset (binary search of the index).

func benchLog(b *testing.B) (*env, *Log) {
	cfg := DefaultLogConfig()
	cfg.FileDeleteDelayMs = 0
	e := newEnv(b, cfg)
	return e, e.log()
}

func BenchmarkAppendAsLeader(b *testing.B) {
	_, l := benchLog(b)
	s := spec(10, 1_700_000_000_000)
	s.valueSize = 100
	batch := makeBatch(b, s)
	buf := make([]byte, len(batch))
	now := time.UnixMilli(1_700_000_000_000)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		if _, err := l.AppendAsLeader(buf, 0, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTail(b *testing.B) {
	_, l := benchLog(b)
	s := spec(10, 1_700_000_000_000)
	s.valueSize = 100
	batch := makeBatch(b, s)
	now := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 10000; i++ {
		if _, err := l.AppendAsLeader(append([]byte(nil), batch...), 0, now); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Read(leo-10, 1<<20, leo, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadOldSegment(b *testing.B) {
	e, l := benchLog(b)
	cfg := e.cfg
	cfg.SegmentBytes = 1 << 20
	l.SetConfig(cfg)
	s := spec(10, 1_700_000_000_000)
	s.valueSize = 100
	batch := makeBatch(b, s)
	now := time.UnixMilli(1_700_000_000_000)
	for l.NumSegments() < 3 {
		if _, err := l.AppendAsLeader(append([]byte(nil), batch...), 0, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i*97) % 5000
		r, err := l.Read(off, 64<<10, l.LogEndOffset(), true)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := r.Slice.File.ReadAt(buf, r.Slice.Pos); err != nil {
			b.Fatal(err)
		}
	}
}
