package coordinator

// What KIP-848 consumer groups and KIP-1071 streams groups ("modern" groups, as
// Kafka's coordinator.group.modern package names them) share: the heartbeat's
// find/create/convert, write, then commit path; a member's session and rebalance
// timeouts; the member epoch check; finding the member a leave is about; the member
// checks of OffsetCommit and OffsetFetch; the group's log lines; a classic JoinGroup
// for an empty one; and the loop every group describe (classic and share ones too)
// runs. Each kind's own state machine (ConsumerGroup, StreamsGroup) stays apart;
// groupKind says how a Group holds it and how Kafka names it in messages.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupKind is a KIP-848-style group kind as the shared coordinator paths see it.
type groupKind struct {
	// name is the kind in messages ("Group g is not a consumer group."); title
	// starts one ("Consumer group g not found.").
	name, title string
	// is reports whether g holds a group of this kind.
	is func(g *Group) bool
	// attach gives g an empty group of this kind; detach drops it.
	attach func(g *Group, cfg *Config)
	detach func(g *Group)
	// members is how many members g's group of this kind has.
	members func(g *Group) int
	// tombstones delete g's records of this kind, in Kafka's
	// createGroupTombstoneRecords order.
	tombstones func(g *Group) []Record
}

var (
	consumerKind = groupKind{
		name: "consumer", title: "Consumer",
		is:         func(g *Group) bool { return g.Consumer != nil },
		attach:     func(g *Group, cfg *Config) { g.Consumer = NewConsumerGroup(g.ID, &cfg.Consumer) },
		detach:     func(g *Group) { g.Consumer = nil },
		members:    func(g *Group) int { return len(g.Consumer.Members) },
		tombstones: (*Group).consumerTombstones,
	}
	streamsKind = groupKind{
		name: "streams", title: "Streams",
		is:         func(g *Group) bool { return g.Streams != nil },
		attach:     func(g *Group, cfg *Config) { g.Streams = NewStreamsGroup(g.ID, &cfg.Streams) },
		detach:     func(g *Group) { g.Streams = nil },
		members:    func(g *Group) int { return len(g.Streams.Members) },
		tombstones: (*Group).streamsTombstones,
	}
)

// groupPlan is a consumer or streams heartbeat plan as groupHeartbeat handles it.
type groupPlan interface {
	// errorCode is the planned response's error code (0: the plan is to be written).
	errorCode() int16
	// encodedRecords are the plan's records in their __consumer_offsets form.
	encodedRecords() []Record
}

func (p *heartbeatPlan) errorCode() int16 { return p.Resp.ErrorCode }
func (p *streamsPlan) errorCode() int16   { return p.Resp.ErrorCode }

func (p *heartbeatPlan) encodedRecords() []Record { return encodeAll(p.Records) }
func (p *streamsPlan) encodedRecords() []Record   { return encodeAll(p.Records) }

func encodeAll[R interface{ encode() Record }](rs []R) []Record {
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.encode())
	}
	return out
}

// groupHeartbeat runs a validated heartbeat of kind k for group at memberEpoch, as
// GroupMetadataManager's consumerGroupHeartbeat and streamsGroupHeartbeat share it:
// an unknown group is created by a joining member (epoch 0), an empty classic group
// (perhaps only offsets) is converted keeping its offsets (its classic record
// tombstoned first), anything else — a share group, the other kind, a classic group
// with members — is GROUP_ID_NOT_FOUND. beat plans the heartbeat on the group; the
// plan's records are written, then commit applies it. A group created or converted
// for a plan that was not written is undone. fail makes an error plan.
func groupHeartbeat[P groupPlan](c *GroupCoordinator, k groupKind, group string, memberEpoch int32,
	fail func(code int16, msg string) P, beat func(g *Group, now time.Time) P, commit func(g *Group, now time.Time, p P)) P {
	s, code := c.shardFor(group)
	if code != 0 {
		return fail(code, "")
	}
	defer s.mu.Unlock()
	now := c.now()
	notKind := "Group " + group + " is not a " + k.name + " group."
	g := s.groups[group]
	var pre []Record // written before the group's own records
	created, converted := false, false
	switch {
	case g == nil && s.shareGroups[group] != nil:
		return fail(kerr.GroupIDNotFound.Code, notKind)
	case g == nil:
		if memberEpoch != 0 {
			return fail(kerr.GroupIDNotFound.Code, k.title+" group "+group+" not found.")
		}
		g = NewGroup(group, &c.cfg, now)
		k.attach(g, &c.cfg)
		s.groups[group] = g
		created = true
	case !k.is(g):
		// An empty classic group becomes a group of kind k; one with members stays
		// classic, and a group of the other kind stays what it is.
		if memberEpoch != 0 || g.Consumer != nil || g.Streams != nil || g.State != Empty || !g.IsEmpty() {
			return fail(kerr.GroupIDNotFound.Code, notKind)
		}
		k.attach(g, &c.cfg)
		if g.ProtocolType != "" || g.Generation > 0 {
			pre = append(pre, GroupTombstone(g.ID))
		}
		converted = true
	}
	plan := beat(g, now)
	if plan.errorCode() == 0 {
		if code := c.writeLocked(s, append(pre, plan.encodedRecords()...)); code != 0 {
			plan = fail(groupWriteError(code), "")
		} else {
			commit(g, now, plan)
			if converted {
				g.ProtocolType, g.Generation, g.Protocol, g.Leader = "", 0, "", ""
			}
			created, converted = false, false
		}
	}
	switch {
	case created:
		c.removeGroupLocked(s, g)
		return plan
	case converted:
		k.detach(g)
	}
	c.scheduleLocked(s, g)
	return plan
}

