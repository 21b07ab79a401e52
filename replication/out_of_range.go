package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOutOfRange is Kafka's AbstractFetcherThread.handleOutOfRangeError: the leader
// does not have the offset the follower fetched from, so the follower asks it for its
// log end (ListOffsets latest, as a replica: the LEO) and, unless it is ahead of that,
// its log start (earliest), then truncates, starts over at the leader's log start, or
// fetches on (partition.OutOfRangeReset). If the reset made no progress (the same
// fetch offset again) or failed, the partition sits out replica.fetch.backoff.ms, so a
// partition that cannot be fixed costs one fetch per backoff — never a tight loop —
// and one warning for a run of failures (debug after).
//
// The questions go out without the fetcher's lock (Kafka holds its partition map
// lock here; metadata changes would wait on a slow leader); the answer is applied
// under it, and only if st is still the partition's state (not removed or replaced by
// a new leader or epoch meanwhile).
func (f *fetcher) handleOutOfRange(ep *LeaderEndpoint, st *fetchState) {
	backoff := time.Duration(f.m.cfg.BackoffMs) * time.Millisecond
	p := st.P
	f.mu.Lock()
	fetchOffset := st.fetchOffset
	f.mu.Unlock()
	leo := p.Log.LogEndOffset()
	leaderLEO, err := f.leaderOffset(ep, st, -1)
	leaderStart := int64(-1)
	if err == nil && leaderLEO >= leo {
		leaderStart, err = f.leaderOffset(ep, st, -2)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[p.TP] != st || st.fetchOffset != fetchOffset {
		return
	}
	if err == nil {
		var next int64
		if _, next, err = p.ResetOutOfRange(leaderStart, leaderLEO); err == nil {
			st.resetFailures = 0
			if next == fetchOffset {
				f.log.Debug().Str("partition", p.TP.String()).Int64("fetch_offset", next).
					Msg("fetch offset out of range on the leader, yet within its log; retrying after the backoff")
				st.delayedUntil = time.Now().Add(backoff)
			}
			st.fetchOffset = next
			return
		}
	}
	ev := f.log.Debug()
	if st.resetFailures == 0 {
		ev = f.log.Warn()
	}
	st.resetFailures++
	ev.Err(err).Str("partition", p.TP.String()).Int64("fetch_offset", fetchOffset).Int("failures", st.resetFailures).
		Msg("fetch offset out of range on the leader; cannot reset it yet, retrying after the backoff")
	st.delayedUntil = time.Now().Add(backoff)
}

// leaderOffset asks the leader, as replica LocalID, for the partition's offset at
// timestamp ts (-1 latest: the leader's LEO for a replica; -2 earliest: its log start).
func (f *fetcher) leaderOffset(ep *LeaderEndpoint, st *fetchState, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.m.cfg.LocalID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = st.P.TP.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = st.P.TP.Partition, st.LeaderEpoch, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	r, err := ep.Request(ctx, req)
	if err != nil {
		return -1, err
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic != st.P.TP.Topic || p.Partition != st.P.TP.Partition {
				continue
			}
			if p.ErrorCode != 0 {
				return -1, kerr.ErrorForCode(p.ErrorCode)
			}
			if p.Offset < 0 {
				return -1, fmt.Errorf("replication: the leader answered offset %d for %s at %d", p.Offset, st.P.TP, ts)
			}
			return p.Offset, nil
		}
	}
	return -1, fmt.Errorf("replication: the leader's ListOffsets answer lacks %s", st.P.TP)
}
