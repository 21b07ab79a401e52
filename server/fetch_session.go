package server

// Fetch sessions (KIP-227). A consumer or follower that fetches many partitions opens
// a session with a full fetch (epoch 0); later fetches (epoch 1, 2, ...) name only the
// partitions whose fetch position changed and get back only partitions with news
// (records, a moved high watermark / log start offset, or an error). Partitions that
// were answered move to the end of the session's order, so a busy partition cannot
// starve the others under the response size limit (as Kafka's FetchSession).

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Session epochs with a special meaning.
const (
	fetchEpochInitial = 0
	fetchEpochFinal   = -1
)

// nextFetchSessionEpoch is the epoch after e, as Kafka's FetchMetadata.nextEpoch:
// after MaxInt32 comes 1 (0 and -1 have their own meaning), so a session outlives
// 2^31 fetches — a follower fetching a busy leader makes thousands a second.
func nextFetchSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// fetchKey names a partition in a fetch: by topic name before v13, by topic id from
// v13 on (the name is then empty), so both are part of the key, as Kafka keys sessions
// by TopicIdPartition. Keying by name alone made every v13+ topic's partition N one
// entry: a fetch of several topics read just one of them.
type fetchKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// cachedPartition is a session's view of one partition: the client's fetch position
// and what the last response said.
type cachedPartition struct {
	key                fetchKey
	topicID            [16]byte
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	// replicaLogStart is the log start offset a follower sent (-1 from consumers).
	replicaLogStart int64
	// Last values sent, to answer only what changed. -1 forces an answer.
	highWatermark  int64
	logStartOffset int64
	lastStable     int64
}

// fetchSession is one session's state. A session serves one fetch at a time (clients
// wait for each answer before the next epoch); mu guards against misbehaving ones.
type fetchSession struct {
	id int32
	mu struct {
		sync.Mutex
		epoch int32 // the epoch the next request must carry
		order []*cachedPartition
		index map[fetchKey]*cachedPartition
	}
	// Eviction state, guarded by the cache's mu (see fetchSessionCache).
	privileged bool // a follower's session
	created    time.Time
	lastUsed   time.Time
	size       int // partitions at the last touch
	// evictableByAll / evictableByPrivileged: whether a new unprivileged / privileged
	// session may evict this one for being less valuable, as of the last touch.
	evictableByAll, evictableByPrivileged bool
}

// fetchSessionEviction is how long a session is protected after its creation and
// how long it may go unused before any new session evicts it (Kafka's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS; not configurable there either).
const fetchSessionEviction = 120 * time.Second

// fetchSessionCache holds at most max sessions (max.incremental.fetch.session.cache.slots)
// and evicts as Kafka's FetchSessionCache (KIP-227) does, not least-recently-used:
// when it is full, a new session evicts
//  1. the least recently used session, if it went unused for fetchSessionEviction; else
//  2. the least valuable evictable session, if the new one is worth more. Value orders
//     (privileged, partitions, id): a follower's (privileged) session is worth more than
//     any consumer's; among equals, more partitions are worth more. A consumer's
//     session is evictable by anyone once it is older than fetchSessionEviction, and by
//     a follower's at any time; a follower's session only once it is older than
//     fetchSessionEviction, and then by anyone. Both are decided at the session's last
//     touch (creation or incremental fetch), as Kafka does.
//
// So a stream of new consumer sessions can evict only idle sessions and older, smaller
// consumer sessions, never a follower's that is in use; and a new session that finds
// nothing to evict is served sessionless. Eviction scans the sessions (at most max,
// and only when the cache is full); Kafka keeps sorted maps for the same choice.
//
// Lock order: a session's mu, then the cache's mu.
type fetchSessionCache struct {
	max      int
	eviction time.Duration
	mu       struct {
		sync.Mutex
		sessions map[int32]*fetchSession
	}
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	c := &fetchSessionCache{max: slots, eviction: fetchSessionEviction}
	c.mu.sessions = map[int32]*fetchSession{}
	return c
}

