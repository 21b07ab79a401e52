package coordinator

// The KIP-848 consumer group state machine, as Kafka's ConsumerGroup,
// ConsumerGroupMember, CurrentAssignmentBuilder, TargetAssignmentBuilder and the
// consumer-group parts of GroupMetadataManager (consumerGroupHeartbeat,
// consumerGroupLeave, the session and rebalance timeouts).
//
// The group has an epoch, bumped whenever what the assignment depends on changes (a
// member joins, leaves or changes its subscription; a subscribed topic is created,
// deleted or gains partitions). When the group epoch passes the target assignment
// epoch, the next heartbeat recomputes the target assignment with the server-side
// assignor. Each member then converges on its target at its own pace:
//
//	STABLE ──new target──> UNREVOKED_PARTITIONS (keeps its epoch; must stop owning
//	  ^                       |                   the partitions pending revocation)
//	  |                       v  revoked (reported in the heartbeat's owned partitions)
//	  +───────────── UNRELEASED_PARTITIONS (at the target epoch; waits for partitions
//	    all released                        another member has not revoked yet)
//
// A partition is given to a member only once no other member owns it (assigned or
// pending revocation), so no partition is ever owned twice.
//
// It is pure: a heartbeat is planned (response + records) without touching the
// group; the caller writes the records and then commits the plan, which applies the
// records — the same replay that loads the group from __consumer_offsets — and arms
// the member's timers. Time is passed in; NextDeadline and Tick run the timeouts.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MemberState is a consumer group member's reconciliation state; the values are
// Kafka's MemberState bytes (part of the on-disk format; do not change).
type MemberState int8

// Member states.
const (
	MemberStable               MemberState = 0
	MemberUnrevokedPartitions  MemberState = 1
	MemberUnreleasedPartitions MemberState = 2
)

func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case MemberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	leaveGroupMemberEpoch       int32 = -1
	leaveGroupStaticMemberEpoch int32 = -2
)

// ConsumerGroupConfig holds Kafka's group.consumer.* settings (Go units).
type ConsumerGroupConfig struct {
	// SessionTimeout is group.consumer.session.timeout.ms (45000).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.consumer.heartbeat.interval.ms (5000).
	HeartbeatInterval time.Duration
	// MaxSize is group.consumer.max.size (unbounded: 0 here).
	MaxSize int
	// Assignors is group.consumer.assignors resolved to builtin names ("uniform",
	// "range"); the first is the default.
	Assignors []string
}

// DefaultConsumerGroupConfig returns Kafka's defaults.
func DefaultConsumerGroupConfig() ConsumerGroupConfig {
	return ConsumerGroupConfig{
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		Assignors:         []string{UniformAssignorName, RangeAssignorName},
	}
}

// ConsumerMember is one member of a consumer group: its metadata
// (ConsumerGroupMemberMetadataValue) and current assignment
// (ConsumerGroupCurrentMemberAssignmentValue).
type ConsumerMember struct {
	ID string
	memberMetadata
	currentAssignment
	memberTimers
}

// ConsumerGroup is one KIP-848 consumer group. It is not safe for concurrent use.
type ConsumerGroup struct {
	ID string
	// Epoch is the group epoch.
	Epoch int32
	// AssignmentEpoch is the epoch of Target. Invariant: AssignmentEpoch <= Epoch.
	AssignmentEpoch int32
	Members         map[string]*ConsumerMember
	// Target is every member's target assignment.
	Target map[string]TopicPartitions
	// Subscription is the metadata of the subscribed topics the target was (or is
	// to be) computed from.
	Subscription map[string]TopicMetadata
	// Resolved are the members' subscription regexes with the topics they matched
	// (ConsumerGroupRegularExpression records).
	Resolved map[string][]string

	// static maps group.instance.id to member id.
	static map[string]string
	// owners maps each partition to the member that owns it (assigned or pending
	// revocation). Invariant: a partition has at most one owner.
	owners map[topicPartition]string
	// regexes caches compiled subscription regexes.
	regexes map[string]*regexp.Regexp
	// fenced lists the members Tick fenced since the caller last drained it, with
	// why (for the coordinator's log; the pure state machine does not log).
	fenced []fencedMember
	// logged is the group's view when it was last logged.
	logged consumerView

	cfg *ConsumerGroupConfig
}

