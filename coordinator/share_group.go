package coordinator

// The KIP-932 share group membership state machine, as Kafka's ShareGroup,
// ShareGroupMember and the share-group parts of GroupMetadataManager
// (shareGroupHeartbeat, the session timeout).
//
// Members of a share group share partitions, so there is no revocation and no
// reconciliation: the group epoch is bumped when a member joins, leaves or changes
// its subscription, or a subscribed topic's partition count changes; the next
// heartbeat recomputes the target assignment with the simple share assignor; a
// member takes its target (and the assignment epoch) at its next heartbeat.
//
// It is pure: the coordinator writes the records of each change to __consumer_offsets
// (share_group_records.go) and a new coordinator replays them. Time is passed in.

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SimpleAssignorName is the share-group assignor, as Kafka's SimpleAssignor.name().
const SimpleAssignorName = "simple"

// ShareGroupConfig holds Kafka's group.share.* membership settings (Go units).
type ShareGroupConfig struct {
	// SessionTimeout is group.share.session.timeout.ms (45000).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5000).
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size (200).
	MaxSize int
}

// DefaultShareGroupConfig returns Kafka's defaults.
func DefaultShareGroupConfig() ShareGroupConfig {
	return ShareGroupConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 200}
}

// ShareMember is one member of a share group.
type ShareMember struct {
	ID         string
	RackID     *string
	ClientID   string
	ClientHost string
	// Subscribed are the subscribed topic names, sorted.
	Subscribed []string
	// MemberEpoch is the epoch of Assigned. Invariant: MemberEpoch <= the group's
	// AssignmentEpoch.
	MemberEpoch int32
	Assigned    TopicPartitions

	sessionDeadline time.Time
}

// ShareGroup is one share group. It is not safe for concurrent use.
type ShareGroup struct {
	ID string
	// Epoch is the group epoch.
	Epoch int32
	// AssignmentEpoch is the epoch of Target. Invariant: AssignmentEpoch <= Epoch.
	AssignmentEpoch int32
	Members         map[string]*ShareMember
	// Target is every member's target assignment.
	Target map[string]TopicPartitions
	// Subscription is the metadata (partition counts by topic id) of the subscribed
	// topics the target was, or is to be, computed from.
	Subscription map[string]TopicMetadata

	// gone lists the members removed (left or fenced) since the caller last
	// drained it, with why: their share-partition locks are to be released.
	gone []fencedMember
	// timer runs the session timeouts (the coordinator's).
	timer *time.Timer

	cfg *ShareGroupConfig
}

// NewShareGroup returns an empty share group at epoch 0.
func NewShareGroup(id string, cfg *ShareGroupConfig) *ShareGroup {
	return &ShareGroup{ID: id, Members: map[string]*ShareMember{}, Target: map[string]TopicPartitions{},
		Subscription: map[string]TopicMetadata{}, cfg: cfg}
}

// State is Kafka's ShareGroupState name: Empty or Stable.
func (g *ShareGroup) State() string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// ValidateShareGroupHeartbeat checks a request before any group is looked at, as
// GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid: INVALID_REQUEST
// with Kafka's message, or 0.
func ValidateShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
	case req.GroupID == "":
		return bad("GroupId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return bad("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < leaveGroupMemberEpoch:
		return bad("MemberEpoch is invalid.")
	}
	return 0, ""
}

func shareError(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}