// create makes a new session of size partitions (privileged for a follower), evicting
// one as described on fetchSessionCache when full. It returns nil when sessions are
// disabled (0 slots) or nothing may be evicted: the fetch is then sessionless.
func (c *fetchSessionCache) create(now time.Time, privileged bool, size int) *fetchSession {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.max && !c.tryEvictLocked(now, privileged, size) {
		return nil
	}
	s := &fetchSession{privileged: privileged, created: now}
	for {
		s.id = rand.Int32()
		if _, taken := c.mu.sessions[s.id]; s.id != 0 && !taken {
			break
		}
	}
	s.mu.epoch = 1
	s.mu.index = map[fetchKey]*cachedPartition{}
	c.mu.sessions[s.id] = s
	c.touchLocked(s, now, size)
	return s
}

// touch records a use of s, which now holds size partitions (Kafka's
// FetchSessionCache.touch on every incremental fetch).
func (c *fetchSessionCache) touch(s *fetchSession, now time.Time, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchLocked(s, now, size)
}

func (c *fetchSessionCache) touchLocked(s *fetchSession, now time.Time, size int) {
	s.lastUsed, s.size = now, size
	old := now.Sub(s.created) > c.eviction
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// evictionKey orders sessions by value, least valuable first (Kafka's EvictableKey).
type evictionKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictionKey) less(b evictionKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

// tryEvictLocked evicts one session for a new one, if the rules allow; c.mu held.
func (c *fetchSessionCache) tryEvictLocked(now time.Time, privileged bool, size int) bool {
	var lru, cheapest *fetchSession
	for _, s := range c.mu.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if evictable := s.evictableByAll || (privileged && s.evictableByPrivileged); evictable &&
			(cheapest == nil || s.key().less(cheapest.key())) {
			cheapest = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.eviction:
		delete(c.mu.sessions, lru.id)
		return true
	case cheapest == nil || (evictionKey{privileged, size, 0}).less(cheapest.key()):
		return false
	}
	delete(c.mu.sessions, cheapest.id)
	return true
}

// distinctPartitions is how many partitions parts names (a request may repeat one).
func distinctPartitions(parts []*cachedPartition) int {
	seen := make(map[fetchKey]struct{}, len(parts))
	for _, cp := range parts {
		seen[cp.key] = struct{}{}
	}
	return len(seen)
}

func (s *fetchSession) key() evictionKey { return evictionKey{s.privileged, s.size, s.id} }

func (c *fetchSessionCache) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.sessions[id]
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.sessions, id)
}

// upsert adds or updates a partition from a request. Lock should be held.
func (s *fetchSession) upsertLocked(cp cachedPartition) {
	if old := s.mu.index[cp.key]; old != nil {
		old.topicID = cp.topicID
		old.fetchOffset = cp.fetchOffset
		old.maxBytes = cp.maxBytes
		old.currentLeaderEpoch = cp.currentLeaderEpoch
		old.lastFetchedEpoch = cp.lastFetchedEpoch
		old.replicaLogStart = cp.replicaLogStart
		return
	}
	cp.highWatermark, cp.logStartOffset, cp.lastStable = -1, -1, -1
	n := cp
	s.mu.index[cp.key] = &n
	s.mu.order = append(s.mu.order, &n)
}

// forgetLocked drops a partition. Lock should be held.
func (s *fetchSession) forgetLocked(k fetchKey) {
	if s.mu.index[k] == nil {
		return
	}
	delete(s.mu.index, k)
	for i, cp := range s.mu.order {
		if cp.key == k {
			s.mu.order = append(s.mu.order[:i], s.mu.order[i+1:]...)
			break
		}
	}
}

// moveToEndLocked puts answered partitions after the others, keeping their order.
// Lock should be held.
func (s *fetchSession) moveToEndLocked(answered map[fetchKey]bool) {
	if len(answered) == 0 {
		return
	}
	kept := make([]*cachedPartition, 0, len(s.mu.order))
	var moved []*cachedPartition
	for _, cp := range s.mu.order {
		if answered[cp.key] {
			moved = append(moved, cp)
		} else {
			kept = append(kept, cp)
		}
	}
	s.mu.order = append(kept, moved...)
}
