package coordinator

// The share coordinator (KIP-932, Kafka's ShareCoordinatorService and
// ShareCoordinatorShard): the state of every share partition whose key hashes to a
// __share_group_state partition this broker leads, one shard per partition, loaded
// by replaying the partition when the broker becomes its leader. It serves the state
// RPCs — InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
// DeleteShareGroupState, ReadShareGroupStateSummary — in their kmsg form, whether
// they come from this broker's share partitions or from another broker's (Kafka's
// Persister). A change is written to the log before it is made current.

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/share"
)

// ShareStateTopic is Kafka's share-group state topic.
const ShareStateTopic = "__share_group_state"

// ShareCoordinator owns the share-partition states of the __share_group_state
// partitions this broker leads.
type ShareCoordinator struct {
	numPartitions int32
	log           PartitionLog
	md            Metadata
	now           func() time.Time
	logger        zerolog.Logger

	shardSet shardSet[*shareStateShard]
	wg       sync.WaitGroup
}

type shareStateShard struct {
	shardState  // its mu guards states too
	leaderEpoch int32
	states      map[ShareStateKey]*shareState
}

// NewShareCoordinator returns a coordinator with no partitions; BecomeLeader adds
// them. numPartitions is share.coordinator.state.topic.num.partitions.
func NewShareCoordinator(numPartitions int32, log PartitionLog, md Metadata, now func() time.Time, logger zerolog.Logger) *ShareCoordinator {
	if now == nil {
		now = time.Now
	}
	return &ShareCoordinator{numPartitions: numPartitions, log: log, md: md, now: now, logger: logger}
}

// CoordinatorKey is Kafka's SharePartitionKey.asCoordinatorKey: the key
// FindCoordinator (key type 2) and the partitioning hash take.
func (k ShareStateKey) CoordinatorKey() string {
	return k.Group + ":" + topicIDString(k.TopicID) + ":" + strconv.Itoa(int(k.Partition))
}

// PartitionFor is the __share_group_state partition of a share partition's state,
// as ShareCoordinatorService.partitionFor: abs(key.hashCode) % partitions, with
// Kafka's Utils.abs (MIN_VALUE is 0).
func (c *ShareCoordinator) PartitionFor(k ShareStateKey) int32 {
	return SharePartitionFor(k.CoordinatorKey(), c.numPartitions)
}

