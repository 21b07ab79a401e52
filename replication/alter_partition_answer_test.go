package replication

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
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
