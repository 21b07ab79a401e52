package coordinator

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// md848 is fakeMetadata that also lists its topics (for regex subscriptions).
type md848 struct{ fakeMetadata }

func (m md848) TopicNames() []string {
	var out []string
	for t := range m.fakeMetadata {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// cgHarness drives a ConsumerGroup as the coordinator does, with a fake clock. Every
// record goes through its bytes (encode, DecodeRecord) before it is applied, and is
// kept, so the group can be rebuilt by replay and compared.
type cgHarness struct {
	t   *testing.T
	cfg ConsumerGroupConfig
	g   *ConsumerGroup
	md  md848
	now time.Time
	log []cgRecord
	// noReplay skips the replay check after every step (long random runs check it
	// themselves now and then).
	noReplay bool
}

func newCGHarness(t *testing.T, topics map[string]int32) *cgHarness {
	cfg := DefaultConsumerGroupConfig()
	h := &cgHarness{t: t, cfg: cfg, md: md848{fakeMetadata(topics)}, now: time.UnixMilli(1_700_000_000_000)}
	h.g = NewConsumerGroup("g", &h.cfg)
	return h
}

func (h *cgHarness) roundTrip(recs []cgRecord) []cgRecord {
	h.t.Helper()
	out := make([]cgRecord, 0, len(recs))
	for _, r := range recs {
		b := r.encode()
		d, err := DecodeRecord(b.Key, b.Value)
		if err != nil || d.Consumer == nil {
			h.t.Fatalf("record %+v does not decode: %v", r, err)
		}
		out = append(out, *d.Consumer)
	}
	return out
}

// hb sends a heartbeat; a successful one is "written" and committed.
func (h *cgHarness) hb(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	p := h.g.Heartbeat(h.now, req, "client", "/127.0.0.1", h.md, func() string { return "server-made-id" })
	if p.Resp.ErrorCode == 0 {
		p.Records = h.roundTrip(p.Records)
		h.log = append(h.log, p.Records...)
		h.g.Commit(h.now, p)
	} else if len(p.Records) > 0 {
		h.t.Fatalf("an error (%v) came with records", kerr.ErrorForCode(p.Resp.ErrorCode))
	}
	h.checkReplay()
	return p.Resp
}

func (h *cgHarness) tick(d time.Duration) {
	h.now = h.now.Add(d)
	for _, r := range h.g.Tick(h.now) {
		d, err := DecodeRecord(r.Key, r.Value)
		if err != nil {
			h.t.Fatal(err)
		}
		h.log = append(h.log, *d.Consumer)
	}
	h.checkReplay()
}

// checkReplay rebuilds the group from the records written so far: it must equal the
// live one (what a reload after a restart would see).
func (h *cgHarness) checkReplay() {
	h.t.Helper()
	if h.noReplay {
		return
	}
	r := NewConsumerGroup("g", &h.cfg)
	for _, rec := range h.log {
		r.apply(rec)
	}
	if a, b := dumpGroup(r), dumpGroup(h.g); a != b {
		h.t.Fatalf("replayed group differs:\nreplay: %s\nlive:   %s", a, b)
	}
}

func dumpGroup(g *ConsumerGroup) string {
	s := fmt.Sprintf("epoch=%d assignment=%d sub=%v owners=%d regexes=%v", g.Epoch, g.AssignmentEpoch, g.Subscription, len(g.owners), g.Resolved)
	for _, m := range g.sortedMembers() {
		s += fmt.Sprintf(" [%s e=%d/%d %v a=%v p=%v t=%v subs=%v]", m.ID, m.MemberEpoch, m.PreviousMemberEpoch, m.State,
			m.Assigned, m.PendingRevocation, g.Target[m.ID], m.SubscribedTopicNames)
	}
	return s
}

func joinReq(member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "g", member, 0
	req.RebalanceTimeoutMillis = 5000
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// beatReq is a heartbeat that reports owned (nil: a keepalive that reports nothing).
func beatReq(member string, epoch int32, owned TopicPartitions) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "g", member, epoch
	req.RebalanceTimeoutMillis = -1
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, id := range owned.topicIDs() {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = id, owned[id]
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func assignedOf(r *kmsg.ConsumerGroupHeartbeatResponse) TopicPartitions {
	if r.Assignment == nil {
		return nil
	}
	tps := TopicPartitions{}
	for _, t := range r.Assignment.Topics {
		if len(t.Partitions) > 0 {
			tps[t.TopicID] = t.Partitions
		}
	}
	return tps
}

func mustOK(t *testing.T, r *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	if r.ErrorCode != 0 {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		t.Fatalf("heartbeat: %v %s", kerr.ErrorForCode(r.ErrorCode), msg)
	}
	return r
}

func mustErr(t *testing.T, r *kmsg.ConsumerGroupHeartbeatResponse, want *kerr.Error) {
	t.Helper()
	if r.ErrorCode != want.Code {
		t.Fatalf("heartbeat answered %v, want %v", kerr.ErrorForCode(r.ErrorCode), want)
	}
}

func tps(topic string, ps ...int32) TopicPartitions {
	if len(ps) == 0 {
		return TopicPartitions{}
	}
	return TopicPartitions{tid(topic): ps}
}

func TestConsumerGroupJoinRevokeBeforeAssign(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 4})

	// The first member joins: epoch 1, everything.
	r := mustOK(t, h.hb(joinReq("a", "t")))
	if r.MemberEpoch != 1 || fmt.Sprint(assignedOf(r)) != fmt.Sprint(tps("t", 0, 1, 2, 3)) || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("first join: epoch %d assignment %v", r.MemberEpoch, assignedOf(r))
	}
	if h.g.State() != "Stable" {
		t.Fatalf("state %s", h.g.State())
	}

	// A second member joins: the group moves to epoch 2 and half of a's partitions
	// are b's target, but b gets none while a still owns them.
	r = mustOK(t, h.hb(joinReq("b", "t")))
	if r.MemberEpoch != 2 || len(assignedOf(r)) != 0 {
		t.Fatalf("b joined at epoch %d with %v", r.MemberEpoch, assignedOf(r))
	}
	if m := h.g.Members["b"]; m.State != MemberUnreleasedPartitions {
		t.Fatalf("b is %v", m.State)
	}
	bTarget := h.g.Target["b"]
	if len(flatten(bTarget)) != 2 || h.g.State() != "Reconciling" {
		t.Fatalf("b's target %v, state %s", bTarget, h.g.State())
	}

	// a heartbeats still owning everything: it stays at epoch 1 and is told to keep
	// only its new target (the rest is pending revocation).
	r = mustOK(t, h.hb(beatReq("a", 1, tps("t", 0, 1, 2, 3))))
	aKeep := h.g.Target["a"]
	if r.MemberEpoch != 1 || fmt.Sprint(assignedOf(r)) != fmt.Sprint(aKeep) {
		t.Fatalf("a: epoch %d assignment %v, want 1 and %v", r.MemberEpoch, assignedOf(r), aKeep)
	}
	if m := h.g.Members["a"]; m.State != MemberUnrevokedPartitions || !equalTopicPartitions(m.PendingRevocation, bTarget) {
		t.Fatalf("a is %v pending %v", m.State, m.PendingRevocation)
	}
	if h.g.Members["a"].rebalanceDeadline.IsZero() {
		t.Fatal("no rebalance timeout armed while a revokes")
	}
	// b still cannot have them.
	if r = mustOK(t, h.hb(beatReq("b", 2, TopicPartitions{}))); len(assignedOf(r)) != 0 {
		t.Fatalf("b got %v before a revoked", assignedOf(r))
	}
	// A keepalive (owned partitions not reported) does not count as revoking.
	if r = mustOK(t, h.hb(beatReq("a", 1, nil))); r.MemberEpoch != 1 {
		t.Fatalf("a moved to epoch %d without revoking", r.MemberEpoch)
	}

	// a reports it revoked: epoch 2, stable; then b gets its partitions.
	r = mustOK(t, h.hb(beatReq("a", 1, aKeep)))
	if r.MemberEpoch != 2 || h.g.Members["a"].State != MemberStable || !h.g.Members["a"].rebalanceDeadline.IsZero() {
		t.Fatalf("a after revoking: epoch %d state %v", r.MemberEpoch, h.g.Members["a"].State)
	}
	r = mustOK(t, h.hb(beatReq("b", 2, TopicPartitions{})))
	if fmt.Sprint(assignedOf(r)) != fmt.Sprint(bTarget) || h.g.Members["b"].State != MemberStable {
		t.Fatalf("b after a revoked: %v %v", assignedOf(r), h.g.Members["b"].State)
	}
	if h.g.State() != "Stable" {
		t.Fatalf("state %s", h.g.State())
	}
	// Nobody owns a partition twice.
	seen := map[topicPartition]string{}
	for _, m := range h.g.Members {
		for _, tp := range flatten(m.Assigned) {
			if o, ok := seen[tp]; ok {
				t.Fatalf("%v owned by %s and %s", tp, o, m.ID)
			}
			seen[tp] = m.ID
		}
	}

	// b leaves (-1): the epoch moves on and a gets everything back at its next heartbeat.
	r = mustOK(t, h.hb(beatReq("b", leaveGroupMemberEpoch, nil)))
	if r.MemberEpoch != -1 || h.g.Members["b"] != nil || h.g.Epoch != 3 {
		t.Fatalf("leave: %+v, epoch %d", r, h.g.Epoch)
	}
	r = mustOK(t, h.hb(beatReq("a", 2, aKeep)))
	if r.MemberEpoch != 3 || len(flatten(assignedOf(r))) != 4 {
		t.Fatalf("a after b left: epoch %d %v", r.MemberEpoch, assignedOf(r))
	}
}

func TestConsumerGroupFencing(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 2})
	r := mustOK(t, h.hb(joinReq("a", "t")))
	owned := assignedOf(r)
	mustOK(t, h.hb(joinReq("b", "t"))) // epoch 2
	mustOK(t, h.hb(beatReq("a", 1, owned)))
	a := h.g.Members["a"]
	mustOK(t, h.hb(beatReq("a", 1, a.Assigned))) // revoked: a is at 2, previous 1

	mustErr(t, h.hb(beatReq("a", 3, nil)), kerr.FencedMemberEpoch)
	// A fenced member rejoining under its id (epoch 0) is re-admitted in place and
	// gets its assignment again (KAFKA-19233).
	if r := mustOK(t, h.hb(joinReq("a", "t"))); r.MemberEpoch != 2 || fmt.Sprint(assignedOf(r)) != fmt.Sprint(h.g.Members["a"].Assigned) {
		t.Fatalf("rejoin at epoch 0: %+v", r)
	}
	// The previous epoch with a subset of the assignment: the bump was lost; accepted.
	if r := mustOK(t, h.hb(beatReq("a", 1, h.g.Members["a"].Assigned))); r.MemberEpoch != 2 {
		t.Fatalf("retry at the previous epoch: %d", r.MemberEpoch)
	}
	// ... but not while claiming a partition it does not have, nor without saying.
	mustErr(t, h.hb(beatReq("a", 1, tps("t", 0, 1))), kerr.FencedMemberEpoch)
	mustErr(t, h.hb(beatReq("a", 1, nil)), kerr.FencedMemberEpoch)
	mustErr(t, h.hb(beatReq("nobody", 1, nil)), kerr.UnknownMemberID)
	mustErr(t, h.hb(beatReq("nobody", leaveGroupMemberEpoch, nil)), kerr.UnknownMemberID)
	// A join retried whose first answer was lost (previous epoch 0, owns nothing).
	h2 := newCGHarness(t, map[string]int32{"t": 2})
	mustOK(t, h2.hb(joinReq("a", "t")))
	if r := mustOK(t, h2.hb(joinReq("a", "t"))); r.MemberEpoch != 1 || len(flatten(assignedOf(r))) != 2 {
		t.Fatalf("join retried: %+v", r)
	}

	h.cfg.MaxSize = 2
	mustErr(t, h.hb(joinReq("c", "t")), kerr.GroupMaxSizeReached)
}

