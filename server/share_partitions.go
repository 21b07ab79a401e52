package server

// The broker's SharePartitionManager and ShareSessionCache (KIP-932; DESIGN.md,
// "Share groups"): the share partitions of every group this broker leads a
// topic-partition for, in memory on the leader, and the share sessions of the
// members fetching from it.
//
// One mutex guards everything: a share fetch acquires from each of its partitions
// under it (lock expiry is applied lazily, before every use of a partition, which
// is what a fetch could observe of Kafka's timers). The log is read outside it.

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/share"
)

// sharePartKey names one share partition: a group's view of a topic-partition.
type sharePartKey struct {
	group     string
	topic     controller.TopicID
	partition int32
}

// shareSessionKey names a share session: one member of one group on this broker.
type shareSessionKey struct{ group, member string }

// shareSession is one member's share session (Kafka's ShareSession): the
// partitions it fetches and the epoch its next request must carry.
type shareSession struct {
	// epoch is the epoch the next ShareFetch / ShareAcknowledge must carry.
	epoch int32
	parts map[tpID]struct{}
	// order keeps parts in the order they were added (answers follow it).
	order []tpID
	// owner is the connection that opened the session: when it closes, the
	// session closes (its locks released), as Kafka 4.2+ ties a share session to
	// its connection.
	owner *conn
}

// tpID is a topic-partition by topic id.
type tpID struct {
	topic     controller.TopicID
	partition int32
}

func (s *shareSession) add(p tpID) {
	if _, ok := s.parts[p]; !ok {
		s.parts[p] = struct{}{}
		s.order = append(s.order, p)
	}
}

