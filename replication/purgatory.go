// Package replication holds the ReplicaManager (every partition of this broker), the
// purgatory where acks=all produces and long-polling fetches wait, and — with issue 4 —
// the replica fetchers and the AlterPartitionManager.
package replication

import (
	"sync"
	"time"

	"github.com/gokafkad/gokafkad/storage"
)

// Delayed is an operation parked in the purgatory: a DelayedProduce or DelayedFetch.
// It completes exactly once, either when TryComplete says it can (checked on creation
// and every time one of its partitions changes) or when its timeout fires.
type Delayed struct {
	// tryComplete reports whether the operation can complete now. Called with mu held.
	tryComplete func() bool
	// onComplete sends the answer. expired is true when the timeout fired.
	onComplete func(expired bool)

	// Kind is the purgatory Kafka would park it in (set before it is watched).
	Kind DelayedKind

	mu    sync.Mutex
	done  bool
	timer *time.Timer
	keys  []storage.TopicPartition
}

// NewDelayed makes an operation from its two callbacks.
func NewDelayed(tryComplete func() bool, onComplete func(expired bool)) *Delayed {
	return &Delayed{tryComplete: tryComplete, onComplete: onComplete}
}

// maybeComplete completes d if it can; reports whether d is done. A panic in a
// callback leaves d.mu unlocked (the caller, or the timer's goroutine, recovers).
func (d *Delayed) maybeComplete(expired bool) bool {
	done, run := d.settle(expired)
	if run {
		d.onComplete(expired)
	}
	return done
}

// settle marks d done if it is expired or can complete. It reports whether d is done
// and whether this call made it so (and must run onComplete).
func (d *Delayed) settle(expired bool) (done, run bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return true, false
	}
	if !expired && !d.tryComplete() {
		return false, false
	}
	d.done = true
	if d.timer != nil {
		d.timer.Stop()
	}
	return true, true
}

// Purgatory keeps delayed operations watched by partition, as Kafka's
// DelayedOperationPurgatory. Each partition's watchers are a set, so watching,
// unwatching and completing cost O(1) per (operation, partition), whatever else
// waits on that partition, and an operation naming a partition many times is
// watched there once.
type Purgatory struct {
	mu       sync.Mutex
	watchers map[storage.TopicPartition]map[*Delayed]struct{}
}

// NewPurgatory returns an empty purgatory.
func NewPurgatory() *Purgatory {
	return &Purgatory{watchers: map[storage.TopicPartition]map[*Delayed]struct{}{}}
}

// TryCompleteElseWatch completes d now if it can; otherwise it watches d under keys
// (duplicates are watched once) until a CheckAndComplete on one of them completes it,
// timeout passes, or Expire is called.
func (p *Purgatory) TryCompleteElseWatch(d *Delayed, keys []storage.TopicPartition, timeout time.Duration) {
	if d.maybeComplete(false) {
		return
	}
	p.mu.Lock()
	d.keys = d.keys[:0]
	for _, k := range keys {
		ws := p.watchers[k]
		if ws == nil {
			ws = map[*Delayed]struct{}{}
			p.watchers[k] = ws
		}
		if _, dup := ws[d]; dup {
			continue
		}
		ws[d] = struct{}{}
		d.keys = append(d.keys, k)
	}
	p.mu.Unlock()
	// Something may have changed between the first check and the watch.
	if d.maybeComplete(false) {
		p.unwatch(d)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.done {
		d.timer = time.AfterFunc(timeout, func() { p.Expire(d) })
	}
}

// Expire completes d now as if its timeout had fired (its connection closed, say),
// unless it is done already, and stops watching it.
func (p *Purgatory) Expire(d *Delayed) {
	d.maybeComplete(true)
	p.unwatch(d)
}

// CheckAndComplete tries every operation watching key.
func (p *Purgatory) CheckAndComplete(key storage.TopicPartition) {
	p.mu.Lock()
	ws := p.watchers[key]
	if len(ws) == 0 {
		p.mu.Unlock()
		return
	}
	// Copied (on the stack for the usual handful) so the checks run without p.mu.
	var wbuf, dbuf [8]*Delayed
	list := wbuf[:0]
	for d := range ws {
		list = append(list, d)
	}
	p.mu.Unlock()
	done := dbuf[:0]
	for _, d := range list {
		if d.maybeComplete(false) {
			done = append(done, d)
		}
	}
	for _, d := range done {
		p.unwatch(d)
	}
}

// unwatch removes a completed operation from its watch sets.
func (p *Purgatory) unwatch(d *Delayed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range d.keys {
		ws := p.watchers[k]
		delete(ws, d)
		if len(ws) == 0 {
			delete(p.watchers, k)
		}
	}
}

// Watched counts operations waiting, once per partition watched (for tests and
// metrics).
func (p *Purgatory) Watched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ws := range p.watchers {
		n += len(ws)
	}
	return n
}
