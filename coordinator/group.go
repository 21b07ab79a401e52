package coordinator

// The classic group state machine, as Kafka's ClassicGroup and the classic-group parts
// of GroupMetadataManager (classicGroupJoin, classicGroupSync, classicGroupHeartbeat,
// classicGroupLeave, prepareRebalance, completeClassicGroupJoin, the heartbeat, join
// and sync timeouts). It is pure: time comes in as an argument, and every change
// returns Effects — responses for waiting requests and records to write. Whoever runs
// it writes Effects.Records first and sends Effects.Replies only once they are
// written; timers are the caller's too: it calls Tick at NextDeadline.
//
//	        +---------------------------------------------+
//	        v                                             |
//	Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
//	  ^                 ^        |                                  |  leader's SyncGroup
//	  |                 |        +--no member left--> Empty         v
//	  |                 +---member joins, leaves, times out---- Stable
//	Dead (deleted; a Dead group is never reused)

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupState is a classic group's state; String gives Kafka's names.
type GroupState int8

// Classic group states.
const (
	Empty GroupState = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s GroupState) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// ConsumerProtocolType is the protocol type of Kafka consumers.
const ConsumerProtocolType = "consumer"

// Waiter receives the response to a request parked in the group (JoinGroup until the
// join phase completes, SyncGroup until the leader's assignment is written). The state
// machine never calls it: it hands it back in a Reply.
type Waiter func(kmsg.Response)

// Reply is a response to deliver to a waiting request.
type Reply struct {
	To  Waiter
	Msg kmsg.Response
}

// Effects are what a state change asks the caller to do: write Records (to the group's
// __consumer_offsets partition) and then, once they are written, send Replies.
type Effects struct {
	Records []Record
	Replies []Reply
}

func (e *Effects) reply(w Waiter, m kmsg.Response) {
	if w != nil {
		e.Replies = append(e.Replies, Reply{To: w, Msg: m})
	}
}

// Protocol is one (name, metadata) pair a member supports, in preference order.
type Protocol struct {
	Name     string
	Metadata []byte
}

// TopicPartition names a committed offset's partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetAndMetadata is one committed offset, as OffsetCommitValue holds it.
type OffsetAndMetadata struct {
	Offset          int64
	LeaderEpoch     int32 // -1 when unknown
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1 unless the commit (v2-4) carried a retention time
}

// Member is one classic group member.
type Member struct {
	ID                 string
	InstanceID         *string // static membership (KIP-345)
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	SessionTimeoutMs   int32
	Protocols          []Protocol
	Assignment         []byte

	protocolType string
	// isNew: joined during the current rebalance; it expires after
	// NewMemberJoinTimeout rather than its session timeout (Kafka's isNew).
	isNew bool
	// joinWaiter is set while the member awaits its JoinGroup response.
	joinWaiter Waiter
	// syncWaiter is set while the member awaits its SyncGroup response.
	syncWaiter Waiter
	// heartbeatDeadline: the member is removed if nothing renews it by then (members
	// awaiting join or sync are exempt unless new, as Kafka's hasSatisfiedHeartbeat).
	heartbeatDeadline time.Time
}

// IsStatic reports whether the member has a group.instance.id.
func (m *Member) IsStatic() bool { return m.InstanceID != nil }

