package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestEndOffsetFor(t *testing.T) {
	// Kafka's LeaderEpochFileCacheTest cases, over epochs 2@6, 4@11, 6@17 with LEO 20.
	c := epochCache{entries: []EpochEntry{{2, 6}, {4, 11}, {6, 17}}}
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},  // undefined epoch
		{0, 0, 6},     // below the first epoch: the requested epoch, first start
		{1, 1, 6},     //
		{2, 2, 11},    // an epoch: the next one's start
		{3, 2, 11},    // a missing epoch: the largest smaller one
		{4, 4, 17},    //
		{5, 4, 17},    //
		{6, 6, 20},    // the latest: the LEO
		{7, -1, -1},   // past the latest: unknown
		{100, -1, -1}, //
	} {
		e, o := c.endOffsetFor(tc.epoch, 20)
		if e != tc.wantEpoch || o != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, o, tc.wantEpoch, tc.wantEnd)
		}
	}
	var empty epochCache
	if e, o := empty.endOffsetFor(0, 5); e != -1 || o != -1 {
		t.Errorf("empty cache: (%d, %d)", e, o)
	}
}

func TestEpochAssign(t *testing.T) {
	var c epochCache
	steps := []struct {
		epoch   int32
		offset  int64
		changed bool
		want    []EpochEntry
	}{
		{1, 0, true, []EpochEntry{{1, 0}}},
		{1, 5, false, []EpochEntry{{1, 0}}}, // same epoch, later offset: no change
		{2, 5, true, []EpochEntry{{1, 0}, {2, 5}}},
		{3, 5, true, []EpochEntry{{1, 0}, {3, 5}}},   // same start offset replaces
		{2, 8, true, []EpochEntry{{1, 0}, {2, 8}}},   // lower epoch removes larger ones
		{4, 3, true, []EpochEntry{{1, 0}, {4, 3}}},   // lower offset removes later ones
		{-1, 9, false, []EpochEntry{{1, 0}, {4, 3}}}, // ignored
	}
	for i, s := range steps {
		if got := c.assign(s.epoch, s.offset); got != s.changed {
			t.Fatalf("step %d: changed %v", i, got)
		}
		if len(c.entries) != len(s.want) {
			t.Fatalf("step %d: %v want %v", i, c.entries, s.want)
		}
		for j := range s.want {
			if c.entries[j] != s.want[j] {
				t.Fatalf("step %d: %v want %v", i, c.entries, s.want)
			}
		}
	}
	c = epochCache{entries: []EpochEntry{{1, 0}, {2, 10}, {3, 20}}}
	if c.epochForOffset(0) != 1 || c.epochForOffset(15) != 2 || c.epochForOffset(20) != 3 || c.epochForOffset(99) != 3 {
		t.Fatal("epochForOffset")
	}
	c.truncateFromStart(12)
	if len(c.entries) != 2 || c.entries[0] != (EpochEntry{2, 12}) {
		t.Fatalf("truncateFromStart: %v", c.entries)
	}
	c.truncateFromEnd(20)
	if len(c.entries) != 1 {
		t.Fatalf("truncateFromEnd: %v", c.entries)
	}
}