// memberTimers are a consumer or streams group member's two timeouts, as Kafka's
// GroupMetadataManager schedules them for both kinds.
type memberTimers struct {
	// sessionDeadline: the member is fenced if no heartbeat renews it by then.
	sessionDeadline time.Time
	// rebalanceDeadline is set while the member must revoke (UNREVOKED_PARTITIONS,
	// UNREVOKED_TASKS): it is fenced if it has not revoked by then (its rebalance
	// timeout).
	rebalanceDeadline time.Time
}

// arm applies a committed plan's timer changes: renew restarts the session timeout;
// rebalance +1 arms the rebalance timeout (rebalanceTimeoutMs), -1 clears it.
func (t *memberTimers) arm(now time.Time, session time.Duration, renew bool, rebalance int, rebalanceTimeoutMs int32) {
	if renew {
		t.sessionDeadline = now.Add(session)
	}
	switch {
	case rebalance > 0:
		t.rebalanceDeadline = now.Add(time.Duration(rebalanceTimeoutMs) * time.Millisecond)
	case rebalance < 0:
		t.rebalanceDeadline = time.Time{}
	}
}

// expired is why the member is to be fenced at now ("session timeout", or while
// revoking "rebalance timeout"), or "" if neither ran out.
func (t *memberTimers) expired(now time.Time, revoking bool) string {
	switch {
	case !t.sessionDeadline.IsZero() && !now.Before(t.sessionDeadline):
		return "session timeout"
	case revoking && !t.rebalanceDeadline.IsZero() && !now.Before(t.rebalanceDeadline):
		return "rebalance timeout"
	}
	return ""
}

