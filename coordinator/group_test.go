package coordinator

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives one group with a fake clock and records what every request got.
type harness struct {
	t   *testing.T
	cfg Config
	now time.Time
	g   *Group
	ids int
	// got holds each request's response by label, once it is answered.
	got map[string]kmsg.Response
	// records counts the records the group asked to write.
	records []Record
}

func newHarness(t *testing.T, delay time.Duration) *harness {
	cfg := DefaultConfig()
	cfg.GroupInitialRebalanceDelay = delay
	h := &harness{t: t, cfg: cfg, now: time.UnixMilli(1_000_000), got: map[string]kmsg.Response{}}
	h.g = NewGroup("g", &h.cfg, h.now)
	return h
}

func (h *harness) waiter(label string) Waiter {
	return func(m kmsg.Response) {
		if _, dup := h.got[label]; dup {
			h.t.Fatalf("%s answered twice", label)
		}
		h.got[label] = m
	}
}

// apply delivers effects as the coordinator would after a successful write, then
// checks the group's invariants.
func (h *harness) apply(e Effects) {
	h.records = append(h.records, e.Records...)
	for _, r := range e.Replies {
		r.To(r.Msg)
	}
	checkInvariants(h.t, h.g)
}

func checkInvariants(t *testing.T, g *Group) {
	t.Helper()
	awaiting := 0
	for id, m := range g.Members {
		if m.ID != id {
			t.Fatalf("member %q stored under %q", m.ID, id)
		}
		if m.joinWaiter != nil {
			awaiting++
		}
		if m.InstanceID != nil && g.staticMembers[*m.InstanceID] != id {
			t.Fatalf("static member %q not indexed by its instance id", id)
		}
	}
	if awaiting != g.numAwaitingJoin {
		t.Fatalf("numAwaitingJoin %d, %d members await a join", g.numAwaitingJoin, awaiting)
	}
	for inst, id := range g.staticMembers {
		if m := g.Members[id]; m == nil || m.InstanceID == nil || *m.InstanceID != inst {
			t.Fatalf("instance %q maps to %q, not a member with that instance id", inst, id)
		}
	}
	if (g.Leader == "") != (len(g.Members) == 0) || (g.Leader != "" && g.Members[g.Leader] == nil) {
		t.Fatalf("leader %q with %d members", g.Leader, len(g.Members))
	}
	for id := range g.pendingSync {
		if g.Members[id] == nil {
			t.Fatalf("pending sync for non-member %q", id)
		}
	}
	if g.State == Empty && len(g.Members) != 0 {
		t.Fatalf("Empty group with %d members", len(g.Members))
	}
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.apply(h.g.Tick(h.now))
}

func consumerProtocols(topics ...string) []Protocol {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = topics
	return []Protocol{{Name: "range", Metadata: md.AppendTo(nil)}}
}

func (h *harness) joinReq(memberID string, instance *string, version int16) JoinRequest {
	return JoinRequest{
		MemberID: memberID, InstanceID: instance, ClientID: "c", ClientHost: "/127.0.0.1",
		SessionTimeoutMs: 10000, RebalanceTimeoutMs: 30000, ProtocolType: "consumer",
		Protocols: consumerProtocols("t"), RequireKnownMemberID: version >= 4, SupportsSkipAssignment: version >= 9,
		NewMemberID: func() string { h.ids++; return fmt.Sprintf("c-%d", h.ids) },
	}
}

func (h *harness) join(label string, req JoinRequest) {
	h.apply(h.g.Join(h.now, req, h.waiter(label)))
}

func (h *harness) joinResp(label string) *kmsg.JoinGroupResponse {
	h.t.Helper()
	m, ok := h.got[label]
	if !ok {
		h.t.Fatalf("%s not answered", label)
	}
	return m.(*kmsg.JoinGroupResponse)
}

func (h *harness) syncResp(label string) *kmsg.SyncGroupResponse {
	h.t.Helper()
	m, ok := h.got[label]
	if !ok {
		h.t.Fatalf("%s not answered", label)
	}
	return m.(*kmsg.SyncGroupResponse)
}

func (h *harness) sync(label, member string, gen int32, assign map[string][]byte) {
	h.apply(h.g.Sync(h.now, SyncRequest{MemberID: member, Generation: gen, Assignments: assign}, h.waiter(label)))
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}

