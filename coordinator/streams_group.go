package coordinator

// The KIP-1071 streams group state machine, as Kafka's StreamsGroup,
// StreamsGroupMember, streams.CurrentAssignmentBuilder and the streams parts of
// GroupMetadataManager (streamsGroupHeartbeat, the leave, the session and rebalance
// timeouts).
//
// A streams group is a consumer group whose server-side assignor hands out tasks
// (subtopology, partition) instead of partitions. The first member to join brings
// the topology (subtopologies with their source, repartition and changelog topics);
// the coordinator resolves it against the cluster's topics (streams_group_topology.go),
// asks the broker to create the internal topics that are missing, and reports what
// is not ready in each heartbeat's Status list. The group epoch is bumped when a
// member joins, leaves or changes what the assignment depends on (its process or
// rack), when the topology changes, and when the topics' metadata changes; the next
// heartbeat then computes a new target assignment with the sticky assignor
// (streams_group_assignor.go). Each member converges on its target as a consumer
// group member does:
//
//	STABLE ──new target──> UNREVOKED_TASKS (keeps its epoch; must stop owning the
//	  ^                       |              tasks pending revocation, in any role)
//	  |                       v  revoked (reported in the heartbeat's task lists)
//	  +───────────── UNRELEASED_TASKS (at the target epoch; waits for active tasks
//	    all released                   another member has not revoked yet)
//
// An active task is given to a member only once no other member owns it as active,
// so no task is ever processed twice. Like ConsumerGroup it is pure: a heartbeat is
// planned (response + records), the caller writes the records, then commits the plan.

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupConfig holds Kafka's group.streams.* settings (Go units).
type StreamsGroupConfig struct {
	// SessionTimeout is group.streams.session.timeout.ms (45000).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.streams.heartbeat.interval.ms (5000).
	HeartbeatInterval time.Duration
	// MaxSize is group.streams.max.size (unbounded: 0 here).
	MaxSize int
	// NumStandbyReplicas is group.streams.num.standby.replicas (0).
	NumStandbyReplicas int
}

// DefaultStreamsGroupConfig returns Kafka's defaults.
func DefaultStreamsGroupConfig() StreamsGroupConfig {
	return StreamsGroupConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second}
}

// Values Kafka 4.4 answers in every heartbeat (the group configs
// streams.acceptable.recovery.lag's default and the task offset interval).
const (
	streamsAcceptableRecoveryLag = 10000
	streamsTaskOffsetIntervalMs  = 60000
)

// StreamsProtocolType is the protocol type ListGroups shows for streams groups.
const StreamsProtocolType = "streams"

// StreamsMember is one member of a streams group.
type StreamsMember struct {
	ID string
	streamsMemberMetadata
	streamsCurrentAssignment
	memberTimers
}

// StreamsGroup is one KIP-1071 streams group. It is not safe for concurrent use.
type StreamsGroup struct {
	ID string
	// Epoch is the group epoch.
	Epoch int32
	// MetadataHash identifies the topics' metadata the group epoch was last bumped for.
	MetadataHash int64
	// ValidatedTopologyEpoch is the topology epoch last found ready (-1: never).
	ValidatedTopologyEpoch int32
	// AssignmentEpoch is the epoch of Target. Invariant: AssignmentEpoch <= Epoch.
	AssignmentEpoch int32
	// Topology is the group's topology (nil until a member brought one).
	Topology *streamsTopology
	Members  map[string]*StreamsMember
	Target   map[string]StreamsTasks

	// static maps group.instance.id to member id.
	static map[string]string
	// activeOwner maps each active task to the member owning it (assigned or pending
	// revocation). Invariant: an active task has at most one owner.
	activeOwner map[taskID]string
	// configured is Topology resolved at the last heartbeat (nil: not yet).
	configured *configuredTopology
	// endpointEpoch counts changes of the active/standby placement members with an
	// endpoint see in PartitionsByUserEndpoint (in memory, as Kafka's).
	endpointEpoch int32
	// shutdown: a member asked the whole application to shut down.
	shutdown bool
	fenced   []fencedMember
	logged   consumerView

	cfg *StreamsGroupConfig
}

