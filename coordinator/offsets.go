package coordinator

// Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete, as Kafka's
// OffsetMetadataManager for classic groups. A commit is acknowledged only once its
// records are written; only then does it become visible to OffsetFetch.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles an OffsetCommit request and returns the response (unversioned).
func (c *GroupCoordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	// The response mirrors the request; codes are filled in below.
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	failAll := func(code int16) *kmsg.OffsetCommitResponse {
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
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return failAll(code)
	}
	defer s.mu.Unlock()
	now := c.now()
	g, created, code := c.commitGroup(s, req.Group, req.Generation, req.Version >= 9, now)
	if code != 0 {
		return failAll(code)
	}
	validate := g.ValidateOffsetCommit
	if g.Consumer != nil {
		validate = func(member string, _ *string, epoch int32) int16 {
			return g.Consumer.ValidateOffsetCommit(member, epoch, req.Version)
		}
	}
	if g.Streams != nil {
		validate = func(member string, _ *string, epoch int32) int16 {
			return g.Streams.ValidateOffsetCommit(member, epoch, req.Version)
		}
	}
	if code := validate(req.MemberID, req.InstanceID, req.Generation); code != 0 {
		if created {
			c.removeGroupLocked(s, g)
		}
		return failAll(code)
	}

	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now.UnixMilli() + req.RetentionTimeMillis
	}
	type pending struct {
		tp  TopicPartition
		om  OffsetAndMetadata
		out *kmsg.OffsetCommitResponseTopicPartition
	}
	var recs []Record
	var commits []pending
	for i, t := range req.Topics {
		name := t.Topic
		known := true
		if req.Version >= 10 {
			name, known = c.md.TopicName(t.TopicID)
		}
		n := int32(-1)
		if known {
			n = c.md.NumPartitions(name)
		}
		for j, p := range t.Partitions {
			out := &resp.Topics[i].Partitions[j]
			switch {
			case req.Version >= 10 && !known:
				out.ErrorCode = kerr.UnknownTopicID.Code
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
				if req.Version < 6 {
					epoch = -1
				}
				om := OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: epoch, Metadata: md,
					CommitTimestamp: now.UnixMilli(), ExpireTimestamp: expire}
				tp := TopicPartition{Topic: name, Partition: p.Partition}
				recs = append(recs, OffsetCommitRecord(g.ID, tp.Topic, tp.Partition, &om))
				commits = append(commits, pending{tp: tp, om: om, out: out})
			}
		}
	}
	if code := c.writeLocked(s, recs); code != 0 {
		code = offsetWriteError(code)
		for _, p := range commits {
			p.out.ErrorCode = code
		}
	} else {
		for _, p := range commits {
			g.Offsets[p.tp] = p.om
		}
	}
	if created && len(g.Offsets) == 0 {
		c.removeGroupLocked(s, g)
	}
	return resp
}

// OffsetFetch handles OffsetFetch for every version: v0-7 ask for one group, v8+
// for several. Unknown groups and partitions get offset -1 with no error, as Kafka.
func (c *GroupCoordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{name: t.Topic, id: t.TopicID, partitions: t.Partitions})
				}
			}
			if code := c.validateOffsetFetch(rg.Group, rg.MemberID, rg.MemberEpoch); code != 0 {
				fg := kmsg.NewOffsetFetchResponseGroup()
				fg.Group, fg.ErrorCode = rg.Group, code
				resp.Groups = append(resp.Groups, fg)
				continue
			}
			resp.Groups = append(resp.Groups, c.fetchGroup(rg.Group, topics, req.Version, req.RequireStable))
		}
		return resp
	}
	var topics []fetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = []fetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{name: t.Topic, partitions: t.Partitions})
		}
	}
	fg := c.fetchGroup(req.Group, topics, req.Version, req.Version >= 7 && req.RequireStable)
	for _, t := range fg.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 {
		resp.ErrorCode = fg.ErrorCode
	} else if fg.ErrorCode != 0 {
		// v0-1 have no top-level error: every partition carries it.
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = fg.ErrorCode
			}
		}
	}
	return resp
}

type fetchTopic struct {
	name       string
	id         [16]byte
	partitions []int32
}