// joinNew runs the KIP-394 handshake for a new dynamic member and returns its id.
func (h *harness) joinNew(label string) string {
	h.t.Helper()
	h.join(label+"-handshake", h.joinReq("", nil, 9))
	r := h.joinResp(label + "-handshake")
	wantCode(h.t, "first join", r.ErrorCode, kerr.MemberIDRequired.Code)
	h.join(label, h.joinReq(r.MemberID, nil, 9))
	return r.MemberID
}

func TestJoinSyncHeartbeatLifecycle(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a1")
	if h.g.State != PreparingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
	// The initial delay of 0 still completes through the timer, as Kafka's.
	if d := h.g.NextDeadline(); !d.Equal(h.now) {
		t.Fatalf("next deadline %v, want now", d)
	}
	h.advance(0)
	r := h.joinResp("a1")
	wantCode(t, "join", r.ErrorCode, 0)
	if r.Generation != 1 || r.LeaderID != a || r.MemberID != a || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("join response %+v", r)
	}
	if h.g.State != CompletingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
	h.sync("s1", a, 1, map[string][]byte{a: []byte("A")})
	if s := h.syncResp("s1"); s.ErrorCode != 0 || string(s.MemberAssignment) != "A" {
		t.Fatalf("sync %+v", s)
	}
	if h.g.State != Stable || len(h.records) != 1 {
		t.Fatalf("state %v, %d records", h.g.State, len(h.records))
	}
	wantCode(t, "heartbeat", h.g.Heartbeat(h.now, a, nil, 1), 0)
	wantCode(t, "old generation", h.g.Heartbeat(h.now, a, nil, 0), kerr.IllegalGeneration.Code)
	wantCode(t, "unknown member", h.g.Heartbeat(h.now, "nobody", nil, 1), kerr.UnknownMemberID.Code)

	// A second member: the group rebalances; the leader learns it from its heartbeat.
	b := h.joinNew("b1")
	if h.g.State != PreparingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
	wantCode(t, "heartbeat in rebalance", h.g.Heartbeat(h.now, a, nil, 1), kerr.RebalanceInProgress.Code)
	// During the join phase the old generation may still commit (eager revocation).
	wantCode(t, "commit in join phase", h.g.ValidateOffsetCommit(a, nil, 1), 0)
	h.join("a2", h.joinReq(a, nil, 9)) // everyone joined: completes at once
	ra, rb := h.joinResp("a2"), h.joinResp("b1")
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("join responses %+v / %+v", ra, rb)
	}
	// The follower's sync waits for the leader's.
	h.sync("sb", b, 2, nil)
	if _, ok := h.got["sb"]; ok {
		t.Fatal("follower sync answered before the leader's")
	}
	h.sync("sa", a, 2, map[string][]byte{a: []byte("A2"), b: []byte("B2")})
	if string(h.syncResp("sb").MemberAssignment) != "B2" || string(h.syncResp("sa").MemberAssignment) != "A2" {
		t.Fatal("wrong assignments")
	}
	d := h.g.Describe()
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}

	// b leaves: rebalance; a rejoins alone.
	codes, e := h.g.Leave(h.now, []LeaveMember{{MemberID: b}, {MemberID: "ghost"}})
	h.apply(e)
	wantCode(t, "leave", codes[0], 0)
	wantCode(t, "leave ghost", codes[1], kerr.UnknownMemberID.Code)
	h.join("a3", h.joinReq(a, nil, 9))
	if r := h.joinResp("a3"); r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
	// a leaves too: the join phase ends with nobody and the group is Empty (written).
	h.sync("sa3", a, 3, map[string][]byte{a: nil})
	n := len(h.records)
	_, e = h.g.Leave(h.now, []LeaveMember{{MemberID: a}})
	h.apply(e)
	if h.g.State != Empty || h.g.Generation != 4 || len(h.records) != n+1 {
		t.Fatalf("state %v generation %d records %d", h.g.State, h.g.Generation, len(h.records)-n)
	}
	wantCode(t, "heartbeat on empty", h.g.Heartbeat(h.now, a, nil, 4), kerr.UnknownMemberID.Code)
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a1")
	h.advance(0)
	b := h.joinNew("b1")
	h.join("a2", h.joinReq(a, nil, 9))
	h.sync("sa", a, 2, map[string][]byte{a: []byte("A"), b: []byte("B")})
	h.sync("sb", b, 2, nil)
	// a heartbeats, b goes silent.
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		wantCode(t, "heartbeat", h.g.Heartbeat(h.now, a, nil, 2), 0)
	}
	h.advance(3 * time.Second) // 12s: past b's 10s session
	if _, ok := h.g.Members[b]; ok {
		t.Fatal("b still a member after its session timeout")
	}
	if h.g.State != PreparingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
	wantCode(t, "b heartbeat", h.g.Heartbeat(h.now, b, nil, 2), kerr.UnknownMemberID.Code)
	wantCode(t, "a heartbeat", h.g.Heartbeat(h.now, a, nil, 2), kerr.RebalanceInProgress.Code)
	h.join("a3", h.joinReq(a, nil, 9))
	if r := h.joinResp("a3"); r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a1")
	h.advance(0)
	b := h.joinNew("b1")
	h.join("a2", h.joinReq(a, nil, 9))
	h.sync("sa", a, 2, nil)
	h.sync("sb", b, 2, nil)
	// c joins; b keeps heartbeating but never rejoins.
	c := h.joinNew("c1")
	h.join("a3", h.joinReq(a, nil, 9))
	for i := 0; i < 10; i++ {
		h.advance(3 * time.Second)
		h.g.Heartbeat(h.now, b, nil, 2)
		h.g.Heartbeat(h.now, a, nil, 2)
	}
	if _, ok := h.g.Members[b]; ok {
		t.Fatal("b survived the rebalance timeout")
	}
	ra, rc := h.joinResp("a3"), h.joinResp("c1")
	if ra.Generation != 3 || rc.Generation != 3 || len(ra.Members) != 2 {
		t.Fatalf("join %+v %+v", ra, rc)
	}
	_ = c
}