func TestConsumerGroupStaticMembers(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 4})
	inst := "i-1"
	j := joinReq("s1", "t")
	j.InstanceID = &inst
	mustOK(t, h.hb(j))
	mustOK(t, h.hb(joinReq("d", "t")))
	// Converge.
	for i := 0; i < 4; i++ {
		for _, id := range []string{"s1", "d"} {
			m := h.g.Members[id]
			req := beatReq(id, m.MemberEpoch, m.Assigned)
			if id == "s1" {
				req.InstanceID = &inst
			}
			mustOK(t, h.hb(req))
		}
	}
	if h.g.State() != "Stable" {
		t.Fatalf("not converged: %s", dumpGroup(h.g))
	}
	s1 := h.g.Members["s1"]
	epoch, assigned := h.g.Epoch, s1.Assigned

	// The instance id is taken: another member cannot join with it.
	j2 := joinReq("s2", "t")
	j2.InstanceID = &inst
	mustErr(t, h.hb(j2), kerr.UnreleasedInstanceID)
	// Nor heartbeat as it.
	b := beatReq("s2", s1.MemberEpoch, nil)
	b.InstanceID = &inst
	mustErr(t, h.hb(b), kerr.FencedInstanceID)
	other := "i-9"
	b.InstanceID = &other
	mustErr(t, h.hb(b), kerr.UnknownMemberID)

	// s1 leaves for now (-2): it keeps its assignment; s2 takes its place with it and
	// the group epoch does not move.
	l := beatReq("s1", leaveGroupStaticMemberEpoch, nil)
	l.InstanceID = &inst
	if r := mustOK(t, h.hb(l)); r.MemberEpoch != leaveGroupStaticMemberEpoch {
		t.Fatalf("static leave answered epoch %d", r.MemberEpoch)
	}
	r := mustOK(t, h.hb(j2))
	if h.g.Epoch != epoch || h.g.Members["s1"] != nil || r.MemberEpoch != epoch ||
		fmt.Sprint(assignedOf(r)) != fmt.Sprint(assigned) {
		t.Fatalf("replacement: epoch %d (was %d), answer %d %v (want %v): %s", h.g.Epoch, epoch, r.MemberEpoch, assignedOf(r), assigned, dumpGroup(h.g))
	}

	// Leaving with -2 and never coming back: the session timeout removes it.
	l = beatReq("s2", leaveGroupStaticMemberEpoch, nil)
	l.InstanceID = &inst
	mustOK(t, h.hb(l))
	h.tick(h.cfg.SessionTimeout - time.Second)
	if h.g.Members["s2"] == nil {
		t.Fatal("static member removed before its session timeout")
	}
	h.g.Members["d"].sessionDeadline = h.now.Add(time.Hour) // d keeps heartbeating
	h.tick(2 * time.Second)
	if h.g.Members["s2"] != nil || h.g.Epoch != epoch+1 {
		t.Fatalf("after the session timeout: %s", dumpGroup(h.g))
	}
}

