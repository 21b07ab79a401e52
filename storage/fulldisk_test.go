//go:build linux

package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// onTmpfs returns a fresh tmpfs of size bytes (root only: it mounts one), unmounted at
// the end of the test.
func onTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fillDir writes a file in dir until its file system has no byte left.
func fillDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); errors.Is(err, unix.ENOSPC) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFullDiskIndexAppendFails: on a full disk, an index entry that needs a page
// of the preallocated (sparse) index file the file system cannot give is a storage
// error, not a SIGBUS that kills the process. The index is memory-mapped; before the
// fix an entry starting a new page was copied into the mapping, and the page fault
// that had to allocate the page killed the broker. The log keeps what it
// acknowledged, and opens again (once space is freed) with every batch it accepted.
func TestFullDiskIndexAppendFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries int // index entries before the one that needs a new page (the first batch gets none)
	}{
		{"time index", 4096 / timeIndexEntrySize}, // entry 341 straddles pages 0 and 1
		{"offset index", 4096 / offsetIndexEntrySize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := onTmpfs(t, "4m")
			cfg := testLogConfig()
			cfg.SegmentIndexBytes = 1 << 20
			cfg.IndexIntervalBytes = 0 // an index entry per batch after the first
			e := &env{t: t, dir: filepath.Join(dir, "data"), clock: newClock(), cfg: cfg}
			if err := os.Mkdir(e.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			e.open()
			t.Cleanup(func() {
				if e.m != nil {
					e.m.Close()
				}
			})
			l := e.log()
			appendN(t, l, tc.entries+1, 1, 0, 1_000)
			l.mu.RLock()
			seg := l.activeLocked()
			nIdx, nTime, size := seg.idx.n, seg.tidx.n, seg.size
			l.mu.RUnlock()
			b := makeBatch(t, spec(1, 1_000+int64(tc.entries+1)))
			if size%4096+int64(len(b)) > 4096 {
				t.Fatalf("the log's last page has no room for the batch (size %d): the test needs the log write to succeed", size)
			}
			t.Logf("%d offset and %d time index entries, log %d bytes", nIdx, nTime, size)
			fillDir(t, dir)
			if _, err := l.AppendAsLeader(b, 0, time.UnixMilli(1_000)); !errors.Is(err, ErrStorage) {
				t.Fatalf("append on a full disk: %v, want a storage error", err)
			}
			if got := e.m.FailedLogs(); got != 1 {
				t.Errorf("FailedLogs = %d, want 1", got)
			}
			leo := l.LogEndOffset()
			if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
				t.Fatal(err)
			}
			e.crash()
			e.open()
			l = e.log()
			if got := l.LogEndOffset(); got < leo {
				t.Errorf("LEO after reopening %d, want at least %d (what was acknowledged)", got, leo)
			}
			if got := len(readAll(t, l)); int64(got) != l.LogEndOffset() {
				t.Errorf("%d batches read back, LEO %d", got, l.LogEndOffset())
			}
		})
	}
}

// TestFullDiskReopenAfterCrash: a log killed with its preallocated indexes untrimmed
// opens again on a disk with no byte left, or fails with an error; it never faults on
// the indexes' holes.
func TestFullDiskReopenAfterCrash(t *testing.T) {
	dir := onTmpfs(t, "4m")
	cfg := testLogConfig()
	cfg.SegmentIndexBytes = 1 << 20
	cfg.IndexIntervalBytes = 0
	e := &env{t: t, dir: filepath.Join(dir, "data"), clock: newClock(), cfg: cfg}
	if err := os.Mkdir(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.open()
	t.Cleanup(func() {
		if e.m != nil {
			e.m.Close()
		}
	})
	appendN(t, e.log(), 4096/offsetIndexEntrySize+1, 1, 0, 1_000) // the offset index fills its first page exactly
	e.crash()
	fillDir(t, dir)
	m, err := OpenLogManager(LogManagerConfig{Dir: e.dir, NodeID: 1, ClusterID: "test-cluster",
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour, Logger: zerolog.Nop(), Now: e.clock.Now},
		func(string) LogConfig { return cfg })
	if err != nil {
		t.Logf("open on a full disk: %v", err)
		return
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(tp0, [16]byte{1, 2, 3}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.LogEndOffset(); got != 4096/offsetIndexEntrySize+1 {
		t.Errorf("LEO %d after reopening, want %d", got, 4096/offsetIndexEntrySize+1)
	}
}
