package partition

import "fmt"

// How a leader takes the controller's answer to an ISR proposal, as Kafka's
// Partition.submitAlterPartition callback with handleAlterPartitionUpdate and
// handleAlterPartitionError. An answer is for one proposal: one that is no longer
// pending (the metadata replaced the partition state meanwhile) is ignored, whatever it
// says, because the controller may have applied something else since.

// ISRErrorAction is what a leader does with a proposal the controller did not commit.
type ISRErrorAction int8

const (
	// ISRErrorRetry: an unexpected error; the same proposal is sent again.
	ISRErrorRetry ISRErrorAction = iota
	// ISRErrorRollback: OPERATION_NOT_ATTEMPTED or INELIGIBLE_REPLICA. The controller
	// says the leader's partition epoch is right and nothing was applied, so the
	// leader goes back to the committed ISR and may propose again.
	ISRErrorRollback
	// ISRErrorAwaitMetadata: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
	// UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, INVALID_REQUEST, NEW_LEADER_ELECTED.
	// The leader's view is out of date; the change stays pending (no new proposal,
	// the maximal ISR kept) until the metadata brings the partition's new state.
	ISRErrorAwaitMetadata
)

// ISRAnswer is the controller's answer to one proposal.
type ISRAnswer struct {
	// Err == nil: the controller's state, ISR at LeaderEpoch and PartitionEpoch.
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// Err is why the change was not committed; OnError says what to do about it.
	Err     error
	OnError ISRErrorAction
}

// ISROutcome is what HandleISRAnswer did.
type ISROutcome int8

const (
	// ISRIgnored: the answer is not for the pending proposal (none is pending, or a
	// newer one), or it names another leader epoch or an older partition epoch than
	// the leader's; nothing changes.
	ISRIgnored ISROutcome = iota
	// ISRCommitted: the answer's ISR and partition epoch are the committed state.
	ISRCommitted
	// ISRRolledBack: back to the committed ISR.
	ISRRolledBack
	// ISRStillPending: the change stays pending until new metadata.
	ISRStillPending
	// ISRRetry: the caller sends the same proposal again.
	ISRRetry
)

func (o ISROutcome) String() string {
	switch o {
	case ISRIgnored:
		return "ignored"
	case ISRCommitted:
		return "committed"
	case ISRRolledBack:
		return "rolled back"
	case ISRStillPending:
		return "still pending"
	case ISRRetry:
		return "retry"
	}
	return fmt.Sprintf("ISROutcome(%d)", int(o))
}

// HandleISRAnswer applies the controller's answer to prop, the proposal it was sent
// for (the pointer MaybeExpandISR or MaybeShrinkISR returned).
func (l *Leader) HandleISRAnswer(prop *Proposal, a ISRAnswer) ISROutcome {
	if prop == nil || l.proposed != prop {
		return ISRIgnored
	}
	if a.Err == nil {
		// As handleAlterPartitionUpdate: another leader epoch, or an older partition
		// epoch than ours, is out of date; the change stays pending for the metadata.
		if a.LeaderEpoch != l.leaderEpoch || a.PartitionEpoch < l.partitionEpoch {
			return ISRIgnored
		}
		l.CommitISR(a.ISR, a.PartitionEpoch)
		return ISRCommitted
	}
	switch a.OnError {
	case ISRErrorRollback:
		l.AbortISRChange()
		return ISRRolledBack
	case ISRErrorAwaitMetadata:
		return ISRStillPending
	default:
		return ISRRetry
	}
}

// Proposed is the pending proposal (nil when none).
func (l *Leader) Proposed() *Proposal { return l.proposed }

// StateIsStale reports whether the controller's state s is older than cur, the state
// a partition holds: an older leader epoch, or the same leader epoch with an older
// partition epoch (the leader adopted a newer one from an AlterPartition answer
// before its metadata image caught up). Kafka's makeLeader / makeFollower skip such a
// state.
func StateIsStale(s, cur State) bool {
	return s.LeaderEpoch < cur.LeaderEpoch || (s.LeaderEpoch == cur.LeaderEpoch && s.PartitionEpoch < cur.PartitionEpoch)
}
