package partition

import "fmt"

// OutOfRangeAction is what a follower does with its log after the leader answered a
// fetch with OFFSET_OUT_OF_RANGE (see OutOfRangeReset).
type OutOfRangeAction int

// The three outcomes of OutOfRangeReset.
const (
	// OutOfRangeResume: the follower's log is within the leader's; it keeps it and
	// fetches on from the offset returned (the leader's log start moved or its end
	// grew between the fetch and the question).
	OutOfRangeResume OutOfRangeAction = iota
	// OutOfRangeTruncate: the follower's log ends past the leader's (after an
	// unclean election); it is cut to the leader's end.
	OutOfRangeTruncate
	// OutOfRangeStartOver: the follower's log ends below the leader's log start
	// (it was down while retention or DeleteRecords moved it, or came back with an
	// empty disk); it is emptied and restarted at the leader's log start.
	OutOfRangeStartOver
)

func (a OutOfRangeAction) String() string {
	switch a {
	case OutOfRangeResume:
		return "resume"
	case OutOfRangeTruncate:
		return "truncate"
	case OutOfRangeStartOver:
		return "start over"
	}
	return fmt.Sprintf("OutOfRangeAction(%d)", int(a))
}

// OutOfRangeReset is Kafka's AbstractFetcherThread.fetchOffsetAndTruncate: given the
// follower's LEO and the leader's log end and log start offsets (ListOffsets latest and
// earliest, as a replica asks them), where the follower fetches from next and what
// it does to its log first. A leader end below the follower's is truncation to it;
// otherwise a leader log start above the follower's end is a fresh start there, and
// anything else fetches on from the larger of the two.
func OutOfRangeReset(followerLEO, leaderLogStart, leaderLEO int64) (OutOfRangeAction, int64) {
	switch {
	case leaderLEO < followerLEO:
		return OutOfRangeTruncate, leaderLEO
	case leaderLogStart > followerLEO:
		return OutOfRangeStartOver, leaderLogStart
	default:
		return OutOfRangeResume, max(leaderLogStart, followerLEO)
	}
}

// ResetOutOfRange applies OutOfRangeReset to the follower's log and returns the offset
// to fetch from. leaderLogStart is only needed when the leader's end is not below the
// follower's (the caller asks for it then, as Kafka does); pass it as -1 otherwise.
func (p *Partition) ResetOutOfRange(leaderLogStart, leaderLEO int64) (OutOfRangeAction, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.isLeader {
		return OutOfRangeResume, 0, ErrNotLeaderOrFollower
	}
	leo := p.Log.LogEndOffset()
	action, offset := OutOfRangeReset(leo, leaderLogStart, leaderLEO)
	switch action {
	case OutOfRangeTruncate:
		p.logger.Warn().Int64("leader_log_end_offset", leaderLEO).
			Msgf("Reset fetch offset for partition %s from %d to current leader's latest offset %d", p.TP, leo, leaderLEO)
		if err := p.Log.TruncateTo(offset); err != nil {
			return action, leo, err
		}
	case OutOfRangeStartOver:
		p.logger.Warn().Int64("leader_log_start_offset", leaderLogStart).
			Msgf("Reset fetch offset for partition %s from %d to current leader's start offset %d", p.TP, leo, leaderLogStart)
		if err := p.Log.TruncateFullyAndStartAt(offset); err != nil {
			return action, leo, err
		}
	}
	return action, offset, nil
}
