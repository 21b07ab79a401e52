package partition

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestReassignmentAddsFollower: a reassignment adds broker 3 in the same leader
// epoch (only the partition epoch moves); the leader must take its fetches and let
// it join the ISR once caught up, then forget broker 2 when it leaves the assignment.
func TestReassignmentAddsFollower(t *testing.T) {
	p := newTestPartition(t, State{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 2})
	_, err := p.ReadForFollower(FollowerFetch{ReplicaID: 3, BrokerEpoch: -1, RegisteredBrokerEpoch: -1,
		LastFetchedEpoch: -1, CurrentLeaderEpoch: -1, MaxBytes: 1 << 20, UpdateState: true}, time.Now())
	if !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("fetch from a non-replica: %v, want ErrNotLeaderOrFollower", err)
	}
	if err := p.ApplyState(State{Replicas: []int32{2, 3, 1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 3}, time.Now()); err != nil {
		t.Fatal(err)
	}
	prop := fetchFrom(t, p, 3)
	if prop == nil || !slices.Contains(prop.ISR, 3) {
		t.Fatalf("caught-up adding replica proposed %+v, want an ISR with 3", prop)
	}
	if err := p.ApplyState(State{Replicas: []int32{1, 3}, ISR: []int32{1, 3}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 4}, time.Now()); err != nil {
		t.Fatal(err)
	}
	p.mu.RLock()
	gone := p.mu.leader.Follower(2) == nil && p.mu.leader.Follower(3) != nil
	p.mu.RUnlock()
	if !gone {
		t.Fatal("the leader still tracks broker 2 (or lost 3) after the assignment changed")
	}
}