// NewStreamsGroup returns an empty group at epoch 0.
func NewStreamsGroup(id string, cfg *StreamsGroupConfig) *StreamsGroup {
	return &StreamsGroup{ID: id, ValidatedTopologyEpoch: -1, Members: map[string]*StreamsMember{},
		Target: map[string]StreamsTasks{}, static: map[string]string{}, activeOwner: map[taskID]string{}, cfg: cfg}
}

// State is Kafka's StreamsGroupState name: Empty, NotReady (the topology is missing
// or its topics are not ready), Assigning, Reconciling or Stable.
func (g *StreamsGroup) State() string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	if g.Topology == nil || (g.configured != nil && !g.configured.Ready) ||
		(g.configured == nil && g.ValidatedTopologyEpoch != g.Topology.Epoch) {
		return "NotReady"
	}
	if g.Epoch > g.AssignmentEpoch {
		return "Assigning"
	}
	for _, m := range g.Members {
		if m.State != StreamsMemberStable || m.MemberEpoch != g.AssignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// streamsPlan is what a heartbeat (or a timeout) decided.
type streamsPlan struct {
	Resp    *kmsg.StreamsGroupHeartbeatResponse
	Records []sgRecord
	// Create are internal topics to create once the records are written.
	Create    []StreamsInternalTopic
	member    string
	renew     bool
	rebalance int
	// configured is the topology resolution to keep.
	configured *configuredTopology
	shutdown   bool
}

func streamsPlanError(code int16, msg string) *streamsPlan {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return &streamsPlan{Resp: r}
}

// Commit applies a plan whose records were written.
func (g *StreamsGroup) Commit(now time.Time, p *streamsPlan) {
	before := g.endpointView()
	for _, r := range p.Records {
		g.apply(r)
	}
	if p.configured != nil {
		g.configured = p.configured
	}
	if p.shutdown {
		g.shutdown = true
	}
	if g.endpointView() != before {
		g.endpointEpoch++
	}
	m := g.Members[p.member]
	if m == nil {
		return
	}
	m.arm(now, g.cfg.SessionTimeout, p.renew, p.rebalance, m.RebalanceTimeoutMs)
}

// endpointView is a fingerprint of who owns which task, for members with an endpoint.
func (g *StreamsGroup) endpointView() string {
	b := []byte{}
	for _, m := range g.sortedMembers() {
		if m.UserEndpoint == nil {
			continue
		}
		b = fmt.Appendf(b, "%s:%d|", m.UserEndpoint.Host, m.UserEndpoint.Port)
		b = appendStreamsTasks(b, m.Assigned)
	}
	return string(b)
}

// Heartbeat plans a StreamsGroupHeartbeat the caller validated, as
// GroupMetadataManager.streamsGroupHeartbeat.
func (g *StreamsGroup) Heartbeat(now time.Time, req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string, md Metadata) *streamsPlan {
	if req.MemberEpoch == leaveGroupMemberEpoch || req.MemberEpoch == leaveGroupStaticMemberEpoch {
		return g.leave(req)
	}
	memberID := req.MemberID
	if _, ok := g.Members[memberID]; !ok && g.cfg.MaxSize > 0 && len(g.Members) >= g.cfg.MaxSize {
		return streamsPlanError(kerr.GroupMaxSizeReached.Code, fmt.Sprintf(
			"The streams group has reached its maximum capacity of %d members.", g.cfg.MaxSize))
	}
	var recs []sgRecord
	var old *StreamsMember
	isNew := false
	replaced := ""
	if req.InstanceID == nil {
		old = g.Members[memberID]
		if old == nil {
			if req.MemberEpoch != 0 {
				return streamsPlanError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.ID))
			}
			old, isNew = g.newMember(memberID), true
		} else if p := g.checkEpoch(old, req); p != nil {
			return p
		}
	} else {
		inst := *req.InstanceID
		existing := g.Members[g.static[inst]]
		switch {
		case req.MemberEpoch == 0 && existing == nil:
			old = g.Members[memberID]
			if old == nil {
				old, isNew = g.newMember(memberID), true
			}
		case req.MemberEpoch == 0:
			if existing.MemberEpoch != leaveGroupStaticMemberEpoch {
				return streamsPlanError(kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
					"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					memberID, inst, existing.ID))
			}
			// The new member takes the old one's place, target and tasks at epoch 0.
			nm := *existing
			nm.ID = memberID
			nm.MemberEpoch, nm.PreviousMemberEpoch = 0, 0
			nm.Pending = emptyTasks()
			recs = append(recs, streamsMemberTombstones(g.ID, existing.ID)...)
			mdv := nm.streamsMemberMetadata
			ca := nm.streamsCurrentAssignment
			t := g.Target[existing.ID]
			recs = append(recs,
				sgRecord{Type: sgMemberMetadataType, Group: g.ID, Member: memberID, MemberMD: &mdv},
				sgRecord{Type: sgTargetAssignmentMemberType, Group: g.ID, Member: memberID, Target: &t},
				sgRecord{Type: sgCurrentMemberAssignmentType, Group: g.ID, Member: memberID, Current: &ca})
			old, replaced = &nm, existing.ID
		default:
			if existing == nil {
				return streamsPlanError(kerr.UnknownMemberID.Code, "Instance id "+inst+" is unknown.")
			}
			if existing.ID != memberID {
				return streamsPlanError(kerr.FencedInstanceID.Code, fmt.Sprintf(
					"Static member %s with instance id %s was fenced by member %s.", memberID, inst, existing.ID))
			}
			if p := g.checkEpoch(existing, req); p != nil {
				return p
			}
			old = existing
		}
	}

	bump := g.Epoch == 0
	// 1. The topology: the first member brings it; a member of a later topology
	// epoch replaces it once it is alone; the same epoch with another topology is
	// refused (Kafka's STREAMS_INVALID_TOPOLOGY_EPOCH).
	topology := g.Topology
	if req.Topology != nil {
		t := topologyFromRequest(req.Topology)
		others := len(g.Members)
		if _, ok := g.Members[memberID]; ok {
			others--
		}
		if replaced != "" {
			others--
		}
		switch {
		case topology == nil, t.Epoch > topology.Epoch && others == 0:
			topology = t
		case t.Epoch == topology.Epoch && !t.equal(topology):
			return streamsPlanError(kerr.StreamsInvalidTopologyEpoch.Code,
				"Topology updated but topology epoch not incremented.")
		}
		if topology != g.Topology {
			recs = append(recs, sgRecord{Type: sgTopologyType, Group: g.ID, Topology: topology})
			bump = true
		}
	}

	// 2. The member's metadata.
	upd := *old
	upd.streamsMemberMetadata = old.streamsMemberMetadata.clone()
	if req.InstanceID != nil {
		upd.InstanceID = req.InstanceID
	}
	if req.RackID != nil {
		upd.RackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		upd.RebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		upd.TopologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		upd.ProcessID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		upd.UserEndpoint = &streamsEndpoint{Host: req.UserEndpoint.Host, Port: req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		upd.ClientTags = nil
		for _, t := range req.ClientTags {
			upd.ClientTags = append(upd.ClientTags, keyValue{t.Key, t.Value})
		}
	}
	upd.ClientID, upd.ClientHost = clientID, clientHost
	if isNew || !upd.streamsMemberMetadata.equal(old.streamsMemberMetadata) {
		m := upd.streamsMemberMetadata
		recs = append(recs, sgRecord{Type: sgMemberMetadataType, Group: g.ID, Member: memberID, MemberMD: &m})
		if isNew || upd.ProcessID != old.ProcessID || !equalStringPtr(upd.RackID, old.RackID) ||
			!slices.Equal(upd.ClientTags, old.ClientTags) || upd.TopologyEpoch != old.TopologyEpoch {
			bump = true
		}
	}

	// 3. The topics: a change of their metadata bumps the epoch too.
	ct := configure(topology, md)
	metaHash := g.MetadataHash
	if topology != nil && ct.Hash != g.MetadataHash {
		metaHash = ct.Hash
		bump = true
	}
	validated := g.ValidatedTopologyEpoch
	if ct.Ready && topology != nil {
		validated = topology.Epoch
	}
	epoch := g.Epoch
	if bump || validated != g.ValidatedTopologyEpoch {
		if bump {
			epoch++
		}
		recs = append(recs, sgRecord{Type: sgMetadataType, Group: g.ID, Epoch: epoch, MetadataHash: metaHash, ValidatedTopologyEpoch: validated})
	}

	// The members as they will be.
	view := make([]*StreamsMember, 0, len(g.Members)+1)
	for _, m := range g.sortedMembers() {
		if m.ID != memberID && m.ID != replaced {
			view = append(view, m)
		}
	}
	view = append(view, &upd)
	sort.Slice(view, func(i, j int) bool { return view[i].ID < view[j].ID })

	// 4. The target assignment.
	targetOf := func(id string) StreamsTasks {
		if id == memberID && replaced != "" {
			return g.Target[replaced]
		}
		return g.Target[id]
	}
	targetEpoch := g.AssignmentEpoch
	target := targetOf(memberID)
	if epoch > g.AssignmentEpoch {
		var tasks map[string]int32
		if ct.Ready {
			tasks = ct.Tasks
		}
		am := make([]streamsAssignMember, 0, len(view))
		for _, m := range view {
			am = append(am, streamsAssignMember{ID: m.ID, ProcessID: m.ProcessID, Prev: targetOf(m.ID)})
		}
		targets := assignStreamsTasks(am, tasks, g.cfg.NumStandbyReplicas)
		for _, m := range view {
			t := targets[m.ID]
			if !t.equal(targetOf(m.ID)) || (m.ID == memberID && replaced != "") || m.ID == memberID && isNew {
				recs = append(recs, sgRecord{Type: sgTargetAssignmentMemberType, Group: g.ID, Member: m.ID, Target: &t})
			}
		}
		recs = append(recs, sgRecord{Type: sgTargetAssignmentMetadataType, Group: g.ID, Epoch: epoch})
		target, targetEpoch = targets[memberID], epoch
	}

	// 5. Reconciliation.
	ownedByOther := func(t taskID) bool {
		o, ok := g.activeOwner[t]
		return ok && o != memberID && o != replaced
	}
	plan := &streamsPlan{member: memberID, renew: true, configured: ct, Create: ct.Create}
	owned := ownedTasks(req)
	next := reconcileStreams(upd.streamsCurrentAssignment, targetEpoch, target, ownedByOther, owned)
	if !next.equal(upd.streamsCurrentAssignment) {
		ca := next
		recs = append(recs, sgRecord{Type: sgCurrentMemberAssignmentType, Group: g.ID, Member: memberID, Current: &ca})
		if next.State == StreamsMemberUnrevokedTasks {
			plan.rebalance = 1
		} else {
			plan.rebalance = -1
		}
	}
	plan.Records = recs
	if req.ShutdownApplication {
		plan.shutdown = true
	}

	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = memberID
	resp.MemberEpoch = next.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	resp.AcceptableRecoveryLagLegacy = streamsAcceptableRecoveryLag
	resp.AcceptableRecoveryLag = streamsAcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = streamsTaskOffsetIntervalMs
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if topology != nil && upd.TopologyEpoch < topology.Epoch {
		resp.Status = append(resp.Status, status(streamsStatusStaleTopology, fmt.Sprintf(
			"The member's topology epoch %d is behind the group's topology epoch %d.", upd.TopologyEpoch, topology.Epoch)))
	}
	resp.Status = append(resp.Status, ct.Status...)
	if g.shutdown || req.ShutdownApplication {
		resp.Status = append(resp.Status, status(streamsStatusShutdownApplication,
			"A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application."))
	}
	full := req.MemberEpoch == 0 || owned != nil
	if full || !next.Assigned.equal(old.Assigned) {
		resp.ActiveTasks = toTaskIDs(next.Assigned.Active)
		resp.StandbyTasks = toTaskIDs(next.Assigned.Standby)
		resp.WarmupTasks = toTaskIDs(next.Assigned.Warmup)
	}
	plan.Resp = resp
	return plan
}

// FinishResponse fills the endpoint information once the plan is committed: the
// placement of every member with an endpoint, sent when the member's
// EndpointInformationEpoch is not the group's (the group's counts from 0 again after
// a reload, so a member ahead of it is sent the placement too).
func (g *StreamsGroup) FinishResponse(req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) {
	resp.EndpointInformationEpoch = g.endpointEpoch
	if req.EndpointInformationEpoch == g.endpointEpoch || g.Topology == nil || g.configured == nil {
		return
	}
	resp.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	for _, m := range g.sortedMembers() {
		if m.UserEndpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.UserEndpoint.Host, m.UserEndpoint.Port
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		for _, tp := range g.partitionsOf(m.Assigned.Active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: tp.topic, Partitions: tp.ps})
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		for _, tp := range g.partitionsOf(m.Assigned.Standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: tp.topic, Partitions: tp.ps})
		}
		resp.PartitionsByUserEndpoint = append(resp.PartitionsByUserEndpoint, e)
	}
}

