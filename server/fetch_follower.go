package server

// The leader's side of replication: a Fetch whose replica id is a broker (>= 0) is a
// follower's. It reads to the log end rather than the HW, is checked for divergence
// with lastFetchedEpoch, and — once per request, not when a long poll is re-read —
// records the fetch offset as the follower's LEO, which may expand the ISR and move
// the HW (waking acks=all produces). As Kafka's Partition.fetchRecords with
// isFromFollower.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// followerInfo is what a follower's fetch says about the follower.
type followerInfo struct {
	replicaID   int32
	brokerEpoch int64
	// firstRead is true until the request's first read: only that one updates the
	// follower's state.
	firstRead bool
}

// followerOf returns the follower a fetch comes from, or nil for a consumer.
func followerOf(req *kmsg.FetchRequest) *followerInfo {
	id, epoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		id, epoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	if id < 0 {
		return nil
	}
	return &followerInfo{replicaID: id, brokerEpoch: epoch, firstRead: true}
}

// readForFollower reads one partition for a follower into rd and returns an error
// code. An ISR expansion the fetch makes possible goes to the AlterPartition manager;
// a moved HW wakes the produces waiting on it.
func (b *Broker) readForFollower(plan *fetchPlan, p *partition.Partition, cp *cachedPartition, rd *partRead, maxBytes int32, minOne bool) int16 {
	f := plan.follower
	registered := int64(-1)
	if br, ok := b.ctl.Image().Brokers[f.replicaID]; ok && !br.Fenced {
		registered = br.Epoch
	}
	res, err := p.ReadForFollower(partition.FollowerFetch{
		ReplicaID: f.replicaID, BrokerEpoch: f.brokerEpoch, RegisteredBrokerEpoch: registered, FetchOffset: cp.fetchOffset,
		LastFetchedEpoch: cp.lastFetchedEpoch, LogStartOffset: cp.replicaLogStart,
		CurrentLeaderEpoch: cp.currentLeaderEpoch, MaxBytes: maxBytes, MinOneMessage: minOne,
		UpdateState: f.firstRead,
	}, b.cfg.Now())
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			// Beyond Kafka (which answers -1 here): the real log start and HW, so the
			// answer says which way the follower is out.
			rd.hw, rd.lso, rd.logStart = p.HighWatermark(), p.Log.LastStableOffset(), p.Log.LogStartOffset()
		}
		return errorCode(err)
	}
	rd.hw, rd.lso, rd.logStart = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	rd.slice = res.Slice
	b.maybeLeaderThrottle(p, f.replicaID, rd)
	rd.diverged, rd.divergingEpoch, rd.divergingEnd = res.Diverged, res.DivergingEpoch, res.DivergingEndOffset
	if res.Proposal != nil {
		b.rm.SubmitISRChange(p, res.Proposal)
	}
	if res.HWMoved {
		b.rm.Purgatory.CheckAndComplete(storage.TopicPartition{Topic: p.TP.Topic, Partition: p.TP.Partition})
	}
	return 0
}

// maybeLeaderThrottle applies the leader side of the replication throttles
// (replication/throttle.go, Kafka's ReplicaManager.shouldLeaderThrottle): a throttled
// partition read for a follower outside the ISR while the leader's rate is exceeded is
// answered without records (the fetch still counted as the follower's position);
// otherwise what a throttled partition sends counts toward the rate.
func (b *Broker) maybeLeaderThrottle(p *partition.Partition, replica int32, rd *partRead) {
	th := b.rm.Throttle
	if th == nil || !th.LeaderThrottled(p.TP) {
		return
	}
	now := b.cfg.Now()
	if !slices.Contains(p.State().ISR, replica) && th.Leader.Exceeded(now) {
		rd.slice = storage.FileSlice{}
		return
	}
	th.Leader.Record(rd.slice.Len, now)
}
