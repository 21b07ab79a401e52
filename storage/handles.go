package storage

import (
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the segments' descriptors (issue 15). Not Kafka configs: Kafka keeps
// every segment's FileChannel open; the bound lets a broker with many partitions,
// active segments included, stay within its open-file limit.
const (
	// inactiveHandleGrace is how long a descriptor stays open after it was last
	// handed out in a FileSlice, however many are open: a fetch sends its slices
	// after Read returned, so a descriptor is closed only once no response can still
	// be sending from it (a send that outlives this fails and its connection closes,
	// as for a segment deleted after file.delete.delay.ms; it never reads another
	// file: sendfile holds the descriptor while it runs).
	inactiveHandleGrace = 60 * time.Second
	// minOpenSegments is the smallest default bound, whatever the open-file limit.
	minOpenSegments = 64
)

// DefaultMaxOpenSegments is the bound on a log manager's open segment descriptors
// when gokafkad.log.segment.descriptors.max is 0: half the process's open-file limit
// (RLIMIT_NOFILE; Go raises the soft limit to the hard one at start-up), at least 64,
// so the other half is left for sockets, the metadata log and checkpoint writes.
func DefaultMaxOpenSegments() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY || lim.Cur > 1<<30 {
		return 1 << 29
	}
	return max(int(lim.Cur/2), minOpenSegments)
}

// handleCache bounds the open .log descriptors of a log manager's segments, active
// and inactive: a segment handed to it (releaseTo) may have its descriptor closed
// while more than max are open, once it is unpinned, not used since the eviction's
// clock hand last passed it (CLOCK, an approximation of least recently used that
// costs a use no lock) and not handed out in a FileSlice within the grace period; use
// reopens it. An append to a partition whose descriptor was closed reopens it, so a
// broker with more partitions than the bound keeps the busy ones open and the idle
// ones closed. Lock order: segment.fmu before handleCache.mu.
type handleCache struct {
	max   int
	grace time.Duration
	now   func() time.Time
	// slices numbers the FileSlices handed out (segment.sliceSeq).
	slices atomic.Int64

	mu struct {
		sync.Mutex
		// open are the managed segments whose descriptor is open; a segment's slot
		// is its index here plus one (0 when absent).
		open []*segment
		// hand is the clock hand: the next slot an eviction looks at.
		hand int
	}
}

func newHandleCache(max int, grace time.Duration, now func() time.Time) *handleCache {
	return &handleCache{max: max, grace: grace, now: now}
}

// added records that s's descriptor is open; more than max open ones starts an
// eviction. s.fmu must be held.
func (c *handleCache) added(s *segment) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.slot == 0 {
		c.mu.open = append(c.mu.open, s)
		s.slot = len(c.mu.open)
	}
	return len(c.mu.open) > c.max
}

func (c *handleCache) removed(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(s)
}

// removeLocked takes s out of open, moving the last segment into its slot.
func (c *handleCache) removeLocked(s *segment) {
	i := s.slot - 1
	if i < 0 {
		return
	}
	last := len(c.mu.open) - 1
	c.mu.open[i] = c.mu.open[last]
	c.mu.open[i].slot = i + 1
	c.mu.open[last] = nil
	c.mu.open = c.mu.open[:last]
	s.slot = 0
	if cap(c.mu.open) > 1024 && len(c.mu.open) < cap(c.mu.open)/4 {
		c.mu.open = append([]*segment(nil), c.mu.open...)
	}
}

// openCount is the number of open managed descriptors (tests).
func (c *handleCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.open)
}

