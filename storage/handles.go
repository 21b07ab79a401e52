package storage

import (
	"os"
	"slices"
	"sync"
	"time"
)

// Bounds of the inactive segments' descriptors (issue 15). Not Kafka configs: Kafka
// keeps every segment's FileChannel open; these let a broker with many segments per
// partition stay near one descriptor per partition.
const (
	// maxOpenInactiveSegments is how many inactive segments' .log descriptors a log
	// manager keeps open once they are not in use (reads of old data open them on
	// demand; the least recently used beyond this bound are closed).
	maxOpenInactiveSegments = 256
	// inactiveHandleGrace is how long a descriptor stays open after it was last
	// used or handed out in a FileSlice, however many are open: a fetch sends its
	// slices after Read returned, so a descriptor is closed only once no response
	// can still be sending from it (a send that outlives this fails and its
	// connection closes, as for a segment deleted after file.delete.delay.ms; it
	// never reads another file: sendfile holds the descriptor while it runs).
	inactiveHandleGrace = 60 * time.Second
)

// handleCache bounds the open .log descriptors of inactive segments: a segment
// handed to it (release) may have its descriptor closed once it is unpinned and
// unused for the grace period, least recently used first, while more than max are
// open; use reopens it. Lock order: segment.fmu before handleCache.mu.
type handleCache struct {
	max   int
	grace time.Duration
	now   func() time.Time

	mu struct {
		sync.Mutex
		// open are the releasable segments whose descriptor is open.
		open map[*segment]struct{}
	}
}

func newHandleCache(max int, grace time.Duration, now func() time.Time) *handleCache {
	c := &handleCache{max: max, grace: grace, now: now}
	c.mu.open = map[*segment]struct{}{}
	return c
}

// added records that s's descriptor is open; more than max open ones starts an
// eviction. s.fmu must be held.
func (c *handleCache) added(s *segment) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.open[s] = struct{}{}
	return len(c.mu.open) > c.max
}

func (c *handleCache) removed(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.open, s)
}

// openCount is the number of open releasable descriptors (tests).
func (c *handleCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.open)
}

// evict closes the least recently used descriptors beyond max that are unpinned and
// were not used within the grace period. Must be called with no segment's fmu held.
func (c *handleCache) evict() {
	now := c.now()
	c.mu.Lock()
	excess := len(c.mu.open) - c.max
	if excess <= 0 {
		c.mu.Unlock()
		return
	}
	type cand struct {
		s    *segment
		used int64
	}
	cands := make([]cand, 0, len(c.mu.open))
	for s := range c.mu.open {
		if used := s.lastUsed.Load(); now.UnixNano()-used >= int64(c.grace) {
			cands = append(cands, cand{s, used})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.used < b.used:
			return -1
		case a.used > b.used:
			return 1
		}
		return 0
	})
	cands = cands[:min(excess, len(cands))]
	for _, v := range cands {
		delete(c.mu.open, v.s)
	}
	c.mu.Unlock()
	for _, v := range cands {
		v.s.closeIfIdle(c, now)
	}
}

// use returns the segment's .log descriptor, reopening it if it was closed, pinned
// until the caller calls unpin (so it is not closed under the caller), and marks it
// used. The active segment's descriptor is never closed; appends use s.f directly.
func (s *segment) use() (*os.File, error) {
	s.fmu.Lock()
	evict := false
	if s.f == nil {
		if s.closed {
			s.fmu.Unlock()
			return nil, os.ErrClosed
		}
		path := segmentPath(s.dir, s.base, logSuffix)
		if s.deleted {
			path += deletedSuffix
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0o644)
		if err != nil {
			s.fmu.Unlock()
			return nil, err
		}
		s.f = f
		if s.handles != nil {
			evict = s.handles.added(s)
		}
	}
	if s.handles != nil {
		s.lastUsed.Store(s.handles.now().UnixNano())
	}
	s.pins++
	f, h := s.f, s.handles
	s.fmu.Unlock()
	if evict {
		h.evict() // f is pinned: not among the closed
	}
	return f, nil
}

func (s *segment) unpin() {
	s.fmu.Lock()
	s.pins--
	s.fmu.Unlock()
}

// closeIfIdle closes the descriptor when c still manages s, nothing pins it and it
// was not used since the eviction began; otherwise s goes back to c's open set.
func (s *segment) closeIfIdle(c *handleCache, began time.Time) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.f == nil || s.handles != c {
		return
	}
	if s.pins > 0 || began.UnixNano()-s.lastUsed.Load() < int64(c.grace) {
		c.added(s)
		return
	}
	s.f.Close()
	s.f = nil
}

// releaseTo hands the (now inactive) segment's descriptor to c; closeNow closes it
// at once (a segment nobody can be reading yet: just loaded).
func (s *segment) releaseTo(c *handleCache, closeNow bool) {
	if c == nil {
		return
	}
	s.fmu.Lock()
	s.handles = c
	s.lastUsed.Store(c.now().UnixNano())
	if s.f == nil {
		s.fmu.Unlock()
		return
	}
	if closeNow && s.pins == 0 {
		s.f.Close()
		s.f = nil
		s.fmu.Unlock()
		// Nobody reads it yet either: its indexes are mapped again when read.
		s.idx.unmapUntilUsed()
		s.tidx.unmapUntilUsed()
		return
	}
	evict := c.added(s)
	s.fmu.Unlock()
	if evict {
		c.evict()
	}
}

// makeActive takes the segment back from its handle cache (truncation made it the
// active one): its descriptor is opened and stays open.
func (s *segment) makeActive() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.handles != nil {
		s.handles.removed(s)
		s.handles = nil
	}
	if s.f != nil {
		return nil
	}
	f, err := os.OpenFile(segmentPath(s.dir, s.base, logSuffix), os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	return nil
}

// sliceFile is the descriptor a FileSlice hands out: marked used now, so it stays
// open for at least inactiveHandleGrace while the slice is sent.
func (s *segment) sliceFile() (*os.File, error) {
	f, err := s.use()
	if err != nil {
		return nil, err
	}
	s.unpin()
	return f, nil
}
