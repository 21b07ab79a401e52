package coordinator

// The GroupCoordinator side of KIP-932 share groups: ShareGroupHeartbeat and
// ShareGroupDescribe. A share group lives in its shard's shareGroups map (the id
// cannot also be a classic or consumer group's), with its own session timer, and is
// written to __consumer_offsets (share_group_records.go) before a change is answered.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareMembersGone is called, outside any coordinator lock, with the members of a
// share group that left or were fenced, so their share-partition locks are released
// (server's SharePartitionManager). Set it before the coordinator serves requests.
func (c *GroupCoordinator) SetShareMembersGone(fn func(group string, members []string)) {
	c.shareGone = fn
}

// ShareGroupHeartbeat handles ShareGroupHeartbeat.
func (c *GroupCoordinator) ShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ShareGroupHeartbeatResponse {
	if code, msg := ValidateShareGroupHeartbeat(req); code != 0 {
		return shareError(code, msg)
	}
	s, code := c.shardFor(req.GroupID)
	if code != 0 {
		return shareError(code, "")
	}
	var gone []string
	defer func() {
		s.mu.Unlock()
		c.notifyShareGone(req.GroupID, gone)
	}()
	if g := s.groups[req.GroupID]; g != nil && g.State != Dead {
		return shareError(kerr.GroupIDNotFound.Code, "Group "+req.GroupID+" is not a share group.")
	}
	g := s.shareGroups[req.GroupID]
	if g == nil {
		if req.MemberEpoch != 0 {
			return shareError(kerr.GroupIDNotFound.Code, "Share group "+req.GroupID+" not found.")
		}
		if s.shareGroups == nil {
			s.shareGroups = map[string]*ShareGroup{}
		}
		g = NewShareGroup(req.GroupID, &c.cfg.Share)
		s.shareGroups[g.ID] = g
	}
	now := c.now()
	before := g.image()
	resp := g.Heartbeat(now, req, clientID, clientHost, c.md)
	if code := c.commitShareLocked(s, g, before); code != 0 {
		if len(before.members) == 0 {
			delete(s.shareGroups, g.ID) // a group this heartbeat created
		}
		return shareError(code, "")
	}
	if len(g.Members) != len(before.members) {
		c.logger.Info().Str("group", g.ID).Str("state", g.State()).Int32("epoch", g.Epoch).Int("members", len(g.Members)).Msg("share group changed")
	}
	gone = g.DrainGone()
	c.scheduleShareLocked(s, g)
	return resp
}

// commitShareLocked writes the records that take g from before to its state now
// (share_group_records.go); when the write fails g is put back as it was before and
// the code clients get is returned. s.mu should be held.
func (c *GroupCoordinator) commitShareLocked(s *shard, g *ShareGroup, before shareGroupImage) int16 {
	recs := shareGroupRecords(g.ID, before, g.image(), len(g.Members) == 0)
	code := c.writeLocked(s, recs)
	if code == 0 {
		return 0
	}
	g.Epoch, g.AssignmentEpoch, g.Target = before.epoch, before.assignmentEpoch, before.target
	g.Members = make(map[string]*ShareMember, len(before.members))
	for id, m := range before.members {
		g.Members[id] = &m
	}
	g.gone = nil
	return groupWriteError(code)
}

// finishShareGroupsLoadLocked makes the loaded share groups the shard's: every member
// gets a full session from now (as Kafka's replay schedules the session timeouts),
// and each group's subscription metadata is taken from the image (so the next
// heartbeat bumps the epoch only if a topic really changed). s.mu should be held.
func (c *GroupCoordinator) finishShareGroupsLoadLocked(s *shard, groups map[string]*ShareGroup, now time.Time) {
	for id, g := range groups {
		if len(g.Members) == 0 {
			delete(groups, id)
			continue
		}
		if s.groups[id] != nil {
			delete(groups, id) // an id both kinds claim: the classic/consumer group's records win
			continue
		}
		for _, m := range g.Members {
			m.sessionDeadline = now.Add(c.cfg.Share.SessionTimeout)
		}
		g.Subscription = g.subscriptionMetadata(c.md)
	}
	s.shareGroups = groups
	for _, g := range groups {
		c.scheduleShareLocked(s, g)
	}
}

func (c *GroupCoordinator) notifyShareGone(group string, members []string) {
	if len(members) > 0 && c.shareGone != nil {
		c.shareGone(group, members)
	}
}

