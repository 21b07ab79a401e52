package controller

import "sync"

// Pipelined writes. Every write computes its records from the metadata image and,
// under the write lock, waits for them to be committed before the next one reads the
// image: the brokers' registrations and heartbeats, which a new cluster sends all at
// once, would go one commit after another. So those two (HandleBrokerRegistration,
// and HandleBrokerHeartbeat without want_shut_down) are pipelined, as Kafka's
// QuorumController applies a write's records to its in-memory state when it appends
// them: under the write lock such a request computes its records on the view left by
// the pipelined requests still waiting for their commit (their records applied to a
// scratch copy of the committed image), proposes them as an entry of its own, extends
// the view with them, and waits for its commit after releasing the lock: its entry is
// replicated while the ones before it are still in flight.
//
// What keeps each request's answer the one it would have had alone:
//   - An entry is appended only in the term of the entries its view holds, after them
//     (the proposals are made in order, under the lock; the Ready loop refuses one
//     whose term is not the current one): it is committed only if they are, and lost
//     with them.
//   - The view is the image those entries will make: each request's records are
//     applied to it at the index its entry was appended at (the Ready loop answers
//     the proposal with it), so a registration's broker epoch in the view is the one
//     the committed image will hold, which a later heartbeat is checked against.
//   - A request of a broker that already has one pending, or arriving after a pending
//     one failed, waits for the pending ones to be answered and computes on the
//     committed image (a broker's requests are computed one after the other; a
//     failed one's records must not be built on).
//   - An answer only reads the requesting broker's state, which no other pipelined
//     request changes; a registration's epoch is its entry's index, as when it is read
//     from the committed image.
//   - Every other write takes the write lock through writeLock.Lock, which waits until
//     no pipelined request is pending, so it reads a committed image holding them all
//     (or their failure) as before.
//
// The view is only the input of the pipelined requests' records: the committed image
// is still built by applying the committed entries in order.

// writeLock is the controller's write lock (c.mu) with the pipeline's state.
type writeLock struct {
	sync.Mutex
	pipe pipeline
}

// Lock takes the write lock for a write that reads the committed image: it returns
// once no pipelined request is pending.
func (l *writeLock) Lock() {
	l.Mutex.Lock()
	l.pipe.drain()
}

// lockPipelined takes the write lock for a pipelined request, which reads
// Controller.pipelineView.
func (l *writeLock) lockPipelined() { l.Mutex.Lock() }

// pipeline is the pipelined requests not yet answered.
type pipeline struct {
	// view and term are the image after every pending request's records and the term
	// their entries were appended in; the write lock guards them.
	view *MetadataImage
	term uint64

	mu      sync.Mutex
	pending int
	brokers map[int32]int // pending requests per broker
	failed  bool          // a pending request failed: nothing more builds on the view
	drained chan struct{} // closed when pending drops to 0; nil while it is 0
}

// drain waits until no pipelined request is pending. Caller holds the write lock, so
// none joins meanwhile.
func (p *pipeline) drain() {
	p.mu.Lock()
	ch := p.drained
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// pipelineView returns the image broker's pipelined request computes on, and the
// term its entry must be appended in (0: any, the image is committed). Caller holds
// the write lock (lockPipelined).
func (c *Controller) pipelineView(broker int32) (*MetadataImage, uint64) {
	p := &c.mu.pipe
	p.mu.Lock()
	extend := p.pending > 0 && !p.failed && p.brokers[broker] == 0
	p.mu.Unlock()
	if extend {
		return p.view, p.term
	}
	p.drain()
	return c.Image(), 0
}

// commitPipelined proposes broker's records, computed on view (from pipelineView,
// in term), and makes after (view with them) the view of the next pipelined request.
// The caller releases the write lock and then runs wait, which returns the entry's
// index once it is applied and published. Nothing to commit: wait returns at once.
func (c *Controller) commitPipelined(view *MetadataImage, term uint64, broker int32, recs []Record) (wait func() (uint64, error), after *MetadataImage, err error) {
	if len(recs) == 0 {
		return func() (uint64, error) { return 0, nil }, view, nil
	}
	w, appended, index, recs, err := c.proposeRecords(view, recs, term)
	if err != nil {
		return nil, nil, err
	}
	// At the entry's index, as its apply will be: a registration's broker epoch is
	// that offset, and the next requests read it from the view.
	after = applyBatch(view, int64(index), recs)
	p := &c.mu.pipe
	p.view, p.term = after, appended
	p.mu.Lock()
	if p.pending == 0 {
		p.drained, p.failed = make(chan struct{}), false
		clear(p.brokers)
		if p.brokers == nil {
			p.brokers = map[int32]int{}
		}
	}
	p.pending++
	p.brokers[broker]++
	p.mu.Unlock()
	return func() (uint64, error) {
		index, err := w()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.failed = p.failed || err != nil
		p.brokers[broker]--
		if p.pending--; p.pending == 0 {
			close(p.drained)
			p.drained = nil
		}
		return index, err
	}, after, nil
}
