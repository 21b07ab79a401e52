package coordinator

// The GroupCoordinator side of KIP-1071 streams groups: StreamsGroupHeartbeat and
// StreamsGroupDescribe, their request validation (GroupCoordinatorService), and
// where streams groups meet the rest — loading, offsets, ListGroups, DeleteGroups.
//
// A streams group lives in the shard's groups map as a Group whose Streams is set,
// sharing the Group's committed offsets, timer and lifecycle, as a consumer group
// does with Consumer.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ValidateStreamsGroupHeartbeat checks a request before any group is looked at, as
// GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures
// and throwIfStreamsGroupHeartbeatRequestIsInvalid (with Kafka's messages).
func ValidateStreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	if req.Topology != nil {
		for _, s := range req.Topology.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				return bad("Regular expressions for source topics are not supported yet.")
			}
		}
	}
	switch {
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
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
		if len(req.ActiveTasks) > 0 {
			return bad("ActiveTasks must be empty when (re-)joining.")
		}
		if len(req.StandbyTasks) > 0 {
			return bad("StandbyTasks must be empty when (re-)joining.")
		}
		if len(req.WarmupTasks) > 0 {
			return bad("WarmupTasks must be empty when (re-)joining.")
		}
		if req.Topology == nil {
			return bad("Topology must be non-null when (re-)joining.")
		}
		for _, s := range req.Topology.Subtopologies {
			for _, c := range s.StateChangelogTopics {
				if c.NumPartitions != 0 {
					return kerr.StreamsInvalidTopology.Code, fmt.Sprintf(
						"Changelog topic %s must have an undefined partition count, but it is set to %d.", c.Topic, c.NumPartitions)
				}
			}
		}
	case req.MemberEpoch == leaveGroupStaticMemberEpoch:
		if req.InstanceID == nil {
			return bad("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveGroupStaticMemberEpoch:
		return bad(fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch))
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return bad("If one task-type is non-null, all must be non-null.")
		}
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return bad("Topology can only be provided when (re-)joining.")
	}
	return 0, ""
}

// StreamsGroupHeartbeat handles StreamsGroupHeartbeat: the group's records are
// written before the answer, the group's timer re-armed, and missing internal topics
// handed to the Metadata's InternalTopicCreator.
func (c *GroupCoordinator) StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) *kmsg.StreamsGroupHeartbeatResponse {
	if code, msg := ValidateStreamsGroupHeartbeat(req); code != 0 {
		return streamsPlanError(code, msg).Resp
	}
	return groupHeartbeat(c, streamsKind, req.Group, req.MemberEpoch, streamsPlanError,
		func(g *Group, now time.Time) *streamsPlan {
			return g.Streams.Heartbeat(now, req, clientID, clientHost, c.md)
		},
		func(g *Group, now time.Time, plan *streamsPlan) {
			g.Streams.Commit(now, plan)
			g.Streams.FinishResponse(req, plan.Resp)
			if len(plan.Create) > 0 {
				if tc, ok := c.md.(InternalTopicCreator); ok {
					tc.CreateInternalTopics(g.ID, plan.Create)
				}
			}
		}).Resp
}

// logStreamsGroupLocked logs fenced members and changes of the group's state.
func (c *GroupCoordinator) logStreamsGroupLocked(g *Group) {
	sg := g.Streams
	c.logModernGroupLocked(streamsKind, g.ID, &sg.fenced, &sg.logged, consumerView{sg.Epoch, sg.AssignmentEpoch, len(sg.Members), sg.State()})
}

// Topology description statuses of StreamsGroupDescribe v1.
const (
	topologyDescriptionNotRequested int8 = 0
	topologyDescriptionNotStored    int8 = 1
)

// StreamsGroupDescribe describes streams groups, as GroupMetadataManager's
// streamsGroupDescribe: GROUP_ID_NOT_FOUND for unknown groups and other kinds.
func (c *GroupCoordinator) StreamsGroupDescribe(groups []string, includeTopologyDescription bool) []kmsg.StreamsGroupDescribeResponseGroup {
	newD := func(id string) kmsg.StreamsGroupDescribeResponseGroup {
		d := kmsg.NewStreamsGroupDescribeResponseGroup()
		d.Group = id
		return d
	}
	errorCode := func(d *kmsg.StreamsGroupDescribeResponseGroup) *int16 { return &d.ErrorCode }
	return describeGroups(c, groups, newD, errorCode, func(s *shard, id string, d *kmsg.StreamsGroupDescribeResponseGroup) {
		g, code, msg := describedGroupLocked(s, streamsKind, id)
		if code != 0 {
			d.ErrorCode, d.ErrorMessage = code, msg
			return
		}
		if g.Streams.configured == nil && g.Streams.Topology != nil {
			g.Streams.configured = configure(g.Streams.Topology, c.md)
		}
		g.Streams.describe(d)
		if includeTopologyDescription {
			// No topology description plugin is configured: nothing stored.
			d.TopologyDescriptionStatus = topologyDescriptionNotStored
		} else {
			d.TopologyDescriptionStatus = topologyDescriptionNotRequested
		}
	})
}