func TestPendingSyncTimeout(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a1")
	h.advance(0)
	b := h.joinNew("b1")
	h.join("a2", h.joinReq(a, nil, 9))
	h.sync("sa", a, 2, map[string][]byte{a: []byte("A"), b: []byte("B")})
	// b never syncs: after the rebalance timeout it is dropped and a new generation
	// starts without it.
	for i := 0; i < 11; i++ {
		h.advance(3 * time.Second)
		h.g.Heartbeat(h.now, a, nil, h.g.Generation)
	}
	if _, ok := h.g.Members[b]; ok {
		t.Fatal("b survived the sync timeout")
	}
	if h.g.State != PreparingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
}

func TestInitialRebalanceDelayWaitsForMoreMembers(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	a := h.joinNew("a1")
	h.advance(2 * time.Second)
	b := h.joinNew("b1") // arrives within the delay: extends it
	h.advance(time.Second)
	if _, ok := h.got["a1"]; ok {
		t.Fatal("join completed while new members were still arriving")
	}
	h.advance(3 * time.Second)
	ra, rb := h.joinResp("a1"), h.joinResp("b1")
	if ra.Generation != 1 || rb.Generation != 1 || ra.LeaderID != a || len(ra.Members) != 2 {
		t.Fatalf("join %+v %+v", ra, rb)
	}
	_ = b
}

func TestMemberIDRequiredAndPendingExpiry(t *testing.T) {
	h := newHarness(t, 0)
	h.join("x", h.joinReq("", nil, 4))
	r := h.joinResp("x")
	wantCode(t, "v4 join", r.ErrorCode, kerr.MemberIDRequired.Code)
	if r.MemberID == "" || !h.g.IsEmpty() == true && len(h.g.pendingMembers) != 1 {
		t.Fatalf("pending member not recorded: %+v", r)
	}
	// v3 joins directly.
	h.join("old", h.joinReq("", nil, 3))
	if h.g.State != PreparingRebalance {
		t.Fatalf("state %v", h.g.State)
	}
	// The pending member never comes back: it expires after its session timeout.
	h.advance(11 * time.Second)
	if len(h.g.pendingMembers) != 0 {
		t.Fatal("pending member did not expire")
	}
	wantCode(t, "old member joined", h.joinResp("old").ErrorCode, 0)
	// A rejoin with an id nobody knows is UNKNOWN_MEMBER_ID.
	h.join("y", h.joinReq("made-up", nil, 4))
	wantCode(t, "unknown id", h.joinResp("y").ErrorCode, kerr.UnknownMemberID.Code)
}

func TestInconsistentProtocol(t *testing.T) {
	h := newHarness(t, 0)
	h.joinNew("a")
	req := h.joinReq("", nil, 9)
	req.ProtocolType = "connect"
	h.join("x", req)
	wantCode(t, "other type", h.joinResp("x").ErrorCode, kerr.InconsistentGroupProtocol.Code)
	req = h.joinReq("", nil, 9)
	req.Protocols = []Protocol{{Name: "roundrobin"}}
	h.join("y", req)
	wantCode(t, "no common protocol", h.joinResp("y").ErrorCode, kerr.InconsistentGroupProtocol.Code)
}

