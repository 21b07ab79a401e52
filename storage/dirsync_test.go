package storage

import (
	"sync"
	"testing"
)

// TestDirSyncerSharesFsyncs: callers arriving together share fsyncs (fewer than one
// each), every call returns after an fsync that began after it, and a directory that
// cannot be synced gives every caller the error.
func TestDirSyncerSharesFsyncs(t *testing.T) {
	d := newDirSyncer(t.TempDir())
	const n = 64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d.finished == 0 || d.finished > n {
		t.Fatalf("%d fsyncs for %d callers", d.finished, n)
	}
	t.Logf("%d callers, %d fsyncs", n, d.finished)
	before := d.finished
	if err := d.sync(); err != nil || d.finished != before+1 {
		t.Fatalf("a lone call: err %v, %d fsyncs after %d", err, d.finished, before)
	}
	bad := newDirSyncer(t.TempDir() + "/missing")
	if err := bad.sync(); err == nil {
		t.Fatal("fsync of a missing directory succeeded")
	}
}
