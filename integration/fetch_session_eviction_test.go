package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerFetchSessionsDoNotEvictFollowerSession: with two session slots, a
// follower's session (replica id 2) survives fifty consumers opening sessions one
// after another over the wire: they get the free slot, then are served sessionless,
// and the follower's next incremental fetch finds its session (Kafka's
// FetchSessionCache rules; plain LRU evicted the follower's session at once).
func TestConsumerFetchSessionsDoNotEvictFollowerSession(t *testing.T) {
	b := StartBroker(t, Props("max.incremental.fetch.session.cache.slots", "2"))
	cl := b.Client()
	createAssigned(t, cl, "s", 1)
	ctx := Ctx(t, 30*time.Second)
	topicID := b.Image().Topics["s"].ID
	fetch := func(replica int32, sessionID, epoch int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = replica, -1
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		req.SessionID, req.SessionEpoch = sessionID, epoch
		if epoch == 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "s", topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		return resp.(*kmsg.FetchResponse)
	}
	follower := fetch(2, 0, 0)
	if follower.ErrorCode != 0 || follower.SessionID == 0 {
		t.Fatalf("follower's session: %v, id %d", kerr.ErrorForCode(follower.ErrorCode), follower.SessionID)
	}
	sessions := 0
	for i := 0; i < 50; i++ {
		r := fetch(-1, 0, 0)
		if r.ErrorCode != 0 {
			t.Fatalf("consumer %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
		if r.SessionID != 0 {
			sessions++
		}
	}
	if sessions != 1 {
		t.Errorf("%d consumer sessions created in 1 free slot", sessions)
	}
	if r := fetch(2, follower.SessionID, 1); r.ErrorCode != 0 || r.SessionID != follower.SessionID {
		t.Fatalf("follower's incremental fetch: %v (session %d)", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
}
