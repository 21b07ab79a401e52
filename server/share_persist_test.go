package server

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFetchUntil sends fresh-session ShareFetches as member until one acquires
// something (the share coordinator may still be loading its partition after a
// start), and returns what it acquired.
func shareFetchUntil(t *testing.T, cl *kgo.Client, group, member string, id [16]byte) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq(group, member, 0, 500, id, 1)))
		if len(got) > 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s acquired nothing", member)
		}
	}
}

// A restarted broker resumes a share group's delivery where it stopped: records
// acknowledged before the restart are not delivered again, records acquired and not
// acknowledged are delivered again with their delivery count going on, as the state
// in __share_group_state says; ReadShareGroupState answers that state on the wire.
func TestSharePartitionStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig(dir)
	cfg.Hooks = &Hooks{ShareGroups: true}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("sq"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	id := shareTestTopic(t, cl, "sq", 1)
	// The share partition starts at the log's end (latest) once its state exists.
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "m1", 0, 0, id, 1))); len(got) != 0 {
		t.Fatalf("acquired %v from an empty log", got)
	}
	produceN(t, cl, "sq", 0, 10)
	// The first fetches may find the new state partition loading: the share
	// partition starts (at offset 0, the end when it was first asked for) once its
	// state is initialized.
	if got := shareFetchUntil(t, cl, "g", "m1", id); !slices.Equal(got, []string{"0-9/1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	// m1 accepts 0..4 (written before the answer) and holds 5..9 when the broker stops.
	ack := shareFetchReq("g", "m1", 1, 0, id, 1, ackBatchOf(0, 4, 1))
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, ack)); len(got) != 0 {
		t.Fatalf("ack fetch acquired %v", got)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := shareFetchUntil(t, cl, "g", "m2", id); !slices.Equal(got, []string{"5-9/2"}) {
		t.Fatalf("after the restart m2 acquired %v, want 5-9 delivered a second time", got)
	}

	rreq := kmsg.NewPtrReadShareGroupStateRequest()
	rreq.GroupID = "g"
	rreq.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	var p kmsg.ReadShareGroupStateResponseTopicPartition
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The acquisition of 5..9 is written in the background.
		rr := shareReq[*kmsg.ReadShareGroupStateResponse](t, cl, rreq)
		if len(rr.Topics) != 1 || len(rr.Topics[0].Partitions) != 1 {
			t.Fatalf("ReadShareGroupState: %+v", rr)
		}
		p = rr.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ReadShareGroupState: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		if len(p.StateBatches) == 1 && p.StateBatches[0].DeliveryCount == 2 || time.Now().After(deadline) {
			break
		}
	}
	want := []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{{FirstOffset: 5, LastOffset: 9, DeliveryState: 0, DeliveryCount: 2}}
	if p.StartOffset != 5 || p.StateEpoch != 0 || !slices.EqualFunc(p.StateBatches, want, func(a, b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) bool {
		return a.FirstOffset == b.FirstOffset && a.LastOffset == b.LastOffset && a.DeliveryState == b.DeliveryState && a.DeliveryCount == b.DeliveryCount
	}) {
		t.Fatalf("state: start %d epoch %d batches %+v", p.StartOffset, p.StateEpoch, p.StateBatches)
	}
}
