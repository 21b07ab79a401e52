package partition

import (
	"errors"
	"slices"
	"testing"
)

const lagMs = 5000 // replica.lag.time.max.ms in the reference text's experiments

// cluster is a scripted leader (broker 1) with followers 2 and 3, its LEO and HW, and a
// clock, for replaying the reference walkthrough's experiments step by step.
type cluster struct {
	t      *testing.T
	l      *Leader
	leo    int64
	hw     int64
	now    int64
	minISR int32
	// eligible answers for the controller's view of brokers (nil: all eligible).
	eligible Eligibility
}

func newCluster(t *testing.T, minISR int32) *cluster {
	c := &cluster{t: t, now: 1_000_000, minISR: minISR}
	c.l = NewLeader(1, State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, 0, c.now, nil)
	return c
}

func (c *cluster) produce(n int64) { c.leo += n; c.recomputeHW() }

func (c *cluster) recomputeHW() {
	c.hw = c.l.HighWatermark(c.leo, c.hw, c.now, lagMs, c.minISR, c.eligible)
}

// fetch is follower id fetching at offset (its LEO); returns any ISR expansion proposed.
func (c *cluster) fetch(id int32, offset int64) *Proposal {
	c.t.Helper()
	if err := c.l.UpdateFollowerFetchState(id, offset, 0, c.now, c.leo, 7); err != nil {
		c.t.Fatal(err)
	}
	p := c.l.MaybeExpandISR(id, c.hw, nil)
	c.recomputeHW()
	return p
}

func (c *cluster) wantHW(hw int64) {
	c.t.Helper()
	if c.hw != hw {
		c.t.Fatalf("HW %d, want %d", c.hw, hw)
	}
}

func (c *cluster) wantISR(isr ...int32) {
	c.t.Helper()
	if !slices.Equal(c.l.ISR(), isr) {
		c.t.Fatalf("ISR %v, want %v", c.l.ISR(), isr)
	}
}

// TestFrozenFollower replays experiment 1 of the reference text: a frozen follower of
// an idle partition stays in the ISR; with writes it is dropped after the lag time,
// an acks=all record waits for that, and the HW then jumps; after SIGCONT it rejoins.
func TestFrozenFollower(t *testing.T) {
	c := newCluster(t, 1)
	c.produce(10)
	c.fetch(2, 10)
	c.fetch(3, 10)
	c.wantHW(10)

	// Broker 3 frozen 12 s, no new records: still caught up (LEO equal to the leader's).
	c.now += 12_000
	if p, out := c.l.MaybeShrinkISR(c.leo, c.now, lagMs); p != nil {
		t.Fatalf("idle partition shrank the ISR, dropping %v", out)
	}
	c.wantISR(1, 2, 3)

	// Warm-up records replicated by both; then broker 3 freezes again.
	c.produce(2)
	c.fetch(2, 12)
	c.fetch(3, 12)
	c.wantHW(12)
	frozenAt := c.now

	// 5 acks=1 records: broker 2 keeps up, broker 3 does not; the HW stays at 12.
	c.produce(5)
	c.fetch(2, 17)
	c.wantHW(12)
	// An acks=all record at offset 17 needs HW ≥ 18.
	c.produce(1)
	c.fetch(2, 18)
	c.wantHW(12)
	if done, _ := c.l.EnoughReplicas(c.hw, 18, c.minISR); done {
		t.Fatal("acks=all done while a frozen ISR member lacks the record")
	}

	// Shrink checks run every lag/2 = 2.5 s; broker 3 is out only once more than 5 s
	// passed since it last caught up.
	var proposal *Proposal
	var out []int32
	for c.now = frozenAt; proposal == nil; c.now += lagMs / 2 {
		c.fetch(2, 18) // broker 2 keeps fetching
		proposal, out = c.l.MaybeShrinkISR(c.leo, c.now, lagMs)
	}
	waited := c.now - lagMs/2 - frozenAt
	if waited <= lagMs || waited > lagMs*3/2 {
		t.Fatalf("ISR shrank %d ms after the freeze, want within (5000, 7500]", waited)
	}
	if !slices.Equal(out, []int32{3}) || !slices.Equal(proposal.ISR, []int32{1, 2}) {
		t.Fatalf("shrink proposal %v dropping %v, want ISR 1,2 dropping 3", proposal.ISR, out)
	}
	// Pending: the maximal ISR still holds 3, so neither the HW nor acks=all move.
	c.recomputeHW()
	c.wantHW(12)
	c.l.CommitISR(proposal.ISR, proposal.PartitionEpoch+1)
	c.recomputeHW()
	c.wantISR(1, 2)
	c.wantHW(18)
	if done, err := c.l.EnoughReplicas(c.hw, 18, c.minISR); !done || err != nil {
		t.Fatalf("acks=all after the shrink: done %v err %v", done, err)
	}

	// SIGCONT: broker 3 fetches from 12, then catches up and is proposed back.
	if p := c.fetch(3, 12); p != nil {
		t.Fatalf("follower behind the HW proposed for the ISR: %v", p.ISR)
	}
	p := c.fetch(3, 18)
	if p == nil || !slices.Equal(p.ISR, []int32{1, 2, 3}) || p.BrokerEpochs[2] != 7 {
		t.Fatalf("caught-up follower not proposed back: %+v", p)
	}
	c.l.CommitISR(p.ISR, p.PartitionEpoch+1)
	c.wantISR(1, 2, 3)
	c.wantHW(18)
}

