package server

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShareGroupOffsets answers a share group's start offsets and lag from its
// share-partition state, for the group's assignment or the topics named.
func TestDescribeShareGroupOffsets(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("so"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "so", 2)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "g", "m1", []string{"so"}
	if hr := shareReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb); hr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(hr.ErrorCode))
	}
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 0, 0, id, 1)))
	produceN(t, cl, "so", 0, 10)
	if got := shareFetchUntil(t, cl, "g", "m1", id); !slices.Equal(got, []string{"0-9/1"}) {
		t.Fatalf("acquired %v", got)
	}
	// A new session (shareFetchUntil opened one at epoch 0): accept 0..4 and 7.
	ack := shareFetchReq("g", "m1", 1, 0, id, 1, ackBatchOf(0, 4, 1), ackBatchOf(7, 7, 1))
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, ack))

	describe := func(group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: topics}}
		return shareReq[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, req).Groups[0]
	}
	// The whole assignment: partition 0 has state, partition 1 none (never fetched).
	g := describe("g", nil)
	if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Topic != "so" || g.Topics[0].TopicID != id || len(g.Topics[0].Partitions) != 1 {
		t.Fatalf("describe: %+v", g)
	}
	if p := g.Topics[0].Partitions[0]; p.Partition != 0 || p.StartOffset != 5 || p.Lag != 4 || p.ErrorCode != 0 {
		t.Fatalf("partition 0: %+v (want start 5, lag 4: 5, 6, 8, 9 not done)", p)
	}
	// Named partitions: one without state answers -1, one the topic lacks an error.
	g = describe("g", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "so", Partitions: []int32{1, 5}}, {Topic: "nope", Partitions: []int32{0}}})
	if len(g.Topics) != 2 || len(g.Topics[0].Partitions) != 2 {
		t.Fatalf("describe named: %+v", g)
	}
	if p := g.Topics[0].Partitions[0]; p.StartOffset != -1 || p.ErrorCode != 0 {
		t.Fatalf("partition 1: %+v", p)
	}
	if p := g.Topics[0].Partitions[1]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 5: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := g.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("topic nope: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if g := describe("nobody", nil); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", kerr.ErrorForCode(g.ErrorCode))
	}
}

// AlterShareGroupOffsets moves an empty share group's start (kafka-share-groups
// --reset-offsets): the next member's fetches start there, and the state epoch goes
// up. A group with members is NON_EMPTY_GROUP. DeleteShareGroupOffsets removes the
// state, so the next fetch starts afresh (latest).
func TestAlterAndDeleteShareGroupOffsets(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("sa"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "sa", 1)
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 0, 0, id, 1)))
	produceN(t, cl, "sa", 0, 10)
	if got := shareFetchUntil(t, cl, "g", "m1", id); !slices.Equal(got, []string{"0-9/1"}) {
		t.Fatalf("acquired %v", got)
	}
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", -1, 0, id, 1, ackBatchOf(0, 9, 1))))

	alter := func(offset int64) *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "g"
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "sa", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: offset}}}}
		return shareReq[*kmsg.AlterShareGroupOffsetsResponse](t, cl, req)
	}
	// A member in the group makes it non-empty.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "g", "m1", []string{"sa"}
	shareReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb)
	if r := alter(3); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb.MemberEpoch = -1
	shareReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb)
	if r := alter(3); r.ErrorCode != 0 || r.Topics[0].TopicID != id || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if got := shareFetchUntil(t, cl, "g", "m2", id); !slices.Equal(got, []string{"3-9/1"}) {
		t.Fatalf("after the reset to 3 m2 acquired %v", got)
	}
	rreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	rreq.Version, rreq.GroupID = 1, "g"
	rreq.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	if p := shareReq[*kmsg.ReadShareGroupStateSummaryResponse](t, cl, rreq).Topics[0].Partitions[0]; p.StateEpoch != 1 {
		t.Fatalf("state epoch after the reset: %+v", p)
	}
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m2", -1, 0, id, 1)))

	dreq := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	dreq.GroupID = "g"
	dreq.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "sa"}, {Topic: "nope"}}
	dr := shareReq[*kmsg.DeleteShareGroupOffsetsResponse](t, cl, dreq)
	if dr.ErrorCode != 0 || dr.Topics[0].ErrorCode != 0 || dr.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", dr)
	}
	if p := shareReq[*kmsg.ReadShareGroupStateSummaryResponse](t, cl, rreq).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("state after delete: %+v", p)
	}
	// The share partition starts again at the log's end.
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m3", 0, 0, id, 1)))
	produceN(t, cl, "sa", 10, 1)
	if got := shareFetchUntil(t, cl, "g", "m3", id); !slices.Equal(got, []string{"10-10/1"}) {
		t.Fatalf("after the delete m3 acquired %v", got)
	}
}

// A share partition whose state was initialized again behind its back (a reset
// another broker's coordinator took, here an InitializeShareGroupState on the wire)
// is fenced at its next write and starts again from the new state.
func TestSharePartitionFencedByStateEpoch(t *testing.T) {
	b := startShareBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("sf"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "sf", 1)
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 0, 0, id, 1)))
	produceN(t, cl, "sf", 0, 10)
	if got := shareFetchUntil(t, cl, "g", "m1", id); !slices.Equal(got, []string{"0-9/1"}) {
		t.Fatalf("acquired %v", got)
	}
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g"
	init.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, StartOffset: 6}}}}
	if r := shareReq[*kmsg.InitializeShareGroupStateResponse](t, cl, init); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// m1's acknowledgement (in its session's last fetch) is the stale window's
	// write: fenced, and answered so.
	r := shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", -1, 0, id, 1, ackBatchOf(0, 9, 1)))
	if code := r.Topics[0].Partitions[0].AcknowledgeErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ack on the stale window: %v", kerr.ErrorForCode(code))
	}
	// The next member starts from the new state: 6..9 again.
	if got := shareFetchUntil(t, cl, "g", "m2", id); !slices.Equal(got, []string{"6-9/1"}) {
		t.Fatalf("after the reset m2 acquired %v", got)
	}
}