func (s *shareSession) forget(p tpID) {
	if _, ok := s.parts[p]; !ok {
		return
	}
	delete(s.parts, p)
	for i, q := range s.order {
		if q == p {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// sharePartitions is the broker's SharePartitionManager and ShareSessionCache.
type sharePartitions struct {
	cfg         share.Config
	maxSessions int
	// persister reads and writes the share partitions' state (share_persist.go);
	// nil keeps it in memory only.
	persister statePersister
	// writers counts the background state writes.
	writers sync.WaitGroup

	mu struct {
		sync.Mutex
		parts map[sharePartKey]*share.Partition
		// leaderEpochs is the leader epoch each share partition was started under:
		// a later leadership of this broker starts it again from its persisted state.
		leaderEpochs map[sharePartKey]int32
		// persist serializes each share partition's state writes.
		persist map[sharePartKey]*sharePersistState
		// byGroup lists each group's share partitions (to release a member's locks).
		byGroup  map[string]map[sharePartKey]struct{}
		sessions map[shareSessionKey]*shareSession
		// byConn lists the sessions each connection opened (some may since be
		// closed or reopened elsewhere: owner says).
		byConn map[*conn][]shareSessionKey
	}
}

func newSharePartitions(b *config.Broker) *sharePartitions {
	sp := &sharePartitions{
		cfg: share.Config{
			LockDuration:       time.Duration(b.ShareGroupRecordLockDurationMs) * time.Millisecond,
			DeliveryCountLimit: int16(b.ShareGroupDeliveryCountLimit),
			MaxInFlight:        int(b.ShareGroupPartitionMaxRecordLocks),
		},
		maxSessions: int(b.ShareGroupMaxShareSessions),
	}
	sp.mu.parts = map[sharePartKey]*share.Partition{}
	sp.mu.leaderEpochs = map[sharePartKey]int32{}
	sp.mu.persist = map[sharePartKey]*sharePersistState{}
	sp.mu.byGroup = map[string]map[sharePartKey]struct{}{}
	sp.mu.sessions = map[shareSessionKey]*shareSession{}
	sp.mu.byConn = map[*conn][]shareSessionKey{}
	return sp
}

// existingLocked returns k's share partition or nil, with expired locks released.
// Lock should be held.
func (sp *sharePartitions) existingLocked(k sharePartKey, now time.Time) *share.Partition {
	p := sp.mu.parts[k]
	if p != nil {
		p.Expire(now)
	}
	return p
}

// releaseMembers releases every lock the members of group hold and drops their
// share sessions (they left the group or were fenced).
func (sp *sharePartitions) releaseMembers(group string, members []string) {
	sp.mu.Lock()
	var touched []sharePartKey
	for _, m := range members {
		for k := range sp.mu.byGroup[group] {
			sp.mu.parts[k].ReleaseMember(m)
			touched = append(touched, k)
		}
		delete(sp.mu.sessions, shareSessionKey{group, m})
	}
	sp.mu.Unlock()
	for _, k := range touched {
		sp.flushAsync(k)
	}
}

// releaseSessionLocked releases the locks member holds on the session's partitions
// and closes the session (a final ShareFetch / ShareAcknowledge, epoch -1).
// Lock should be held.
func (sp *sharePartitions) releaseSessionLocked(key shareSessionKey, s *shareSession) {
	for _, p := range s.order {
		if part := sp.mu.parts[sharePartKey{key.group, p.topic, p.partition}]; part != nil {
			part.ReleaseMember(key.member)
		}
	}
	delete(sp.mu.sessions, key)
}

// connClosed closes the share sessions c opened, releasing their locks.
func (sp *sharePartitions) connClosed(c *conn) {
	if sp == nil {
		return
	}
	sp.mu.Lock()
	keys, ok := sp.mu.byConn[c]
	delete(sp.mu.byConn, c)
	var touched []sharePartKey
	for _, k := range keys {
		if s := sp.mu.sessions[k]; ok && s != nil && s.owner == c {
			touched = append(touched, s.partKeys(k.group)...)
			sp.releaseSessionLocked(k, s)
		}
	}
	sp.mu.Unlock()
	for _, k := range touched {
		sp.flushAsync(k)
	}
}

// partKeys names the share partitions of the session's partitions in group.
func (s *shareSession) partKeys(group string) []sharePartKey {
	out := make([]sharePartKey, len(s.order))
	for i, p := range s.order {
		out[i] = sharePartKey{group, p.topic, p.partition}
	}
	return out
}

// Share session epochs, as Kafka's ShareRequestMetadata.
const (
	shareSessionInitialEpoch int32 = 0
	shareSessionFinalEpoch   int32 = -1
)

// sessionLocked resolves a request's share session by epoch, as Kafka's
// ShareSessionCache / SharePartitionManager.newContext: epoch 0 opens a new session
// (replacing one the member had), -1 is the final request of the existing session,
// any other epoch must be the session's next one. ok is false with the top-level
// error code. Lock should be held.
func (sp *sharePartitions) sessionLocked(c *conn, key shareSessionKey, epoch int32, mayOpen bool) (s *shareSession, code int16) {
	s = sp.mu.sessions[key]
	switch {
	case epoch == shareSessionInitialEpoch:
		if !mayOpen {
			return nil, kerr.InvalidShareSessionEpoch.Code
		}
		if s == nil && len(sp.mu.sessions) >= sp.maxSessions {
			return nil, kerr.ShareSessionLimitReached.Code
		}
		s = &shareSession{epoch: 1, parts: map[tpID]struct{}{}, owner: c}
		sp.mu.sessions[key] = s
		if keys := sp.mu.byConn[c]; !slices.Contains(keys, key) {
			sp.mu.byConn[c] = append(keys, key)
		}
		return s, 0
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch == shareSessionFinalEpoch:
		return s, 0
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.epoch++
	if s.epoch < 0 {
		s.epoch = 1 // wraps as Kafka's ShareRequestMetadata.nextEpoch
	}
	return s, 0
}

// acknowledgeLocked applies one partition's acknowledgement batches for member; the
// first failing batch's code is returned (batches before it stay applied, as each
// batch is applied on its own in Kafka's SharePartition.acknowledge).
// Lock should be held.
func (sp *sharePartitions) acknowledgeLocked(k sharePartKey, member string, now time.Time, batches []ackBatch, renew bool) int16 {
	for _, b := range batches {
		// RENEW only in a request that says so (IsRenewAck, v2), as Kafka's
		// KafkaApis.validateAcknowledgementBatches.
		if !renew && slices.Contains(b.types, int8(share.AckRenew)) {
			return kerr.InvalidRequest.Code
		}
	}
	p := sp.existingLocked(k, now)
	if p == nil {
		return kerr.InvalidRecordState.Code
	}
	for _, b := range batches {
		types := make([]share.AckType, len(b.types))
		for i, t := range b.types {
			types[i] = share.AckType(t)
		}
		if code := p.Acknowledge(now, member, b.first, b.last, types); code != 0 {
			return code
		}
	}
	return 0
}

// ackBatch is one AcknowledgementBatch of ShareFetch or ShareAcknowledge.
type ackBatch struct {
	first, last int64
	types       []int8
}