func TestTruncateToAndEpochCache(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 3 * int64(len(makeBatch(t, spec(2, 0))))
	cfg.IndexIntervalBytes = 50
	e := newEnv(t, cfg)
	l := e.log()
	appendN(t, l, 4, 2, 1, 100) // 0..7 epoch 1
	appendN(t, l, 4, 2, 2, 200) // 8..15 epoch 2
	appendN(t, l, 4, 2, 3, 300) // 16..23 epoch 3
	l.SetHighWatermark(24)
	if got := l.EpochEntries(); len(got) != 3 {
		t.Fatalf("epochs %v", got)
	}
	// Into the middle of the log: segments after are removed, the epoch 3 entry goes.
	if err := l.TruncateTo(14); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 14 || l.HighWatermark() != 14 {
		t.Fatalf("LEO %d HW %d", l.LogEndOffset(), l.HighWatermark())
	}
	if got := l.EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{2, 8}) {
		t.Fatalf("epochs %v", got)
	}
	if e, o := l.EndOffsetForEpoch(2); e != 2 || o != 14 {
		t.Fatalf("endOffsetFor(2) = %d, %d", e, o)
	}
	if got := readAll(t, l); len(got) != 7 || got[6].LastOffset() != 13 {
		t.Fatalf("%d batches", len(got))
	}
	// No-op at or past the LEO.
	if err := l.TruncateTo(20); err != nil || l.LogEndOffset() != 14 {
		t.Fatal("truncate past LEO changed the log")
	}
	// Appends continue at the cut, with a new epoch; the file is rewritten.
	appendN(t, l, 2, 2, 5, 400)
	if got := l.EpochEntries(); got[len(got)-1] != (EpochEntry{5, 14}) {
		t.Fatalf("epochs %v", got)
	}
	data, _ := os.ReadFile(filepath.Join(partDir(e), leaderEpochCheckpointFile))
	if string(data) != "0\n3\n1 0\n2 8\n5 14\n" {
		t.Fatalf("leader-epoch-checkpoint:\n%s", data)
	}
	e.reopen()
	l = e.m.Log(tp0)
	if l.LogEndOffset() != 18 || len(readAll(t, l)) != 9 {
		t.Fatalf("after reopen LEO %d", l.LogEndOffset())
	}
	// Below the first segment's base: everything goes.
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 100 || l.LogStartOffset() != 100 || len(l.EpochEntries()) != 0 || l.NumSegments() != 1 {
		t.Fatalf("after full truncation: LEO %d LSO %d", l.LogEndOffset(), l.LogStartOffset())
	}
	if _, err := l.Read(0, 100, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatal(err)
	}
	info, err := l.AppendAsLeader(makeBatch(t, spec(1, 0)), 6, e.clock.Now())
	if err != nil || info.FirstOffset != 100 {
		t.Fatalf("%+v %v", info, err)
	}
	if l.EpochForOffset(100) != 6 {
		t.Fatal("EpochForOffset")
	}
}

func TestTruncateInsideActiveSegmentKeepsIndexUsable(t *testing.T) {
	cfg := testLogConfig()
	cfg.IndexIntervalBytes = 10
	e := newEnv(t, cfg)
	l := e.log()
	appendN(t, l, 20, 1, 0, 0)
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20, 1, 0, 0)
	for off := int64(0); off < 30; off++ {
		r, err := l.Read(off, 1, 30, true)
		if err != nil || r.FirstOffset != off {
			t.Fatalf("read %d: %d %v", off, r.FirstOffset, err)
		}
	}
}

// TestTruncateToLEOTrimsEmptyEpoch: truncating to (or past) the LEO changes no data
// but still drops epochs that start at the LEO — an epoch this replica started as
// leader and wrote nothing in — as Kafka's UnifiedLog.truncateTo, which always calls
// truncateFromEnd; the checkpoint follows.
func TestTruncateToLEOTrimsEmptyEpoch(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	appendN(t, l, 2, 5, 0, 1000)
	if err := l.AssignEpochStartOffset(1, 10); err != nil {
		t.Fatal(err)
	}
	for _, to := range []int64{10, 12} {
		if err := l.TruncateTo(to); err != nil {
			t.Fatal(err)
		}
		if got := l.EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{0, 0}) {
			t.Fatalf("after TruncateTo(%d) at LEO 10: epochs %v, want [{0 0}]", to, got)
		}
		if l.LogEndOffset() != 10 {
			t.Fatalf("LEO %d", l.LogEndOffset())
		}
		if err := l.AssignEpochStartOffset(1, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if got := e.log().EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{0, 0}) {
		t.Fatalf("after reopening: epochs %v, want [{0 0}]", got)
	}
}
