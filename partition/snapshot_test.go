package partition

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestISRChangeCounts: committed shrinks and expansions are counted once, whether the
// leader learns of the commit from the AlterPartition answer or from the metadata
// first; refused changes count as failed.
func TestISRChangeCounts(t *testing.T) {
	p := newTestPartition(t, State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1})
	var c ISRChangeCounts
	p.ISRChanges = &c
	now := time.Now()

	// Followers 2 and 3 never fetched: out of sync once replica.lag.time.max.ms passed.
	prop := p.MaybeShrinkISR(now.Add(time.Minute))
	if prop == nil || !slices.Equal(prop.ISR, []int32{1}) {
		t.Fatalf("shrink proposal %+v, want ISR 1", prop)
	}
	if s := p.Snapshot(); s.Pending == nil || !s.Pending.Shrink || !slices.Equal(s.MaximalISR, []int32{1, 2, 3}) {
		t.Fatalf("snapshot while the shrink is pending: %+v", s)
	}
	// The partition-change record arrives before the answer, which is then ignored.
	if err := p.ApplyState(State{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}, now); err != nil {
		t.Fatal(err)
	}
	p.AlterPartitionDone(prop, ISRAnswer{ISR: []int32{1}, LeaderEpoch: 1, PartitionEpoch: 2}, now)
	if c.Shrinks.Load() != 1 || c.Expands.Load() != 0 || c.Failed.Load() != 0 {
		t.Fatalf("after one shrink: shrinks %d expands %d failed %d", c.Shrinks.Load(), c.Expands.Load(), c.Failed.Load())
	}

	// Broker 2 catches up: the expansion is committed by the answer.
	prop = fetchFrom(t, p, 2)
	if prop == nil {
		t.Fatal("no expansion proposed for a caught-up follower")
	}
	if s := p.Snapshot(); s.Pending == nil || s.Pending.Shrink || !slices.Equal(s.Pending.ISR, []int32{1, 2}) {
		t.Fatalf("snapshot while the expansion is pending: %+v", s.Pending)
	}
	p.AlterPartitionDone(prop, ISRAnswer{ISR: []int32{1, 2}, LeaderEpoch: 1, PartitionEpoch: 3}, now)
	if c.Expands.Load() != 1 {
		t.Fatalf("expands = %d, want 1", c.Expands.Load())
	}
	// The metadata with the same change adds nothing.
	if err := p.ApplyState(State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 3}, now); err != nil {
		t.Fatal(err)
	}

	// Broker 3's expansion is refused.
	prop = fetchFrom(t, p, 3)
	if prop == nil {
		t.Fatal("no expansion proposed for broker 3")
	}
	p.AlterPartitionDone(prop, ISRAnswer{Err: errors.New("INELIGIBLE_REPLICA"), OnError: ISRErrorRollback}, now)
	if c.Shrinks.Load() != 1 || c.Expands.Load() != 1 || c.Failed.Load() != 1 {
		t.Fatalf("at the end: shrinks %d expands %d failed %d, want 1 1 1", c.Shrinks.Load(), c.Expands.Load(), c.Failed.Load())
	}
	if s := p.Snapshot(); s.Pending != nil || !s.IsLeader || s.MinISR != 1 || len(s.Followers) != 2 || s.Followers[2].LogEndOffset != 0 {
		t.Fatalf("final snapshot %+v", s)
	}
}
