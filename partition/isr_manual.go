package partition

import (
	"errors"
	"fmt"
	"slices"
)

// ErrISRChangeInFlight: the leader already has an ISR change awaiting the
// controller; one change at a time, as Kafka's PendingShrinkIsr / PendingExpandIsr.
var ErrISRChangeInFlight = errors.New("partition: an ISR change is awaiting the controller")

// ShrinkISRNow proposes dropping follower id from the ISR at once, as the leader's
// periodic check (MaybeShrinkISR) does for a follower that has not caught up within
// replica.lag.time.max.ms — the same proposal, sent through the same AlterPartition
// path, only without waiting for the lag (kafkatest's ShrinkISR). The follower
// rejoins as any other: once it fetches up to the high watermark again.
// ErrNotLeaderOrFollower when this broker does not lead the partition.
func (l *Leader) ShrinkISRNow(id int32) (*Proposal, error) {
	switch {
	case l.Inflight():
		return nil, ErrISRChangeInFlight
	case id == l.localID:
		return nil, fmt.Errorf("partition: %d is the leader, which never leaves its own ISR", id)
	case !slices.Contains(l.isr, id):
		return nil, fmt.Errorf("partition: %d is not in the ISR %v", id, l.isr)
	}
	isr := slices.DeleteFunc(slices.Clone(l.isr), func(r int32) bool { return r == id })
	l.phase = isrPendingShrink
	l.proposed = l.proposal(isr)
	return l.proposed, nil
}

// ShrinkISRNow is Leader.ShrinkISRNow on the partition this broker leads; the caller
// sends the proposal (ReplicaManager.SubmitISRChange).
func (p *Partition) ShrinkISRNow(id int32) (*Proposal, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader == nil {
		return nil, ErrNotLeaderOrFollower
	}
	isr := slices.Clone(p.mu.leader.ISR())
	prop, err := p.mu.leader.ShrinkISRNow(id)
	if err != nil {
		return nil, err
	}
	p.logger.Info().Int32("replica", id).Int64("high_watermark", p.Log.HighWatermark()).
		Msgf("Shrinking ISR from %s to %s (by hand)", joinIDs(isr), joinIDs(prop.ISR))
	return prop, nil
}