func TestConsumerGroupTimeouts(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 2})
	r := mustOK(t, h.hb(joinReq("a", "t")))
	mustOK(t, h.hb(joinReq("b", "t")))
	h.now = h.now.Add(time.Second)
	mustOK(t, h.hb(beatReq("a", 1, assignedOf(r)))) // now revoking, with a 5s rebalance timeout
	if d := h.g.NextDeadline(); !d.Equal(h.now.Add(5 * time.Second)) {
		t.Fatalf("next deadline %v, want the rebalance timeout at %v", d, h.now.Add(5*time.Second))
	}
	h.g.Members["b"].sessionDeadline = h.now.Add(time.Hour)
	h.tick(4 * time.Second)
	if h.g.Members["a"] == nil {
		t.Fatal("fenced before the rebalance timeout")
	}
	h.tick(2 * time.Second)
	if h.g.Members["a"] != nil {
		t.Fatalf("a never revoked but is still a member: %s", dumpGroup(h.g))
	}
	// b now gets everything; then its session runs out.
	m := h.g.Members["b"]
	r = mustOK(t, h.hb(beatReq("b", m.MemberEpoch, m.Assigned)))
	if len(flatten(assignedOf(r))) != 2 {
		t.Fatalf("b after a was fenced: %v", assignedOf(r))
	}
	h.tick(h.cfg.SessionTimeout)
	if len(h.g.Members) != 0 || h.g.State() != "Empty" || len(h.g.owners) != 0 {
		t.Fatalf("after b's session: %s", dumpGroup(h.g))
	}
	mustErr(t, h.hb(beatReq("b", r.MemberEpoch, nil)), kerr.UnknownMemberID)
}

