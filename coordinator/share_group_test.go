package coordinator

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func shareJoin(group, member string, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version = 1
	r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = group, member, 0, topics
	return r
}

func shareBeat(group, member string, epoch int32) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version = 1
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
	return r
}

func shareAssignedOf(resp *kmsg.ShareGroupHeartbeatResponse) map[[16]byte][]int32 {
	if resp.Assignment == nil {
		return nil
	}
	out := map[[16]byte][]int32{}
	for _, tp := range resp.Assignment.TopicPartitions {
		out[tp.TopicID] = tp.Partitions
	}
	return out
}

func TestShareGroupHeartbeatValidation(t *testing.T) {
	c := startCoordinator(t, newMemLog(), (&clock{now: time.UnixMilli(1_000_000_000)}).Now)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.ShareGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.GroupID = "" }, kerr.InvalidRequest},
		{"empty member", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty rack", func(r *kmsg.ShareGroupHeartbeatRequest) { r.RackID = str("") }, kerr.InvalidRequest},
		{"join without subscription", func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"epoch -2", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"unknown group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.GroupIDNotFound},
	} {
		req := shareJoin("v", "m", "t")
		tc.mod(req)
		resp := c.ShareGroupHeartbeat(req, "c", "/h")
		wantCode(t, tc.name, resp.ErrorCode, tc.want.Code)
	}
	// A consumer group's id is not a share group's.
	if r := c.ConsumerGroupHeartbeat(cgJoin("cg", "m", "t"), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("consumer join: %+v", r)
	}
	resp := c.ShareGroupHeartbeat(shareJoin("cg", "m", "t"), "c", "/h")
	wantCode(t, "consumer group id", resp.ErrorCode, kerr.GroupIDNotFound.Code)
	d := c.ShareGroupDescribe([]string{"cg", "nope", ""})
	for i, want := range []int16{kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code, kerr.InvalidGroupID.Code} {
		wantCode(t, "describe "+d[i].GroupID, d[i].ErrorCode, want)
	}
}

// Every member of a share group is assigned every partition of the topics it
// subscribes to; epochs move as members join, change and leave.
func TestShareGroupMembership(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_000_000_000)}
	c := startCoordinatorWith(t, testConfig(), fakeMetadata{OffsetsTopic: 4, "t": 3, "u": 2}, clk.Now)
	var mu sync.Mutex
	var gone []string
	c.SetShareMembersGone(func(group string, members []string) {
		mu.Lock()
		gone = append(gone, members...)
		mu.Unlock()
	})
	all := map[[16]byte][]int32{tid("t"): {0, 1, 2}}

	a := c.ShareGroupHeartbeat(shareJoin("g", "a", "t"), "ca", "/ha")
	if a.ErrorCode != 0 || a.MemberEpoch != 1 || !reflect.DeepEqual(shareAssignedOf(a), all) || a.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("a joins: %+v", a)
	}
	b := c.ShareGroupHeartbeat(shareJoin("g", "b", "t", "u"), "cb", "/hb")
	if b.ErrorCode != 0 || b.MemberEpoch != 2 || !reflect.DeepEqual(shareAssignedOf(b), map[[16]byte][]int32{tid("t"): {0, 1, 2}, tid("u"): {0, 1}}) {
		t.Fatalf("b joins: %+v", b)
	}
	// a's next heartbeat moves it to the new epoch; its assignment is the same
	// partitions, sent again with the epoch.
	a = c.ShareGroupHeartbeat(shareBeat("g", "a", 1), "ca", "/ha")
	if a.ErrorCode != 0 || a.MemberEpoch != 2 || !reflect.DeepEqual(shareAssignedOf(a), all) {
		t.Fatalf("a heartbeat: %+v", a)
	}
	a = c.ShareGroupHeartbeat(shareBeat("g", "a", 2), "ca", "/ha")
	if a.ErrorCode != 0 || a.MemberEpoch != 2 || a.Assignment != nil {
		t.Fatalf("a steady heartbeat: %+v", a)
	}
	wantCode(t, "stale epoch", c.ShareGroupHeartbeat(shareBeat("g", "a", 1), "ca", "/ha").ErrorCode, kerr.FencedMemberEpoch.Code)
	wantCode(t, "unknown member", c.ShareGroupHeartbeat(shareBeat("g", "x", 2), "cx", "/hx").ErrorCode, kerr.UnknownMemberID.Code)

	d := c.ShareGroupDescribe([]string{"g"})[0]
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "simple" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if m := d.Members[1]; m.MemberID != "b" || m.ClientID != "cb" || !reflect.DeepEqual(m.SubscribedTopicNames, []string{"t", "u"}) ||
		len(m.Assignment.TopicPartitions) != 2 || m.Assignment.TopicPartitions[0].Topic != "t" {
		t.Fatalf("describe b: %+v", m)
	}

	// b leaves; a is fenced by its session timeout.
	if r := c.ShareGroupHeartbeat(shareBeat("g", "b", 2), "cb", "/hb"); r.ErrorCode != 0 {
		t.Fatalf("b heartbeat: %+v", r)
	}
	if r := c.ShareGroupHeartbeat(shareBeat("g", "b", -1), "cb", "/hb"); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("b leaves: %+v", r)
	}
	clk.Add(46 * time.Second)
	fireShareGroup(t, c, "g") // as its timer would, without waiting the real 45 s
	mu.Lock()
	if !reflect.DeepEqual(gone, []string{"b", "a"}) {
		t.Fatalf("members gone: %v", gone)
	}
	mu.Unlock()
	if d := c.ShareGroupDescribe([]string{"g"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("empty group still described: %+v", d)
	}
}

func TestShareGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.Share.MaxSize = 1
	c := startCoordinatorWith(t, cfg, fakeMetadata{OffsetsTopic: 4, "t": 3}, nil)
	if r := c.ShareGroupHeartbeat(shareJoin("g", "a", "t"), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	wantCode(t, "second member", c.ShareGroupHeartbeat(shareJoin("g", "b", "t"), "c", "/h").ErrorCode, kerr.GroupMaxSizeReached.Code)
}

// fireShareGroup runs a share group's timer now.
func fireShareGroup(t *testing.T, c *GroupCoordinator, id string) {
	t.Helper()
	s, code := c.shardFor(id)
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	g := s.shareGroups[id]
	s.mu.Unlock()
	if g == nil {
		t.Fatalf("no share group %s", id)
	}
	c.fireShare(s, g)
}

// Share groups are listed with type "share", and their ids are not consumer groups'.
func TestShareGroupListedAndExclusive(t *testing.T) {
	c := startCoordinator(t, newMemLog(), nil)
	if r := c.ShareGroupHeartbeat(shareJoin("sg", "a", "t"), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	if r := c.DeleteGroups([]string{"sg"}); r[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a share group with a member: %v", kerr.ErrorForCode(r[0].ErrorCode))
	}
	wantCode(t, "consumer join of a share group", c.ConsumerGroupHeartbeat(cgJoin("sg", "m", "t"), "c", "/h").ErrorCode, kerr.GroupIDNotFound.Code)
	for _, tc := range []struct {
		states, types []string
		want          int
	}{
		{nil, nil, 1}, {nil, []string{"Share"}, 1}, {[]string{"stable"}, nil, 1}, {nil, []string{"consumer"}, 0}, {[]string{"Empty"}, nil, 0},
	} {
		_, gs := c.ListGroups(tc.states, tc.types)
		if len(gs) != tc.want {
			t.Fatalf("ListGroups(%v, %v) = %+v, want %d groups", tc.states, tc.types, gs, tc.want)
		}
		if tc.want == 1 && (gs[0].Group != "sg" || gs[0].GroupType != "share" || gs[0].ProtocolType != "share" || gs[0].GroupState != "Stable") {
			t.Fatalf("listed %+v", gs[0])
		}
	}
}
