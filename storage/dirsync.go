package storage

import "sync"

// dirSyncer fsyncs one directory for many callers at once (a group commit): a call
// returns once an fsync that began after the call did has finished, and calls that
// arrive while one runs share the next. Creating many partitions side by side makes
// one fsync of the log dir per batch of them instead of one each (issue 15).
type dirSyncer struct {
	dir string
	mu  sync.Mutex
	// cond is signalled when an fsync finishes.
	cond sync.Cond
	// started and finished number the fsyncs; running: one is under way; err is the
	// result of the last finished.
	started, finished uint64
	running           bool
	err               error
}

func newDirSyncer(dir string) *dirSyncer {
	d := &dirSyncer{dir: dir}
	d.cond.L = &d.mu
	return d
}

// sync returns when the directory's entries as of the call are on disk.
func (d *dirSyncer) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	need := d.started + 1 // one running now may have begun before the caller's change
	for d.finished < need {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		d.started++
		n := d.started
		d.mu.Unlock()
		err := syncDir(d.dir)
		d.mu.Lock()
		d.running, d.finished, d.err = false, n, err
		d.cond.Broadcast()
	}
	return d.err
}