type topicPartitionsList struct {
	topic string
	ps    []int32
}

// partitionsOf lists the source topic partitions of tasks, by topic.
func (g *StreamsGroup) partitionsOf(ts TaskSet) []topicPartitionsList {
	by := map[string][]int32{}
	for _, s := range ts.subtopologies() {
		for _, p := range ts[s] {
			for _, tp := range g.configured.sourcePartitions(g.Topology, s, p) {
				by[tp.topic] = append(by[tp.topic], tp.partition)
			}
		}
	}
	var out []topicPartitionsList
	for _, t := range sortedKeys(by) {
		ps := by[t]
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out = append(out, topicPartitionsList{t, slices.Compact(ps)})
	}
	return out
}

func (g *StreamsGroup) newMember(id string) *StreamsMember {
	return &StreamsMember{ID: id, streamsCurrentAssignment: streamsCurrentAssignment{
		State: StreamsMemberStable, Assigned: emptyTasks(), Pending: emptyTasks()}}
}

func emptyTasks() StreamsTasks {
	return StreamsTasks{Active: TaskSet{}, Standby: TaskSet{}, Warmup: TaskSet{}}
}

func toTaskIDs(ts TaskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, s := range ts.subtopologies() {
		t := kmsg.NewTaskIDs()
		t.SubtopologyID, t.Partitions = s, append([]int32{}, ts[s]...)
		out = append(out, t)
	}
	return out
}