// TestMinISR replays experiment 2: min.insync.replicas=3 with one broker gone refuses
// acks=all, freezes the HW, and answers a waiting acks=all with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func TestMinISR(t *testing.T) {
	c := newCluster(t, 3)
	c.produce(1)
	c.fetch(2, 1)
	c.fetch(3, 1)
	c.wantHW(1)
	c.produce(1) // an acks=all in flight at offset 1
	// SIGTERM on broker 3: controlled shutdown takes it out of the ISR, and a broker
	// shutting down is not eligible to rejoin.
	c.l.CommitISR([]int32{1, 2}, 1)
	c.eligible = func(id int32, _ int64) bool { return id != 3 }
	if !c.l.UnderMinISR(c.minISR) {
		t.Fatal("ISR 1,2 with min ISR 3 is not under min ISR")
	}
	c.fetch(2, 2)
	c.wantHW(1)  // the HW does not move under min ISR
	c.minISR = 2 // kafka-configs --alter min.insync.replicas=2
	c.recomputeHW()
	c.wantHW(2)
	if done, err := c.l.EnoughReplicas(c.hw, 2, 3); !done || !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("waiting acks=all after the ISR shrank under min ISR: done %v err %v", done, err)
	}
}

func TestHighWatermarkWaitsForCaughtUpFollowerAboutToJoin(t *testing.T) {
	c := newCluster(t, 1)
	c.l = NewLeader(1, State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1}, 0, c.now, nil)
	c.produce(10)
	c.fetch(2, 10)
	c.wantHW(10)
	// Broker 3 (outside the ISR) fetched recently and is caught up in time: the HW
	// waits for it rather than running ahead.
	c.l.followers[3].LastCaughtUpTimeMs = c.now
	c.l.followers[3].LogEndOffset = 12
	c.produce(5)
	c.fetch(2, 15)
	c.wantHW(12)
	// Once it lags beyond the lag time, it no longer holds the HW back.
	c.now += lagMs + 1
	c.recomputeHW()
	c.wantHW(15)
}

func TestHighWatermarkNeverGoesDown(t *testing.T) {
	c := newCluster(t, 1)
	c.produce(10)
	c.fetch(2, 10)
	c.fetch(3, 10)
	c.wantHW(10)
	// A new epoch for the same leader: follower offsets stay, but an expansion to a
	// lower LEO (a fetch reporting an older offset) must not lower the HW.
	c.l.followers[3].LogEndOffset = 4
	c.recomputeHW()
	c.wantHW(10)
}

func TestOneChangeInFlight(t *testing.T) {
	c := newCluster(t, 1)
	c.l.CommitISR([]int32{1}, 1)
	c.produce(3)
	p := c.fetch(2, 3)
	if p == nil {
		t.Fatal("no expansion for a caught-up follower")
	}
	if q := c.fetch(3, 3); q != nil {
		t.Fatalf("second change proposed while one is in flight: %v", q.ISR)
	}
	if !slices.Equal(c.l.MaximalISR(), []int32{1, 2}) {
		t.Fatalf("maximal ISR %v during a pending expansion, want 1,2", c.l.MaximalISR())
	}
	c.l.AbortISRChange() // e.g. INELIGIBLE_REPLICA
	c.wantISR(1)
	if !slices.Equal(c.l.MaximalISR(), []int32{1}) {
		t.Fatalf("maximal ISR %v after rollback, want 1", c.l.MaximalISR())
	}
	if q := c.fetch(3, 3); q == nil {
		t.Fatal("no new proposal after the rollback")
	}
}

func TestExpansionNeedsEpochStartOffsetAndEligibility(t *testing.T) {
	l := NewLeader(1, State{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3}, 20, 0, nil)
	_ = l.UpdateFollowerFetchState(2, 15, 0, 0, 25, 9)
	if p := l.MaybeExpandISR(2, 10, nil); p != nil {
		t.Fatal("follower below the leader epoch's start offset proposed for the ISR")
	}
	_ = l.UpdateFollowerFetchState(2, 20, 0, 0, 25, 9)
	if p := l.MaybeExpandISR(2, 10, func(int32, int64) bool { return false }); p != nil {
		t.Fatal("ineligible (fenced or shutting down) follower proposed for the ISR")
	}
	if p := l.MaybeExpandISR(2, 10, func(id int32, epoch int64) bool { return epoch == 9 }); p == nil || p.LeaderEpoch != 3 {
		t.Fatalf("eligible follower at the epoch start not proposed: %+v", p)
	}
}

func TestLastCaughtUpTimeThreeWayRule(t *testing.T) {
	r := unknownReplicaState()
	r.UpdateFetchState(10, 0, 1000, 10, 1) // at the leader's LEO: caught up now
	if r.LastCaughtUpTimeMs != 1000 {
		t.Fatalf("caught up at %d, want 1000", r.LastCaughtUpTimeMs)
	}
	r.UpdateFetchState(10, 0, 2000, 12, 1) // behind the new end, but reached the previous end (10)
	if r.LastCaughtUpTimeMs != 1000 {
		t.Fatalf("caught up at %d, want 1000 (the previous fetch's time)", r.LastCaughtUpTimeMs)
	}
	r.UpdateFetchState(12, 0, 3000, 14, 1) // reached the previous end (12): caught up as of 2000
	if r.LastCaughtUpTimeMs != 2000 {
		t.Fatalf("caught up at %d, want 2000", r.LastCaughtUpTimeMs)
	}
	r.UpdateFetchState(13, 0, 4000, 20, 1) // short of the previous end (14): unchanged
	if r.LastCaughtUpTimeMs != 2000 {
		t.Fatalf("caught up at %d, want 2000", r.LastCaughtUpTimeMs)
	}
}
