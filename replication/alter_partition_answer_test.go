package replication

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/partition"
)

// answering is an AlterPartition sender that answers every partition with
// answer(request partition) after release is closed (or at once when nil) and counts
// the requests.
func answering(release <-chan struct{}, n *atomic.Int32, answer func(rp kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition) AlterPartitionSender {
	return func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		n.Add(1)
		if release != nil {
			<-release
		}
		resp := kmsg.NewPtrAlterPartitionResponse()
		for _, rt := range req.Topics {
			t := kmsg.NewAlterPartitionResponseTopic()
			t.Topic, t.TopidID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				t.Partitions = append(t.Partitions, answer(rp))
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
}

// TestAlterPartitionAnswerForReplacedStateIgnored: while the leader's expansion to
// 1,2 is in flight, the metadata brings partition epoch 1 with ISR 1,3 (the
// controller changed the partition meanwhile); the answer that then arrives, for the
// replaced proposal and an older partition epoch, is ignored (Kafka's
// submitAlterPartition callback: partitionState != proposedIsrState).
func TestAlterPartitionAnswerForReplacedStateIgnored(t *testing.T) {
	ps := leaderPartitions(t, 2)
	p := ps[0]
	release := make(chan struct{})
	var reqs atomic.Int32
	send := answering(release, &reqs, func(rp kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
		r := kmsg.NewAlterPartitionResponseTopicPartition()
		r.Partition, r.ISR, r.LeaderEpoch, r.PartitionEpoch = rp.Partition, rp.NewISR, rp.LeaderEpoch, rp.PartitionEpoch
		return r
	})
	m := NewAlterPartitionManager(1, func() int64 { return 5 }, send, nil, zerolog.Nop())
	prop := proposeExpansion(t, p, 2, 9)
	if prop == nil || !m.Submit(p, [16]byte{1}, prop) {
		t.Fatal("no expansion submitted")
	}
	waitFor(t, 5*time.Second, func() bool { return reqs.Load() == 1 })
	// A second partition's change waits for the first request: once it goes out, the
	// first request's answers have been applied.
	if !m.Submit(ps[1], [16]byte{1}, proposeExpansion(t, ps[1], 2, 9)) {
		t.Fatal("second partition's change refused")
	}
	if err := p.ApplyState(partition.State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, Leader: 1, PartitionEpoch: 1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, 5*time.Second, func() bool { return reqs.Load() == 2 })
	if s := p.State(); !slices.Equal(s.ISR, []int32{1, 3}) || s.PartitionEpoch != 1 {
		t.Fatalf("the answer to a replaced proposal was applied: state %+v, want ISR 1,3 at partition epoch 1", s)
	}
}

// TestAlterPartitionErrors: what the leader does when the controller refuses its
// expansion to 1,2, as Kafka's Partition.handleAlterPartitionError: INELIGIBLE_REPLICA
// and OPERATION_NOT_ATTEMPTED roll back (the next fetch may propose again); the errors
// that mean the leader's view is out of date keep the change pending — no new proposal
// — until new metadata arrives; anything else is retried.
func TestAlterPartitionErrors(t *testing.T) {
	for _, tc := range []struct {
		err  *kerr.Error
		want string // "rollback", "pending", "retry"
	}{
		{kerr.IneligibleReplica, "rollback"},
		{kerr.OperationNotAttempted, "rollback"},
		{kerr.FencedLeaderEpoch, "pending"},
		{kerr.InvalidUpdateVersion, "pending"},
		{kerr.UnknownTopicOrPartition, "pending"},
		{kerr.UnknownTopicID, "pending"},
		{kerr.UnknownServerError, "retry"},
		{kerr.NotController, "retry"},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			ps := leaderPartitions(t, 2)
			p := ps[0]
			release := make(chan struct{})
			var reqs, failed atomic.Int32
			send := answering(release, &reqs, func(rp kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
				r := kmsg.NewAlterPartitionResponseTopicPartition()
				r.Partition, r.ISR, r.LeaderEpoch, r.PartitionEpoch = rp.Partition, rp.NewISR, rp.LeaderEpoch, rp.PartitionEpoch+1
				if rp.Partition == 0 && failed.Add(1) == 1 {
					r.ErrorCode, r.ISR, r.PartitionEpoch = tc.err.Code, nil, 0
				}
				return r
			})
			m := NewAlterPartitionManager(1, func() int64 { return 5 }, send, nil, zerolog.Nop())
			if prop := proposeExpansion(t, p, 2, 9); prop == nil || !m.Submit(p, [16]byte{1}, prop) {
				t.Fatal("no expansion submitted")
			}
			waitFor(t, 5*time.Second, func() bool { return reqs.Load() == 1 })
			if !m.Submit(ps[1], [16]byte{1}, proposeExpansion(t, ps[1], 2, 9)) {
				t.Fatal("second partition's change refused")
			}
			close(release)
			waitFor(t, 5*time.Second, func() bool { return reqs.Load() >= 2 })
			switch tc.want {
			case "rollback":
				if !slices.Equal(p.State().ISR, []int32{1}) {
					t.Fatalf("ISR %v after a rollback", p.State().ISR)
				}
				if prop := proposeExpansion(t, p, 2, 9); prop == nil {
					t.Fatal("no new proposal after the rollback")
				}
			case "pending":
				if prop := proposeExpansion(t, p, 2, 9); prop != nil {
					t.Fatalf("a new proposal %v while the refused change should stay pending", prop.ISR)
				}
				// New metadata replaces the pending change.
				if err := p.ApplyState(partition.State{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}, time.Now()); err != nil {
					t.Fatal(err)
				}
				if prop := proposeExpansion(t, p, 2, 9); prop == nil {
					t.Fatal("no new proposal after new metadata")
				}
			case "retry":
				waitFor(t, 5*time.Second, func() bool { return slices.Equal(p.State().ISR, []int32{1, 2}) })
				if failed.Load() != 2 {
					t.Fatalf("partition 0 was sent %d times, want 2", failed.Load())
				}
			}
		})
	}
}
