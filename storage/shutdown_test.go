package storage

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCleanStopSyncsOnce: a clean stop closes the logs without an fsync each and makes
// them durable with one syncfs of the dir's file system; then the recovery points are
// the log ends and the clean-shutdown marker is written, so the next open trusts the
// logs (no recovery) and serves everything written.
func TestCleanStopSyncsOnce(t *testing.T) {
	if !syncfsReportsErrors() {
		t.Skip("kernel before 5.8: syncfs reports no write-back error, the stop fsyncs each file")
	}
	e := newEnv(t, recoveryConfig(t))
	manyLogs(t, e, 20)
	calls := 0
	e.m.syncfs = func(fd int) error {
		calls++
		return unix.Syncfs(fd)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("%d syncfs calls, want 1", calls)
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	rps, err := ReadOffsetCheckpoint(filepath.Join(e.dir, recoveryPointCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for p := range 20 {
		if got, want := rps[manyTP(p)], int64(4*manyBatches(p)); got != want {
			t.Fatalf("%s: recovery point %d, want the log end %d", manyTP(p), got, want)
		}
	}
	e.open()
	checkManyLogs(t, e, 20, func(int) bool { return false })
}

// TestCleanStopSyncfsFails: when the syncfs of a clean stop fails, the stop reports a
// storage error, the recovery points stay where the last flush left them and no
// clean-shutdown marker is written, so the next open recovers every log as after a
// crash (and, the pages being in the page cache here, finds every batch).
func TestCleanStopSyncfsFails(t *testing.T) {
	if !syncfsReportsErrors() {
		t.Skip("kernel before 5.8: syncfs reports no write-back error, the stop fsyncs each file")
	}
	e := newEnv(t, recoveryConfig(t))
	manyLogs(t, e, 20)
	before := map[TopicPartition]int64{}
	for tp, l := range e.m.Logs() {
		l.flushes.Wait() // a roll's flush runs in the background
		l.mu.RLock()
		before[tp] = l.mu.recoveryPoint
		l.mu.RUnlock()
	}
	e.m.syncfs = func(int) error { return syscall.EIO }
	err := e.m.Close()
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("Close: %v, want ErrStorage", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean-shutdown marker after a failed syncfs: %v", err)
	}
	rps, err := ReadOffsetCheckpoint(filepath.Join(e.dir, recoveryPointCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for p := range 20 {
		if got, want := rps[manyTP(p)], before[manyTP(p)]; got != want || want == int64(4*manyBatches(p)) {
			t.Fatalf("%s: recovery point %d after a failed syncfs, want %d (the last flush's, below the log end)", manyTP(p), got, want)
		}
	}
	e.open()
	if e.m.CleanShutdownBrokerEpoch() != -1 {
		t.Fatalf("open after a failed syncfs took the stop for clean")
	}
	checkManyLogs(t, e, 20, func(int) bool { return false })
}

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v1045", true},
		{"5.8.0", true},
		{"5.10.0-28-amd64", true},
		{"5.7.19", false},
		{"4.19.0", false},
		{"5.8-rc1", true},
		{"6", false},
		{"", false},
		{"x.y", false},
	} {
		if got := kernelAtLeast(c.release, 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}