func TestConsumerGroupMetadataChanges(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 2})
	r := mustOK(t, h.hb(joinReq("a", "t", "later")))
	if r.MemberEpoch != 1 || len(flatten(assignedOf(r))) != 2 {
		t.Fatalf("join: %+v", r)
	}
	// Partitions added: the next heartbeat bumps the epoch and assigns them.
	h.md.fakeMetadata["t"] = 3
	r = mustOK(t, h.hb(beatReq("a", 1, assignedOf(r))))
	if r.MemberEpoch != 2 || len(flatten(assignedOf(r))) != 3 {
		t.Fatalf("after partitions were added: epoch %d %v", r.MemberEpoch, assignedOf(r))
	}
	// A subscribed topic created later.
	h.md.fakeMetadata["later"] = 1
	r = mustOK(t, h.hb(beatReq("a", 2, assignedOf(r))))
	if r.MemberEpoch != 3 || len(assignedOf(r)[tid("later")]) != 1 {
		t.Fatalf("after the topic was created: epoch %d %v", r.MemberEpoch, assignedOf(r))
	}
	// Nothing changed: no records, no bump, no assignment in a keepalive answer.
	n := len(h.log)
	r = mustOK(t, h.hb(beatReq("a", 3, nil)))
	if r.MemberEpoch != 3 || r.Assignment != nil || len(h.log) != n {
		t.Fatalf("idle heartbeat: %+v, %d new records", r, len(h.log)-n)
	}
	// A changed subscription.
	req := beatReq("a", 3, h.g.Members["a"].Assigned)
	req.SubscribedTopicNames = []string{"later"}
	r = mustOK(t, h.hb(req))
	if m := h.g.Members["a"]; m.State != MemberUnrevokedPartitions || len(flatten(m.PendingRevocation)) != 3 {
		t.Fatalf("after unsubscribing t: %s", dumpGroup(h.g))
	}
	// Revoked: epoch 4. The assignment (later-0) did not change, so a heartbeat that
	// is not a full request is not sent it again.
	r = mustOK(t, h.hb(beatReq("a", r.MemberEpoch, tps("later", 0))))
	if m := h.g.Members["a"]; r.MemberEpoch != 4 || r.Assignment != nil || m.State != MemberStable ||
		fmt.Sprint(m.Assigned) != fmt.Sprint(tps("later", 0)) {
		t.Fatalf("after revoking t: %d %v: %s", r.MemberEpoch, assignedOf(r), dumpGroup(h.g))
	}
}