// earliest is the earlier of next and the member's deadlines (zero: none).
func (t *memberTimers) earliest(next time.Time) time.Time {
	for _, d := range []time.Time{t.sessionDeadline, t.rebalanceDeadline} {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// groupMember is a consumer or streams group member as the shared epoch checks see it.
type groupMember interface {
	*ConsumerMember | *StreamsMember
	epoch() int32
	memberID() string
	expired(now time.Time, revoking bool) string // memberTimers'
	earliest(next time.Time) time.Time           // memberTimers'
}

func (m *ConsumerMember) epoch() int32     { return m.MemberEpoch }
func (m *StreamsMember) epoch() int32      { return m.MemberEpoch }
func (m *ConsumerMember) memberID() string { return m.ID }
func (m *StreamsMember) memberID() string  { return m.ID }

// nextDeadline is the earliest of members' deadlines: when the group's Tick must
// next run (zero: never).
func nextDeadline[M groupMember](members map[string]M) time.Time {
	var next time.Time
	for _, m := range members {
		next = m.earliest(next)
	}
	return next
}

// fenceExpired is the loop of both kinds' Tick: in member id order, each member
// whose session ran out, or that did not revoke (revoking) within its rebalance
// timeout, is added to fenced with why and fenced by fence, which applies the
// member's fence records and returns them encoded.
func fenceExpired[M groupMember](members map[string]M, now time.Time, revoking func(M) bool, fenced *[]fencedMember, fence func(M) []Record) []Record {
	var out []Record
	for _, m := range sortedMembers(members) {
		reason := m.expired(now, revoking(m))
		if reason == "" {
			continue
		}
		*fenced = append(*fenced, fencedMember{m.memberID(), reason})
		out = append(out, fence(m)...)
	}
	return out
}

// sortedMembers is members ordered by id (the map's keys).
func sortedMembers[M groupMember](members map[string]M) []M {
	out := make([]M, 0, len(members))
	for _, id := range sortedKeys(members) {
		out = append(out, members[id])
	}
	return out
}

// checkMemberEpoch is throwIfConsumerGroupMemberEpochIsInvalid and its streams twin
// (kind: "consumer", "streams"): an epoch ahead of the member's, or behind it other
// than the previous epoch with the owned partitions (tasks) a subset of the assigned
// ones, is FENCED_MEMBER_EPOCH; epoch 0 rejoins in place. ownsSubset is asked only
// for the previous epoch. It returns 0 when the epoch is fine.
func checkMemberEpoch(kind string, received, memberEpoch, previousEpoch int32, ownsSubset func() bool) (int16, string) {
	switch {
	case received == 0:
	case received > memberEpoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The %s group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", kind, received, memberEpoch)
	case received < memberEpoch && (received != previousEpoch || !ownsSubset()):
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The %s group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", kind, received, memberEpoch)
	}
	return 0, ""
}

// leavingMember finds the member a leave heartbeat (epoch -1 or -2) is about, as
// consumerGroupLeave and streamsGroupLeave: by member id, or for a static member by
// its instance id, which must still belong to memberID (FENCED_INSTANCE_ID if a
// newer member took it). static maps instance ids to member ids.
func leavingMember[M groupMember](members map[string]M, static map[string]string, group, memberID string, instanceID *string) (M, int16, string) {
	if instanceID == nil {
		m, ok := members[memberID]
		if !ok {
			return m, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, group)
		}
		return m, 0, ""
	}
	id := static[*instanceID]
	m, ok := members[id]
	switch {
	case !ok:
		return m, kerr.UnknownMemberID.Code, "Instance id " + *instanceID + " is unknown."
	case id != memberID:
		return m, kerr.FencedInstanceID.Code, fmt.Sprintf(
			"Static member %s with instance id %s was fenced by member %s.", memberID, *instanceID, id)
	}
	return m, 0, ""
}

// validateMemberOffsetCommit is ConsumerGroup.validateOffsetCommit and
// StreamsGroup.validateOffsetCommit for a non-transactional commit: epoch -1 commits
// only to an empty group (admin tools); otherwise the member must exist
// (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (UNSUPPORTED_VERSION), and commit at its
// current epoch (STALE_MEMBER_EPOCH).
func validateMemberOffsetCommit[M groupMember](members map[string]M, memberID string, epoch int32, version int16) int16 {
	if epoch < 0 && len(members) == 0 {
		return 0
	}
	m, ok := members[memberID]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case version < 9:
		return kerr.UnsupportedVersion.Code
	case epoch != m.epoch():
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateMemberOffsetFetch is validateOffsetFetch of both kinds for OffsetFetch v9+:
// a request naming a member must come from a member at its current epoch.
func validateMemberOffsetFetch[M groupMember](members map[string]M, memberID *string, epoch int32) int16 {
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m, ok := members[id]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case m.epoch() != epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// describeGroups is the loop every group describe shares (DescribeGroups,
// ConsumerGroupDescribe, StreamsGroupDescribe, ShareGroupDescribe): each id gets a
// response made by newD; an empty id is INVALID_GROUP_ID, one whose shard is not led
// or not loaded here gets shardFor's code (errorCode points at the response's
// ErrorCode), and describe fills the rest under the shard's lock.
func describeGroups[D any](c *GroupCoordinator, ids []string, newD func(id string) D, errorCode func(*D) *int16,
	describe func(s *shard, id string, d *D)) []D {
	out := make([]D, 0, len(ids))
	for _, id := range ids {
		d := newD(id)
		if id == "" {
			*errorCode(&d) = kerr.InvalidGroupID.Code
		} else if s, code := c.shardFor(id); code != 0 {
			*errorCode(&d) = code
		} else {
			func() {
				defer s.mu.Unlock()
				describe(s, id, &d)
			}()
		}
		out = append(out, d)
	}
	return out
}

// describedGroupLocked is the group of kind k a describe names, or GROUP_ID_NOT_FOUND
// with Kafka's message (unknown or dead; of another kind). s.mu should be held.
func describedGroupLocked(s *shard, k groupKind, id string) (*Group, int16, *string) {
	g := s.groups[id]
	switch {
	case g == nil || g.State == Dead:
		return nil, kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group " + id + " not found.")
	case !k.is(g):
		return nil, kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group " + id + " is not a " + k.name + " group.")
	}
	return g, 0, nil
}

// logModernGroupLocked logs the members a timeout fenced (draining fenced) and the
// group's view v when it differs from the one last logged.
func (c *GroupCoordinator) logModernGroupLocked(k groupKind, group string, fenced *[]fencedMember, logged *consumerView, v consumerView) {
	for _, f := range *fenced {
		c.logger.Info().Str("group", group).Str("member", f.id).Str("reason", f.reason).Msg(k.name + " group member fenced")
	}
	*fenced = nil
	if v != *logged {
		*logged = v
		c.logger.Info().Str("group", group).Str("state", v.state).Int32("epoch", v.epoch).
			Int32("assignment_epoch", v.assignmentEpoch).Int("members", v.members).Msg(k.name + " group changed")
	}
}

// classicJoinModernGroupLocked handles a classic JoinGroup for the id of a group of
// kind k: an empty one turns into a classic group (its records are tombstoned;
// offsets stay); one with members answers INCONSISTENT_GROUP_PROTOCOL, as Kafka does
// for a member whose protocols the group cannot take.
func (c *GroupCoordinator) classicJoinModernGroupLocked(s *shard, g *Group, k groupKind) int16 {
	if k.members(g) > 0 {
		return kerr.InconsistentGroupProtocol.Code
	}
	if code := c.writeLocked(s, k.tombstones(g)); code != 0 {
		return groupWriteError(code)
	}
	k.detach(g)
	return 0
}