// evict closes descriptors beyond max that are unpinned, were not used since the
// clock hand last passed them and were not handed out in a FileSlice within the grace
// period. While more than max+spare are open (spare is half of max, at least 64:
// consumers read more partitions within the grace than the bound allows), only the
// spare most recently handed out keep that protection — the slices of the responses
// being sent now — so the open descriptors stay below about max+spare, and a send
// from an older response still queued (a slow client) may fail (its connection
// closes and the client fetches again) rather than the broker running out of
// descriptors. One response carrying more than spare partitions can be cut that way
// under pressure; each slice pinned until its response is sent is the follow-up. It looks at a bounded number of slots, so an eviction costs
// O(excess), not O(open): the bound may stay exceeded for a while when every
// descriptor is in use (the manager's periodic evict and the next open try again).
// Must be called with no segment's fmu held.
func (c *handleCache) evict() {
	now := c.now().UnixNano()
	c.mu.Lock()
	excess := len(c.mu.open) - c.max
	if excess <= 0 {
		c.mu.Unlock()
		return
	}
	spare := int64(max(c.max/2, minOpenSegments))
	recent := int64(math.MinInt64) // slices numbered above this are protected
	if len(c.mu.open) > c.max+int(spare) {
		recent = c.slices.Load() - spare
	}
	grace := int64(c.grace)
	var victims []*segment
	for steps := min(2*len(c.mu.open), 64+8*excess); steps > 0 && len(victims) < excess && len(c.mu.open) > 0; steps-- {
		if c.mu.hand >= len(c.mu.open) {
			c.mu.hand = 0
		}
		s := c.mu.open[c.mu.hand]
		if s.used.Swap(false) || s.protected(now, grace, recent) {
			c.mu.hand++
			continue
		}
		c.removeLocked(s) // the last one moves into the hand's slot: looked at next
		victims = append(victims, s)
	}
	c.mu.Unlock()
	for _, s := range victims {
		s.closeIfIdle(c, now, grace, recent)
	}
}

// use returns the segment's .log descriptor, reopening it if it was closed, pinned
// until the caller calls unpin (so it is not closed under the caller), and marks it
// used.
func (s *segment) use() (*os.File, error) { return s.useFor(false) }

// useFor is use; sliced also marks the descriptor handed out in a FileSlice now.
func (s *segment) useFor(sliced bool) (*os.File, error) {
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
	if !s.used.Load() {
		s.used.Store(true)
	}
	if sliced && s.handles != nil {
		s.lastSliced.Store(s.handles.now().UnixNano())
		s.sliceSeq.Store(s.handles.slices.Add(1))
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

// protected: s was handed out in a FileSlice within grace (nanoseconds) of now, as
// slice number recent or later.
func (s *segment) protected(now, grace, recent int64) bool {
	return now-s.lastSliced.Load() < grace && s.sliceSeq.Load() > recent
}

// closeIfIdle closes the descriptor when c still manages s, nothing pins it, and it
// was neither used since the eviction took it nor protected; otherwise s goes back to
// c's open set.
func (s *segment) closeIfIdle(c *handleCache, began, grace, recent int64) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.f == nil || s.handles != c {
		return
	}
	if s.pins > 0 || s.used.Load() || s.protected(began, grace, recent) {
		c.added(s)
		return
	}
	s.f.Close()
	s.f = nil
}

// releaseTo hands the segment's descriptor to c, which may close it while idle;
// closeNow closes it at once (a segment nobody can be using yet: just loaded or
// created for a partition not yet written). A segment c already manages (an active
// segment that became inactive) is left as it is.
func (s *segment) releaseTo(c *handleCache, closeNow bool) {
	if c == nil {
		return
	}
	s.fmu.Lock()
	if s.handles == c {
		s.fmu.Unlock()
		return
	}
	s.handles = c
	if s.f == nil {
		s.fmu.Unlock()
		return
	}
	if closeNow && s.pins == 0 {
		s.f.Close()
		s.f = nil
		s.fmu.Unlock()
		// Nobody reads it yet either: an inactive one's indexes are mapped again
		// when read (an active one's stay mapped: they are written).
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

// sliceFile is the descriptor a FileSlice hands out: marked handed out now, so it
// stays open for at least inactiveHandleGrace while the slice is sent.
func (s *segment) sliceFile() (*os.File, error) {
	f, err := s.useFor(true)
	if err != nil {
		return nil, err
	}
	s.unpin()
	return f, nil
}