// ownedTasks are the tasks the member reported owning (nil: not reported).
func ownedTasks(req *kmsg.StreamsGroupHeartbeatRequest) *StreamsTasks {
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		return nil
	}
	conv := func(in []kmsg.TaskIDs) TaskSet {
		ts := TaskSet{}
		for _, t := range in {
			ps := append(ts[t.SubtopologyID], t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			ts[t.SubtopologyID] = slices.Compact(ps)
		}
		return ts
	}
	return &StreamsTasks{Active: conv(req.ActiveTasks), Standby: conv(req.StandbyTasks), Warmup: conv(req.WarmupTasks)}
}

// checkEpoch is throwIfStreamsGroupMemberEpochIsInvalid: an epoch ahead of the
// member's, or behind it other than the previous epoch with a subset of the
// assigned tasks, is fenced; epoch 0 rejoins in place.
func (g *StreamsGroup) checkEpoch(m *StreamsMember, req *kmsg.StreamsGroupHeartbeatRequest) *streamsPlan {
	ownsSubset := func() bool {
		owned := ownedTasks(req)
		return owned != nil && owned.subsetOf(m.Assigned)
	}
	if code, msg := checkMemberEpoch("streams", req.MemberEpoch, m.MemberEpoch, m.PreviousMemberEpoch, ownsSubset); code != 0 {
		return streamsPlanError(code, msg)
	}
	return nil
}