func TestConsumerGroupRegexAndRangeAssignor(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"orders-eu": 2, "orders-us": 2, "other": 1})
	re, rng := "orders-.*", RangeAssignorName
	j := joinReq("a")
	j.SubscribedTopicNames = nil
	j.SubscribedTopicRegex, j.ServerAssignor = &re, &rng
	r := mustOK(t, h.hb(j))
	got := assignedOf(r)
	if len(got[tid("orders-eu")]) != 2 || len(got[tid("orders-us")]) != 2 || len(got[tid("other")]) != 0 {
		t.Fatalf("regex subscription assigned %v", got)
	}
	var d kmsg.ConsumerGroupDescribeResponseGroup
	h.g.describe(&d, h.md)
	if d.AssignorName != RangeAssignorName || d.State != "Stable" || len(d.Members) != 1 ||
		d.Members[0].SubscribedTopicRegex == nil || len(d.Members[0].Assignment.TopicPartitions) != 2 ||
		d.Members[0].Assignment.TopicPartitions[0].Topic != "orders-eu" {
		t.Fatalf("described %+v", d)
	}
	if fmt.Sprint(h.g.Resolved) != "map[orders-.*:[orders-eu orders-us]]" {
		t.Fatalf("resolved regexes %v", h.g.Resolved)
	}
	// A new matching topic joins the subscription.
	h.md.fakeMetadata["orders-asia"] = 1
	r = mustOK(t, h.hb(beatReq("a", r.MemberEpoch, got)))
	if len(assignedOf(r)[tid("orders-asia")]) != 1 {
		t.Fatalf("new matching topic not assigned: %v", assignedOf(r))
	}
	if fmt.Sprint(h.g.Resolved) != "map[orders-.*:[orders-asia orders-eu orders-us]]" {
		t.Fatalf("resolved regexes %v", h.g.Resolved)
	}
	// The last member using the regex leaves: its resolution is tombstoned.
	mustOK(t, h.hb(beatReq("a", leaveGroupMemberEpoch, nil)))
	if len(h.g.Resolved) != 0 {
		t.Fatalf("resolved regexes after the leave: %v", h.g.Resolved)
	}
}