// scheduleShareLocked (re)arms g's session timer; an empty group is dropped (its
// records were tombstoned by commitShareLocked).
func (c *GroupCoordinator) scheduleShareLocked(s *shard, g *ShareGroup) {
	next := g.NextDeadline()
	if next.IsZero() {
		if g.timer != nil {
			g.timer.Stop()
			g.timer = nil
		}
		delete(s.shareGroups, g.ID)
		return
	}
	d := max(next.Sub(c.now()), 0)
	if g.timer != nil {
		g.timer.Reset(d)
		return
	}
	g.timer = time.AfterFunc(d, func() { c.fireShare(s, g) })
}

// fireShare fences the share group's members whose session ran out.
func (c *GroupCoordinator) fireShare(s *shard, g *ShareGroup) {
	var gone []string
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gone || s.shareGroups[g.ID] != g {
			return
		}
		before := g.image()
		g.Tick(c.now())
		fenced := g.gone
		if code := c.commitShareLocked(s, g, before); code != 0 {
			// Tried again in a second, not at once: the deadlines are past.
			g.timer.Reset(time.Second)
			return
		}
		for _, f := range fenced {
			c.logger.Info().Str("group", g.ID).Str("member", f.id).Str("reason", f.reason).Msg("share group member fenced")
		}
		gone = g.DrainGone()
		c.scheduleShareLocked(s, g)
	}()
	c.notifyShareGone(g.ID, gone)
}

// unloadShareGroupsLocked stops the share groups' timers of a shard being unloaded.
func unloadShareGroupsLocked(s *shard) {
	for _, g := range s.shareGroups {
		if g.timer != nil {
			g.timer.Stop()
		}
	}
	s.shareGroups = nil
}

// ShareGroupDescribe describes share groups, as GroupMetadataManager's
// shareGroupDescribe: GROUP_ID_NOT_FOUND for unknown groups and for others' types.
func (c *GroupCoordinator) ShareGroupDescribe(groups []string) []kmsg.ShareGroupDescribeResponseGroup {
	newD := func(id string) kmsg.ShareGroupDescribeResponseGroup {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		return d
	}
	errorCode := func(d *kmsg.ShareGroupDescribeResponseGroup) *int16 { return &d.ErrorCode }
	return describeGroups(c, groups, newD, errorCode, func(s *shard, id string, d *kmsg.ShareGroupDescribeResponseGroup) {
		switch g := s.shareGroups[id]; {
		case g != nil:
			g.describe(d, c.md)
		case s.groups[id] != nil && s.groups[id].State != Dead:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			d.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a share group.")
		default:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			d.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		}
	})
}

// listShareGroupsLocked lists the shard's share groups whose state want accepts, for
// ListGroups (protocol type and group type "share", as Kafka's ShareGroup).
// s.mu should be held.
func listShareGroupsLocked(s *shard, want func(state string) bool) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range s.shareGroups {
		if !want(g.State()) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State(), "share"
		out = append(out, lg)
	}
	return out
}

// ShareGroupPartitions returns the topic-partitions of a share group's target
// assignment (every partition the group's members were given, whose share-partition
// state may exist), for DescribeShareGroupOffsets: GROUP_ID_NOT_FOUND for an unknown
// group or one of another type, as GroupCoordinatorService.describeShareGroupOffsets.
func (c *GroupCoordinator) ShareGroupPartitions(id string) (TopicPartitions, int16) {
	s, code := c.shardFor(id)
	if code != 0 {
		return nil, code
	}
	defer s.mu.Unlock()
	g := s.shareGroups[id]
	if g == nil {
		return nil, kerr.GroupIDNotFound.Code
	}
	out := TopicPartitions{}
	for _, tps := range g.Target {
		for id, ps := range tps {
			out[id] = append(out[id], ps...)
		}
	}
	for id, ps := range out {
		slices.Sort(ps)
		out[id] = slices.Compact(ps)
	}
	return out, 0
}

// ShareGroupMembers is how many members a share group has, for the offsets admin
// APIs, which need an empty group: 0 for a group that does not exist (an empty share
// group is dropped here, where Kafka keeps it), GROUP_ID_NOT_FOUND for an id another
// kind of group holds.
func (c *GroupCoordinator) ShareGroupMembers(id string) (int, int16) {
	s, code := c.shardFor(id)
	if code != 0 {
		return 0, code
	}
	defer s.mu.Unlock()
	if g := s.groups[id]; g != nil && g.State != Dead {
		return 0, kerr.GroupIDNotFound.Code
	}
	if g := s.shareGroups[id]; g != nil {
		return len(g.Members), 0
	}
	return 0, 0
}