// leave handles member epoch -1 and -2, as GroupMetadataManager.streamsGroupLeave.
func (g *StreamsGroup) leave(req *kmsg.StreamsGroupHeartbeatRequest) *streamsPlan {
	m, code, msg := leavingMember(g.Members, g.static, g.ID, req.MemberID, req.InstanceID)
	if code != 0 {
		return streamsPlanError(code, msg)
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = m.ID
	resp.MemberEpoch = req.MemberEpoch
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	p := &streamsPlan{Resp: resp}
	if req.InstanceID != nil && req.MemberEpoch == leaveGroupStaticMemberEpoch {
		ca := m.streamsCurrentAssignment
		ca.MemberEpoch = leaveGroupStaticMemberEpoch
		ca.Pending = emptyTasks()
		p.Records = []sgRecord{{Type: sgCurrentMemberAssignmentType, Group: g.ID, Member: m.ID, Current: &ca}}
		p.member = m.ID
		p.rebalance = -1
		return p
	}
	p.Records = g.fenceRecords(m)
	return p
}

// fenceRecords removes a member and bumps the group epoch.
func (g *StreamsGroup) fenceRecords(m *StreamsMember) []sgRecord {
	recs := streamsMemberTombstones(g.ID, m.ID)
	return append(recs, sgRecord{Type: sgMetadataType, Group: g.ID, Epoch: g.Epoch + 1, MetadataHash: g.MetadataHash, ValidatedTopologyEpoch: g.ValidatedTopologyEpoch})
}

func streamsMemberTombstones(group, member string) []sgRecord {
	return []sgRecord{
		{Type: sgCurrentMemberAssignmentType, Group: group, Member: member, Tombstone: true},
		{Type: sgTargetAssignmentMemberType, Group: group, Member: member, Tombstone: true},
		{Type: sgMemberMetadataType, Group: group, Member: member, Tombstone: true},
	}
}

// NextDeadline is when Tick must next run (zero: never).
func (g *StreamsGroup) NextDeadline() time.Time {
	return nextDeadline(g.Members)
}

// Tick fences the members whose session ran out or that did not revoke within
// their rebalance timeout; the records are applied at once.
func (g *StreamsGroup) Tick(now time.Time) []Record {
	revoking := func(m *StreamsMember) bool { return m.State == StreamsMemberUnrevokedTasks }
	out := fenceExpired(g.Members, now, revoking, &g.fenced, func(m *StreamsMember) []Record {
		var out []Record
		for _, r := range g.fenceRecords(m) {
			g.apply(r)
			out = append(out, r.encode())
		}
		return out
	})
	if len(g.Members) == 0 {
		g.shutdown = false
	}
	return out
}

// apply replays one record into the group.
func (g *StreamsGroup) apply(r sgRecord) {
	switch r.Type {
	case sgMetadataType:
		if r.Tombstone {
			g.Epoch, g.MetadataHash, g.ValidatedTopologyEpoch = 0, 0, -1
		} else {
			g.Epoch, g.MetadataHash, g.ValidatedTopologyEpoch = r.Epoch, r.MetadataHash, r.ValidatedTopologyEpoch
		}
	case sgTopologyType:
		if r.Tombstone {
			g.Topology = nil
		} else {
			g.Topology = r.Topology
		}
		g.configured = nil
	case sgTargetAssignmentMetadataType:
		if r.Tombstone {
			g.AssignmentEpoch = 0
		} else {
			g.AssignmentEpoch = r.Epoch
		}
	case sgTargetAssignmentMemberType:
		if r.Tombstone {
			delete(g.Target, r.Member)
		} else {
			g.Target[r.Member] = *r.Target
		}
	case sgMemberMetadataType:
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
			m = g.newMember(r.Member)
			g.Members[r.Member] = m
		}
		if m.InstanceID != nil && g.static[*m.InstanceID] == m.ID {
			delete(g.static, *m.InstanceID)
		}
		m.streamsMemberMetadata = *r.MemberMD
		if m.InstanceID != nil {
			g.static[*m.InstanceID] = m.ID
		}
	case sgCurrentMemberAssignmentType:
		m := g.Members[r.Member]
		if m == nil {
			if r.Tombstone {
				return
			}
			m = g.newMember(r.Member)
			g.Members[r.Member] = m
		}
		g.setOwners(m, false)
		if r.Tombstone {
			m.streamsCurrentAssignment = streamsCurrentAssignment{MemberEpoch: leaveGroupMemberEpoch,
				PreviousMemberEpoch: leaveGroupMemberEpoch, State: StreamsMemberStable, Assigned: emptyTasks(), Pending: emptyTasks()}
			return
		}
		m.streamsCurrentAssignment = *r.Current
		g.setOwners(m, true)
	}
}