// metadataFor returns the member's metadata for protocol (nil if it lacks it).
func (m *Member) metadataFor(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *Member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.Protocols) {
		return false
	}
	for i := range protocols {
		if protocols[i].Name != m.Protocols[i].Name || string(protocols[i].Metadata) != string(m.Protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// Group is one classic group: its membership state machine and committed offsets.
// It is not safe for concurrent use; the GroupCoordinator serialises access per
// partition.
type Group struct {
	ID           string
	State        GroupState
	prevState    GroupState
	ProtocolType string // "" until the first member joins (or for simple groups)
	Protocol     string // selected protocol of the current generation, "" when none
	Generation   int32
	Leader       string // member id, "" when none
	// StateTimestamp is when the group last changed state (GroupMetadataValue's
	// CurrentStateTimestamp); an Empty group's offsets expire relative to it.
	StateTimestamp time.Time
	Members        map[string]*Member
	// staticMembers maps group.instance.id to member id.
	staticMembers map[string]string
	// pendingMembers were told MEMBER_ID_REQUIRED and must rejoin with that id before
	// their deadline (their session timeout).
	pendingMembers map[string]time.Time
	// pendingSync are the members of the current generation that have not sent a
	// SyncGroup yet; they are removed at syncDeadline (Kafka's pending sync timeout).
	pendingSync  map[string]bool
	syncDeadline time.Time
	// joinDeadline ends the join phase (zero outside PreparingRebalance).
	joinDeadline time.Time
	// initialJoin: the join phase started from Empty and is delayed by
	// group.initial.rebalance.delay.ms, extended while new members keep arriving
	// (Kafka's InitialDelayedJoin); initialRemaining is what is left of the
	// rebalance timeout to extend by.
	initialJoin      bool
	initialRemaining time.Duration
	newMemberAdded   bool
	numAwaitingJoin  int

	// Offsets are the committed offsets.
	Offsets map[TopicPartition]OffsetAndMetadata
	// PendingTxnOffsets are offsets committed in transactions whose marker has not
	// been written yet, by producer id (Kafka's pendingTransactionalOffsetCommits).
	PendingTxnOffsets map[int64]map[TopicPartition]OffsetAndMetadata

	// Consumer is set when this is a KIP-848 consumer group (consumer_group.go);
	// the classic fields above then stay Empty and unused.
	Consumer *ConsumerGroup
	// Streams is set when this is a KIP-1071 streams group (streams_group.go); the
	// classic fields then stay Empty and unused. At most one of Consumer and Streams
	// is set.
	Streams *StreamsGroup

	cfg *Config
}

// NewGroup returns an Empty group.
func NewGroup(id string, cfg *Config, now time.Time) *Group {
	return &Group{
		ID: id, State: Empty, prevState: Empty, StateTimestamp: now, cfg: cfg,
		Members: map[string]*Member{}, staticMembers: map[string]string{},
		pendingMembers: map[string]time.Time{}, pendingSync: map[string]bool{},
		Offsets: map[TopicPartition]OffsetAndMetadata{},
	}
}

func (g *Group) transition(s GroupState, now time.Time) {
	g.prevState, g.State = g.State, s
	g.StateTimestamp = now
}

func (g *Group) sortedMembers() []*Member {
	ms := make([]*Member, 0, len(g.Members))
	for _, m := range g.Members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	return ms
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *Group) rebalanceTimeout() time.Duration {
	var max int32
	for _, m := range g.Members {
		if m.RebalanceTimeoutMs > max {
			max = m.RebalanceTimeoutMs
		}
	}
	return time.Duration(max) * time.Millisecond
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: an empty group takes
// any non-empty protocol type and list; otherwise the type must match and at least
// one protocol must be supported by every member.
func (g *Group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.State == Empty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.ProtocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

// allSupport reports whether every member lists the protocol name.
func (g *Group) allSupport(name string) bool {
	for _, m := range g.Members {
		if !hasProtocol(m.Protocols, name) {
			return false
		}
	}
	return true
}

func hasProtocol(ps []Protocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports with the most first-choice
// votes, as Kafka's ClassicGroup.selectProtocol (ties go to the leader's preference).
func (g *Group) selectProtocol() string {
	var candidates []string
	var ref *Member
	if l := g.Members[g.Leader]; l != nil {
		ref = l
	} else {
		for _, m := range g.sortedMembers() {
			ref = m
			break
		}
	}
	if ref == nil {
		return ""
	}
	for _, p := range ref.Protocols {
		if g.allSupport(p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range g.Members {
		for _, p := range m.Protocols {
			if contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// SubscribedTopics returns the topics the members subscribe to, decoded from their
// consumer-protocol metadata; ok is false when that is unknown (not a consumer group,
// no protocol selected, or undecodable metadata), as ClassicGroup.computeSubscribedTopics.
func (g *Group) SubscribedTopics() (topics map[string]bool, ok bool) {
	if g.ProtocolType != ConsumerProtocolType {
		return nil, false
	}
	topics = map[string]bool{}
	if len(g.Members) == 0 {
		return topics, true
	}
	if g.Protocol == "" {
		return nil, false
	}
	for _, m := range g.Members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.Protocol)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// hasAllMembersJoined: every member awaits its join response and nobody was told
// MEMBER_ID_REQUIRED without rejoining yet.
func (g *Group) hasAllMembersJoined() bool {
	return len(g.Members) == g.numAwaitingJoin && len(g.pendingMembers) == 0
}

func (g *Group) setJoinWaiter(m *Member, w Waiter) {
	if m.joinWaiter == nil && w != nil {
		g.numAwaitingJoin++
	} else if m.joinWaiter != nil && w == nil {
		g.numAwaitingJoin--
	}
	m.joinWaiter = w
}

// add puts a new member in the group; the first member sets the protocol type and
// leads.
func (g *Group) add(m *Member, w Waiter) {
	if len(g.Members) == 0 {
		g.ProtocolType = m.protocolType
	}
	g.Members[m.ID] = m
	if m.InstanceID != nil {
		g.staticMembers[*m.InstanceID] = m.ID
	}
	if g.Leader == "" {
		g.Leader = m.ID
	}
	g.setJoinWaiter(m, w)
}

// remove drops a member without side effects on the state.
func (g *Group) remove(id string) {
	m := g.Members[id]
	if m == nil {
		return
	}
	g.setJoinWaiter(m, nil)
	delete(g.Members, id)
	if m.InstanceID != nil && g.staticMembers[*m.InstanceID] == id {
		delete(g.staticMembers, *m.InstanceID)
	}
	delete(g.pendingSync, id)
	if g.Leader == id {
		g.Leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.Leader = ms[0].ID
		}
	}
}

// JoinRequest is a JoinGroup as the state machine sees it.
type JoinRequest struct {
	MemberID           string
	InstanceID         *string
	ClientID           string
	ClientHost         string
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32
	ProtocolType       string
	Protocols          []Protocol
	// RequireKnownMemberID is JoinGroup v4+: a new dynamic member first gets
	// MEMBER_ID_REQUIRED with its id and must rejoin with it (KIP-394).
	RequireKnownMemberID bool
	// SupportsSkipAssignment is JoinGroup v9+.
	SupportsSkipAssignment bool
	// NewMemberID generates an id for a new member (client id + "-" + UUID in Kafka).
	NewMemberID func() string
}

func joinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID = memberID
	r.ErrorCode = code
	return r
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = code
	return r
}

// Join handles a JoinGroup (after the caller validated the group id and the session
// timeout, and created the group if needed), as GroupMetadataManager.classicGroupJoin.
// w gets the response, possibly later (see Effects).
func (g *Group) Join(now time.Time, req JoinRequest, w Waiter) Effects {
	var e Effects
	if g.State == Dead {
		// The group is being deleted; the client will find the coordinator again.
		e.reply(w, joinError(req.MemberID, kerr.CoordinatorNotAvailable.Code))
		return e
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		e.reply(w, joinError(req.MemberID, kerr.InconsistentGroupProtocol.Code))
		return e
	}
	if req.MemberID == "" {
		if g.cfg.GroupMaxSize > 0 && len(g.Members)+len(g.pendingMembers) >= g.cfg.GroupMaxSize {
			e.reply(w, joinError(req.MemberID, kerr.GroupMaxSizeReached.Code))
			return e
		}
		id := req.NewMemberID()
		if req.InstanceID != nil {
			if old, ok := g.staticMembers[*req.InstanceID]; ok {
				return g.replaceStaticMember(now, old, id, req, w)
			}
			return g.addMemberAndRebalance(now, id, req, w)
		}
		if req.RequireKnownMemberID {
			// KIP-394: hand out the id and wait for the member to come back with it.
			g.pendingMembers[id] = now.Add(time.Duration(req.SessionTimeoutMs) * time.Millisecond)
			e.reply(w, joinError(id, kerr.MemberIDRequired.Code))
			return e
		}
		return g.addMemberAndRebalance(now, id, req, w)
	}

	if _, ok := g.pendingMembers[req.MemberID]; ok {
		delete(g.pendingMembers, req.MemberID)
		return g.addMemberAndRebalance(now, req.MemberID, req, w)
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		e.reply(w, joinError(req.MemberID, code))
		return e
	}
	m := g.Members[req.MemberID]
	switch g.State {
	case PreparingRebalance:
		return g.updateMemberAndRebalance(now, m, req, w)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// A retried join: answer with the current generation again.
			e.reply(w, g.joinResponse(m.ID, false))
			return e
		}
		return g.updateMemberAndRebalance(now, m, req, w)
	case Stable:
		if g.Leader == m.ID || !m.matches(req.Protocols) {
			// The leader rejoining, or changed metadata, starts a new generation.
			return g.updateMemberAndRebalance(now, m, req, w)
		}
		e.reply(w, g.joinResponse(m.ID, false))
		return e
	default: // Empty
		e.reply(w, joinError(req.MemberID, kerr.UnknownMemberID.Code))
		return e
	}
}

// validateMember is ClassicGroup.validateMember: a dynamic member must exist; a static
// member's instance id must map to exactly this member id.
func (g *Group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		id, ok := g.staticMembers[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if id != memberID {
			return kerr.FencedInstanceID.Code
		}
		return 0
	}
	if g.Members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// joinResponse is the successful JoinGroup answer for member id: the leader gets every
// member's metadata for the selected protocol.
func (g *Group) joinResponse(id string, skipAssignment bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.Generation
	pt, p := g.ProtocolType, g.Protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.LeaderID = g.Leader
	r.MemberID = id
	r.SkipAssignment = skipAssignment
	if id == g.Leader {
		for _, m := range g.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.ID, m.InstanceID, m.metadataFor(g.Protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

func (g *Group) addMemberAndRebalance(now time.Time, id string, req JoinRequest, w Waiter) Effects {
	m := &Member{
		ID: id, InstanceID: req.InstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		RebalanceTimeoutMs: req.RebalanceTimeoutMs, SessionTimeoutMs: req.SessionTimeoutMs,
		Protocols: req.Protocols, protocolType: req.ProtocolType, isNew: true,
	}
	if g.State == PreparingRebalance && g.initialJoin {
		g.newMemberAdded = true
	}
	g.add(m, w)
	// A new member cannot heartbeat before its join completes, and a disconnect is not
	// seen while the join is parked; bound the wait instead (Kafka: 5 minutes).
	m.heartbeatDeadline = now.Add(g.cfg.NewMemberJoinTimeout)
	return g.maybePrepareRebalanceOrCompleteJoin(now)
}

func (g *Group) updateMemberAndRebalance(now time.Time, m *Member, req JoinRequest, w Waiter) Effects {
	var e Effects
	if m.joinWaiter != nil && w != nil {
		// The same member joined again before its first join completed (a client
		// retry); the older request is answered, not leaked.
		e.reply(m.joinWaiter, joinError(m.ID, kerr.RebalanceInProgress.Code))
	}
	m.Protocols = req.Protocols
	m.RebalanceTimeoutMs, m.SessionTimeoutMs = req.RebalanceTimeoutMs, req.SessionTimeoutMs
	g.setJoinWaiter(m, w)
	e2 := g.maybePrepareRebalanceOrCompleteJoin(now)
	e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	return e
}

// replaceStaticMember handles a known group.instance.id joining with no member id:
// the new member id takes over, the old one is fenced (FENCED_INSTANCE_ID to anything
// it still waits on), as GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin.
func (g *Group) replaceStaticMember(now time.Time, oldID, newID string, req JoinRequest, w Waiter) Effects {
	var e Effects
	old := g.Members[oldID]
	e.reply(old.joinWaiter, joinError(oldID, kerr.FencedInstanceID.Code))
	e.reply(old.syncWaiter, syncError(kerr.FencedInstanceID.Code))
	g.setJoinWaiter(old, nil)
	old.syncWaiter = nil
	delete(g.Members, oldID)
	m := old
	m.ID = newID
	g.Members[newID] = m
	g.staticMembers[*m.InstanceID] = newID
	if g.Leader == oldID {
		g.Leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	oldProtocols := m.Protocols
	m.Protocols = req.Protocols
	m.RebalanceTimeoutMs, m.SessionTimeoutMs = req.RebalanceTimeoutMs, req.SessionTimeoutMs
	m.heartbeatDeadline = now.Add(time.Duration(m.SessionTimeoutMs) * time.Millisecond)

	switch g.State {
	case Stable:
		if g.selectProtocol() == g.Protocol && sameProtocolNames(oldProtocols, req.Protocols) {
			// No rebalance needed: persist the new member id and hand back the current
			// assignment state. A v9+ leader is told to skip the assignment but still
			// gets the members (KIP-814).
			e.Records = append(e.Records, GroupMetadataRecord(g, now.UnixMilli()))
			if newID == g.Leader && req.SupportsSkipAssignment {
				e.reply(w, g.joinResponse(newID, true))
			} else {
				r := g.joinResponse(newID, false)
				r.Members = nil
				e.reply(w, r)
			}
			return e
		}
		g.setJoinWaiter(m, w)
		e2 := g.prepareRebalance(now)
		e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	case CompletingRebalance:
		// The leader may have been sent the old id; only a new generation keeps the
		// assignment consistent.
		g.setJoinWaiter(m, w)
		e2 := g.prepareRebalance(now)
		e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	default: // PreparingRebalance
		g.setJoinWaiter(m, w)
		e2 := g.maybeCompleteJoinPhase(now)
		e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	}
	return e
}

func sameProtocolNames(a, b []Protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

func (g *Group) canRebalance() bool {
	return g.State == Stable || g.State == CompletingRebalance || g.State == Empty
}

func (g *Group) maybePrepareRebalanceOrCompleteJoin(now time.Time) Effects {
	if g.canRebalance() {
		return g.prepareRebalance(now)
	}
	return g.maybeCompleteJoinPhase(now)
}

// maybeCompleteJoinPhase completes a (non-initial) join phase once everyone rejoined.
func (g *Group) maybeCompleteJoinPhase(now time.Time) Effects {
	if g.State == PreparingRebalance && g.hasAllMembersJoined() && !g.initialJoin {
		return g.completeJoin(now)
	}
	return Effects{}
}

// prepareRebalance starts a join phase, as GroupMetadataManager.prepareRebalance.
func (g *Group) prepareRebalance(now time.Time) Effects {
	var e Effects
	if g.State == CompletingRebalance {
		g.resetAssignmentsWithError(&e, kerr.RebalanceInProgress.Code)
	}
	g.pendingSync = map[string]bool{}
	g.syncDeadline = time.Time{}
	if g.State == Empty {
		delay := g.cfg.GroupInitialRebalanceDelay
		remaining := g.rebalanceTimeout() - delay
		if remaining < 0 {
			remaining = 0
		}
		g.initialJoin, g.initialRemaining, g.newMemberAdded = true, remaining, false
		g.joinDeadline = now.Add(delay)
		g.transition(PreparingRebalance, now)
		return e
	}
	g.initialJoin = false
	g.joinDeadline = now.Add(g.rebalanceTimeout())
	g.transition(PreparingRebalance, now)
	e2 := g.maybeCompleteJoinPhase(now)
	e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	return e
}

// resetAssignmentsWithError clears every assignment and answers parked SyncGroups
// with code.
func (g *Group) resetAssignmentsWithError(e *Effects, code int16) {
	for _, m := range g.sortedMembers() {
		m.Assignment = nil
		if m.syncWaiter != nil {
			e.reply(m.syncWaiter, syncError(code))
			m.syncWaiter = nil
		}
	}
}

// completeJoin ends the join phase, as GroupMetadataManager.completeClassicGroupJoin:
// dynamic members that did not rejoin are dropped, a leader that rejoined is chosen,
// the generation advances, and every member gets its JoinGroup response (the leader
// with the members' metadata). A group left with no member becomes Empty and is
// written.
func (g *Group) completeJoin(now time.Time) Effects {
	var e Effects
	if g.State != PreparingRebalance {
		return e
	}
	g.joinDeadline = time.Time{}
	for _, m := range g.sortedMembers() {
		if m.joinWaiter == nil && !m.IsStatic() {
			g.remove(m.ID)
		}
	}
	if !g.maybeElectNewJoinedLeader() && len(g.Members) > 0 {
		// Nobody rejoined: wait another rebalance timeout for the session timeouts to
		// clear the silent members.
		g.initialJoin = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return e
	}
	g.Generation++
	if len(g.Members) == 0 {
		g.Protocol, g.Leader = "", ""
		g.transition(Empty, now)
		e.Records = append(e.Records, GroupMetadataRecord(g, now.UnixMilli()))
		return e
	}
	g.Protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	g.pendingSync = map[string]bool{}
	for _, m := range g.sortedMembers() {
		if m.joinWaiter != nil {
			e.reply(m.joinWaiter, g.joinResponse(m.ID, false))
			g.setJoinWaiter(m, nil)
		}
		m.isNew = false
		m.heartbeatDeadline = now.Add(time.Duration(m.SessionTimeoutMs) * time.Millisecond)
		g.pendingSync[m.ID] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	return e
}

// maybeElectNewJoinedLeader keeps a leader that rejoined, or picks a member that did.
func (g *Group) maybeElectNewJoinedLeader() bool {
	if l := g.Members[g.Leader]; l != nil && l.joinWaiter != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.joinWaiter != nil {
			g.Leader = m.ID
			return true
		}
	}
	return false
}

// SyncRequest is a SyncGroup as the state machine sees it.
type SyncRequest struct {
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+
	Protocol     *string // v5+
	Assignments  map[string][]byte
}

// Sync handles a SyncGroup, as GroupMetadataManager.classicGroupSync. The leader's
// assignment is written with the group metadata before anyone is answered; if that
// write fails the caller calls SyncWriteFailed.
func (g *Group) Sync(now time.Time, req SyncRequest, w Waiter) Effects {
	var e Effects
	if g.State == Dead {
		e.reply(w, syncError(kerr.CoordinatorNotAvailable.Code))
		return e
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		e.reply(w, syncError(code))
		return e
	}
	if req.Generation != g.Generation {
		e.reply(w, syncError(kerr.IllegalGeneration.Code))
		return e
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.ProtocolType) || (req.Protocol != nil && *req.Protocol != g.Protocol) {
		e.reply(w, syncError(kerr.InconsistentGroupProtocol.Code))
		return e
	}
	m := g.Members[req.MemberID]
	switch g.State {
	case PreparingRebalance:
		e.reply(w, syncError(kerr.RebalanceInProgress.Code))
	case CompletingRebalance:
		if m.syncWaiter != nil {
			e.reply(m.syncWaiter, syncError(kerr.RebalanceInProgress.Code))
		}
		m.syncWaiter = w
		delete(g.pendingSync, m.ID)
		if m.ID != g.Leader {
			return e
		}
		// The leader's assignment: members it left out get an empty one.
		for _, mm := range g.Members {
			mm.Assignment = req.Assignments[mm.ID]
			if mm.Assignment == nil {
				mm.Assignment = []byte{}
			}
		}
		e.Records = append(e.Records, GroupMetadataRecord(g, now.UnixMilli()))
		g.transition(Stable, now)
		for _, mm := range g.sortedMembers() {
			if mm.syncWaiter != nil {
				e.reply(mm.syncWaiter, g.syncResponse(mm))
				mm.syncWaiter = nil
				mm.heartbeatDeadline = now.Add(time.Duration(mm.SessionTimeoutMs) * time.Millisecond)
			}
		}
	case Stable:
		delete(g.pendingSync, m.ID)
		e.reply(w, g.syncResponse(m))
	default: // Empty
		e.reply(w, syncError(kerr.UnknownMemberID.Code))
	}
	return e
}

func (g *Group) syncResponse(m *Member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	pt, p := g.ProtocolType, g.Protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.MemberAssignment = m.Assignment
	return r
}

// SyncWriteFailed undoes a leader's SyncGroup whose group-metadata write failed: the
// replies of that Sync are to be sent with code instead (the caller does that), the
// assignments are dropped and a new rebalance starts, as Kafka does.
func (g *Group) SyncWriteFailed(now time.Time, code int16) Effects {
	var e Effects
	if g.State != Stable {
		return e
	}
	for _, m := range g.Members {
		m.Assignment = nil
	}
	// Back to CompletingRebalance so prepareRebalance treats it as an interrupted sync.
	g.transition(CompletingRebalance, now)
	return g.prepareRebalance(now)
}

// Heartbeat handles a Heartbeat and returns its error code, as
// GroupMetadataManager.classicGroupHeartbeat.
func (g *Group) Heartbeat(now time.Time, memberID string, instanceID *string, generation int32) int16 {
	if g.State == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.State == Empty {
		return kerr.UnknownMemberID.Code
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.Generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.Members[memberID]
	m.heartbeatDeadline = now.Add(time.Duration(m.SessionTimeoutMs) * time.Millisecond)
	if g.State == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveMember is one member of a LeaveGroup (v3+ batches them).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members, as GroupMetadataManager.classicGroupLeave; it returns one
// error code per member.
func (g *Group) Leave(now time.Time, members []LeaveMember) ([]int16, Effects) {
	var e Effects
	codes := make([]int16, len(members))
	for i, lm := range members {
		if g.State == Dead {
			codes[i] = kerr.CoordinatorNotAvailable.Code
			continue
		}
		id := lm.MemberID
		if lm.InstanceID != nil {
			sid, ok := g.staticMembers[*lm.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != sid:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			id = sid
		} else if _, ok := g.pendingMembers[id]; ok {
			delete(g.pendingMembers, id)
			e2 := g.maybeCompleteJoinPhase(now)
			e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
			continue
		} else if g.Members[id] == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		e2 := g.removeMemberAndUpdate(now, g.Members[id])
		e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	}
	return codes, e
}

// removeMemberAndUpdate removes a member that left or expired and moves the group on,
// as GroupMetadataManager.removeMemberAndUpdateClassicGroup. A JoinGroup or SyncGroup
// it still has parked is answered UNKNOWN_MEMBER_ID so a live client rejoins.
func (g *Group) removeMemberAndUpdate(now time.Time, m *Member) Effects {
	var e Effects
	e.reply(m.joinWaiter, joinError(m.ID, kerr.UnknownMemberID.Code))
	e.reply(m.syncWaiter, syncError(kerr.UnknownMemberID.Code))
	m.syncWaiter = nil
	g.remove(m.ID)
	var e2 Effects
	switch g.State {
	case Stable, CompletingRebalance:
		e2 = g.maybePrepareRebalanceOrCompleteJoin(now)
	case PreparingRebalance:
		e2 = g.maybeCompleteJoinPhase(now)
	}
	e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	return e
}

// NextDeadline is when Tick must next be called (zero: no timer needed).
func (g *Group) NextDeadline() time.Time {
	if g.Consumer != nil {
		return g.Consumer.NextDeadline()
	}
	if g.Streams != nil {
		return g.Streams.NextDeadline()
	}
	var next time.Time
	min := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, d := range g.pendingMembers {
		min(d)
	}
	for _, m := range g.Members {
		if m.isNew || (m.joinWaiter == nil && m.syncWaiter == nil) {
			min(m.heartbeatDeadline)
		}
	}
	if g.State == PreparingRebalance {
		min(g.joinDeadline)
	}
	if (g.State == CompletingRebalance || g.State == Stable) && len(g.pendingSync) > 0 {
		min(g.syncDeadline)
	}
	return next
}

// Tick fires every timeout that is due at now: pending members that never rejoined,
// members whose session (or new-member join timeout) ran out, the end of the join
// phase (extending the initial delay while new members keep arriving), and members
// that never sent SyncGroup.
func (g *Group) Tick(now time.Time) Effects {
	var e Effects
	add := func(e2 Effects) {
		e.Records, e.Replies = append(e.Records, e2.Records...), append(e.Replies, e2.Replies...)
	}
	if g.State == Dead {
		return e
	}
	if g.Consumer != nil {
		e.Records = g.Consumer.Tick(now)
		return e
	}
	if g.Streams != nil {
		e.Records = g.Streams.Tick(now)
		return e
	}
	for id, d := range g.pendingMembers {
		if !now.Before(d) {
			delete(g.pendingMembers, id)
			add(g.maybeCompleteJoinPhase(now))
		}
	}
	for _, m := range g.sortedMembers() {
		if g.Members[m.ID] != m || now.Before(m.heartbeatDeadline) {
			continue
		}
		if !m.isNew && (m.joinWaiter != nil || m.syncWaiter != nil) {
			continue // awaiting a rebalance satisfies the heartbeat
		}
		add(g.removeMemberAndUpdate(now, m))
	}
	if g.State == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		if g.initialJoin && g.newMemberAdded && g.initialRemaining > 0 {
			// New members arrived during the delay: wait once more, within the
			// rebalance timeout (Kafka's InitialDelayedJoin).
			delay := g.cfg.GroupInitialRebalanceDelay
			if delay > g.initialRemaining {
				delay = g.initialRemaining
			}
			g.initialRemaining -= g.cfg.GroupInitialRebalanceDelay
			if g.initialRemaining < 0 {
				g.initialRemaining = 0
			}
			g.newMemberAdded = false
			g.joinDeadline = now.Add(delay)
		} else {
			add(g.completeJoin(now))
		}
	}
	if (g.State == CompletingRebalance || g.State == Stable) && len(g.pendingSync) > 0 &&
		!g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		// Members that never sent SyncGroup are dropped, and a new generation starts
		// without them (Kafka's pending-sync timeout).
		ids := make([]string, 0, len(g.pendingSync))
		for id := range g.pendingSync {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if m := g.Members[id]; m != nil {
				e.reply(m.joinWaiter, joinError(id, kerr.UnknownMemberID.Code))
				e.reply(m.syncWaiter, syncError(kerr.UnknownMemberID.Code))
				m.syncWaiter = nil
				g.remove(id)
			}
		}
		g.pendingSync = map[string]bool{}
		g.syncDeadline = time.Time{}
		add(g.maybePrepareRebalanceOrCompleteJoin(now))
	}
	return e
}

// ValidateOffsetCommit checks whether a (non-transactional) OffsetCommit may commit
// for this group, as ClassicGroup.validateOffsetCommit: generation -1 with no member
// id commits to an Empty group (admin tools, manual assignment); anything else must be
// a current member of the current generation, and not between its JoinGroup and
// SyncGroup responses (CompletingRebalance).
func (g *Group) ValidateOffsetCommit(memberID string, instanceID *string, generation int32) int16 {
	if g.State == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.State == Empty {
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.Generation {
			return kerr.IllegalGeneration.Code
		}
	} else if g.State != Empty {
		return kerr.UnknownMemberID.Code
	}
	if g.State == CompletingRebalance {
		// The member has its join response (its generation is current) but not yet
		// its assignment: it must finish the rebalance first. During a join phase
		// commits are still accepted, so eager consumers can commit what they
		// consumed while their partitions are revoked.
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// Describe fills a DescribeGroups entry: members with their metadata and assignment
// when Stable, without them otherwise, as ClassicGroup does.
func (g *Group) Describe() kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = g.ID
	d.State = g.State.String()
	d.ProtocolType = g.ProtocolType
	d.AuthorizedOperations = -2147483648
	if g.State == Stable {
		d.Protocol = g.Protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.ID, m.InstanceID, m.ClientID, m.ClientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if g.State == Stable {
			dm.ProtocolMetadata = m.metadataFor(g.Protocol)
			if m.Assignment != nil {
				dm.MemberAssignment = m.Assignment
			}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// IsEmpty reports whether the group has no members and nobody pending.
func (g *Group) IsEmpty() bool {
	if g.Consumer != nil {
		return len(g.Consumer.Members) == 0
	}
	if g.Streams != nil {
		return len(g.Streams.Members) == 0
	}
	return len(g.Members) == 0 && len(g.pendingMembers) == 0
}

// Delete marks the group Dead and returns the tombstones for its offsets and metadata.
// Any parked request is answered COORDINATOR_NOT_AVAILABLE (there are none for an
// Empty group, the only kind deleted through the API).
func (g *Group) Delete(now time.Time) Effects {
	var e Effects
	for _, tp := range g.sortedOffsets() {
		e.Records = append(e.Records, OffsetCommitRecord(g.ID, tp.Topic, tp.Partition, nil))
	}
	if g.Consumer != nil {
		e.Records = append(e.Records, g.consumerTombstones()...)
	} else if g.Streams != nil {
		e.Records = append(e.Records, g.streamsTombstones()...)
	} else {
		e.Records = append(e.Records, GroupTombstone(g.ID))
	}
	for _, m := range g.sortedMembers() {
		e.reply(m.joinWaiter, joinError(m.ID, kerr.CoordinatorNotAvailable.Code))
		e.reply(m.syncWaiter, syncError(kerr.CoordinatorNotAvailable.Code))
		g.setJoinWaiter(m, nil)
		m.syncWaiter = nil // every waiter is answered exactly once
	}
	g.transition(Dead, now)
	return e
}

// undoDelete brings an Empty group back after its tombstones failed to be written.
func (g *Group) undoDelete(stateTimestamp time.Time) {
	g.State, g.prevState, g.StateTimestamp = Empty, Empty, stateTimestamp
}

func (g *Group) sortedOffsets() []TopicPartition {
	tps := make([]TopicPartition, 0, len(g.Offsets))
	for tp := range g.Offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

// IsSubscribedToTopic is ClassicGroup.isSubscribedToTopic: when the subscriptions
// cannot be known, a consumer group counts as subscribed to everything.
func (g *Group) IsSubscribedToTopic(topic string) bool {
	if g.Consumer != nil {
		return g.Consumer.subscribes(topic)
	}
	if g.Streams != nil {
		return g.Streams.subscribes(topic)
	}
	topics, ok := g.SubscribedTopics()
	if !ok {
		return g.ProtocolType == ConsumerProtocolType
	}
	return topics[topic]
}

// ExpiredOffsets returns the offsets past retention at now, as Kafka's
// ClassicGroup.offsetExpirationCondition with OffsetMetadataManager's cleanup: a
// simple group (no protocol type) expires each offset retention after its commit; an
// Empty group retention after it became Empty; a Stable consumer group whose
// subscriptions are known expires, retention after their commit, the offsets of topics
// it no longer subscribes to. A commit with an explicit expire timestamp (OffsetCommit
// v2-4's retention time) expires then instead. Other groups keep their offsets.
func (g *Group) ExpiredOffsets(now time.Time, retention time.Duration) []TopicPartition {
	var base func(tp TopicPartition, om OffsetAndMetadata) (int64, bool)
	switch {
	case g.Consumer != nil:
		// As ConsumerGroup: retention after the commit, for topics no member
		// subscribes to (all of them once the group is empty).
		base = func(tp TopicPartition, om OffsetAndMetadata) (int64, bool) {
			return om.CommitTimestamp, !g.Consumer.subscribes(tp.Topic)
		}
	case g.Streams != nil:
		// As StreamsGroup: retention after the commit, for topics the topology no
		// longer reads (all of them once the group is empty).
		base = func(tp TopicPartition, om OffsetAndMetadata) (int64, bool) {
			return om.CommitTimestamp, !g.Streams.subscribes(tp.Topic)
		}
	case g.ProtocolType == "":
		base = func(_ TopicPartition, om OffsetAndMetadata) (int64, bool) { return om.CommitTimestamp, true }
	case g.State == Empty:
		base = func(TopicPartition, OffsetAndMetadata) (int64, bool) { return g.StateTimestamp.UnixMilli(), true }
	case g.State == Stable && g.ProtocolType == ConsumerProtocolType:
		topics, ok := g.SubscribedTopics()
		if !ok {
			return nil
		}
		base = func(tp TopicPartition, om OffsetAndMetadata) (int64, bool) {
			return om.CommitTimestamp, !topics[tp.Topic]
		}
	default:
		return nil
	}
	nowMs := now.UnixMilli()
	var out []TopicPartition
	for _, tp := range g.sortedOffsets() {
		om := g.Offsets[tp]
		from, applies := base(tp, om)
		if !applies {
			continue
		}
		if om.ExpireTimestamp >= 0 {
			if nowMs >= om.ExpireTimestamp {
				out = append(out, tp)
			}
		} else if nowMs-from >= retention.Milliseconds() {
			out = append(out, tp)
		}
	}
	return out
}