func TestProtocolSelectionByVotes(t *testing.T) {
	h := newHarness(t, 0)
	mk := func(names ...string) []Protocol {
		var ps []Protocol
		for _, n := range names {
			ps = append(ps, Protocol{Name: n, Metadata: []byte(n)})
		}
		return ps
	}
	for i, ps := range [][]Protocol{mk("range", "sticky"), mk("sticky", "range"), mk("sticky", "range", "rr")} {
		req := h.joinReq("", nil, 3)
		req.Protocols = ps
		h.join(fmt.Sprint("m", i), req)
	}
	h.advance(0) // new members arrived during the (zero) initial delay: one more round
	h.advance(0)
	r := h.joinResp("m0")
	if *r.Protocol != "sticky" || string(r.Members[0].ProtocolMetadata) != "sticky" {
		t.Fatalf("selected %q", *r.Protocol)
	}
}

func TestStaticMembership(t *testing.T) {
	h := newHarness(t, 0)
	inst := "instance-1"
	// Static members skip MEMBER_ID_REQUIRED.
	h.join("s1", h.joinReq("", &inst, 9))
	h.advance(0)
	r := h.joinResp("s1")
	wantCode(t, "static join", r.ErrorCode, 0)
	old := r.MemberID
	h.sync("ss1", old, 1, map[string][]byte{old: []byte("A")})
	n := len(h.records)

	// Restarted with the same instance id and no member id: takes over without a
	// rebalance (the group is Stable, nothing else changed); the new id is written.
	h.join("s2", h.joinReq("", &inst, 9))
	r2 := h.joinResp("s2")
	wantCode(t, "static rejoin", r2.ErrorCode, 0)
	if r2.MemberID == old || r2.Generation != 1 || !r2.SkipAssignment || r2.LeaderID != r2.MemberID {
		t.Fatalf("rejoin %+v", r2)
	}
	if h.g.State != Stable || len(h.records) != n+1 {
		t.Fatalf("state %v, %d new records", h.g.State, len(h.records)-n)
	}
	// The old incarnation is fenced everywhere.
	wantCode(t, "old heartbeat", h.g.Heartbeat(h.now, old, &inst, 1), kerr.FencedInstanceID.Code)
	wantCode(t, "old commit", h.g.ValidateOffsetCommit(old, &inst, 1), kerr.FencedInstanceID.Code)
	h.apply(h.g.Sync(h.now, SyncRequest{MemberID: old, InstanceID: &inst, Generation: 1}, h.waiter("old-sync")))
	wantCode(t, "old sync", h.syncResp("old-sync").ErrorCode, kerr.FencedInstanceID.Code)
	wantCode(t, "new heartbeat", h.g.Heartbeat(h.now, r2.MemberID, &inst, 1), 0)
	other := "other"
	wantCode(t, "unknown instance", h.g.Heartbeat(h.now, r2.MemberID, &other, 1), kerr.UnknownMemberID.Code)

	// Leaving by instance id (LeaveGroup v3+ batch), with a wrong member id: fenced.
	codes, _ := h.g.Leave(h.now, []LeaveMember{{MemberID: old, InstanceID: &inst}})
	wantCode(t, "fenced leave", codes[0], kerr.FencedInstanceID.Code)
	codes, e := h.g.Leave(h.now, []LeaveMember{{InstanceID: &inst}})
	h.apply(e)
	wantCode(t, "leave", codes[0], 0)
	if len(h.g.Members) != 0 {
		t.Fatal("static member still there")
	}
}

func TestStaticMemberKeptAcrossRebalanceWithoutRejoin(t *testing.T) {
	h := newHarness(t, 0)
	inst := "i"
	h.join("s", h.joinReq("", &inst, 9))
	h.advance(0)
	s := h.joinResp("s").MemberID
	h.sync("ss", s, 1, nil)
	d := h.joinNew("d")
	// The static member does not rejoin; at the rebalance timeout it stays a member.
	for i := 0; i < 10; i++ {
		h.advance(3 * time.Second)
		h.g.Heartbeat(h.now, s, &inst, 1)
	}
	if _, ok := h.g.Members[s]; !ok {
		t.Fatal("static member dropped at join completion")
	}
	if r := h.joinResp("d"); r.Generation != 2 || r.LeaderID != d {
		t.Fatalf("join %+v", r)
	}
}

