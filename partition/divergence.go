package partition

// EndOffsetForEpoch is a leader-epoch cache lookup (storage.Log.EndOffsetForEpoch):
// the largest epoch ≤ epoch and where it ended; (-1, -1) when unknown.
type EndOffsetForEpoch func(epoch int32) (int32, int64)

// DivergingEpoch is the leader's check of a follower fetch, as Kafka's
// Partition.readRecords: the follower says its last batch was written in
// lastFetchedEpoch and its log ends at fetchOffset. If the leader's log has that epoch
// ending earlier (or only an older epoch), the logs diverged: the leader answers with
// the epoch and end offset instead of records, and does not update the follower's
// state. lastFetchedEpoch < 0 (a follower without epochs) skips the check.
func DivergingEpoch(fetchOffset int64, lastFetchedEpoch int32, leader EndOffsetForEpoch) (epoch int32, endOffset int64, diverged bool) {
	if lastFetchedEpoch < 0 {
		return -1, -1, false
	}
	epoch, endOffset = leader(lastFetchedEpoch)
	if epoch < lastFetchedEpoch || endOffset < fetchOffset {
		return epoch, endOffset, true
	}
	return -1, -1, false
}

// TruncationOffset is where a follower cuts its log after the leader reported a
// diverging epoch, as Kafka's AbstractFetcherThread.truncationOffset: the smallest of
// the leader's end for the epoch, the follower's own end for it, and the follower's
// LEO. A follower that does not know the leader's epoch cuts to the end of the largest
// epoch it knows below it and fetches again (the leader may report another divergence
// and the follower cuts once more). A follower with no epochs at all cuts to the
// leader's end offset.
func TruncationOffset(leaderEpoch int32, leaderEndOffset, followerLEO int64, follower EndOffsetForEpoch) int64 {
	epoch, end := follower(leaderEpoch)
	switch {
	case epoch < 0:
		return min(leaderEndOffset, followerLEO)
	case epoch != leaderEpoch:
		return min(end, followerLEO)
	default:
		return min(end, leaderEndOffset, followerLEO)
	}
}
