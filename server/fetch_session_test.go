package server

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionEviction: which session a new one evicts from a full cache, as
// Kafka's FetchSessionCache.tryEvict decides (KIP-227).
func TestFetchSessionEviction(t *testing.T) {
	type sess struct {
		privileged bool
		size       int
		createdAgo time.Duration // before the last touch
		idleFor    time.Duration // since the last touch
	}
	const ev = fetchSessionEviction
	recent, old := time.Second, ev+time.Second
	for _, tc := range []struct {
		name       string
		slots      int // 0: as many as existing sessions (a full cache)
		existing   []sess
		privileged bool
		size       int
		created    bool
		evicted    int // index into existing, -1: none
	}{
		{"room left", 2, []sess{{false, 5, recent, 0}}, false, 1, true, -1},
		{"a session idle past the eviction time goes, even a follower's", 0,
			[]sess{{true, 100, old, ev + time.Millisecond}, {false, 5, recent, 0}}, false, 1, true, 0},
		{"the least recently used idle one goes first", 0,
			[]sess{{false, 5, old, ev + 2*time.Second}, {false, 5, old, ev + 3*time.Second}}, false, 1, true, 1},
		{"recent consumer sessions are safe from a consumer", 0,
			[]sess{{false, 1, recent, 0}, {false, 2, recent, 0}}, false, 100, false, -1},
		{"a follower evicts the smallest consumer session, however recent", 0,
			[]sess{{false, 9, recent, 0}, {false, 2, recent, 0}, {false, 4, recent, 0}}, true, 1, true, 1},
		{"a consumer evicts an older, smaller consumer session", 0,
			[]sess{{false, 3, old, 0}, {false, 1, recent, 0}}, false, 4, true, 0},
		{"a consumer does not evict an older session of as many partitions", 0,
			[]sess{{false, 3, old, 0}, {false, 1, recent, 0}}, false, 3, false, -1},
		{"a consumer does not evict an older one of more partitions", 0,
			[]sess{{false, 30, old, 0}}, false, 3, false, -1},
		{"a consumer never evicts a follower's session in use", 0,
			[]sess{{true, 1, old, 0}, {true, 1, recent, 0}}, false, 1000, false, -1},
		{"a follower does not evict a recent follower's session", 0,
			[]sess{{true, 1, recent, 0}, {true, 1, recent, 0}}, true, 1000, false, -1},
		{"a follower evicts an older, smaller follower's session", 0,
			[]sess{{true, 5, old, 0}, {true, 1, recent, 0}}, true, 6, true, 0},
		{"a follower prefers a consumer's session to an older follower's", 0,
			[]sess{{true, 1, old, 0}, {false, 50, recent, 0}}, true, 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			slots := tc.slots
			if slots == 0 {
				slots = len(tc.existing)
			}
			c := newFetchSessionCache(slots)
			var ss []*fetchSession
			for _, e := range tc.existing {
				touched := now.Add(-e.idleFor)
				s := c.create(touched.Add(-e.createdAgo), e.privileged, e.size)
				c.touch(s, touched, e.size)
				ss = append(ss, s)
			}
			s := c.create(now, tc.privileged, tc.size)
			if (s != nil) != tc.created {
				t.Fatalf("created = %v, want %v", s != nil, tc.created)
			}
			for i, e := range ss {
				if gone := c.get(e.id) == nil; gone != (i == tc.evicted) {
					t.Errorf("session %d evicted = %v", i, gone)
				}
			}
			if got := len(c.mu.sessions); got > c.max {
				t.Errorf("%d sessions in %d slots", got, c.max)
			}
		})
	}
}

// TestConsumerSessionsDoNotEvictFollowers: a flood of new consumer sessions in a
// full cache leaves a follower's session (and the consumer sessions in use) alone; the
// flood is served sessionless.
func TestConsumerSessionsDoNotEvictFollowers(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newFetchSessionCache(10)
	follower := c.create(now, true, 3)
	var consumers []*fetchSession
	for i := 0; i < 10_000; i++ {
		now = now.Add(time.Millisecond)
		if s := c.create(now, false, 1+i%50); s != nil {
			consumers = append(consumers, s)
		}
		if i%100 == 0 {
			c.touch(follower, now, 3) // the follower keeps fetching
		}
	}
	if c.get(follower.id) == nil {
		t.Fatal("the follower's session was evicted")
	}
	if len(consumers) != 9 {
		t.Fatalf("%d consumer sessions created, want the 9 free slots", len(consumers))
	}
}

// TestFetchSessionEpochWraps: after epoch MaxInt32 the session expects 1, as Kafka's
// FetchMetadata.nextEpoch (it went negative, and the next fetch of a long-lived
// follower session was refused with INVALID_FETCH_SESSION_EPOCH).
func TestFetchSessionEpochWraps(t *testing.T) {
	b := &Broker{fetchSessions: newFetchSessionCache(4)}
	now := time.Unix(1_000_000, 0)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(17)
	req.ReplicaState.ID = 2
	req.SessionEpoch = 0
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = [16]byte{1}
	rt.Partitions = append(rt.Partitions, kmsg.NewFetchRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	plan, code := b.fetchContext(req, now)
	if code != 0 || plan.session == nil {
		t.Fatalf("opening a session: code %d, session %v", code, plan.session)
	}
	plan.session.mu.Lock()
	plan.session.mu.epoch = math.MaxInt32
	plan.session.mu.Unlock()
	inc := kmsg.NewPtrFetchRequest()
	inc.SetVersion(17)
	inc.ReplicaState.ID = 2
	for _, epoch := range []int32{math.MaxInt32, 1, 2} {
		inc.SessionID, inc.SessionEpoch = plan.sessionID, epoch
		p, code := b.fetchContext(inc, now)
		if code != 0 {
			t.Fatalf("incremental fetch at epoch %d: %v", epoch, kerr.ErrorForCode(code))
		}
		if !p.incremental || len(p.parts) != 1 {
			t.Fatalf("incremental fetch at epoch %d: incremental %v, %d partitions", epoch, p.incremental, len(p.parts))
		}
	}
}
