package partition

import (
	"fmt"
	"slices"
)

// isrPhase is where an ISR change stands, as Kafka's PartitionState variants.
type isrPhase int8

const (
	// isrCommitted: the ISR is what the controller committed; nothing in flight.
	isrCommitted isrPhase = iota
	// isrPendingExpand: one caught-up follower was proposed; the maximal ISR already
	// counts it (a stricter HW rule if the change fails, no harm done).
	isrPendingExpand
	// isrPendingShrink: lagging followers were proposed for removal; the maximal ISR
	// still counts them, so the HW does not move until the controller agrees.
	isrPendingShrink
)

// Proposal is an ISR change the leader asks the controller to commit (AlterPartition).
type Proposal struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	// BrokerEpochs are the broker epochs of the proposed ISR's members, as the
	// followers last sent them (AlterPartition v3 NewIsrWithEpochs); -1 when unknown.
	BrokerEpochs []int64
}

// Eligibility answers whether a broker may join an ISR: registered, unfenced, not in
// controlled shutdown, and its broker epoch matching the one its fetches carry (Kafka's
// Partition.isReplicaIsrEligible with the metadata cache). The controller checks again.
type Eligibility func(brokerID int32, brokerEpoch int64) bool

// Leader is the leader-side replication state of one partition: the follower states,
// the ISR with its pending change, and the rules that move the high watermark and the
// ISR. It is pure: offsets and time come in as arguments, decisions go out as return
// values, so every rule is tested deterministically (partition/isr_test.go).
type Leader struct {
	localID        int32
	replicas       []int32 // assignment order
	leaderEpoch    int32
	partitionEpoch int32
	// epochStartOffset is the LEO when this leader epoch began (Kafka's
	// leaderEpochStartOffsetOpt): a follower joins the ISR only once it has it.
	epochStartOffset int64

	// Invariant: phase == isrCommitted ⇔ proposed == nil.
	phase isrPhase
	// isr is the committed ISR.
	isr []int32
	// maximal is isr plus a pending expansion; used for the HW and acks=all.
	maximal  []int32
	proposed *Proposal

	followers map[int32]*ReplicaState
}

// NewLeader starts leader state for a partition this broker (localID) leads: s is the
// controller's state and epochStartOffset the LEO where the leader epoch began. prev is
// the state this broker kept as leader of an earlier epoch (nil when leadership just
// moved here: every follower's offsets become unknown).
func NewLeader(localID int32, s State, epochStartOffset int64, nowMs int64, prev *Leader) *Leader {
	l := &Leader{
		localID: localID, replicas: slices.Clone(s.Replicas),
		leaderEpoch: s.LeaderEpoch, partitionEpoch: s.PartitionEpoch, epochStartOffset: epochStartOffset,
		isr: slices.Clone(s.ISR), maximal: slices.Clone(s.ISR),
		followers: map[int32]*ReplicaState{},
	}
	isNewLeader := prev == nil
	for _, r := range s.Replicas {
		if r == localID {
			continue
		}
		rs := unknownReplicaState()
		if prev != nil {
			if old := prev.followers[r]; old != nil {
				rs = *old
			}
		}
		rs.Reset(nowMs, epochStartOffset, isNewLeader, slices.Contains(s.ISR, r))
		l.followers[r] = &rs
	}
	return l
}

// ISR is the committed ISR.
func (l *Leader) ISR() []int32 { return l.isr }

// MaximalISR is the committed ISR plus a pending expansion.
func (l *Leader) MaximalISR() []int32 { return l.maximal }

// Inflight reports whether an ISR change awaits the controller.
func (l *Leader) Inflight() bool { return l.phase != isrCommitted }

// Follower returns a follower's state (nil for a broker that is not a replica).
func (l *Leader) Follower(id int32) *ReplicaState { return l.followers[id] }

// effectiveMinISR is min.insync.replicas capped at the replication factor, as Kafka's
// Partition.effectiveMinIsr.
func (l *Leader) effectiveMinISR(minISR int32) int {
	return min(int(minISR), len(l.replicas))
}

// UnderMinISR reports whether the committed ISR is smaller than the effective
// min.insync.replicas: acks=all is refused and the HW does not move.
func (l *Leader) UnderMinISR(minISR int32) bool { return len(l.isr) < l.effectiveMinISR(minISR) }

// UpdateFollowerFetchState records a follower's fetch (not called for a fetch re-read
// from the purgatory, nor for one answered with a diverging epoch).
func (l *Leader) UpdateFollowerFetchState(id int32, fetchOffset, startOffset, nowMs, leaderLEO, brokerEpoch int64) error {
	r := l.followers[id]
	if r == nil {
		return fmt.Errorf("%w: broker %d is not a replica", ErrNotLeaderOrFollower, id)
	}
	r.UpdateFetchState(fetchOffset, startOffset, nowMs, leaderLEO, brokerEpoch)
	return nil
}