// SharePartitionFor is PartitionFor of a coordinator key.
func SharePartitionFor(key string, n int32) int32 {
	h := javaStringHash(key)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

// Close drops every shard; the state stays in the log.
func (c *ShareCoordinator) Close() {
	shards, ok := c.shardSet.close()
	if !ok {
		return
	}
	for _, s := range shards {
		s.markGone()
	}
	c.wg.Wait()
}

// BecomeLeader loads partition's states in the background (requests get
// COORDINATOR_LOAD_IN_PROGRESS meanwhile); leaderEpoch is the partition's. A
// partition owned under an older epoch is loaded again.
func (c *ShareCoordinator) BecomeLeader(partition, leaderEpoch int32) {
	s := &shareStateShard{shardState: shardState{partition: partition}, leaderEpoch: leaderEpoch, states: map[ShareStateKey]*shareState{}}
	older := func(old *shareStateShard) bool { return old.leaderEpoch < leaderEpoch }
	c.shardSet.start(partition, s, older, &c.wg, c.load)
}

// Resign drops partition's states when the broker stops leading it.
func (c *ShareCoordinator) Resign(partition int32) {
	c.shardSet.resign(partition, nil)
}

// Leads reports whether partition is owned here (loaded or loading).
func (c *ShareCoordinator) Leads(partition int32) bool { return c.shardSet.leads(partition) }

// Loaded reports whether partition's states are loaded.
func (c *ShareCoordinator) Loaded(partition int32) bool { return c.shardSet.loaded(partition) }

func (c *ShareCoordinator) load(s *shareStateShard) {
	start := c.now()
	states := map[ShareStateKey]*shareState{}
	err := c.log.Read(s.partition, func(batches []byte) error {
		return DecodeBatches(batches, func(r BatchRecord) error {
			rec, err := decodeShareStateRecord(r.Key, r.Value)
			if err != nil {
				return err
			}
			applyShareStateRecord(states, rec)
			return nil
		})
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if err != nil {
		c.logger.Error().Err(err).Int32("partition", s.partition).Msg("loading __share_group_state partition failed")
		return
	}
	s.states, s.loaded = states, true
	c.logger.Info().Int32("partition", s.partition).Int("share_partitions", len(states)).
		Dur("took", c.now().Sub(start)).Msg("loaded __share_group_state partition")
}

// applyShareStateRecord replays one record, as ShareCoordinatorShard.replay: a
// snapshot replaces, an update merges, a tombstone deletes.
func applyShareStateRecord(states map[ShareStateKey]*shareState, rec shareStateRecord) {
	if rec.State == nil {
		delete(states, rec.Key)
		return
	}
	if !rec.Update {
		states[rec.Key] = rec.State
		return
	}
	cur := states[rec.Key]
	if cur == nil {
		return // an update without a snapshot before it has nothing to go on
	}
	next := *cur
	if rec.State.StartOffset >= 0 {
		next.StartOffset = rec.State.StartOffset
	}
	next.LeaderEpoch = max(next.LeaderEpoch, rec.State.LeaderEpoch)
	next.Batches = mergeStateBatches(cur.Batches, rec.State.Batches, next.StartOffset)
	states[rec.Key] = &next
}

// shardForKey returns k's loaded shard locked, or the code to answer with.
func (c *ShareCoordinator) shardForKey(k ShareStateKey) (*shareStateShard, int16) {
	if c.md.NumPartitions(ShareStateTopic) < 0 {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	s := c.shardSet.get(c.PartitionFor(k))
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	if code := s.lockLoaded(); code != 0 {
		return nil, code
	}
	return s, 0
}

// writeLocked writes next as k's state (nil: deleted) and, when that worked, makes it
// current. It returns the code clients get for a failed write, as the coordinator
// runtime maps them.
func (c *ShareCoordinator) writeLocked(s *shareStateShard, k ShareStateKey, next *shareState) int16 {
	recs := []Record{shareStateRecord{Key: k, State: next}.encode()}
	if next == nil {
		// Kafka tombstones both keys of a deleted state.
		recs = append(recs, shareStateRecord{Key: k, Update: true}.encode())
	}
	if err := c.log.Append(s.partition, EncodeBatch(recs, c.now().UnixMilli())); err != nil {
		c.logger.Warn().Err(err).Int32("partition", s.partition).Str("group", k.Group).Msg("writing to __share_group_state failed")
		switch code := writeErrorCode(err); code {
		case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
			kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
			return kerr.CoordinatorNotAvailable.Code
		case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
			return kerr.NotCoordinator.Code
		default:
			return kerr.UnknownServerError.Code
		}
	}
	if next == nil {
		delete(s.states, k)
	} else {
		s.states[k] = next
	}
	return 0
}

// partitionOp runs op on k's state under its shard's lock and returns the code and
// message of the answer; deny (the caller's authorization failure, 0 for none) and
// the request's own checks come first (the topic-partition must exist).
func (c *ShareCoordinator) partitionOp(k ShareStateKey, deny int16, op func(s *shareStateShard) (int16, string)) (int16, *string) {
	msg := func(m string) *string {
		if m == "" {
			return nil
		}
		return &m
	}
	switch {
	case deny != 0:
		return deny, nil
	case k.TopicID == [16]byte{}:
		return kerr.InvalidRequest.Code, msg("The topic id cannot be null.")
	case k.Partition < 0:
		return kerr.InvalidRequest.Code, msg("The partition id cannot be a negative number.")
	}
	if name, ok := c.md.TopicName(k.TopicID); !ok || k.Partition >= c.md.NumPartitions(name) {
		return kerr.UnknownTopicOrPartition.Code, msg(kerr.UnknownTopicOrPartition.Description)
	}
	s, code := c.shardForKey(k)
	if code != 0 {
		return code, nil
	}
	defer s.mu.Unlock()
	code, m := op(s)
	return code, msg(m)
}

const uninitializedRead = "Read operation on uninitialized share partition not allowed."

// Initialize handles InitializeShareGroupState: each partition's state starts (again)
// at its start offset with its state epoch, nothing in flight; a state epoch below the
// one held is FENCED_STATE_EPOCH.
func (c *ShareCoordinator) Initialize(req *kmsg.InitializeShareGroupStateRequest, deny int16) *kmsg.InitializeShareGroupStateResponse {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			k := ShareStateKey{req.GroupID, t.TopicID, p.Partition}
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = c.partitionOp(k, deny, func(s *shareStateShard) (int16, string) {
				cur := s.states[k]
				switch {
				case p.StateEpoch < 0:
					return kerr.InvalidRequest.Code, "The state epoch cannot be a negative number."
				case p.StartOffset < -1: // -1: to be resolved by share.auto.offset.reset
					return kerr.InvalidRequest.Code, "The start offset cannot be below -1."
				}
				if cur != nil && p.StateEpoch < cur.StateEpoch {
					return kerr.FencedStateEpoch.Code, ""
				}
				now := c.now().UnixMilli()
				next := &shareState{StateEpoch: p.StateEpoch, LeaderEpoch: -1, StartOffset: p.StartOffset,
					CreateTimestamp: now, WriteTimestamp: now}
				if cur != nil {
					next.SnapshotEpoch, next.LeaderEpoch = cur.SnapshotEpoch+1, cur.LeaderEpoch
				}
				return c.writeLocked(s, k, next), ""
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Write handles WriteShareGroupState: the batches are merged into the state held, the
// start offset moves (-1: it stays), as ShareCoordinatorShard.writeState. A leader
// epoch or state epoch below the one held is fenced; an uninitialized state is
// INVALID_REQUEST.
func (c *ShareCoordinator) Write(req *kmsg.WriteShareGroupStateRequest, deny int16) *kmsg.WriteShareGroupStateResponse {
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			k := ShareStateKey{req.GroupID, t.TopicID, p.Partition}
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = c.partitionOp(k, deny, func(s *shareStateShard) (int16, string) {
				cur := s.states[k]
				switch {
				case p.LeaderEpoch < 0:
					return kerr.InvalidRequest.Code, "The leader epoch cannot be a negative number."
				case cur == nil:
					return kerr.InvalidRequest.Code, "Write operation on uninitialized share partition not allowed."
				case p.LeaderEpoch < cur.LeaderEpoch:
					return kerr.FencedLeaderEpoch.Code, ""
				case p.StateEpoch < cur.StateEpoch:
					return kerr.FencedStateEpoch.Code, ""
				}
				next := *cur
				next.SnapshotEpoch++
				next.LeaderEpoch, next.WriteTimestamp = p.LeaderEpoch, c.now().UnixMilli()
				if p.StartOffset >= 0 {
					next.StartOffset = p.StartOffset
				}
				batches := make([]share.StateBatch, len(p.StateBatches))
				for i, b := range p.StateBatches {
					batches[i] = share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
						State: share.State(b.DeliveryState), DeliveryCount: b.DeliveryCount}
				}
				next.Batches = mergeStateBatches(cur.Batches, batches, next.StartOffset)
				return c.writeLocked(s, k, &next), ""
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Read handles ReadShareGroupState: each partition's state epoch, start offset and
// batches; a leader epoch above the one held is recorded (written), one below is
// FENCED_LEADER_EPOCH, as readStateAndMaybeUpdateLeaderEpoch.
func (c *ShareCoordinator) Read(req *kmsg.ReadShareGroupStateRequest, deny int16) *kmsg.ReadShareGroupStateResponse {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			k := ShareStateKey{req.GroupID, t.TopicID, p.Partition}
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p.Partition, -1, -1
			rp.ErrorCode, rp.ErrorMessage = c.partitionOp(k, deny, func(s *shareStateShard) (int16, string) {
				cur := s.states[k]
				switch {
				case cur == nil:
					return kerr.InvalidRequest.Code, uninitializedRead
				case p.LeaderEpoch >= 0 && p.LeaderEpoch < cur.LeaderEpoch:
					return kerr.FencedLeaderEpoch.Code, ""
				case p.LeaderEpoch > cur.LeaderEpoch:
					next := *cur
					next.SnapshotEpoch++
					next.LeaderEpoch, next.WriteTimestamp = p.LeaderEpoch, c.now().UnixMilli()
					if code := c.writeLocked(s, k, &next); code != 0 {
						return code, ""
					}
					cur = &next
				}
				rp.StateEpoch, rp.StartOffset = cur.StateEpoch, cur.StartOffset
				for _, b := range cur.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, int8(b.State), b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
				return 0, ""
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ReadSummary handles ReadShareGroupStateSummary: each partition's state epoch, leader
// epoch and start offset, and (v1) how many offsets from the start offset on are done.
func (c *ShareCoordinator) ReadSummary(req *kmsg.ReadShareGroupStateSummaryRequest, deny int16) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			k := ShareStateKey{req.GroupID, t.TopicID, p.Partition}
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset, rp.LeaderEpoch = p.Partition, -1, -1, -1
			rp.ErrorCode, rp.ErrorMessage = c.partitionOp(k, deny, func(s *shareStateShard) (int16, string) {
				cur := s.states[k]
				if cur == nil {
					return kerr.InvalidRequest.Code, uninitializedRead
				}
				rp.StateEpoch, rp.StartOffset, rp.LeaderEpoch = cur.StateEpoch, cur.StartOffset, cur.LeaderEpoch
				var done int64
				for _, b := range cur.Batches {
					if b.State == share.Acknowledged || b.State == share.Archived {
						n := b.LastOffset - max(b.FirstOffset, cur.StartOffset) + 1
						if n < 0 || done+n < done { // a range too long to count
							done = math.MaxInt32
							break
						}
						done += n
					}
				}
				rp.DeliveryCompleteCount = int32(min(done, math.MaxInt32))
				return 0, ""
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Delete handles DeleteShareGroupState: each partition's state is tombstoned (a
// state never initialized is answered 0).
func (c *ShareCoordinator) Delete(req *kmsg.DeleteShareGroupStateRequest, deny int16) *kmsg.DeleteShareGroupStateResponse {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			k := ShareStateKey{req.GroupID, t.TopicID, p.Partition}
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = c.partitionOp(k, deny, func(s *shareStateShard) (int16, string) {
				if s.states[k] == nil {
					return 0, ""
				}
				return c.writeLocked(s, k, nil), ""
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