// setOwners records (own) or forgets m's active tasks, assigned and pending.
func (g *StreamsGroup) setOwners(m *StreamsMember, own bool) {
	for _, ts := range []TaskSet{m.Assigned.Active, m.Pending.Active} {
		for s, ps := range ts {
			for _, p := range ps {
				t := taskID{s, p}
				if own {
					g.activeOwner[t] = m.ID
				} else if g.activeOwner[t] == m.ID {
					delete(g.activeOwner, t)
				}
			}
		}
	}
}

func (g *StreamsGroup) sortedMembers() []*StreamsMember {
	return sortedMembers(g.Members)
}

// reconcileStreams is Kafka's streams CurrentAssignmentBuilder.
func reconcileStreams(cur streamsCurrentAssignment, targetEpoch int32, target StreamsTasks, ownedByOther func(taskID) bool, owned *StreamsTasks) streamsCurrentAssignment {
	switch cur.State {
	case StreamsMemberStable:
		if cur.MemberEpoch == targetEpoch {
			return cur
		}
	case StreamsMemberUnrevokedTasks:
		if owned == nil || owned.intersects(cur.Pending) {
			return cur // still revoking
		}
	}
	// Tasks no longer targeted (in any role) are to be revoked first.
	keep, pending := emptyTasks(), emptyTasks()
	roles := func(t *StreamsTasks) []*TaskSet { return []*TaskSet{&t.Active, &t.Standby, &t.Warmup} }
	curR, tgtR, keepR, pendR := roles(&cur.Assigned), roles(&target), roles(&keep), roles(&pending)
	anyPending := false
	for i := range curR {
		for s, ps := range *curR[i] {
			for _, p := range ps {
				if (*tgtR[i]).has(s, p) {
					(*keepR[i]).add(s, p)
				} else {
					(*pendR[i]).add(s, p)
					anyPending = true
				}
			}
		}
	}
	next := streamsCurrentAssignment{PreviousMemberEpoch: cur.MemberEpoch, Assigned: keep, Pending: emptyTasks()}
	if anyPending && (owned == nil || owned.intersects(pending)) {
		next.State, next.MemberEpoch, next.Pending = StreamsMemberUnrevokedTasks, cur.MemberEpoch, pending
		return next
	}
	unreleased := false
	for i := range tgtR {
		for _, s := range (*tgtR[i]).subtopologies() {
			for _, p := range (*tgtR[i])[s] {
				if (*keepR[i]).has(s, p) {
					continue
				}
				if i == 0 && ownedByOther(taskID{s, p}) {
					unreleased = true
					continue
				}
				(*keepR[i]).add(s, p)
			}
		}
	}
	next.MemberEpoch = targetEpoch
	next.State = StreamsMemberStable
	if unreleased {
		next.State = StreamsMemberUnreleasedTasks
	}
	return next
}

