package server

// Fetch sessions (KIP-227). A consumer or follower that fetches many partitions opens
// a session with a full fetch (epoch 0); later fetches (epoch 1, 2, ...) name only the
// partitions whose fetch position changed and get back only partitions with news
// (records, a moved high watermark / log start offset, or an error). Partitions that
// were answered move to the end of the session's order, so a busy partition cannot
// starve the others under the response size limit (as Kafka's FetchSession).

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Session epochs with a special meaning.
const (
	fetchEpochInitial = 0
	fetchEpochFinal   = -1
)

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
		epoch    int32 // the epoch the next request must carry
		order    []*cachedPartition
		index    map[fetchKey]*cachedPartition
		lastUsed time.Time
	}
}

type fetchSessionCache struct {
	max int
	mu  struct {
		sync.Mutex
		sessions map[int32]*fetchSession
	}
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	c := &fetchSessionCache{max: slots}
	c.mu.sessions = map[int32]*fetchSession{}
	return c
}

// create makes a new session, evicting the least recently used one when full. It
// returns nil when sessions are disabled (0 slots).
func (c *fetchSessionCache) create(now time.Time) *fetchSession {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.max {
		var oldest *fetchSession
		var oldestAt time.Time
		for _, s := range c.mu.sessions {
			s.mu.Lock()
			at := s.mu.lastUsed
			s.mu.Unlock()
			if oldest == nil || at.Before(oldestAt) {
				oldest, oldestAt = s, at
			}
		}
		delete(c.mu.sessions, oldest.id)
	}
	s := &fetchSession{}
	for {
		s.id = rand.Int32()
		if _, taken := c.mu.sessions[s.id]; s.id != 0 && !taken {
			break
		}
	}
	s.mu.epoch = 1
	s.mu.index = map[fetchKey]*cachedPartition{}
	s.mu.lastUsed = now
	c.mu.sessions[s.id] = s
	return s
}

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
