package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func retentionEnv(t *testing.T, mut func(*LogConfig)) (*env, *Log) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 2 * int64(len(makeBatch(t, spec(2, 0))))
	cfg.FileDeleteDelayMs = 3_600_000 // files stay until the manager closes
	mut(&cfg)
	e := newEnv(t, cfg)
	l := e.log()
	// 5 segments of 2 batches: segment i holds timestamps 1000*i ..
	for i := 0; i < 10; i++ {
		ts := int64(1000 * (i / 2))
		if _, err := l.AppendAsLeader(makeBatch(t, spec(2, ts)), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() != 5 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	return e, l
}

func TestRetentionByTime(t *testing.T) {
	e, l := retentionEnv(t, func(c *LogConfig) { c.RetentionMs = 1500 })
	e.clock.Set(time.UnixMilli(3600))
	// Nothing is deleted above the HW.
	if n, _ := e.m.RunRetention(); n != 0 {
		t.Fatalf("deleted %d segments above the HW", n)
	}
	l.SetHighWatermark(20)
	// Segments whose largest timestamp is more than 1500 ms old: 1, 1001 and 2001 are,
	// 3001 not.
	n, err := e.m.RunRetention()
	if err != nil || n != 3 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	if l.LogStartOffset() != 12 || l.NumSegments() != 2 {
		t.Fatalf("LSO %d, %d segments", l.LogStartOffset(), l.NumSegments())
	}
	if _, err := l.Read(0, 100, 20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	// The files are renamed .deleted until file.delete.delay.ms passes.
	if _, err := os.Stat(filepath.Join(partDir(e), "00000000000000000000.log.deleted")); err != nil {
		t.Fatal(err)
	}
	// Everything expired: the active segment goes too, after a roll.
	e.clock.Set(time.UnixMilli(100_000))
	if n, _ := e.m.RunRetention(); n != 2 {
		t.Fatalf("deleted %d", n)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != 20 || l.LogEndOffset() != 20 || l.Size() != 0 {
		t.Fatalf("segments %d LSO %d", l.NumSegments(), l.LogStartOffset())
	}
	// And an empty active segment is never deleted.
	if n, _ := e.m.RunRetention(); n != 0 {
		t.Fatalf("deleted %d", n)
	}
}

func TestRetentionByBytes(t *testing.T) {
	var segSize int64
	e, l := retentionEnv(t, func(c *LogConfig) {
		c.RetentionMs = -1
		c.RetentionBytes = 3*c.SegmentBytes - 1
		segSize = c.SegmentBytes
	})
	l.SetHighWatermark(20)
	// 5 full segments, limit just under 3: as Kafka, a segment goes only while what
	// remains stays >= the limit, so 2 go and 3 segments (one byte over) remain.
	n, _ := e.m.RunRetention()
	if n != 2 || l.Size() != 3*segSize || l.LogStartOffset() != 8 {
		t.Fatalf("deleted %d, size %d, LSO %d", n, l.Size(), l.LogStartOffset())
	}
}

func TestDeleteRecordsMovesLogStartOffset(t *testing.T) {
	e, l := retentionEnv(t, func(c *LogConfig) { c.RetentionMs = -1 })
	if _, err := l.MaybeIncrementLogStartOffset(9); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("above HW: %v", err)
	}
	l.SetHighWatermark(20)
	lso, err := l.MaybeIncrementLogStartOffset(9)
	if err != nil || lso != 9 {
		t.Fatalf("%d %v", lso, err)
	}
	// Segments 0-3 and 4-7 are wholly below 9; 8-11 holds it.
	if l.NumSegments() != 3 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	r, err := l.Read(9, 1000, 20, false)
	if err != nil || r.FirstOffset != 8 {
		t.Fatalf("read at LSO: %d %v", r.FirstOffset, err)
	}
	if _, err := l.Read(7, 1000, 20, false); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{0, 9}) {
		t.Fatalf("epochs %v", got)
	}
	// Never backwards.
	if lso, _ := l.MaybeIncrementLogStartOffset(3); lso != 9 {
		t.Fatal("log start offset moved back")
	}
	e.reopen()
	if got := e.m.Log(tp0).LogStartOffset(); got != 9 {
		t.Fatalf("LSO %d after reopen", got)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, logStartOffsetCheckpointFile))
	if string(data) != "0\n1\nt 0 9\n" {
		t.Fatalf("log-start-offset-checkpoint:\n%s", data)
	}
}

func TestSliceOutlivesDeletion(t *testing.T) {
	e, l := retentionEnv(t, func(c *LogConfig) { c.RetentionMs = -1; c.FileDeleteDelayMs = 0 })
	r, err := l.Read(0, 1<<20, 20, true)
	if err != nil {
		t.Fatal(err)
	}
	before := readSlice(t, r)
	l.SetHighWatermark(20)
	if _, err := l.MaybeIncrementLogStartOffset(8); err != nil {
		t.Fatal(err)
	}
	// With a zero delay the files go at once, asynchronously.
	waitFor(t, 5*time.Second, func() bool {
		ents, _ := os.ReadDir(partDir(e))
		for _, en := range ents {
			if strings.HasPrefix(en.Name(), "00000000000000000000") {
				return false
			}
		}
		return true
	})
	buf := make([]byte, r.Slice.Len)
	if _, err := r.Slice.File.ReadAt(buf, r.Slice.Pos); err == nil {
		t.Fatal("file still open after the delay")
	}
	_ = before
	// With a delay the slice stays readable after deletion.
	l2, _ := e.m.GetOrCreateLog(TopicPartition{"v", 0}, [16]byte{5}, func() LogConfig { c := e.cfg; c.FileDeleteDelayMs = 3_600_000; return c }())
	appendN(t, l2, 6, 2, 0, 0)
	r2, _ := l2.Read(0, 1<<20, 12, true)
	want := readSlice(t, r2)
	if err := l2.TruncateFullyAndStartAt(50); err != nil {
		t.Fatal(err)
	}
	if got := readSlice(t, r2); string(got) != string(want) {
		t.Fatal("slice changed after its segment was deleted")
	}
}
