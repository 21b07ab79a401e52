package partition

import (
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/storage"
)

// newTestPartition is partition t-0 on broker 1 over a real log, in state s.
func newTestPartition(t *testing.T, s State) *Partition {
	t.Helper()
	logs, err := storage.OpenLogManager(storage.LogManagerConfig{Dir: t.TempDir(), NodeID: 1, ClusterID: "c", Logger: zerolog.Nop(),
		RetentionCheckInterval: time.Hour, FlushCheckpointInterval: time.Hour},
		func(string) storage.LogConfig { return storage.DefaultLogConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	l, err := logs.GetOrCreateLog(tp, [16]byte{1}, storage.DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := New(tp, [16]byte{1}, l, 1, zerolog.Nop())
	if err := p.ApplyState(s, time.Now()); err != nil {
		t.Fatal(err)
	}
	return p
}

// fetchFrom is follower id fetching at offset 0 of an empty log; returns any ISR
// expansion the fetch proposed.
func fetchFrom(t *testing.T, p *Partition, id int32) *Proposal {
	t.Helper()
	res, err := p.ReadForFollower(FollowerFetch{ReplicaID: id, BrokerEpoch: -1, RegisteredBrokerEpoch: -1,
		LastFetchedEpoch: -1, CurrentLeaderEpoch: -1, MaxBytes: 1 << 20, UpdateState: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return res.Proposal
}

// TestApplyStateSkipsStaleState: the leader adopted partition epoch 3 from an
// AlterPartition answer (ISR 1,2: broker 3 was fenced); a metadata image that is
// behind, with partition epoch 2 and broker 3 still in the ISR, arrives after it. As
// Kafka's makeLeader, it is skipped: the leader must not go back to an ISR holding a
// fenced broker (the HW would wait for it).
func TestApplyStateSkipsStaleState(t *testing.T) {
	p := newTestPartition(t, State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 2})
	if err := p.ApplyState(State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 3}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, stale := range []State{
		{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 2},
		{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 9},
	} {
		if err := p.ApplyState(stale, time.Now()); err != nil {
			t.Fatal(err)
		}
		if s := p.State(); !slices.Equal(s.ISR, []int32{1, 2}) || s.PartitionEpoch != 3 || s.LeaderEpoch != 4 {
			t.Fatalf("after stale state %+v: state %+v, want ISR 1,2 at leader epoch 4, partition epoch 3", stale, s)
		}
	}
}

// TestPendingISRChangeSurvivesUnrelatedTopicChange: an image in which another
// partition of the topic (or the topic's config) changed carries this partition's
// state unchanged; a pending expansion must stay pending (not be wiped, which would
// let the leader propose a second change while the first is in flight).
func TestPendingISRChangeSurvivesUnrelatedTopicChange(t *testing.T) {
	s := State{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 5}
	p := newTestPartition(t, s)
	if prop := fetchFrom(t, p, 2); prop == nil || !slices.Equal(prop.ISR, []int32{1, 2}) {
		t.Fatalf("follower 2 caught up: proposal %+v, want ISR 1,2", prop)
	}
	if err := p.ApplyState(s, time.Now()); err != nil {
		t.Fatal(err)
	}
	if prop := fetchFrom(t, p, 3); prop != nil {
		t.Fatalf("a second ISR change %v was proposed while the first is in flight", prop.ISR)
	}
	// A newer partition epoch replaces the state, and the pending change with it.
	if err := p.ApplyState(State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 6}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if prop := fetchFrom(t, p, 3); prop == nil || !slices.Equal(prop.ISR, []int32{1, 2, 3}) {
		t.Fatalf("after the newer state: proposal %+v, want ISR 1,2,3", prop)
	}
}
