package coordinator

// The GroupCoordinator side of KIP-848 consumer groups: ConsumerGroupHeartbeat and
// ConsumerGroupDescribe, their request validation (GroupCoordinatorService), and the
// places where consumer groups meet the classic machinery — loading, offsets,
// ListGroups, DeleteGroups and a classic JoinGroup for a consumer group's id.
//
// A consumer group lives in the shard's groups map as a Group whose Consumer is set:
// it shares the Group's committed offsets, timer and lifecycle, and its own state is
// in ConsumerGroup.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ValidateConsumerGroupHeartbeat checks a request before any group is looked at, as
// GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid: it returns
// INVALID_REQUEST, UNSUPPORTED_ASSIGNOR or INVALID_REGULAR_EXPRESSION with Kafka's
// message, or 0.
func (c *GroupCoordinator) ValidateConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	if (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveGroupMemberEpoch) && req.MemberID == "" {
		return bad("MemberId can't be empty.")
	}
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return bad("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return bad("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == leaveGroupStaticMemberEpoch:
		if req.InstanceID == nil {
			return bad("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveGroupStaticMemberEpoch:
		return bad("MemberEpoch is invalid.")
	}
	if a := req.ServerAssignor; a != nil && !contains(c.cfg.Consumer.Assignors, *a) {
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*a, strings.Join(c.cfg.Consumer.Assignors, ", "))
	}
	if re := req.SubscribedTopicRegex; re != nil {
		if _, err := regexp.Compile(*re); err != nil {
			return kerr.InvalidRegularExpression.Code, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *re, err)
		}
	}
	return 0, ""
}

// ConsumerGroupHeartbeat handles ConsumerGroupHeartbeat: the group's records are
// written before the answer, and the group's timer re-armed.
func (c *GroupCoordinator) ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ConsumerGroupHeartbeatResponse {
	if code, msg := c.ValidateConsumerGroupHeartbeat(req); code != 0 {
		return planError(code, msg).Resp
	}
	return groupHeartbeat(c, consumerKind, req.Group, req.MemberEpoch, planError,
		func(g *Group, now time.Time) *heartbeatPlan {
			return g.Consumer.Heartbeat(now, req, clientID, clientHost, c.md, newUUID)
		},
		func(g *Group, now time.Time, plan *heartbeatPlan) { g.Consumer.Commit(now, plan) }).Resp
}

// logConsumerGroupLocked logs the members a timeout fenced and any change of the
// group's state, epochs or size.
func (c *GroupCoordinator) logConsumerGroupLocked(g *Group) {
	cg := g.Consumer
	c.logModernGroupLocked(consumerKind, g.ID, &cg.fenced, &cg.logged, consumerView{cg.Epoch, cg.AssignmentEpoch, len(cg.Members), cg.State()})
}

type consumerView struct {
	epoch, assignmentEpoch int32
	members                int
	state                  string
}

// newUUID is a random (v4) UUID in its string form, as Kafka's Uuid.randomUuid
// member ids of ConsumerGroupHeartbeat v0.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ConsumerGroupDescribe describes consumer groups, as GroupMetadataManager's
// consumerGroupDescribe: GROUP_ID_NOT_FOUND for unknown and for classic groups.
func (c *GroupCoordinator) ConsumerGroupDescribe(groups []string) []kmsg.ConsumerGroupDescribeResponseGroup {
	newD := func(id string) kmsg.ConsumerGroupDescribeResponseGroup {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = id
		d.AuthorizedOperations = -2147483648
		return d
	}
	errorCode := func(d *kmsg.ConsumerGroupDescribeResponseGroup) *int16 { return &d.ErrorCode }
	return describeGroups(c, groups, newD, errorCode, func(s *shard, id string, d *kmsg.ConsumerGroupDescribeResponseGroup) {
		g, code, msg := describedGroupLocked(s, consumerKind, id)
		if code != 0 {
			d.ErrorCode, d.ErrorMessage = code, msg
			return
		}
		g.Consumer.describe(d, c.md)
	})
}

