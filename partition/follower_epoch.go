package partition

// Follower identity (KIP-903). A follower's Fetch (v15+) carries its broker epoch in
// ReplicaState; the leader records the fetch as that follower's position only when
// the epoch is the one the follower is registered with, so that a fetch from a
// previous incarnation of the broker (or one claiming to be it) cannot move the HW or
// the ISR.

// FollowerEpochCheck decides whether a follower fetch that claims broker epoch
// claimed may update the follower's state, given the epoch the leader's metadata
// image has for that broker (registered; -1 — or 0, never an epoch: epochs are
// registration offsets — when it has none, or the broker is fenced). As Kafka's Replica.updateFetchStateOrThrow: a claimed epoch older than the
// registered one is ErrNotLeaderOrFollower (the fetch is answered with that error and
// nothing is read); -1 (a fetch before v15, which carries no epoch) and a broker
// without a live registration are accepted. Beyond Kafka, which accepts it, a claimed
// epoch newer than the registered one (the leader's image is behind the follower's
// new registration, or the epoch is made up) is read but does not update the state:
// the follower's position counts once the image has that registration.
func FollowerEpochCheck(claimed, registered int64) (update bool, err error) {
	switch {
	case claimed == -1 || registered <= 0 || claimed == registered:
		return true, nil
	case claimed < registered:
		return false, ErrNotLeaderOrFollower
	default:
		return false, nil
	}
}

// FollowerState is the leader's view of follower id (its LEO, caught-up time, broker
// epoch); false when this broker does not lead the partition or id is no follower.
func (p *Partition) FollowerState(id int32) (ReplicaState, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.leader == nil {
		return ReplicaState{}, false
	}
	r := p.mu.leader.Follower(id)
	if r == nil {
		return ReplicaState{}, false
	}
	return *r, true
}