// NewConsumerGroup returns an empty group at epoch 0.
func NewConsumerGroup(id string, cfg *ConsumerGroupConfig) *ConsumerGroup {
	return &ConsumerGroup{
		ID: id, Members: map[string]*ConsumerMember{}, Target: map[string]TopicPartitions{},
		Subscription: map[string]TopicMetadata{}, Resolved: map[string][]string{}, static: map[string]string{},
		owners: map[topicPartition]string{}, regexes: map[string]*regexp.Regexp{}, cfg: cfg,
	}
}

// State is Kafka's ConsumerGroupState name: Empty, Assigning (a new target is due),
// Reconciling (a member has not reached the target) or Stable.
func (g *ConsumerGroup) State() string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	if g.Epoch > g.AssignmentEpoch {
		return "Assigning"
	}
	for _, m := range g.Members {
		if m.State != MemberStable || m.MemberEpoch != g.AssignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// TopicLister is optionally implemented by Metadata to resolve regex subscriptions.
type TopicLister interface {
	TopicNames() []string
}

// heartbeatPlan is what a heartbeat (or a timeout) decided: the response, the records
// to write, and what to do once they are written.
type heartbeatPlan struct {
	Resp    *kmsg.ConsumerGroupHeartbeatResponse
	Records []cgRecord
	// member is the member the plan is about ("" for none).
	member string
	// renew restarts member's session timeout.
	renew bool
	// rebalance: +1 arms member's rebalance timeout, -1 clears it.
	rebalance int
}

func planError(code int16, msg string) *heartbeatPlan {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return &heartbeatPlan{Resp: r}
}

// Commit applies a plan whose records were written.
func (g *ConsumerGroup) Commit(now time.Time, p *heartbeatPlan) {
	for _, r := range p.Records {
		g.apply(r)
	}
	m := g.Members[p.member]
	if m == nil {
		return
	}
	m.arm(now, g.cfg.SessionTimeout, p.renew, p.rebalance, m.RebalanceTimeoutMs)
}

// Heartbeat plans a ConsumerGroupHeartbeat the caller has validated (see
// ValidateConsumerGroupHeartbeat), as GroupMetadataManager.consumerGroupHeartbeat:
// the member is created or updated (bumping the group epoch if its subscription
// changed), the target assignment is recomputed if the group epoch moved past it,
// and the member is reconciled towards its target.
func (g *ConsumerGroup) Heartbeat(now time.Time, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, md Metadata, newID func() string) *heartbeatPlan {
	if req.MemberEpoch == leaveGroupMemberEpoch || req.MemberEpoch == leaveGroupStaticMemberEpoch {
		return g.leave(req)
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newID() // v0 only: v1 clients bring their own
	}
	if _, ok := g.Members[memberID]; !ok && g.cfg.MaxSize > 0 && len(g.Members) >= g.cfg.MaxSize {
		return planError(kerr.GroupMaxSizeReached.Code, fmt.Sprintf(
			"The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize))
	}

	var recs []cgRecord
	var old *ConsumerMember
	replaced := "" // the static member this one replaces
	isNew := false
	if req.InstanceID == nil {
		old = g.Members[memberID]
		if old == nil {
			if req.MemberEpoch != 0 {
				return planError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.ID))
			}
			old, isNew = &ConsumerMember{ID: memberID}, true
		} else if p := g.checkEpoch(old, req.MemberEpoch, req.Topics); p != nil {
			return p
		}
	} else {
		inst := *req.InstanceID
		existing := g.Members[g.static[inst]]
		switch {
		case req.MemberEpoch == 0 && existing == nil:
			old = g.Members[memberID]
			if old == nil {
				old, isNew = &ConsumerMember{ID: memberID}, true
			}
		case req.MemberEpoch == 0:
			if existing.MemberEpoch != leaveGroupStaticMemberEpoch {
				return planError(kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
					"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					memberID, inst, existing.ID))
			}
			// The new member takes over the old one's metadata, target and assigned
			// partitions at epoch 0 (Kafka's replaceMember), so no rebalance follows.
			nm := *existing
			nm.ID = memberID
			nm.MemberEpoch, nm.PreviousMemberEpoch = 0, 0
			nm.PendingRevocation = TopicPartitions{}
			recs = append(recs, memberTombstones(g.ID, existing.ID)...)
			md5 := nm.memberMetadata
			ca := nm.currentAssignment
			recs = append(recs,
				cgRecord{Type: cgMemberMetadataType, Group: g.ID, Member: memberID, Member5: &md5},
				cgRecord{Type: cgTargetAssignmentMemberType, Group: g.ID, Member: memberID, Target: g.Target[existing.ID]},
				cgRecord{Type: cgCurrentMemberAssignmentType, Group: g.ID, Member: memberID, Current: &ca})
			old, replaced = &nm, existing.ID
		default:
			if existing == nil {
				return planError(kerr.UnknownMemberID.Code, "Instance id "+inst+" is unknown.")
			}
			if existing.ID != memberID {
				return planError(kerr.FencedInstanceID.Code, fmt.Sprintf(
					"Static member %s with instance id %s was fenced by member %s.", memberID, inst, existing.ID))
			}
			if p := g.checkEpoch(existing, req.MemberEpoch, req.Topics); p != nil {
				return p
			}
			old = existing
		}
	}

	// 1. The member's metadata.
	upd := *old
	upd.memberMetadata = old.memberMetadata.clone()
	if req.InstanceID != nil {
		upd.InstanceID = req.InstanceID
	}
	if req.RackID != nil {
		upd.RackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		upd.RebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		upd.ServerAssignor = req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		upd.SubscribedTopicNames = sortedCopy(req.SubscribedTopicNames)
	}
	if req.SubscribedTopicRegex != nil {
		upd.SubscribedTopicRegex = req.SubscribedTopicRegex
	}
	upd.ClientID, upd.ClientHost = clientID, clientHost
	bump := g.Epoch == 0
	if isNew || !upd.memberMetadata.equal(old.memberMetadata) {
		m := upd.memberMetadata
		recs = append(recs, cgRecord{Type: cgMemberMetadataType, Group: g.ID, Member: memberID, Member5: &m})
		if !slices.Equal(upd.SubscribedTopicNames, old.SubscribedTopicNames) ||
			!equalStringPtr(upd.SubscribedTopicRegex, old.SubscribedTopicRegex) {
			bump = true
		}
	}

	// The members as they will be: this one updated, a replaced static member gone.
	members := g.sortedMembers()
	view := make([]*ConsumerMember, 0, len(members)+1)
	for _, m := range members {
		if m.ID != memberID && m.ID != replaced {
			view = append(view, m)
		}
	}
	view = append(view, &upd)
	sort.Slice(view, func(i, j int) bool { return view[i].ID < view[j].ID })

	// The subscribed topics' metadata: a change (a topic created, deleted or grown)
	// bumps the epoch too. Regexes are resolved against every topic name.
	names := topicNamesFor(view, md)
	recs = append(recs, g.regexRecords(view, names, now.UnixMilli())...)
	sub := g.subscriptionFor(view, names, md)
	if !equalSubscription(sub, g.Subscription) {
		recs = append(recs, cgRecord{Type: cgPartitionMetadataType, Group: g.ID, Subscription: sub})
		bump = true
	}
	epoch := g.Epoch
	if bump {
		epoch++
		recs = append(recs, cgRecord{Type: cgMetadataType, Group: g.ID, Epoch: epoch})
	}

	// 2. The target assignment.
	targetOf := func(id string) TopicPartitions {
		if id == memberID && replaced != "" {
			return g.Target[replaced]
		}
		return g.Target[id]
	}
	targetEpoch := g.AssignmentEpoch
	target := targetOf(memberID)
	if epoch > g.AssignmentEpoch {
		targets := g.computeTarget(view, sub)
		for _, m := range view {
			if !equalTopicPartitions(targets[m.ID], targetOf(m.ID)) || (m.ID == memberID && replaced != "") {
				recs = append(recs, cgRecord{Type: cgTargetAssignmentMemberType, Group: g.ID, Member: m.ID, Target: targets[m.ID]})
			}
		}
		recs = append(recs, cgRecord{Type: cgTargetAssignmentMetadataType, Group: g.ID, Epoch: epoch})
		target, targetEpoch = targets[memberID], epoch
	}

	// 3. Reconciliation.
	ownedByOther := func(tp topicPartition) bool {
		o, ok := g.owners[tp]
		return ok && o != memberID && o != replaced
	}
	plan := &heartbeatPlan{member: memberID, renew: true}
	next := reconcile(upd.currentAssignment, targetEpoch, target, ownedByOther, req.Topics)
	if !next.equal(upd.currentAssignment) {
		ca := next
		recs = append(recs, cgRecord{Type: cgCurrentMemberAssignmentType, Group: g.ID, Member: memberID, Current: &ca})
		if next.State == MemberUnrevokedPartitions {
			plan.rebalance = 1
		} else {
			plan.rebalance = -1
		}
	}
	plan.Records = recs

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = &memberID
	resp.MemberEpoch = next.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	// The assignment goes out on a full request (a join, or one carrying its owned
	// partitions and subscription) or when it changed.
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !equalTopicPartitions(next.Assigned, old.Assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, id := range next.Assigned.topicIDs() {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, append([]int32(nil), next.Assigned[id]...)
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	plan.Resp = resp
	return plan
}

// checkEpoch is throwIfConsumerGroupMemberEpochIsInvalid: an epoch ahead of the
// member's, or behind it other than the previous epoch with a subset of the assigned
// partitions (the response with the bump was lost), is fenced. Epoch 0 is a fenced
// member rejoining under its id: it is re-admitted in place and its assignment sent
// again (KAFKA-19233; before it, such a member stayed fenced until its session ran
// out).
func (g *ConsumerGroup) checkEpoch(m *ConsumerMember, received int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *heartbeatPlan {
	if code, msg := checkMemberEpoch("consumer", received, m.MemberEpoch, m.PreviousMemberEpoch,
		func() bool { return isSubset(owned, m.Assigned) }); code != 0 {
		return planError(code, msg)
	}
	return nil
}

func isSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, assigned TopicPartitions) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !containsPartition(assigned[t.TopicID], p) {
				return false
			}
		}
	}
	return true
}

func containsPartition(ps []int32, p int32) bool {
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

// leave handles member epoch -1 (leave) and -2 (a static member leaves for now,
// keeping its assignment until it rejoins or its session times out), as
// GroupMetadataManager.consumerGroupLeave.
func (g *ConsumerGroup) leave(req *kmsg.ConsumerGroupHeartbeatRequest) *heartbeatPlan {
	m, code, msg := leavingMember(g.Members, g.static, g.ID, req.MemberID, req.InstanceID)
	if code != 0 {
		return planError(code, msg)
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = &m.ID
	resp.MemberEpoch = req.MemberEpoch
	p := &heartbeatPlan{Resp: resp}
	if req.InstanceID != nil && req.MemberEpoch == leaveGroupStaticMemberEpoch {
		ca := m.currentAssignment
		ca.MemberEpoch = leaveGroupStaticMemberEpoch
		ca.PendingRevocation = TopicPartitions{}
		p.Records = []cgRecord{{Type: cgCurrentMemberAssignmentType, Group: g.ID, Member: m.ID, Current: &ca}}
		p.member = m.ID // its session keeps running: it has until then to come back
		p.rebalance = -1
		return p
	}
	p.Records = g.fenceRecords(m)
	return p
}

// fenceRecords removes a member: its three records are tombstoned, the subscription
// metadata recomputed without it, and the group epoch bumped so the others get a new
// target (Kafka's consumerGroupFenceMember).
func (g *ConsumerGroup) fenceRecords(m *ConsumerMember) []cgRecord {
	recs := memberTombstones(g.ID, m.ID)
	var rest []*ConsumerMember
	for _, o := range g.sortedMembers() {
		if o.ID != m.ID {
			rest = append(rest, o)
		}
	}
	recs = append(recs, g.regexRecords(rest, nil, 0)...)
	// Only the topics left unsubscribed drop out: the remaining members' topics keep
	// the metadata they were assigned with until their next heartbeat refreshes it.
	sub := map[string]TopicMetadata{}
	for name := range g.subscribedNames(rest, nil) {
		if t, ok := g.Subscription[name]; ok {
			sub[name] = t
		}
	}
	if !equalSubscription(sub, g.Subscription) {
		recs = append(recs, cgRecord{Type: cgPartitionMetadataType, Group: g.ID, Subscription: sub})
	}
	return append(recs, cgRecord{Type: cgMetadataType, Group: g.ID, Epoch: g.Epoch + 1})
}

func memberTombstones(group, member string) []cgRecord {
	return []cgRecord{
		{Type: cgCurrentMemberAssignmentType, Group: group, Member: member, Tombstone: true},
		{Type: cgTargetAssignmentMemberType, Group: group, Member: member, Tombstone: true},
		{Type: cgMemberMetadataType, Group: group, Member: member, Tombstone: true},
	}
}

type fencedMember struct{ id, reason string }

// NextDeadline is when Tick must next run (zero: never).
func (g *ConsumerGroup) NextDeadline() time.Time {
	return nextDeadline(g.Members)
}

// Tick fences the members whose session ran out, or that did not revoke within
// their rebalance timeout, and returns the records to write. The records are applied
// at once: they are in the log once written, and a write that fails means this
// broker is losing the partition anyway.
func (g *ConsumerGroup) Tick(now time.Time) []Record {
	revoking := func(m *ConsumerMember) bool { return m.State == MemberUnrevokedPartitions }
	out := fenceExpired(g.Members, now, revoking, &g.fenced, func(m *ConsumerMember) []Record {
		var out []Record
		for _, r := range g.fenceRecords(m) {
			g.apply(r)
			out = append(out, r.encode())
		}
		return out
	})
	return out
}

// apply replays one record into the group: how a plan takes effect and how a group
// is loaded.
func (g *ConsumerGroup) apply(r cgRecord) {
	switch r.Type {
	case cgMetadataType:
		if r.Tombstone {
			g.Epoch = 0
		} else {
			g.Epoch = r.Epoch
		}
	case cgPartitionMetadataType:
		g.Subscription = r.Subscription
		if g.Subscription == nil {
			g.Subscription = map[string]TopicMetadata{}
		}
	case cgTargetAssignmentMetadataType:
		if r.Tombstone {
			g.AssignmentEpoch = 0
		} else {
			g.AssignmentEpoch = r.Epoch
		}
	case cgTargetAssignmentMemberType:
		if r.Tombstone {
			delete(g.Target, r.Member)
		} else {
			g.Target[r.Member] = r.Target
		}
	case cgRegularExpressionType:
		if r.Tombstone {
			delete(g.Resolved, r.Regex)
		} else {
			g.Resolved[r.Regex] = r.Resolved.Topics
		}
	case cgMemberMetadataType:
		m := g.Members[r.Member]
		if r.Tombstone {
			if m != nil {
				g.setOwners(m, false)
				if m.InstanceID != nil && g.static[*m.InstanceID] == m.ID {
					delete(g.static, *m.InstanceID)
				}
				delete(g.Members, r.Member)
			}
			return
		}
		if m == nil {
			m = g.member(r.Member)
		}
		if m.InstanceID != nil && g.static[*m.InstanceID] == m.ID {
			delete(g.static, *m.InstanceID)
		}
		m.memberMetadata = *r.Member5
		if m.InstanceID != nil {
			g.static[*m.InstanceID] = m.ID
		}
	case cgCurrentMemberAssignmentType:
		m := g.Members[r.Member]
		if m == nil {
			if r.Tombstone {
				return
			}
			m = g.member(r.Member)
		}
		g.setOwners(m, false)
		if r.Tombstone {
			m.currentAssignment = currentAssignment{MemberEpoch: leaveGroupMemberEpoch, PreviousMemberEpoch: leaveGroupMemberEpoch}
			return
		}
		m.currentAssignment = *r.Current
		g.setOwners(m, true)
	}
}

func (g *ConsumerGroup) member(id string) *ConsumerMember {
	m := &ConsumerMember{ID: id, memberMetadata: memberMetadata{SubscribedTopicNames: []string{}}}
	m.Assigned, m.PendingRevocation = TopicPartitions{}, TopicPartitions{}
	g.Members[id] = m
	return m
}

// setOwners records (own) or forgets m's assigned and pending partitions as its own.
func (g *ConsumerGroup) setOwners(m *ConsumerMember, own bool) {
	for _, tps := range []TopicPartitions{m.Assigned, m.PendingRevocation} {
		for id, ps := range tps {
			for _, p := range ps {
				tp := topicPartition{id, p}
				if own {
					g.owners[tp] = m.ID
				} else if g.owners[tp] == m.ID {
					delete(g.owners, tp)
				}
			}
		}
	}
}

func (g *ConsumerGroup) sortedMembers() []*ConsumerMember {
	return sortedMembers(g.Members)
}

// regex compiles a subscription regex (anchored: Kafka matches whole topic names).
func (g *ConsumerGroup) regex(s string) *regexp.Regexp {
	if re, ok := g.regexes[s]; ok {
		return re
	}
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		re = nil
	}
	if len(g.regexes) >= 2*len(g.Members)+16 {
		// Members that keep changing their regex must not grow the cache forever.
		g.regexes = map[string]*regexp.Regexp{}
	}
	g.regexes[s] = re
	return re
}

// subscribedNames is the union of members' topic names, regexes resolved against
// names (nil: regexes resolve to the topics already in the subscription metadata).
func (g *ConsumerGroup) subscribedNames(members []*ConsumerMember, names []string) map[string]bool {
	out := map[string]bool{}
	for _, m := range members {
		for _, t := range g.memberTopics(m, names) {
			out[t] = true
		}
	}
	return out
}

// memberTopics are the topic names m subscribes to, regex matches included.
func (g *ConsumerGroup) memberTopics(m *ConsumerMember, names []string) []string {
	out := m.SubscribedTopicNames
	if m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex != "" {
		re := g.regex(*m.SubscribedTopicRegex)
		if names == nil {
			for n := range g.Subscription {
				names = append(names, n)
			}
		}
		if re != nil {
			out = append([]string(nil), out...)
			for _, n := range names {
				if re.MatchString(n) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// topicNamesFor lists every topic if a member subscribes by regex (only regexes need
// them), else returns an empty list.
func topicNamesFor(members []*ConsumerMember, md Metadata) []string {
	for _, m := range members {
		if m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex != "" {
			if tl, ok := md.(TopicLister); ok {
				return tl.TopicNames()
			}
			break
		}
	}
	return []string{}
}

// regexRecords resolves the members' regexes against names: a record for each
// whose topics changed (or that is new), a tombstone for each no member uses any
// more. names nil only tombstones.
func (g *ConsumerGroup) regexRecords(members []*ConsumerMember, names []string, nowMs int64) []cgRecord {
	used := map[string]bool{}
	for _, m := range members {
		if m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex != "" {
			used[*m.SubscribedTopicRegex] = true
		}
	}
	var recs []cgRecord
	for _, re := range sortedKeys(used) {
		if names == nil {
			break
		}
		topics := []string{}
		if c := g.regex(re); c != nil {
			for _, n := range names {
				if c.MatchString(n) {
					topics = append(topics, n)
				}
			}
		}
		sort.Strings(topics)
		if old, ok := g.Resolved[re]; !ok || !slices.Equal(old, topics) {
			recs = append(recs, cgRecord{Type: cgRegularExpressionType, Group: g.ID, Regex: re,
				Resolved: &resolvedRegex{Topics: topics, Timestamp: nowMs}})
		}
	}
	for _, re := range sortedKeys(g.Resolved) {
		if !used[re] {
			recs = append(recs, cgRecord{Type: cgRegularExpressionType, Group: g.ID, Regex: re, Tombstone: true})
		}
	}
	return recs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// subscriptionFor computes the subscribed topics' metadata from md; names are every
// topic's (for regexes).
func (g *ConsumerGroup) subscriptionFor(members []*ConsumerMember, names []string, md Metadata) map[string]TopicMetadata {
	sub := map[string]TopicMetadata{}
	for name := range g.subscribedNames(members, names) {
		if n := md.NumPartitions(name); n >= 0 {
			sub[name] = TopicMetadata{ID: md.TopicID(name), Name: name, NumPartitions: n}
		}
	}
	return sub
}

// preferredAssignor is the assignor most members asked for (ties to the one listed
// first in group.consumer.assignors), or the default.
func (g *ConsumerGroup) preferredAssignor(members []*ConsumerMember) string {
	counts := map[string]int{}
	for _, m := range members {
		if m.ServerAssignor != nil {
			counts[*m.ServerAssignor]++
		}
	}
	best, bestN := UniformAssignorName, 0
	if len(g.cfg.Assignors) > 0 {
		best = g.cfg.Assignors[0]
	}
	for _, a := range g.cfg.Assignors {
		if counts[a] > bestN {
			best, bestN = a, counts[a]
		}
	}
	return best
}

// computeTarget runs the assignor over members (sorted by id) and sub.
func (g *ConsumerGroup) computeTarget(members []*ConsumerMember, sub map[string]TopicMetadata) map[string]TopicPartitions {
	spec := AssignorSpec{Partitions: map[[16]byte]int32{}}
	for _, t := range sub {
		spec.Partitions[t.ID] = t.NumPartitions
	}
	names := make([]string, 0, len(sub))
	for n := range sub {
		names = append(names, n)
	}
	for _, m := range members {
		am := AssignorMember{ID: m.ID, Topics: map[[16]byte]bool{}, Current: g.Target[m.ID]}
		for _, n := range g.memberTopics(m, names) {
			if t, ok := sub[n]; ok {
				am.Topics[t.ID] = true
			}
		}
		spec.Members = append(spec.Members, am)
	}
	return Assign(g.preferredAssignor(members), spec)
}

// reconcile is Kafka's CurrentAssignmentBuilder: it moves a member's current
// assignment towards target. owned are the partitions the member reported owning
// (nil: not reported, taken as still owning everything).
func reconcile(cur currentAssignment, targetEpoch int32, target TopicPartitions, ownedByOther func(topicPartition) bool, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) currentAssignment {
	switch cur.State {
	case MemberStable:
		if cur.MemberEpoch == targetEpoch {
			return cur
		}
	case MemberUnrevokedPartitions:
		if ownsAny(owned, cur.PendingRevocation) {
			return cur // still revoking
		}
	}
	return nextAssignment(cur, targetEpoch, target, ownedByOther, owned)
}

// nextAssignment is computeNextAssignment: partitions no longer targeted are to be
// revoked (the member stays at its epoch until it did); partitions newly targeted
// are assigned once no other member owns them.
func nextAssignment(cur currentAssignment, targetEpoch int32, target TopicPartitions, ownedByOther func(topicPartition) bool, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) currentAssignment {
	assigned, pending, toAssign := TopicPartitions{}, TopicPartitions{}, TopicPartitions{}
	unreleased := false
	topics := map[[16]byte]bool{}
	for id := range cur.Assigned {
		topics[id] = true
	}
	for id := range target {
		topics[id] = true
	}
	for id := range topics {
		for _, p := range cur.Assigned[id] {
			if containsPartition(target[id], p) {
				assigned[id] = append(assigned[id], p)
			} else {
				pending[id] = append(pending[id], p)
			}
		}
		for _, p := range target[id] {
			if containsPartition(cur.Assigned[id], p) {
				continue
			}
			if ownedByOther(topicPartition{id, p}) {
				unreleased = true
				continue
			}
			toAssign[id] = append(toAssign[id], p)
		}
	}
	next := currentAssignment{PreviousMemberEpoch: cur.MemberEpoch, Assigned: assigned, PendingRevocation: TopicPartitions{}}
	if len(pending) > 0 && ownsAny(owned, pending) {
		next.State, next.MemberEpoch, next.PendingRevocation = MemberUnrevokedPartitions, cur.MemberEpoch, pending
		return next
	}
	for id, ps := range toAssign {
		assigned[id] = append(assigned[id], ps...)
		sort.Slice(assigned[id], func(i, j int) bool { return assigned[id][i] < assigned[id][j] })
	}
	next.MemberEpoch = targetEpoch
	if unreleased {
		next.State = MemberUnreleasedPartitions
	} else {
		next.State = MemberStable
	}
	return next
}

// ownsAny: the member still owns one of tps (always, if it did not say).
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, tps TopicPartitions) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if containsPartition(tps[t.TopicID], p) {
				return true
			}
		}
	}
	return false
}

func (m memberMetadata) clone() memberMetadata {
	m.SubscribedTopicNames = append([]string{}, m.SubscribedTopicNames...)
	return m
}

func (m memberMetadata) equal(o memberMetadata) bool {
	return equalStringPtr(m.InstanceID, o.InstanceID) && equalStringPtr(m.RackID, o.RackID) &&
		m.ClientID == o.ClientID && m.ClientHost == o.ClientHost &&
		slices.Equal(m.SubscribedTopicNames, o.SubscribedTopicNames) &&
		equalStringPtr(m.SubscribedTopicRegex, o.SubscribedTopicRegex) &&
		m.RebalanceTimeoutMs == o.RebalanceTimeoutMs && equalStringPtr(m.ServerAssignor, o.ServerAssignor)
}

func (c currentAssignment) equal(o currentAssignment) bool {
	return c.MemberEpoch == o.MemberEpoch && c.PreviousMemberEpoch == o.PreviousMemberEpoch && c.State == o.State &&
		equalTopicPartitions(c.Assigned, o.Assigned) && equalTopicPartitions(c.PendingRevocation, o.PendingRevocation)
}

func equalTopicPartitions(a, b TopicPartitions) bool {
	n := 0
	for id, ps := range a {
		if len(ps) == 0 {
			continue
		}
		n++
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	for _, ps := range b {
		if len(ps) > 0 {
			n--
		}
	}
	return n == 0
}

func equalStringPtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func equalSubscription(a, b map[string]TopicMetadata) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		if b[n] != t {
			return false
		}
	}
	return true
}

func sortedCopy(ss []string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	return out
}