// Heartbeat handles one ShareGroupHeartbeat of a validated request.
func (g *ShareGroup) Heartbeat(now time.Time, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, md Metadata) *kmsg.ShareGroupHeartbeatResponse {
	m := g.Members[req.MemberID]
	// changed: the group epoch is bumped once, whatever changed.
	changed := false
	switch {
	case req.MemberEpoch == leaveGroupMemberEpoch:
		if m == nil {
			return shareError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
		}
		g.remove(m.ID, "left the group")
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.MemberID, resp.MemberEpoch = &m.ID, leaveGroupMemberEpoch
		resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
		return resp
	case req.MemberEpoch == 0:
		if m == nil {
			if g.cfg.MaxSize > 0 && len(g.Members) >= g.cfg.MaxSize {
				return shareError(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", g.cfg.MaxSize))
			}
			m = &ShareMember{ID: req.MemberID}
			g.Members[m.ID] = m
			changed = true
		}
		// (Re)joining: the member starts over and is sent its assignment.
		m.MemberEpoch = 0
	case m == nil:
		return shareError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
	case req.MemberEpoch != m.MemberEpoch:
		return shareError(kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a different epoch (%d) than the one known by the group coordinator (%d).", req.MemberEpoch, m.MemberEpoch))
	}
	m.RackID, m.ClientID, m.ClientHost = req.RackID, clientID, clientHost
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.Subscribed) {
			m.Subscribed = subs
			changed = true
		}
	}
	if meta := g.subscriptionMetadata(md); !sameTopicMetadata(meta, g.Subscription) {
		g.Subscription = meta
		changed = true
	}
	if changed {
		g.Epoch++
	}
	if g.Epoch > g.AssignmentEpoch {
		g.Target = g.assign()
		g.AssignmentEpoch = g.Epoch
	}
	m.sessionDeadline = now.Add(g.cfg.SessionTimeout)

	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID = &m.ID
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	if m.MemberEpoch != g.AssignmentEpoch {
		m.MemberEpoch = g.AssignmentEpoch
		m.Assigned = g.Target[m.ID]
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, id := range sortedTopicIDs(m.Assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, slices.Clone(m.Assigned[id])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	resp.MemberEpoch = m.MemberEpoch
	return resp
}

// subscriptionMetadata is the partition count of every subscribed topic that exists.
func (g *ShareGroup) subscriptionMetadata(md Metadata) map[string]TopicMetadata {
	out := map[string]TopicMetadata{}
	for _, m := range g.Members {
		for _, t := range m.Subscribed {
			if _, ok := out[t]; ok {
				continue
			}
			if n := md.NumPartitions(t); n > 0 {
				out[t] = TopicMetadata{ID: md.TopicID(t), Name: t, NumPartitions: n}
			}
		}
	}
	return out
}

func sameTopicMetadata(a, b map[string]TopicMetadata) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w.ID != v.ID || w.NumPartitions != v.NumPartitions {
			return false
		}
	}
	return true
}

// assign is the simple share assignor as KIP-932 describes it: every member gets
// every partition of every topic it subscribes to (members share partitions; the
// share partitions' locks hand each record to one of them).
func (g *ShareGroup) assign() map[string]TopicPartitions {
	out := make(map[string]TopicPartitions, len(g.Members))
	for id, m := range g.Members {
		tps := TopicPartitions{}
		for _, t := range m.Subscribed {
			meta, ok := g.Subscription[t]
			if !ok {
				continue
			}
			ps := make([]int32, meta.NumPartitions)
			for i := range ps {
				ps[i] = int32(i)
			}
			tps[meta.ID] = ps
		}
		out[id] = tps
	}
	return out
}

func sortedTopicIDs(tps TopicPartitions) [][16]byte {
	ids := make([][16]byte, 0, len(tps))
	for id := range tps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

// remove takes a member out and bumps the group epoch.
func (g *ShareGroup) remove(id, reason string) {
	delete(g.Members, id)
	delete(g.Target, id)
	g.Epoch++
	g.gone = append(g.gone, fencedMember{id: id, reason: reason})
}

// Tick fences the members whose session timed out by now.
func (g *ShareGroup) Tick(now time.Time) {
	for id, m := range g.Members {
		if !m.sessionDeadline.After(now) {
			g.remove(id, "session timed out")
		}
	}
}

// NextDeadline is the earliest session deadline (zero with no members).
func (g *ShareGroup) NextDeadline() time.Time {
	var next time.Time
	for _, m := range g.Members {
		if next.IsZero() || m.sessionDeadline.Before(next) {
			next = m.sessionDeadline
		}
	}
	return next
}

// DrainGone returns the member ids removed since the last call.
func (g *ShareGroup) DrainGone() []string {
	out := make([]string, len(g.gone))
	for i, f := range g.gone {
		out[i] = f.id
	}
	g.gone = nil
	return out
}

// describe fills a ShareGroupDescribe group.
func (g *ShareGroup) describe(d *kmsg.ShareGroupDescribeResponseGroup, md Metadata) {
	d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = g.State(), g.Epoch, g.AssignmentEpoch, SimpleAssignorName
	ids := make([]string, 0, len(g.Members))
	for id := range g.Members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.Members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.ID, m.RackID, m.MemberEpoch, m.ClientID, m.ClientHost
		dm.SubscribedTopicNames = slices.Clone(m.Subscribed)
		for _, tid := range sortedTopicIDs(m.Assigned) {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, slices.Clone(m.Assigned[tid])
			tp.Topic, _ = md.TopicName(tid)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
}
