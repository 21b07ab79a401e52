package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gokafkad/gokafkad/protocol"
)

// TestIdleActiveSegmentsReleaseDescriptors: with more partitions than the handle
// cache's bound, the active segments of idle partitions give their descriptor back
// (issue 15: 20,000 partitions within a 20,000-descriptor limit), and a user sees
// nothing of it: a new partition holds none until written, appends to a partition
// whose descriptor was closed reopen it and land at the right offsets, every batch
// reads back byte for byte, and a torn tail after a kill -9 is cut on recovery as
// before.
func TestIdleActiveSegmentsReleaseDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	const n, bound = 120, 10
	cfg := testLogConfig()
	e := newEnv(t, cfg)
	e.m.handles.max = bound
	dir, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	logFDs := func() int {
		_, kinds := fdsUnder(t, dir)
		return kinds[".log"]
	}
	tps := make([]TopicPartition, n)
	logs := make([]*Log, n)
	for i := range logs {
		tps[i] = TopicPartition{Topic: "idle", Partition: int32(i)}
		l, err := e.m.GetOrCreateLog(tps[i], [16]byte{7}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	if got := logFDs(); got != 0 {
		t.Fatalf("%d .log descriptors for %d partitions never written, want 0", got, n)
	}
	now := e.clock.Now().UnixMilli()
	peak := 0
	for round := 0; round < 3; round++ {
		for i, l := range logs {
			infos := appendN(t, l, 2, 3, 0, now)
			if want := int64(round*6 + 0); infos[0].FirstOffset != want {
				t.Fatalf("round %d partition %d: first offset %d, want %d", round, i, infos[0].FirstOffset, want)
			}
			peak = max(peak, logFDs())
		}
	}
	t.Logf("%d partitions written 3 times with a bound of %d: at most %d .log descriptors open", n, bound, peak)
	if peak > bound+2 { // the one being appended to is pinned while the eviction runs
		t.Fatalf("%d .log descriptors open while writing %d partitions, want at most %d", peak, n, bound+2)
	}
	// Everything reads back; reads reopen the descriptors, and once past the grace the
	// bound holds again.
	want := make([][]protocol.Batch, n)
	for i, l := range logs {
		want[i] = readAll(t, l)
		if len(want[i]) != 6 || want[i][5].LastOffset() != 17 {
			t.Fatalf("partition %d read back %d batches", i, len(want[i]))
		}
	}
	e.clock.Advance(inactiveHandleGrace)
	e.m.handles.evict()
	if got := e.m.handles.openCount(); got > bound {
		t.Fatalf("%d descriptors open a grace period after reading, want at most %d", got, bound)
	}
	// A kill -9 with a torn tail on a partition whose descriptor was closed.
	torn := logs[3]
	appendN(t, torn, 1, 2, 0, now)
	e.crash()
	path := filepath.Join(e.dir, tps[3].String(), "00000000000000000000.log")
	size := fileSize(t, path)
	if err := os.Truncate(path, size-5); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.m.handles.max = bound
	for i, tp := range tps {
		l := e.m.Log(tp)
		if l == nil {
			t.Fatalf("partition %d missing after restart", i)
		}
		got := readAll(t, l)
		if len(got) != len(want[i]) {
			t.Fatalf("partition %d: %d batches after the restart, want %d (torn tail cut)", i, len(got), len(want[i]))
		}
		for j := range got {
			if !bytes.Equal(got[j], want[i][j]) {
				t.Fatalf("partition %d batch %d differs after the restart", i, j)
			}
		}
		if info := appendN(t, l, 1, 1, 0, now); info[0].FirstOffset != 18 {
			t.Fatalf("partition %d: append after the restart at %d, want 18", i, info[0].FirstOffset)
		}
	}
}
