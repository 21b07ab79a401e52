package coordinator

// Transactional offset commits (TxnOffsetCommit), as Kafka's OffsetMetadataManager:
// the offsets are written to __consumer_offsets in a transactional batch of the
// producer and kept pending; the transaction's marker on that partition commits them
// into the group's offsets (or drops them). While pending, OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for their partitions.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

func (g *Group) hasPendingTxnOffset(tp TopicPartition) bool {
	for _, offs := range g.PendingTxnOffsets {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

func (g *Group) addPendingTxnOffset(pid int64, tp TopicPartition, om OffsetAndMetadata) {
	if g.PendingTxnOffsets == nil {
		g.PendingTxnOffsets = map[int64]map[TopicPartition]OffsetAndMetadata{}
	}
	offs := g.PendingTxnOffsets[pid]
	if offs == nil {
		offs = map[TopicPartition]OffsetAndMetadata{}
		g.PendingTxnOffsets[pid] = offs
	}
	offs[tp] = om
}

// completeTxn applies (commit) or drops (abort) producer pid's pending offsets.
func (g *Group) completeTxn(pid int64, commit bool) bool {
	offs, ok := g.PendingTxnOffsets[pid]
	if !ok {
		return false
	}
	delete(g.PendingTxnOffsets, pid)
	if commit {
		for tp, om := range offs {
			g.Offsets[tp] = om
		}
	}
	return true
}

// TxnOffsetCommit handles TxnOffsetCommit (unversioned response). The caller has
// checked with the transaction coordinator that the producer's transaction holds this
// group's __consumer_offsets partition (KIP-890 verification); verify, when not nil,
// is called with that partition under no lock and returns an error code.
func (c *GroupCoordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, verify func(partition int32) int16) *kmsg.TxnOffsetCommitResponse {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	failAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return resp
	}
	if req.Group == "" {
		return failAll(kerr.InvalidGroupID.Code)
	}
	if verify != nil {
		if code := verify(c.PartitionFor(req.Group)); code != 0 {
			return failAll(code)
		}
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return failAll(code)
	}
	defer s.mu.Unlock()
	now := c.now()
	// As OffsetMetadataManager.validateTransactionalOffsetCommit: v6 names a missing group.
	g, created, code := c.commitGroup(s, req.Group, req.Generation, req.Version >= 6, now)
	if code != 0 {
		return failAll(code)
	}
	validate := g.validateTxnOffsetCommit
	if g.Consumer != nil {
		// A KIP-848 group: the generation is the member epoch, and a stale one is
		// ILLEGAL_GENERATION for transactional commits before v6 (KIP-1319), as
		// ConsumerGroup.validateOffsetCommit and supportsStaleMemberEpochError.
		validate = func(member string, _ *string, epoch int32) int16 {
			code := g.Consumer.ValidateOffsetCommit(member, epoch, 9)
			if code == kerr.StaleMemberEpoch.Code && req.Version < 6 {
				code = kerr.IllegalGeneration.Code
			}
			return code
		}
	}
	if g.Streams != nil {
		// As for a consumer group: the generation is the member epoch.
		validate = func(member string, _ *string, epoch int32) int16 {
			code := g.Streams.ValidateOffsetCommit(member, epoch, 9)
			if code == kerr.StaleMemberEpoch.Code && req.Version < 6 {
				code = kerr.IllegalGeneration.Code
			}
			return code
		}
	}
	if code := validate(req.MemberID, req.InstanceID, req.Generation); code != 0 {
		if created {
			c.removeGroupLocked(s, g)
		}
		return failAll(code)
	}
	type pending struct {
		tp TopicPartition
		om OffsetAndMetadata
	}
	var recs []Record
	var commits []pending
	var outs []*kmsg.TxnOffsetCommitResponseTopicPartition
	for i, t := range req.Topics {
		n := c.md.NumPartitions(t.Topic)
		for j, p := range t.Partitions {
			out := &resp.Topics[i].Partitions[j]
			switch {
			case p.Partition < 0 || p.Partition >= n:
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > c.cfg.OffsetMetadataMaxBytes:
				out.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				epoch := p.LeaderEpoch
				if req.Version < 2 {
					epoch = -1
				}
				om := OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: epoch, Metadata: md,
					CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
				tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
				recs = append(recs, OffsetCommitRecord(g.ID, tp.Topic, tp.Partition, &om))
				commits = append(commits, pending{tp: tp, om: om})
				outs = append(outs, out)
			}
		}
	}
	if len(recs) > 0 {
		err := c.log.Append(s.partition, EncodeTxnBatch(recs, now.UnixMilli(), req.ProducerID, req.ProducerEpoch))
		if err != nil {
			code := writeErrorCode(err)
			c.logger.Warn().Err(err).Int32("partition", s.partition).Msg("writing transactional offsets failed")
			code = offsetWriteError(code)
			for _, o := range outs {
				o.ErrorCode = code
			}
		} else {
			for _, p := range commits {
				g.addPendingTxnOffset(req.ProducerID, p.tp, p.om)
			}
		}
	}
	if created && len(g.Offsets) == 0 && len(g.PendingTxnOffsets) == 0 {
		c.removeGroupLocked(s, g)
	}
	return resp
}

// validateTxnOffsetCommit is ValidateOffsetCommit for transactional commits, which
// Kafka also accepts while the group completes a rebalance.
func (g *Group) validateTxnOffsetCommit(memberID string, instanceID *string, generation int32) int16 {
	code := g.ValidateOffsetCommit(memberID, instanceID, generation)
	if code == kerr.RebalanceInProgress.Code {
		return 0
	}
	return code
}

// CompleteTxn applies the marker just written to __consumer_offsets partition for
// producer pid: its pending transactional offsets in that partition's groups are
// committed or dropped, as Kafka's GroupCoordinator.onTransactionCompleted.
func (c *GroupCoordinator) CompleteTxn(partition int32, pid int64, commit bool) {
	s := c.shards.get(partition)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if !s.loaded {
		s.lateMarkers = append(s.lateMarkers, lateMarker{pid: pid, commit: commit})
		return
	}
	for _, g := range s.groups {
		g.completeTxn(pid, commit)
	}
}

// replayTxnMarker is CompleteTxn while loading: groups maps every group replayed.
func replayTxnMarker(groups map[string]*Group, pid int64, typ int16) {
	if typ != protocol.ControlTypeCommit && typ != protocol.ControlTypeAbort {
		return
	}
	for _, g := range groups {
		g.completeTxn(pid, typ == protocol.ControlTypeCommit)
	}
}

// writeErrorCode is the Kafka code a PartitionLog write failed with.
func writeErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
