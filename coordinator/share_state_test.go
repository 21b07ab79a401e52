package coordinator

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/share"
)

func newTestShareCoordinator(t *testing.T, log *memLog) *ShareCoordinator {
	t.Helper()
	md := fakeMetadata{ShareStateTopic: 1, "t": 3}
	c := NewShareCoordinator(1, log, md, nil, zerolog.Nop())
	t.Cleanup(c.Close)
	c.BecomeLeader(0, 0)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Loaded(0) {
		if time.Now().After(deadline) {
			t.Fatal("share state partition never loaded")
		}
		time.Sleep(time.Millisecond) // polling the loader goroutine, bounded by the deadline
	}
	return c
}

func writeReq(group string, topic [16]byte, part, stateEpoch, leaderEpoch int32, start int64, batches ...share.StateBatch) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = group
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = part, stateEpoch, leaderEpoch, start
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, int8(b.State), b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
	return req
}

func readState(c *ShareCoordinator, group string, topic [16]byte, part, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: part, LeaderEpoch: leaderEpoch}}}}
	return c.Read(req, 0).Topics[0].Partitions[0]
}

func initState(c *ShareCoordinator, group string, topic [16]byte, part, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: part, StateEpoch: stateEpoch, StartOffset: start}}}}
	return c.Initialize(req, 0).Topics[0].Partitions[0].ErrorCode
}