func (ts TaskSet) has(s string, p int32) bool {
	ps := ts[s]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

func (ts TaskSet) add(s string, p int32) {
	if ts.has(s, p) {
		return
	}
	ps := append(ts[s], p)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	ts[s] = ps
}

func (ts TaskSet) equal(o TaskSet) bool {
	a, b := ts.subtopologies(), o.subtopologies()
	if !slices.Equal(a, b) {
		return false
	}
	for _, s := range a {
		if !slices.Equal(ts[s], o[s]) {
			return false
		}
	}
	return true
}

func (t StreamsTasks) equal(o StreamsTasks) bool {
	return t.Active.equal(o.Active) && t.Standby.equal(o.Standby) && t.Warmup.equal(o.Warmup)
}

func (t StreamsTasks) subsetOf(o StreamsTasks) bool {
	pairs := [][2]TaskSet{{t.Active, o.Active}, {t.Standby, o.Standby}, {t.Warmup, o.Warmup}}
	for _, pr := range pairs {
		for s, ps := range pr[0] {
			for _, p := range ps {
				if !pr[1].has(s, p) {
					return false
				}
			}
		}
	}
	return true
}

func (t StreamsTasks) intersects(o StreamsTasks) bool {
	pairs := [][2]TaskSet{{t.Active, o.Active}, {t.Standby, o.Standby}, {t.Warmup, o.Warmup}}
	for _, pr := range pairs {
		for s, ps := range pr[0] {
			for _, p := range ps {
				if pr[1].has(s, p) {
					return true
				}
			}
		}
	}
	return false
}

func (c streamsCurrentAssignment) equal(o streamsCurrentAssignment) bool {
	return c.MemberEpoch == o.MemberEpoch && c.PreviousMemberEpoch == o.PreviousMemberEpoch && c.State == o.State &&
		c.Assigned.equal(o.Assigned) && c.Pending.equal(o.Pending)
}

func (m streamsMemberMetadata) clone() streamsMemberMetadata {
	m.ClientTags = slices.Clone(m.ClientTags)
	if m.UserEndpoint != nil {
		e := *m.UserEndpoint
		m.UserEndpoint = &e
	}
	return m
}

func (m streamsMemberMetadata) equal(o streamsMemberMetadata) bool {
	return equalStringPtr(m.InstanceID, o.InstanceID) && equalStringPtr(m.RackID, o.RackID) &&
		m.ClientID == o.ClientID && m.ClientHost == o.ClientHost && m.RebalanceTimeoutMs == o.RebalanceTimeoutMs &&
		m.TopologyEpoch == o.TopologyEpoch && m.ProcessID == o.ProcessID &&
		(m.UserEndpoint == nil) == (o.UserEndpoint == nil) && (m.UserEndpoint == nil || *m.UserEndpoint == *o.UserEndpoint) &&
		slices.Equal(m.ClientTags, o.ClientTags)
}

// ValidateOffsetCommit is StreamsGroup.validateOffsetCommit: as a consumer group's,
// the member must exist and commit at its current epoch.
func (g *StreamsGroup) ValidateOffsetCommit(memberID string, epoch int32, version int16) int16 {
	return validateMemberOffsetCommit(g.Members, memberID, epoch, version)
}

// subscribes: a streams group reads its topology's source and repartition topics.
func (g *StreamsGroup) subscribes(topic string) bool {
	if g.Topology == nil || len(g.Members) == 0 {
		return false
	}
	for _, s := range g.Topology.Subtopologies {
		if slices.Contains(s.SourceTopics, topic) {
			return true
		}
		for _, r := range s.RepartitionSourceTopics {
			if r.Name == topic {
				return true
			}
		}
	}
	return false
}