func TestConsumerGroupRecordBytes(t *testing.T) {
	// Written out by hand from ConsumerGroupMetadataKey/Value.json: key = type 3,
	// group "g"; value = version 0, epoch 7, empty tagged fields.
	r := cgRecord{Type: cgMetadataType, Group: "g", Epoch: 7}.encode()
	if got := fmt.Sprintf("%x/%x", r.Key, r.Value); got != "00030001"+"67"+"/"+"0000"+"00000007"+"00" {
		t.Fatalf("ConsumerGroupMetadata = %s", got)
	}
	// ConsumerGroupCurrentMemberAssignment: key type 8 (group, member); value epoch 5,
	// previous 4, state 1, one topic (uuid, partitions [0 2], no tags), no pending.
	id := tid("t")
	r = cgRecord{Type: cgCurrentMemberAssignmentType, Group: "g", Member: "m", Current: &currentAssignment{
		MemberEpoch: 5, PreviousMemberEpoch: 4, State: MemberUnrevokedPartitions,
		Assigned: TopicPartitions{id: {0, 2}}, PendingRevocation: TopicPartitions{}}}.encode()
	want := "0008" + "0001" + "67" + "0001" + "6d" + "/" +
		"0000" + "00000005" + "00000004" + "01" + "02" + fmt.Sprintf("%x", id[:]) + "03" + "00000000" + "00000002" + "00" + "01" + "00"
	if got := fmt.Sprintf("%x/%x", r.Key, r.Value); got != want {
		t.Fatalf("ConsumerGroupCurrentMemberAssignment =\n%s, want\n%s", got, want)
	}
	// ConsumerGroupMemberMetadata with nulls: instance id, rack null; client "c",
	// host "h"; topics ["t"]; regex null; rebalance 1000; assignor "range".
	rng := "range"
	r = cgRecord{Type: cgMemberMetadataType, Group: "g", Member: "m", Member5: &memberMetadata{
		ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 1000, ServerAssignor: &rng}}.encode()
	want = "0000" + "00" + "00" + "0263" + "0268" + "02" + "0274" + "00" + "000003e8" + "0672616e6765" + "00"
	if got := fmt.Sprintf("%x", r.Value); got != want {
		t.Fatalf("ConsumerGroupMemberMetadataValue = %s, want %s", got, want)
	}
	// ConsumerGroupRegularExpression: key type 16 (group, regex); value topics
	// ["t"], version 0, timestamp 5.
	r = cgRecord{Type: cgRegularExpressionType, Group: "g", Regex: "t.*", Resolved: &resolvedRegex{Topics: []string{"t"}, Timestamp: 5}}.encode()
	want = "0010" + "0001" + "67" + "0003" + "742e2a" + "/" + "0000" + "02" + "0274" + "0000000000000000" + "0000000000000005" + "00"
	if got := fmt.Sprintf("%x/%x", r.Key, r.Value); got != want {
		t.Fatalf("ConsumerGroupRegularExpression = %s, want %s", got, want)
	}
	// Tombstones have a key and no value.
	r = cgRecord{Type: cgTargetAssignmentMemberType, Group: "g", Member: "m", Tombstone: true}.encode()
	if r.Value != nil || fmt.Sprintf("%x", r.Key) != "0007000167"+"00016d" {
		t.Fatalf("tombstone %x %v", r.Key, r.Value)
	}
	// Garbage does not decode.
	if _, err := DecodeRecord([]byte{0, 8, 0, 1, 'g', 0, 1, 'm'}, []byte{0, 0, 0, 0}); err == nil {
		t.Fatal("a truncated value decoded")
	}
}