func (g *StreamsGroup) describe(d *kmsg.StreamsGroupDescribeResponseGroup) {
	d.State = g.State()
	d.Epoch = g.Epoch
	d.AssignmentEpoch = g.AssignmentEpoch
	d.AssignorName = kmsg.StringPtr(StreamsAssignorName)
	top := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
	top.Epoch = -1
	if t := g.Topology; t != nil {
		top.Epoch = t.Epoch
		if g.configured != nil && g.configured.Ready {
			top.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			info := func(in []streamsTopicInfo, sub string) []kmsg.TopicInfo {
				out := []kmsg.TopicInfo{}
				for _, ti := range in {
					x := kmsg.NewTopicInfo()
					x.Topic, x.ReplicationFactor = ti.Name, ti.ReplicationFactor
					x.NumPartitions = g.configured.partitions[ti.Name]
					for _, kv := range ti.Configs {
						x.Configs = append(x.Configs, kmsg.TopicInfoConfig{Key: kv.Key, Value: kv.Value})
					}
					out = append(out, x)
				}
				return out
			}
			for _, s := range t.Subtopologies {
				ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				ds.SubtopologyID = s.ID
				ds.SourceTopics = append([]string{}, s.SourceTopics...)
				ds.RepartitionSinkTopics = append([]string{}, s.RepartitionSinkTopics...)
				ds.StateChangelogTopics = info(s.StateChangelogTopics, s.ID)
				ds.RepartitionSourceTopics = info(s.RepartitionSourceTopics, s.ID)
				top.Subtopologies = append(top.Subtopologies, ds)
			}
		}
	}
	d.Topology = &top
	assignment := func(t StreamsTasks) kmsg.StreamsAssignment {
		a := kmsg.NewStreamsAssignment()
		a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = toTaskIDs(t.Active), toTaskIDs(t.Standby), toTaskIDs(t.Warmup)
		return a
	}
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.InstanceID, dm.RackID = m.ID, m.MemberEpoch, m.InstanceID, m.RackID
		dm.ClientID, dm.ClientHost, dm.TopologyEpoch, dm.ProcessID = m.ClientID, m.ClientHost, m.TopologyEpoch, m.ProcessID
		if e := m.UserEndpoint; e != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: e.Host, Port: e.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, kv := range m.ClientTags {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: kv.Key, Value: kv.Value})
		}
		dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		dm.Assignment = assignment(m.Assigned)
		dm.TargetAssignment = assignment(g.Target[m.ID])
		d.Members = append(d.Members, dm)
	}
}

// streamsTombstones deletes a streams group's records (nil for another group), in
// the order of Kafka's StreamsGroup.createGroupTombstoneRecords.
func (g *Group) streamsTombstones() []Record {
	if g.Streams == nil {
		return nil
	}
	var out []Record
	for _, m := range g.Streams.sortedMembers() {
		for _, r := range streamsMemberTombstones(g.ID, m.ID) {
			out = append(out, r.encode())
		}
	}
	for _, t := range []int16{sgTargetAssignmentMetadataType, sgTopologyType, sgMetadataType} {
		out = append(out, sgRecord{Type: t, Group: g.ID, Tombstone: true}.encode())
	}
	return out
}

// replayStreamsRecord applies a streams-group record read while loading.
func replayStreamsRecord(g *Group, r *sgRecord, cfg *Config) {
	if g.Streams == nil {
		if r.Tombstone {
			return
		}
		g.Streams = NewStreamsGroup(g.ID, &cfg.Streams)
	}
	g.Streams.apply(*r)
}

// finishStreamsGroupsLoad drops streams groups whose records were all tombstoned
// and starts every member's session timeout from now.
func finishStreamsGroupsLoad(groups map[string]*Group, now time.Time, cfg *Config) {
	for _, g := range groups {
		sg := g.Streams
		if sg == nil {
			continue
		}
		if sg.Epoch == 0 && len(sg.Members) == 0 && sg.Topology == nil {
			g.Streams = nil
			continue
		}
		for _, m := range sg.Members {
			m.sessionDeadline = now.Add(cfg.Streams.SessionTimeout)
			if m.State == StreamsMemberUnrevokedTasks {
				m.rebalanceDeadline = now.Add(time.Duration(m.RebalanceTimeoutMs) * time.Millisecond)
			}
		}
	}
}

// validateOffsetFetch is StreamsGroup.validateOffsetFetch for OffsetFetch v9+: a
// request naming a member must come from a member at its current epoch.
func (g *StreamsGroup) validateOffsetFetch(memberID *string, epoch int32) int16 {
	return validateMemberOffsetFetch(g.Members, memberID, epoch)
}