func TestLeaveDuringRebalanceAnswersParkedJoin(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	a := h.joinNew("a")
	codes, e := h.g.Leave(h.now, []LeaveMember{{MemberID: a}})
	h.apply(e)
	wantCode(t, "leave", codes[0], 0)
	wantCode(t, "parked join", h.joinResp("a").ErrorCode, kerr.UnknownMemberID.Code)
}

func TestNewMemberJoinTimeout(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a")
	h.advance(0)
	h.sync("sa", a, 1, nil)
	// b joins but a never rejoins and keeps heartbeating; after the rebalance timeout
	// a is dropped and b alone forms generation 2.
	h.joinNew("b")
	for i := 0; i < 11; i++ {
		h.advance(3 * time.Second)
		h.g.Heartbeat(h.now, a, nil, 1)
	}
	if r := h.joinResp("b"); r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a")
	h.sync("early", a, 0, nil)
	wantCode(t, "sync before join completes", h.syncResp("early").ErrorCode, kerr.RebalanceInProgress.Code)
	h.advance(0)
	h.sync("gen", a, 7, nil)
	wantCode(t, "wrong generation", h.syncResp("gen").ErrorCode, kerr.IllegalGeneration.Code)
	h.sync("who", "nobody", 1, nil)
	wantCode(t, "unknown member", h.syncResp("who").ErrorCode, kerr.UnknownMemberID.Code)
	wrong := "roundrobin"
	h.apply(h.g.Sync(h.now, SyncRequest{MemberID: a, Generation: 1, Protocol: &wrong}, h.waiter("proto")))
	wantCode(t, "protocol", h.syncResp("proto").ErrorCode, kerr.InconsistentGroupProtocol.Code)
}

func TestSyncWriteFailureRebalances(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a")
	h.advance(0)
	e := h.g.Sync(h.now, SyncRequest{MemberID: a, Generation: 1, Assignments: map[string][]byte{a: []byte("A")}}, h.waiter("s"))
	if len(e.Records) != 1 || len(e.Replies) != 1 {
		t.Fatalf("effects %+v", e)
	}
	// The coordinator failed to write: it answers the replies with an error and
	// tells the group.
	h.apply(h.g.SyncWriteFailed(h.now, kerr.CoordinatorNotAvailable.Code))
	if h.g.State != PreparingRebalance || h.g.Members[a].Assignment != nil {
		t.Fatalf("state %v", h.g.State)
	}
}

func TestValidateOffsetCommit(t *testing.T) {
	h := newHarness(t, 0)
	wantCode(t, "simple commit to empty group", h.g.ValidateOffsetCommit("", nil, -1), 0)
	a := h.joinNew("a")
	wantCode(t, "simple commit to active group", h.g.ValidateOffsetCommit("", nil, -1), kerr.UnknownMemberID.Code)
	h.advance(0)
	wantCode(t, "member commit between join and sync", h.g.ValidateOffsetCommit(a, nil, 1), kerr.RebalanceInProgress.Code)
	h.sync("s", a, 1, nil)
	wantCode(t, "member commit when stable", h.g.ValidateOffsetCommit(a, nil, 1), 0)
	wantCode(t, "wrong generation", h.g.ValidateOffsetCommit(a, nil, 2), kerr.IllegalGeneration.Code)
	wantCode(t, "unknown member", h.g.ValidateOffsetCommit("x", nil, 1), kerr.UnknownMemberID.Code)
}

func TestExpiredOffsets(t *testing.T) {
	h := newHarness(t, 0)
	ret := time.Hour
	nowMs := h.now.UnixMilli()
	h.g.Offsets[TopicPartition{"t", 0}] = OffsetAndMetadata{Offset: 1, CommitTimestamp: nowMs, ExpireTimestamp: -1}
	h.g.Offsets[TopicPartition{"t", 1}] = OffsetAndMetadata{Offset: 1, CommitTimestamp: nowMs, ExpireTimestamp: nowMs + 1000}
	if got := h.g.ExpiredOffsets(h.now.Add(2*time.Second), ret); len(got) != 1 || got[0].Partition != 1 {
		t.Fatalf("expired %v", got)
	}
	if got := h.g.ExpiredOffsets(h.now.Add(ret), ret); len(got) != 2 {
		t.Fatalf("expired %v", got)
	}
	// A consumer group rebalancing keeps its offsets; once Stable it drops only
	// those of topics nobody subscribes to ("t" is subscribed, "gone" not).
	h.g.Offsets[TopicPartition{"gone", 0}] = OffsetAndMetadata{Offset: 1, CommitTimestamp: nowMs, ExpireTimestamp: -1}
	a := h.joinNew("a")
	if got := h.g.ExpiredOffsets(h.now.Add(10*ret), ret); len(got) != 0 {
		t.Fatalf("rebalancing group expired %v", got)
	}
	h.advance(0)
	h.sync("s", a, 1, nil)
	// (Even t[1]'s explicit expire timestamp waits: a subscribed topic never expires.)
	if got := h.g.ExpiredOffsets(h.now.Add(ret), ret); len(got) != 1 || got[0].Topic != "gone" {
		t.Fatalf("stable group expired %v", got)
	}
}