// The share coordinator keeps what it was told across a reload of its partition
// (another broker becoming leader reads the same log), and fences stale writers.
func TestShareCoordinatorWriteReadReload(t *testing.T) {
	log := newMemLog()
	c := newTestShareCoordinator(t, log)
	topic := fakeMetadata{}.TopicID("t")

	if p := readState(c, "g", topic, 1, 0); p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("read of an uninitialized state: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if code := c.Write(writeReq("g", topic, 1, 0, 0, 5), 0).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("write of an uninitialized state: %v", kerr.ErrorForCode(code))
	}
	if code := initState(c, "g", topic, 1, 0, 10); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	w := writeReq("g", topic, 1, 0, 4, 12,
		share.StateBatch{FirstOffset: 12, LastOffset: 14, State: share.Acknowledged, DeliveryCount: 1},
		share.StateBatch{FirstOffset: 15, LastOffset: 19, State: share.Available, DeliveryCount: 2})
	if code := c.Write(w, 0).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	// A partial write is merged into the state.
	w = writeReq("g", topic, 1, 0, 4, -1, share.StateBatch{FirstOffset: 16, LastOffset: 16, State: share.Archived, DeliveryCount: 3})
	if code := c.Write(w, 0).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	// A deposed leader (older leader epoch) is fenced, so is an older state epoch.
	if code := c.Write(writeReq("g", topic, 1, 0, 3, 20), 0).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("stale leader epoch: %v", kerr.ErrorForCode(code))
	}
	if code := initState(c, "g", topic, 1, 1, 10); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := c.Write(writeReq("g", topic, 1, 0, 4, 20), 0).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedStateEpoch.Code {
		t.Fatalf("stale state epoch: %v", kerr.ErrorForCode(code))
	}
	if code := initState(c, "g", topic, 1, 0, 10); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("initialize with an older state epoch: %v", kerr.ErrorForCode(code))
	}
	w = writeReq("g", topic, 1, 1, 4, 12,
		share.StateBatch{FirstOffset: 12, LastOffset: 14, State: share.Acknowledged, DeliveryCount: 1},
		share.StateBatch{FirstOffset: 15, LastOffset: 15, State: share.Available, DeliveryCount: 2})
	c.Write(w, 0)
	w = writeReq("g", topic, 1, 1, 4, -1, share.StateBatch{FirstOffset: 16, LastOffset: 16, State: share.Archived, DeliveryCount: 3})
	c.Write(w, 0)

	want := []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
		{FirstOffset: 12, LastOffset: 14, DeliveryState: 2, DeliveryCount: 1},
		{FirstOffset: 15, LastOffset: 15, DeliveryState: 0, DeliveryCount: 2},
		{FirstOffset: 16, LastOffset: 16, DeliveryState: 4, DeliveryCount: 3},
	}
	check := func(c *ShareCoordinator) {
		t.Helper()
		p := readState(c, "g", topic, 1, 4)
		if p.ErrorCode != 0 || p.StateEpoch != 1 || p.StartOffset != 12 || !reflect.DeepEqual(p.StateBatches, want) {
			t.Fatalf("read %v epoch %d start %d batches %+v", kerr.ErrorForCode(p.ErrorCode), p.StateEpoch, p.StartOffset, p.StateBatches)
		}
	}
	check(c)
	c.Close()
	check(newTestShareCoordinator(t, log))

	// Delete tombstones the state; a reload keeps it deleted.
	c2 := newTestShareCoordinator(t, log)
	dr := kmsg.NewPtrDeleteShareGroupStateRequest()
	dr.GroupID = "g"
	dr.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 1}}}}
	if code := c2.Delete(dr, 0).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if p := readState(newTestShareCoordinator(t, log), "g", topic, 1, 4); p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("read after delete: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// A partition the topic lacks is UNKNOWN_TOPIC_OR_PARTITION.
	if p := readState(c2, "g", topic, 7, 0); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("read of partition 7: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}

func TestMergeStateBatches(t *testing.T) {
	b := func(f, l int64, s share.State, n int16) share.StateBatch {
		return share.StateBatch{FirstOffset: f, LastOffset: l, State: s, DeliveryCount: n}
	}
	for _, tc := range []struct {
		name         string
		base, update []share.StateBatch
		start        int64
		want         []share.StateBatch
	}{
		{"disjoint", []share.StateBatch{b(0, 4, 0, 1)}, []share.StateBatch{b(5, 9, 2, 1)}, 0,
			[]share.StateBatch{b(0, 4, 0, 1), b(5, 9, 2, 1)}},
		{"inside", []share.StateBatch{b(0, 9, 0, 1)}, []share.StateBatch{b(3, 4, 2, 1)}, 0,
			[]share.StateBatch{b(0, 2, 0, 1), b(3, 4, 2, 1), b(5, 9, 0, 1)}},
		{"covering two", []share.StateBatch{b(0, 4, 0, 1), b(5, 9, 4, 2)}, []share.StateBatch{b(3, 6, 2, 1)}, 0,
			[]share.StateBatch{b(0, 2, 0, 1), b(3, 6, 2, 1), b(7, 9, 4, 2)}},
		{"below start", []share.StateBatch{b(0, 9, 0, 1)}, []share.StateBatch{b(2, 3, 2, 1)}, 3,
			[]share.StateBatch{b(3, 3, 2, 1), b(4, 9, 0, 1)}},
		{"merged equal neighbours", []share.StateBatch{b(0, 4, 2, 1)}, []share.StateBatch{b(5, 6, 2, 1)}, 0,
			[]share.StateBatch{b(0, 6, 2, 1)}},
		{"update to the last offset", []share.StateBatch{b(0, 10, 0, 1)}, []share.StateBatch{b(5, math.MaxInt64, 2, 1)}, 0,
			[]share.StateBatch{b(0, 4, 0, 1), b(5, math.MaxInt64, 2, 1)}},
		{"base to the last offset", []share.StateBatch{b(0, math.MaxInt64, 0, 1)}, []share.StateBatch{b(5, 6, 2, 1)}, 0,
			[]share.StateBatch{b(0, 4, 0, 1), b(5, 6, 2, 1), b(7, math.MaxInt64, 0, 1)}},
		{"overlapping update", nil, []share.StateBatch{b(5, 9, 2, 1), b(0, 6, 0, 1)}, 0,
			[]share.StateBatch{b(0, 6, 0, 1), b(7, 9, 2, 1)}},
	} {
		if got := mergeStateBatches(tc.base, tc.update, tc.start); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Kafka's partitioning of share-state keys: abs(String.hashCode) % n, as
// ShareCoordinatorService.partitionFor.
func TestSharePartitionFor(t *testing.T) {
	// "polygenelubricants".hashCode() is Integer.MIN_VALUE: Utils.abs makes it 0.
	if h := javaStringHash("polygenelubricants"); h != -1<<31 {
		t.Fatalf("hash %d", h)
	}
	if got := SharePartitionFor("polygenelubricants", 50); got != 0 {
		t.Fatalf("MIN_VALUE hash: partition %d", got)
	}
	// "g:AAAAAAAAAAAAAAAAAAAAAA:0".hashCode() is negative: abs, not a masked sign bit.
	k := ShareStateKey{Group: "g", Partition: 0}.CoordinatorKey()
	if k != "g:AAAAAAAAAAAAAAAAAAAAAA:0" {
		t.Fatalf("coordinator key %q", k)
	}
	h := javaStringHash(k)
	want := h
	if want < 0 {
		want = -want
	}
	if got := SharePartitionFor(k, 50); got != want%50 {
		t.Fatalf("partition %d, want %d", got, want%50)
	}
}