// fetchGroup answers one group's offsets; topics nil means all of them. With
// requireStable a partition with a transactional commit awaiting its marker is
// UNSTABLE_OFFSET_COMMIT (the client retries), as Kafka's KIP-447 fetch.
func (c *GroupCoordinator) fetchGroup(group string, topics []fetchTopic, version int16, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = group
	fill := func(code int16) {
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.name, t.id
			for _, p := range t.partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
				empty := ""
				rp.Metadata = &empty
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}
	if group == "" {
		out.ErrorCode = kerr.InvalidGroupID.Code
		fill(0)
		return out
	}
	s, code := c.shardFor(group)
	if code != 0 {
		out.ErrorCode = code
		fill(0)
		return out
	}
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		fill(0)
		return out
	}
	if topics == nil {
		// Every committed offset, grouped by topic in order.
		var cur *kmsg.OffsetFetchResponseGroupTopic
		for _, tp := range g.sortedOffsets() {
			if cur == nil || cur.Topic != tp.Topic {
				var id [16]byte
				if version >= 10 {
					id = c.md.TopicID(tp.Topic)
					if id == ([16]byte{}) {
						continue // offsets of a deleted topic have no id to report
					}
				}
				out.Topics = append(out.Topics, kmsg.NewOffsetFetchResponseGroupTopic())
				cur = &out.Topics[len(out.Topics)-1]
				cur.Topic, cur.TopicID = tp.Topic, id
			}
			rp := offsetPartition(tp.Partition, g.Offsets[tp], true)
			if requireStable && g.hasPendingTxnOffset(tp) {
				rp = offsetPartition(tp.Partition, OffsetAndMetadata{}, false)
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			}
			cur.Partitions = append(cur.Partitions, rp)
		}
		return out
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		name, known := t.name, true
		if version >= 10 {
			name, known = c.md.TopicName(t.id)
		}
		for _, p := range t.partitions {
			if !known {
				rp := offsetPartition(p, OffsetAndMetadata{}, false)
				rp.ErrorCode = kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := TopicPartition{Topic: name, Partition: p}
			om, ok := g.Offsets[tp]
			rp := offsetPartition(p, om, ok)
			if requireStable && g.hasPendingTxnOffset(tp) {
				rp = offsetPartition(p, OffsetAndMetadata{}, false)
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

func offsetPartition(p int32, om OffsetAndMetadata, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition = p
	md := ""
	if ok {
		rp.Offset, rp.LeaderEpoch, md = om.Offset, om.LeaderEpoch, om.Metadata
	} else {
		rp.Offset, rp.LeaderEpoch = -1, -1
	}
	rp.Metadata = &md
	return rp
}

// OffsetDelete deletes committed offsets of topics the group does not subscribe to,
// as Kafka's OffsetMetadataManager.deleteOffsets: GROUP_ID_NOT_FOUND for an unknown
// group, NON_EMPTY_GROUP for an active group that is not a consumer group, and
// GROUP_SUBSCRIBED_TO_TOPIC per partition of a topic a member subscribes to.
func (c *GroupCoordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer s.mu.Unlock()
	g := s.groups[req.Group]
	if g == nil || g.State == Dead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	if g.State != Empty && g.ProtocolType != ConsumerProtocolType {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	var recs []Record
	var deleted []TopicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		exists := c.md.NumPartitions(t.Topic) >= 0
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
			switch {
			case !exists:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case g.IsSubscribedToTopic(t.Topic):
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.Offsets[tp]; ok {
					recs = append(recs, OffsetCommitRecord(g.ID, tp.Topic, tp.Partition, nil))
					deleted = append(deleted, tp)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if code := c.writeLocked(s, recs); code != 0 {
		resp.ErrorCode = groupWriteError(code)
		resp.Topics = nil
		return resp
	}
	for _, tp := range deleted {
		delete(g.Offsets, tp)
	}
	return resp
}

// GroupOffsets returns a copy of a group's committed offsets (for tests).
func (c *GroupCoordinator) GroupOffsets(group string) map[TopicPartition]OffsetAndMetadata {
	s, code := c.shardFor(group)
	if code != 0 {
		return nil
	}
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		return nil
	}
	out := make(map[TopicPartition]OffsetAndMetadata, len(g.Offsets))
	for tp, om := range g.Offsets {
		out[tp] = om
	}
	return out
}

// commitGroup is the group an offset commit (plain or transactional) to id writes
// to, in its shard s (locked). A group that does not exist is created as a "simple"
// one (offsets committed without group management, created true) when the commit
// names no generation; a commit from a member of a generation that does not exist
// (or an old one) is GROUP_ID_NOT_FOUND when the request version names that error
// (named), ILLEGAL_GENERATION before.
func (c *GroupCoordinator) commitGroup(s *shard, id string, generation int32, named bool, now time.Time) (g *Group, created bool, code int16) {
	if g = s.groups[id]; g != nil {
		return g, false, 0
	}
	if generation >= 0 {
		if named {
			return nil, false, kerr.GroupIDNotFound.Code
		}
		return nil, false, kerr.IllegalGeneration.Code
	}
	g = NewGroup(id, &c.cfg, now)
	s.groups[id] = g
	return g, true, 0
}
