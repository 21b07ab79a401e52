package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sgHarness drives a StreamsGroup as the coordinator does, with a fake clock. Every
// record goes through its bytes before it is applied and is kept, so the group can
// be rebuilt by replay and compared.
type sgHarness struct {
	t   *testing.T
	cfg StreamsGroupConfig
	g   *StreamsGroup
	md  fakeMetadata
	now time.Time
	log []sgRecord
}

func newSGHarness(t *testing.T, topics map[string]int32) *sgHarness {
	h := &sgHarness{t: t, cfg: DefaultStreamsGroupConfig(), md: fakeMetadata(topics), now: time.UnixMilli(1_700_000_000_000)}
	h.g = NewStreamsGroup("app", &h.cfg)
	return h
}

func (h *sgHarness) roundTrip(recs []sgRecord) []sgRecord {
	h.t.Helper()
	out := make([]sgRecord, 0, len(recs))
	for _, r := range recs {
		b := r.encode()
		d, err := DecodeRecord(b.Key, b.Value)
		if err != nil || d.Streams == nil {
			h.t.Fatalf("record %+v does not decode: %v", r, err)
		}
		out = append(out, *d.Streams)
	}
	return out
}

func (h *sgHarness) hb(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	h.t.Helper()
	if code, msg := ValidateStreamsGroupHeartbeat(req); code != 0 {
		h.t.Fatalf("invalid request: %v %s", kerr.ErrorForCode(code), msg)
	}
	p := h.g.Heartbeat(h.now, req, "client", "/127.0.0.1", h.md)
	if p.Resp.ErrorCode == 0 {
		p.Records = h.roundTrip(p.Records)
		h.log = append(h.log, p.Records...)
		h.g.Commit(h.now, p)
		h.g.FinishResponse(req, p.Resp)
	} else if len(p.Records) > 0 {
		h.t.Fatalf("an error (%v) came with records", kerr.ErrorForCode(p.Resp.ErrorCode))
	}
	h.checkInvariants()
	return p.Resp
}

// checkInvariants: no active task is owned twice, and a replay of every record
// rebuilds the same members, targets and epochs.
func (h *sgHarness) checkInvariants() {
	h.t.Helper()
	seen := map[taskID]string{}
	for _, m := range h.g.sortedMembers() {
		for _, ts := range []TaskSet{m.Assigned.Active, m.Pending.Active} {
			for s, ps := range ts {
				for _, p := range ps {
					if o, dup := seen[taskID{s, p}]; dup {
						h.t.Fatalf("task %s_%d owned by %s and %s", s, p, o, m.ID)
					}
					seen[taskID{s, p}] = m.ID
				}
			}
		}
	}
	r := NewStreamsGroup("app", &h.cfg)
	for _, rec := range h.log {
		r.apply(rec)
	}
	if got, want := describeSG(r), describeSG(h.g); got != want {
		h.t.Fatalf("replay differs:\n got %s\nwant %s", got, want)
	}
}

func describeSG(g *StreamsGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "epoch=%d assign=%d topo=%v validated=%d;", g.Epoch, g.AssignmentEpoch, g.Topology != nil, g.ValidatedTopologyEpoch)
	for _, m := range g.sortedMembers() {
		fmt.Fprintf(&b, " %s(e%d %s %s a=%v s=%v p=%v t=%v)", m.ID, m.MemberEpoch, m.State, m.ProcessID,
			m.Assigned.Active, m.Assigned.Standby, m.Pending.Active, g.Target[m.ID].Active)
	}
	return b.String()
}

// wordCount is a two-subtopology topology: input is re-keyed into a repartition
// topic, which the second subtopology counts into a changelog-backed store.
func wordCount(epoch int32) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = epoch
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"input"}, []string{"app-counts-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rp := kmsg.NewTopicInfo()
	rp.Topic = "app-counts-repartition"
	rp.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic = "app-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rp}
	s1.StateChangelogTopics = []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func sgJoin(member, process string) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "app", member, 0, 30000
	r.ProcessID = kmsg.StringPtr(process)
	r.Topology = wordCount(0)
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return r
}