func (g *ConsumerGroup) describe(d *kmsg.ConsumerGroupDescribeResponseGroup, md Metadata) {
	d.State = g.State()
	d.Epoch = g.Epoch
	d.AssignmentEpoch = g.AssignmentEpoch
	members := g.sortedMembers()
	d.AssignorName = g.preferredAssignor(members)
	names := map[[16]byte]string{}
	for _, t := range g.Subscription {
		names[t.ID] = t.Name
	}
	assignment := func(tps TopicPartitions) kmsg.Assignment {
		a := kmsg.NewAssignment()
		a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
		for _, id := range tps.topicIDs() {
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, append([]int32(nil), tps[id]...)
			if n, ok := names[id]; ok {
				tp.Topic = n
			} else if n, ok := md.TopicName(id); ok {
				tp.Topic = n
			}
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		return a
	}
	for _, m := range members {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = m.ID, m.InstanceID, m.RackID
		dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.MemberEpoch, m.ClientID, m.ClientHost
		dm.SubscribedTopics = append([]string{}, m.SubscribedTopicNames...)
		dm.SubscribedTopicRegex = m.SubscribedTopicRegex
		dm.Assignment = assignment(m.Assigned)
		dm.TargetAssignment = assignment(g.Target[m.ID])
		dm.MemberType = 1 // consumer protocol (0 would be a classic member)
		d.Members = append(d.Members, dm)
	}
}

// ValidateOffsetCommit is ConsumerGroup.validateOffsetCommit for a non-transactional
// commit: epoch -1 commits only to an empty group (admin tools); otherwise the member
// must exist (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (UNSUPPORTED_VERSION), and
// commit at its current epoch (STALE_MEMBER_EPOCH).
func (g *ConsumerGroup) ValidateOffsetCommit(memberID string, epoch int32, version int16) int16 {
	return validateMemberOffsetCommit(g.Members, memberID, epoch, version)
}

// validateOffsetFetch is ConsumerGroup.validateOffsetFetch for OffsetFetch v9+: a
// request naming a member (or an epoch) must come from a member at its current
// epoch. Classic groups and unknown groups are not checked here.
func (c *GroupCoordinator) validateOffsetFetch(group string, memberID *string, epoch int32) int16 {
	if (memberID == nil && epoch < 0) || group == "" {
		return 0
	}
	s, code := c.shardFor(group)
	if code != 0 {
		return 0 // fetchGroup reports it
	}
	defer s.mu.Unlock()
	g := s.groups[group]
	if g != nil && g.Streams != nil {
		return g.Streams.validateOffsetFetch(memberID, epoch)
	}
	if g == nil || g.Consumer == nil {
		return 0
	}
	return validateMemberOffsetFetch(g.Consumer.Members, memberID, epoch)
}

// consumerTombstones deletes a consumer group's records (nil for a classic group),
// in the order of Kafka's ConsumerGroup.createGroupTombstoneRecords.
func (g *Group) consumerTombstones() []Record {
	if g.Consumer == nil {
		return nil
	}
	var out []Record
	for _, m := range g.Consumer.sortedMembers() {
		for _, r := range memberTombstones(g.ID, m.ID) {
			out = append(out, r.encode())
		}
	}
	for _, re := range sortedKeys(g.Consumer.Resolved) {
		out = append(out, cgRecord{Type: cgRegularExpressionType, Group: g.ID, Regex: re, Tombstone: true}.encode())
	}
	for _, t := range []int16{cgTargetAssignmentMetadataType, cgPartitionMetadataType, cgMetadataType} {
		out = append(out, cgRecord{Type: t, Group: g.ID, Tombstone: true}.encode())
	}
	return out
}

// listing is the group's state, type and protocol type for ListGroups: consumer
// groups are of type "consumer" with protocol type "consumer", as Kafka lists them.
func (g *Group) listing() (state, typ, protocolType string) {
	if g.Consumer != nil {
		return g.Consumer.State(), "consumer", ConsumerProtocolType
	}
	if g.Streams != nil {
		return g.Streams.State(), "streams", StreamsProtocolType
	}
	return g.State.String(), "classic", g.ProtocolType
}

// subscribes reports whether a member subscribes to topic (by name or regex).
func (g *ConsumerGroup) subscribes(topic string) bool {
	for _, m := range g.Members {
		for _, t := range g.memberTopics(m, []string{topic}) {
			if t == topic {
				return true
			}
		}
	}
	return false
}

// replayConsumerRecord applies a consumer-group record read while loading.
func replayConsumerRecord(g *Group, r *cgRecord, cfg *Config) {
	if g.Consumer == nil {
		if r.Tombstone {
			return // a deleted group's leftovers
		}
		g.Consumer = NewConsumerGroup(g.ID, &cfg.Consumer)
	}
	g.Consumer.apply(*r)
}

// finishConsumerGroupsLoad drops consumer groups whose records were all tombstoned
// and starts every member's session timeout from now, as Kafka's onLoaded.
func finishConsumerGroupsLoad(groups map[string]*Group, now time.Time, cfg *Config) {
	for _, g := range groups {
		cg := g.Consumer
		if cg == nil {
			continue
		}
		if cg.Epoch == 0 && len(cg.Members) == 0 {
			g.Consumer = nil
			continue
		}
		for _, m := range cg.Members {
			m.sessionDeadline = now.Add(cfg.Consumer.SessionTimeout)
			if m.State == MemberUnrevokedPartitions {
				m.rebalanceDeadline = now.Add(time.Duration(m.RebalanceTimeoutMs) * time.Millisecond)
			}
		}
	}
}