func TestSubscribedTopics(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("a")
	h.advance(0)
	h.sync("s", a, 1, nil)
	topics, ok := h.g.SubscribedTopics()
	if !ok || !topics["t"] || len(topics) != 1 {
		t.Fatalf("subscribed %v %v", topics, ok)
	}
}

// TestRandomOperationsKeepInvariants drives a group with random joins, syncs,
// heartbeats, leaves and clock jumps from several dynamic and static members. Every
// request must be answered at most once (the waiters fail the test otherwise), the
// invariants must hold after every step, and once everyone stops, every parked
// request must eventually be answered by the timeouts alone.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t, time.Duration(rng.Intn(3))*time.Second)
			type client struct {
				id       string
				instance *string
				gen      int32
			}
			clients := make([]*client, 6)
			for i := range clients {
				clients[i] = &client{}
				if i%3 == 0 {
					inst := fmt.Sprint("inst-", i)
					clients[i].instance = &inst
				}
			}
			n := 0
			label := func(kind string) string { n++; return fmt.Sprint(kind, n) }
			var parked []string
			for step := 0; step < 400; step++ {
				c := clients[rng.Intn(len(clients))]
				switch op := rng.Intn(7); op {
				case 0, 1: // join (new, or rejoin with the id we have)
					l := label("join")
					req := h.joinReq(c.id, c.instance, int16(3+rng.Intn(7)))
					h.join(l, req)
					if m, ok := h.got[l]; ok {
						r := m.(*kmsg.JoinGroupResponse)
						if r.ErrorCode == 0 || r.ErrorCode == kerr.MemberIDRequired.Code {
							c.id, c.gen = r.MemberID, r.Generation
						} else if r.ErrorCode == kerr.UnknownMemberID.Code || r.ErrorCode == kerr.FencedInstanceID.Code {
							c.id = ""
						}
					} else {
						parked = append(parked, l)
					}
				case 2: // sync (half the time by the leader, so groups do get Stable)
					if rng.Intn(2) == 0 {
						for _, cc := range clients {
							if cc.id != "" && cc.id == h.g.Leader {
								c = cc
							}
						}
					}
					l := label("sync")
					assign := map[string][]byte{}
					for id := range h.g.Members {
						assign[id] = []byte(id)
					}
					h.apply(h.g.Sync(h.now, SyncRequest{MemberID: c.id, InstanceID: c.instance, Generation: c.gen, Assignments: assign}, h.waiter(l)))
					if _, ok := h.got[l]; !ok {
						parked = append(parked, l)
					}
				case 3: // heartbeat
					h.g.Heartbeat(h.now, c.id, c.instance, c.gen)
				case 4: // leave
					_, e := h.g.Leave(h.now, []LeaveMember{{MemberID: c.id, InstanceID: c.instance}})
					h.apply(e)
					c.id = ""
				default: // time passes
					h.advance(time.Duration(rng.Intn(4000)) * time.Millisecond)
				}
				// Adopt the generation of any join answered meanwhile.
				for _, c := range clients {
					if m := h.g.Members[c.id]; m != nil && c.gen != h.g.Generation && h.g.State != PreparingRebalance {
						c.gen = h.g.Generation
					}
				}
			}
			// Everyone goes silent: the timeouts alone must answer every parked request
			// and empty the group.
			for i := 0; i < 200 && (len(h.g.Members) > 0 || h.g.State != Empty); i++ {
				h.advance(5 * time.Second)
			}
			for _, l := range parked {
				if _, ok := h.got[l]; !ok {
					t.Fatalf("%s never answered", l)
				}
			}
			if len(h.g.Members) != 0 || h.g.State != Empty {
				t.Fatalf("silent group still has %d members in %v", len(h.g.Members), h.g.State)
			}
		})
	}
}
