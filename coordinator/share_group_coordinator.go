package coordinator

// The GroupCoordinator side of KIP-932 share groups: ShareGroupHeartbeat and
// ShareGroupDescribe. A share group lives in its shard's shareGroups map (the id
// cannot also be a classic or consumer group's), with its own session timer; it is
// in memory only until the share-group records are written (share_group.go).

import (
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
	before := len(g.Members)
	resp := g.Heartbeat(now, req, clientID, clientHost, c.md)
	if len(g.Members) != before {
		c.logger.Info().Str("group", g.ID).Str("state", g.State()).Int32("epoch", g.Epoch).Int("members", len(g.Members)).Msg("share group changed")
	}
	gone = g.DrainGone()
	c.scheduleShareLocked(s, g)
	return resp
}

func (c *GroupCoordinator) notifyShareGone(group string, members []string) {
	if len(members) > 0 && c.shareGone != nil {
		c.shareGone(group, members)
	}
}

// scheduleShareLocked (re)arms g's session timer; an empty group is dropped (it
// holds nothing else until its records are persisted).
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
		g.Tick(c.now())
		for _, f := range g.gone {
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
	out := make([]kmsg.ShareGroupDescribeResponseGroup, 0, len(groups))
	for _, id := range groups {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		if id == "" {
			d.ErrorCode = kerr.InvalidGroupID.Code
			out = append(out, d)
			continue
		}
		s, code := c.shardFor(id)
		if code != 0 {
			d.ErrorCode = code
			out = append(out, d)
			continue
		}
		func() {
			defer s.mu.Unlock()
			switch g := s.shareGroups[id]; {
			case g != nil:
				g.describe(&d, c.md)
			case s.groups[id] != nil && s.groups[id].State != Dead:
				d.ErrorCode = kerr.GroupIDNotFound.Code
				d.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a share group.")
			default:
				d.ErrorCode = kerr.GroupIDNotFound.Code
				d.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
			}
		}()
		out = append(out, d)
	}
	return out
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