// sgBeat is a heartbeat reporting the tasks the member was last given.
func sgBeat(member string, epoch int32, active, standby []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = "app", member, epoch
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = nonNil(active), nonNil(standby), []kmsg.TaskIDs{}
	return r
}

func nonNil(ts []kmsg.TaskIDs) []kmsg.TaskIDs {
	if ts == nil {
		return []kmsg.TaskIDs{}
	}
	return ts
}

func taskCount(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

func statusCodes(r *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range r.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

func TestStreamsGroupTopologyInitialization(t *testing.T) {
	h := newSGHarness(t, map[string]int32{})
	r := h.hb(sgJoin("a", "p1"))
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != streamsStatusMissingSourceTopics ||
		r.Status[0].StatusDetail != "Source topics input are missing." {
		t.Fatalf("join without the source topic: %+v", r)
	}
	if taskCount(r.ActiveTasks) != 0 || h.g.State() != "NotReady" {
		t.Fatalf("tasks %v, state %s", r.ActiveTasks, h.g.State())
	}

	// The source topic appears: the internal topics are to be created, with the
	// source's partition count and the client's configs.
	h.md["input"] = 3
	r = h.hb(sgBeat("a", r.MemberEpoch, nil, nil))
	if got := statusCodes(r); len(got) != 1 || got[0] != streamsStatusMissingInternalTopics {
		t.Fatalf("status %v", r.Status)
	}
	ct := h.g.configured
	if len(ct.Create) != 2 || ct.Create[0].Name != "app-counts-changelog" || ct.Create[0].Partitions != 3 ||
		ct.Create[0].Configs["cleanup.policy"] != "compact" || ct.Create[1].Name != "app-counts-repartition" || ct.Create[1].Partitions != 3 {
		t.Fatalf("to create: %+v", ct.Create)
	}

	// Created: all six tasks go to the only member.
	h.md["app-counts-changelog"], h.md["app-counts-repartition"] = 3, 3
	r = h.hb(sgBeat("a", r.MemberEpoch, nil, nil))
	if len(r.Status) != 0 || taskCount(r.ActiveTasks) != 6 || h.g.State() != "Stable" {
		t.Fatalf("ready: status %v active %v state %s", r.Status, r.ActiveTasks, h.g.State())
	}

	// A mispartitioned internal topic is reported.
	h.md["app-counts-changelog"] = 2
	r = h.hb(sgBeat("a", r.MemberEpoch, r.ActiveTasks, nil))
	if got := statusCodes(r); len(got) != 1 || got[0] != streamsStatusIncorrectlyPartitionedTopics {
		t.Fatalf("status %v", r.Status)
	}
}

func TestStreamsGroupRebalanceHandsTasksOver(t *testing.T) {
	h := newSGHarness(t, map[string]int32{"input": 4, "app-counts-repartition": 4, "app-counts-changelog": 4})
	a := h.hb(sgJoin("a", "p1"))
	if taskCount(a.ActiveTasks) != 8 || a.MemberEpoch != 1 {
		t.Fatalf("a: %+v", a)
	}
	aTasks := a.ActiveTasks

	// b joins: the target splits the tasks, but b gets none of a's until a revoked.
	b := h.hb(sgJoin("b", "p2"))
	if b.MemberEpoch != 2 || taskCount(b.ActiveTasks) != 0 {
		t.Fatalf("b before a revoked: epoch %d tasks %v", b.MemberEpoch, b.ActiveTasks)
	}
	if m := h.g.Members["b"]; m.State != StreamsMemberUnreleasedTasks {
		t.Fatalf("b is %s", m.State)
	}
	a = h.hb(sgBeat("a", a.MemberEpoch, aTasks, nil))
	if a.MemberEpoch != 1 || taskCount(a.ActiveTasks) != 4 || h.g.Members["a"].State != StreamsMemberUnrevokedTasks {
		t.Fatalf("a must revoke 4 tasks at epoch 1: %+v state %s", a, h.g.Members["a"].State)
	}
	// a says it still owns everything: nothing moves.
	a2 := h.hb(sgBeat("a", 1, aTasks, nil))
	if a2.MemberEpoch != 1 || h.g.Members["a"].State != StreamsMemberUnrevokedTasks {
		t.Fatalf("a still revoking: %+v", a2)
	}
	// a revoked: it reaches epoch 2; then b gets its four.
	a = h.hb(sgBeat("a", 1, a.ActiveTasks, nil))
	if a.MemberEpoch != 2 || h.g.Members["a"].State != StreamsMemberStable {
		t.Fatalf("a after revoking: %+v", a)
	}
	b = h.hb(sgBeat("b", b.MemberEpoch, nil, nil))
	if taskCount(b.ActiveTasks) != 4 || h.g.State() != "Stable" {
		t.Fatalf("b after a revoked: %v, state %s", b.ActiveTasks, h.g.State())
	}

	// b's session runs out: it is fenced, and a gets everything back.
	h.now = h.now.Add(h.cfg.SessionTimeout / 2)
	a = h.hb(sgBeat("a", a.MemberEpoch, a.ActiveTasks, nil))
	h.now = h.now.Add(h.cfg.SessionTimeout/2 + time.Millisecond)
	for _, r := range h.g.Tick(h.now) {
		d, err := DecodeRecord(r.Key, r.Value)
		if err != nil || d.Streams == nil {
			t.Fatal(err)
		}
		h.log = append(h.log, *d.Streams)
	}
	if _, ok := h.g.Members["b"]; ok {
		t.Fatal("b not fenced after its session timeout")
	}
	a = h.hb(sgBeat("a", a.MemberEpoch, a.ActiveTasks, nil))
	if taskCount(a.ActiveTasks) != 8 {
		t.Fatalf("a after b was fenced: %v", a.ActiveTasks)
	}

	// A stale epoch with tasks a does not own is fenced.
	r := h.hb(sgBeat("a", a.MemberEpoch-1, []kmsg.TaskIDs{{SubtopologyID: "9", Partitions: []int32{0}}}, nil))
	if r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("stale epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Leaving removes the member and bumps the epoch.
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "app", "a", -1
	epoch := h.g.Epoch
	if r := h.hb(leave); r.ErrorCode != 0 || r.MemberEpoch != -1 || len(h.g.Members) != 0 || h.g.Epoch != epoch+1 || h.g.State() != "Empty" {
		t.Fatalf("leave: %+v, members %d", r, len(h.g.Members))
	}
}

func TestStreamsGroupStandbyReplicas(t *testing.T) {
	h := newSGHarness(t, map[string]int32{"input": 2, "app-counts-repartition": 2, "app-counts-changelog": 2})
	h.cfg.NumStandbyReplicas = 1
	a := h.hb(sgJoin("a", "p1"))
	// One process: no standby can be placed.
	if taskCount(a.StandbyTasks) != 0 {
		t.Fatalf("standbys on the active's process: %v", a.StandbyTasks)
	}
	a2 := h.hb(sgJoin("a2", "p1")) // same process as a
	b := h.hb(sgJoin("b", "p2"))
	for range 3 { // converge
		a = h.hb(sgBeat("a", a.MemberEpoch, a.ActiveTasks, a.StandbyTasks))
		a2 = h.hb(sgBeat("a2", a2.MemberEpoch, a2.ActiveTasks, a2.StandbyTasks))
		b = h.hb(sgBeat("b", b.MemberEpoch, b.ActiveTasks, b.StandbyTasks))
	}
	if h.g.State() != "Stable" {
		t.Fatalf("not stable: %s", describeSG(h.g))
	}
	// Every task: one active, one standby, on different processes.
	where := map[taskID][]string{}
	for _, m := range h.g.Members {
		for s, ps := range m.Assigned.Active {
			for _, p := range ps {
				where[taskID{s, p}] = append(where[taskID{s, p}], "A"+m.ProcessID)
			}
		}
		for s, ps := range m.Assigned.Standby {
			for _, p := range ps {
				where[taskID{s, p}] = append(where[taskID{s, p}], "S"+m.ProcessID)
			}
		}
	}
	if len(where) != 4 {
		t.Fatalf("tasks: %v", where)
	}
	for task, w := range where {
		if len(w) != 2 || w[0][1:] == w[1][1:] {
			t.Fatalf("task %v placed %v", task, w)
		}
	}
}

func TestStreamsGroupEndpointInformation(t *testing.T) {
	h := newSGHarness(t, map[string]int32{"input": 2, "app-counts-repartition": 2, "app-counts-changelog": 2})
	req := sgJoin("a", "p1")
	req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "app-a", Port: 8080}
	r := h.hb(req)
	if r.EndpointInformationEpoch < 1 || len(r.PartitionsByUserEndpoint) != 1 {
		t.Fatalf("endpoint information: epoch %d %+v", r.EndpointInformationEpoch, r.PartitionsByUserEndpoint)
	}
	e := r.PartitionsByUserEndpoint[0]
	if e.UserEndpoint.Host != "app-a" || e.UserEndpoint.Port != 8080 || len(e.ActivePartitions) != 2 {
		t.Fatalf("partitions by endpoint: %+v", e)
	}
	// Up to date: not sent again.
	b := sgBeat("a", r.MemberEpoch, r.ActiveTasks, nil)
	b.EndpointInformationEpoch = r.EndpointInformationEpoch
	if r2 := h.hb(b); r2.PartitionsByUserEndpoint != nil {
		t.Fatalf("sent again: %+v", r2.PartitionsByUserEndpoint)
	}
}

func TestStreamsGroupTopologyEpochs(t *testing.T) {
	h := newSGHarness(t, map[string]int32{"input": 1, "app-counts-repartition": 1, "app-counts-changelog": 1})
	h.hb(sgJoin("a", "p1"))
	// Same epoch, another topology: refused.
	req := sgJoin("b", "p2")
	req.Topology.Subtopologies[0].SourceTopics = []string{"other"}
	if r := h.g.Heartbeat(h.now, req, "c", "h", h.md); r.Resp.ErrorCode != kerr.StreamsInvalidTopologyEpoch.Code {
		t.Fatalf("same epoch, other topology: %v", kerr.ErrorForCode(r.Resp.ErrorCode))
	}
	// A member behind the group's topology epoch is told STALE_TOPOLOGY.
	h2 := newSGHarness(t, map[string]int32{"input": 1, "app-counts-repartition": 1, "app-counts-changelog": 1})
	j := sgJoin("a", "p1")
	j.Topology = wordCount(2)
	h2.hb(j)
	r := h2.hb(sgJoin("b", "p2"))
	if got := statusCodes(r); len(got) != 1 || got[0] != streamsStatusStaleTopology {
		t.Fatalf("stale member: %v", r.Status)
	}
}

func TestValidateStreamsGroupHeartbeat(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*kmsg.StreamsGroupHeartbeatRequest)
		code int16
		msg  string
	}{
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }, kerr.InvalidRequest.Code, "Topology must be non-null when (re-)joining."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.StandbyTasks = nil }, kerr.InvalidRequest.Code, "If one task-type is non-null, all must be non-null."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code, "MemberEpoch is -3, but must be greater than or equal to -2."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 4 }, kerr.InvalidRequest.Code, "Topology can only be provided when (re-)joining."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions = 3
		}, kerr.StreamsInvalidTopology.Code, "Changelog topic app-counts-changelog must have an undefined partition count, but it is set to 3."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].SourceTopicRegex = []string{"in.*"}
		},
			kerr.InvalidRequest.Code, "Regular expressions for source topics are not supported yet."},
	} {
		r := sgJoin("a", "p")
		tc.mod(r)
		if code, msg := ValidateStreamsGroupHeartbeat(r); code != tc.code || msg != tc.msg {
			t.Errorf("got %v %q, want %v %q", kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
}

func TestStreamsRecordsRoundTrip(t *testing.T) {
	top := topologyFromRequest(wordCount(3))
	top.Subtopologies[1].CopartitionGroups = []streamsCopartitionGroup{{SourceTopics: []int16{}, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{0}}}
	ep := &streamsEndpoint{Host: "h", Port: 60000}
	recs := []sgRecord{
		{Type: sgMetadataType, Group: "g", Epoch: 5, MetadataHash: -7, ValidatedTopologyEpoch: 3},
		{Type: sgMetadataType, Group: "g", Epoch: 5, MetadataHash: 1, ValidatedTopologyEpoch: -1},
		{Type: sgTopologyType, Group: "g", Topology: top, ValidatedTopologyEpoch: -1},
		{Type: sgMemberMetadataType, Group: "g", Member: "m", ValidatedTopologyEpoch: -1, MemberMD: &streamsMemberMetadata{
			InstanceID: kmsg.StringPtr("i"), ClientID: "c", ClientHost: "/h", RebalanceTimeoutMs: 1, TopologyEpoch: 3,
			ProcessID: "p", UserEndpoint: ep, ClientTags: []keyValue{{"k", "v"}}}},
		{Type: sgTargetAssignmentMetadataType, Group: "g", Epoch: 4, ValidatedTopologyEpoch: -1},
		{Type: sgCurrentMemberAssignmentType, Group: "g", Member: "m", ValidatedTopologyEpoch: -1, Current: &streamsCurrentAssignment{
			MemberEpoch: 4, PreviousMemberEpoch: 3, State: StreamsMemberUnrevokedTasks,
			Assigned: StreamsTasks{Active: TaskSet{"0": {0, 2}}, Standby: TaskSet{"1": {1}}, Warmup: TaskSet{}},
			Pending:  StreamsTasks{Active: TaskSet{"0": {1}}, Standby: TaskSet{}, Warmup: TaskSet{}}}},
		{Type: sgCurrentMemberAssignmentType, Group: "g", Member: "m", Tombstone: true, ValidatedTopologyEpoch: -1},
	}
	for _, r := range recs {
		b := r.encode()
		d, err := DecodeRecord(b.Key, b.Value)
		if err != nil || d.Streams == nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if got, want := fmt.Sprintf("%+v", d.Streams.encode()), fmt.Sprintf("%+v", b); got != want {
			t.Errorf("type %d: re-encoded %s, want %s", r.Type, got, want)
		}
	}
	// Kafka's bytes for a current assignment with nothing assigned
	// (StreamsGroupCurrentMemberAssignmentValue v0: epochs, state, six empty lists).
	b := sgRecord{Type: sgCurrentMemberAssignmentType, Group: "g", Member: "m", Current: &streamsCurrentAssignment{
		MemberEpoch: 5, PreviousMemberEpoch: 4, State: StreamsMemberUnrevokedTasks, Assigned: emptyTasks(), Pending: emptyTasks()}}.encode()
	if got := fmt.Sprintf("%x", b.Value); got != "000000000005000000040201010101010100" {
		t.Errorf("value bytes %s", got)
	}
	if got := fmt.Sprintf("%x", b.Key); got != "001600016700016d" {
		t.Errorf("key bytes %s", got)
	}
}

// TestStreamsGroupStaticMember: a static member that leaves with epoch -2 keeps its
// tasks for its successor under the same instance id, without a rebalance.
func TestStreamsGroupStaticMember(t *testing.T) {
	h := newSGHarness(t, map[string]int32{"input": 2, "app-counts-repartition": 2, "app-counts-changelog": 2})
	j := sgJoin("a", "p1")
	j.InstanceID = kmsg.StringPtr("i1")
	r := h.hb(j)
	if taskCount(r.ActiveTasks) != 4 {
		t.Fatalf("a: %v", r.ActiveTasks)
	}
	epoch := h.g.Epoch
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = "app", "a", -2, kmsg.StringPtr("i1")
	if r := h.hb(leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	// Another member cannot take the instance id while a holds it.
	j2 := sgJoin("a2", "p1")
	j2.InstanceID = kmsg.StringPtr("i1")
	r = h.hb(j2)
	if r.ErrorCode != 0 || taskCount(r.ActiveTasks) != 4 || h.g.Epoch != epoch {
		t.Fatalf("successor: %v %v, epoch %d (was %d)", kerr.ErrorForCode(r.ErrorCode), r.ActiveTasks, h.g.Epoch, epoch)
	}
	if _, ok := h.g.Members["a"]; ok {
		t.Fatal("the old static member is still there")
	}
	j3 := sgJoin("a3", "p1")
	j3.InstanceID = kmsg.StringPtr("i1")
	if p := h.g.Heartbeat(h.now, j3, "c", "h", h.md); p.Resp.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("a third member with the same instance id: %v", kerr.ErrorForCode(p.Resp.ErrorCode))
	}
}