// MaybeExpandISR proposes adding follower id when it is in sync — its LEO at least
// the HW and at least the start of this leader epoch (a follower that joins before it
// has the new leader's committed tail could lose it if elected) — and eligible. Nothing
// while another change is in flight. Kafka's Partition.maybeExpandIsr.
func (l *Leader) MaybeExpandISR(id int32, hw int64, eligible Eligibility) *Proposal {
	r := l.followers[id]
	if r == nil || l.Inflight() || slices.Contains(l.isr, id) {
		return nil
	}
	if r.LogEndOffset < hw || r.LogEndOffset < l.epochStartOffset {
		return nil
	}
	if eligible != nil && !eligible(id, r.BrokerEpoch) {
		return nil
	}
	isr := append(slices.Clone(l.isr), id)
	l.phase = isrPendingExpand
	l.maximal = isr
	l.proposed = l.proposal(isr)
	return l.proposed
}

// OutOfSyncReplicas lists ISR followers that are not caught up (LEO ≠ leader's and not
// caught up within maxLagMs), as Kafka's getOutOfSyncReplicas; none while a change is
// in flight.
func (l *Leader) OutOfSyncReplicas(leaderLEO, nowMs, maxLagMs int64) []int32 {
	if l.Inflight() {
		return nil
	}
	var out []int32
	for _, id := range l.isr {
		if id == l.localID {
			continue
		}
		if r := l.followers[id]; r != nil && !r.IsCaughtUp(leaderLEO, nowMs, maxLagMs) {
			out = append(out, id)
		}
	}
	return out
}

// MaybeShrinkISR proposes removing the out-of-sync followers (Kafka's maybeShrinkIsr,
// run every replica.lag.time.max.ms / 2). The maximal ISR keeps them until committed.
func (l *Leader) MaybeShrinkISR(leaderLEO, nowMs, maxLagMs int64) (*Proposal, []int32) {
	out := l.OutOfSyncReplicas(leaderLEO, nowMs, maxLagMs)
	if len(out) == 0 {
		return nil, nil
	}
	isr := slices.DeleteFunc(slices.Clone(l.isr), func(id int32) bool { return slices.Contains(out, id) })
	l.phase = isrPendingShrink
	l.proposed = l.proposal(isr)
	return l.proposed, out
}

func (l *Leader) proposal(isr []int32) *Proposal {
	p := &Proposal{LeaderEpoch: l.leaderEpoch, PartitionEpoch: l.partitionEpoch, ISR: isr}
	for _, id := range isr {
		e := int64(-1)
		if r := l.followers[id]; r != nil {
			e = r.BrokerEpoch
		}
		p.BrokerEpochs = append(p.BrokerEpochs, e)
	}
	return p
}

// CommitISR adopts the controller's answer to the proposal: the committed ISR and the
// new partition epoch. Kafka's handleAlterPartitionUpdate; the caller then recomputes
// the HW.
func (l *Leader) CommitISR(isr []int32, partitionEpoch int32) {
	l.isr = slices.Clone(isr)
	l.maximal = slices.Clone(isr)
	l.partitionEpoch = partitionEpoch
	l.phase, l.proposed = isrCommitted, nil
}

// AbortISRChange rolls back a failed proposal to the last committed ISR (for errors
// such as INELIGIBLE_REPLICA); the next fetch or shrink check may propose again.
func (l *Leader) AbortISRChange() {
	l.maximal = slices.Clone(l.isr)
	l.phase, l.proposed = isrCommitted, nil
}

// HighWatermark computes the HW the leader may move to, as Kafka's
// maybeIncrementLeaderHW: the smallest LEO among the leader and the followers that are
// in the maximal ISR, or caught up and eligible (about to join: not waiting for them
// would let the HW run ahead and the follower never join). Nothing moves while the
// committed ISR is under the effective min ISR. The result is never below currentHW:
// the leader never lowers it.
func (l *Leader) HighWatermark(leaderLEO, currentHW, nowMs, maxLagMs int64, minISR int32, eligible Eligibility) int64 {
	if l.UnderMinISR(minISR) {
		return currentHW
	}
	hw := leaderLEO
	for id, r := range l.followers {
		if r.LogEndOffset >= hw {
			continue
		}
		if slices.Contains(l.maximal, id) ||
			(r.IsCaughtUp(leaderLEO, nowMs, maxLagMs) && (eligible == nil || eligible(id, r.BrokerEpoch))) {
			hw = r.LogEndOffset
		}
	}
	return max(hw, currentHW)
}

// EnoughReplicas answers a DelayedProduce waiting for requiredOffset, as Kafka's
// checkEnoughReplicasReachOffset: done once the HW passes it; then
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR fell under min ISR meanwhile (the
// record stays in the log).
func (l *Leader) EnoughReplicas(hw, requiredOffset int64, minISR int32) (done bool, err error) {
	if hw < requiredOffset {
		return false, nil
	}
	if len(l.maximal) < l.effectiveMinISR(minISR) {
		return true, ErrNotEnoughReplicasAfterAppend
	}
	return true, nil
}
