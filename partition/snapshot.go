package partition

import (
	"slices"
	"sync/atomic"
)

// ISRChangeCounts counts the ISR changes leaders had committed, as Kafka's
// AlterPartitionListener feeds ReplicaManager's IsrShrinksPerSec, IsrExpandsPerSec and
// FailedIsrUpdatesPerSec meters. One is shared by every partition of a broker.
type ISRChangeCounts struct {
	Shrinks atomic.Uint64
	Expands atomic.Uint64
	// Failed counts proposals the controller refused (rolled back or kept pending).
	Failed atomic.Uint64
}

// Snapshot is one partition as this broker holds it at one moment, for the status
// page and the metrics: the metadata state, the leader's ISR bookkeeping and follower
// states (when it leads), and the local log's offsets.
type Snapshot struct {
	State    State
	IsLeader bool
	// MinISR is the effective min.insync.replicas (capped at the replication factor).
	MinISR int32
	// MaximalISR is the committed ISR plus a pending expansion (leader only).
	MaximalISR []int32
	// Pending is the ISR change awaiting the controller (leader only; nil: none).
	Pending *PendingChange
	// Followers are the leader's views of its followers, by broker id (leader only).
	Followers map[int32]ReplicaState

	LogStartOffset   int64
	HighWatermark    int64
	LogEndOffset     int64
	LastStableOffset int64
}

// PendingChange is an AlterPartition the leader sent (or is about to send) and the
// controller has not answered.
type PendingChange struct {
	// Shrink: followers proposed for removal; otherwise one proposed to join.
	Shrink         bool
	ISR            []int32
	PartitionEpoch int32
}

// Snapshot reads the partition under its lock (copies: the caller may keep it).
func (p *Partition) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := Snapshot{
		State:    p.mu.state,
		IsLeader: p.mu.isLeader,
		MinISR:   min(p.mu.minISR, int32(len(p.mu.state.Replicas))),
	}
	s.State.Replicas, s.State.ISR = slices.Clone(s.State.Replicas), slices.Clone(s.State.ISR)
	if l := p.mu.leader; l != nil {
		s.MaximalISR = slices.Clone(l.maximal)
		if l.proposed != nil {
			s.Pending = &PendingChange{Shrink: l.phase == isrPendingShrink, ISR: slices.Clone(l.proposed.ISR), PartitionEpoch: l.proposed.PartitionEpoch}
		}
		s.Followers = make(map[int32]ReplicaState, len(l.followers))
		for id, r := range l.followers {
			s.Followers[id] = *r
		}
	}
	s.LogStartOffset, s.HighWatermark = p.Log.LogStartOffset(), p.Log.HighWatermark()
	s.LogEndOffset, s.LastStableOffset = p.Log.LogEndOffset(), p.Log.LastStableOffset()
	return s
}

// countISRAnswerLocked counts an answer's outcome, as Kafka's PendingShrinkIsr /
// PendingExpandIsr.notifyListener (committed) and handleAlterPartitionError (refused).
// Lock should be held.
func (p *Partition) countISRAnswerLocked(o ISROutcome, shrink bool) {
	c := p.ISRChanges
	switch {
	case c == nil || o == ISRIgnored:
	case o == ISRCommitted && shrink:
		c.Shrinks.Add(1)
	case o == ISRCommitted:
		c.Expands.Add(1)
	default:
		c.Failed.Add(1)
	}
}

// countAdoptedProposalLocked counts a pending proposal that metadata shows committed
// (the partition-change record reached this broker before the AlterPartition answer,
// which is then ignored): the same change, learned the other way. Lock should be held.
func (p *Partition) countAdoptedProposalLocked(isr []int32) {
	l := p.mu.leader
	if p.ISRChanges == nil || l == nil || l.proposed == nil || !sameMembers(l.proposed.ISR, isr) {
		return
	}
	p.countISRAnswerLocked(ISRCommitted, l.phase == isrPendingShrink)
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}
