package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFollowerFetchCarriesLastStableOffset: a follower's fetch is answered with the
// leader's real LSO, as Kafka's (the LogReadResult of every fetch carries it), not the
// HW: with a transaction open at offset 0 and the HW at 1, the LSO is 0. And
// ListOffsets latest from a replica is the LEO.
func TestFollowerFetchCarriesLastStableOffset(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Controller().RegisterBroker(2, "127.0.0.1", 1, nil); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "lso", -1, -1
	ct.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
	req.Topics = append(req.Topics, ct)
	cl := b.Client()
	cresp, err := req.RequestWith(Ctx(t, 10*time.Second), cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic lso on 1,2: %v %v", err, kerr.ErrorForCode(cresp.Topics[0].ErrorCode))
	}
	WaitFor(t, 10*time.Second, "lso led here", func() bool {
		p := b.ReplicaManager().Partition(tp("lso", 0))
		return p != nil && p.IsLeader()
	})
	leader := b.ReplicaManager().Partition(tp("lso", 0))
	if _, err := leader.Log.AppendAsLeader(txnRecordBatch(1000, 0), leader.LeaderEpoch(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := followerFetch(t, b, cl, "lso", 0, -1); r.ErrorCode != 0 || len(r.RecordBatches) == 0 {
		t.Fatalf("first follower fetch: %v, %d bytes", kerr.ErrorForCode(r.ErrorCode), len(r.RecordBatches))
	}
	r := followerFetch(t, b, cl, "lso", 1, 0)
	if r.ErrorCode != 0 || r.HighWatermark != 1 || r.LastStableOffset != 0 {
		t.Fatalf("follower fetch with a transaction open at 0: error %v, HW %d, LSO %d; want HW 1, LSO 0",
			kerr.ErrorForCode(r.ErrorCode), r.HighWatermark, r.LastStableOffset)
	}

	// One more record, not yet fetched by the follower: LEO 2, HW 1. ListOffsets
	// latest answers a replica (a follower resetting after OFFSET_OUT_OF_RANGE) with
	// the LEO, a consumer with the HW, as Kafka's Partition.fetchOffsetForTimestamp.
	if _, err := leader.Log.AppendAsLeader(txnRecordBatchSeq(1000, 0, 1), leader.LeaderEpoch(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replica int32
		want    int64
	}{{-1, 1}, {2, 2}} {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = tc.replica
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "lso"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		resp, err := lo.RequestWith(Ctx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != tc.want {
			t.Errorf("ListOffsets latest as replica %d: %v offset %d, want %d", tc.replica, kerr.ErrorForCode(got.ErrorCode), got.Offset, tc.want)
		}
	}
}
