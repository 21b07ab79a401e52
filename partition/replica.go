package partition

// ReplicaState is what a leader knows of one follower, as Kafka's
// org.apache.kafka.server.replica.ReplicaState. The leader learns it only from the
// follower's fetches: the fetch offset is the follower's LEO (there is no separate
// acknowledgement), so LogEndOffset can be too low, never too high, within an epoch.
type ReplicaState struct {
	// LogStartOffset and LogEndOffset as of the last fetch; -1 when unknown (a new
	// leader starts every follower at unknown).
	LogStartOffset int64
	LogEndOffset   int64
	// LastFetchLeaderLogEndOffset is the leader's LEO when the last fetch arrived.
	LastFetchLeaderLogEndOffset int64
	// LastFetchTimeMs is when the last fetch arrived.
	LastFetchTimeMs int64
	// LastCaughtUpTimeMs is the last time the follower was known to have everything
	// the leader had (see UpdateFetchState).
	LastCaughtUpTimeMs int64
	// BrokerEpoch is the broker epoch the follower sent with its last fetch (-1: none).
	BrokerEpoch int64
}

// unknownReplicaState is a follower the leader has not heard from.
func unknownReplicaState() ReplicaState {
	return ReplicaState{LogStartOffset: -1, LogEndOffset: -1, LastFetchLeaderLogEndOffset: -1, BrokerEpoch: -1}
}

// UpdateFetchState records a fetch, as Kafka's Replica.updateFetchStateOrThrow. The
// three-way rule for lastCaughtUpTimeMs:
//   - the fetch reached the leader's current LEO: caught up now;
//   - it reached the leader's LEO as of the previous fetch: caught up as of that
//     fetch (under a steady trickle of small produces a follower is always a little
//     behind the current end, yet keeps up);
//   - otherwise unchanged.
func (r *ReplicaState) UpdateFetchState(fetchOffset, startOffset, fetchTimeMs, leaderEndOffset, brokerEpoch int64) {
	switch {
	case fetchOffset >= leaderEndOffset:
		r.LastCaughtUpTimeMs = max(r.LastCaughtUpTimeMs, fetchTimeMs)
	case fetchOffset >= r.LastFetchLeaderLogEndOffset:
		r.LastCaughtUpTimeMs = max(r.LastCaughtUpTimeMs, r.LastFetchTimeMs)
	}
	r.LogStartOffset = startOffset
	r.LogEndOffset = fetchOffset
	r.LastFetchLeaderLogEndOffset = leaderEndOffset
	r.LastFetchTimeMs = fetchTimeMs
	r.BrokerEpoch = brokerEpoch
}

// IsCaughtUp is Kafka's ReplicaState.isCaughtUp: the follower has the leader's LEO, or
// caught up within the last maxLagMs. Only time counts, never a number of records; a
// frozen follower of a partition that gets no writes stays caught up.
func (r *ReplicaState) IsCaughtUp(leaderEndOffset, nowMs, maxLagMs int64) bool {
	return leaderEndOffset == r.LogEndOffset || nowMs-r.LastCaughtUpTimeMs <= maxLagMs
}

// Reset prepares the state when this broker becomes (or stays) leader with a new
// epoch, as Kafka's Replica.resetReplicaState: ISR members count as caught up now so
// they are not dropped at once; others at 0 so they do not hold the HW back. A new
// leader forgets the follower's offsets (it must hear them again).
func (r *ReplicaState) Reset(nowMs, leaderEndOffset int64, isNewLeader, inSync bool) {
	caughtUp := int64(0)
	if inSync {
		caughtUp = nowMs
	}
	if isNewLeader {
		*r = unknownReplicaState()
		r.LastCaughtUpTimeMs = caughtUp
		return
	}
	r.LastFetchLeaderLogEndOffset = leaderEndOffset
	r.LastFetchTimeMs = caughtUp
	r.LastCaughtUpTimeMs = caughtUp
}
