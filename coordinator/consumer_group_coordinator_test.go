package coordinator

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func cgJoin(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := joinReq(member, topics...)
	r.Group = group
	return r
}

func TestCoordinatorConsumerGroupHeartbeatValidation(t *testing.T) {
	c := startCoordinator(t, newMemLog(), (&clock{now: time.UnixMilli(1_000_000_000)}).Now)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"v1 without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = str("") }, kerr.InvalidRequest},
		{"empty rack", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = str("") }, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = append(r.Topics, kmsg.NewConsumerGroupHeartbeatRequestTopic())
		}, kerr.InvalidRequest},
		{"join with null owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"static leave without instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = str("sticky") }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = str("a(") }, kerr.InvalidRegularExpression},
		{"unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.GroupIDNotFound},
		{"leave an unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }, kerr.GroupIDNotFound},
	} {
		req := cgJoin("v", "m", "t")
		tc.mod(req)
		resp := c.ConsumerGroupHeartbeat(req, "c", "/h")
		wantCode(t, tc.name, resp.ErrorCode, tc.want.Code)
		if resp.ErrorMessage == nil && tc.want != kerr.GroupIDNotFound {
			t.Fatalf("%s: no error message", tc.name)
		}
	}
	// v0 lets the coordinator name the member.
	req := cgJoin("v0", "", "t")
	req.Version = 0
	resp := c.ConsumerGroupHeartbeat(req, "c", "/h")
	if resp.ErrorCode != 0 || resp.MemberID == nil || len(*resp.MemberID) != 36 || resp.MemberEpoch != 1 {
		t.Fatalf("v0 join: %+v", resp)
	}
}

func TestCoordinatorConsumerGroupOffsetsAndReload(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_000_000_000)}
	c := startCoordinator(t, log, clk.Now)

	// An empty classic ("simple") group with offsets becomes a consumer group and
	// keeps them.
	wantCode(t, "simple commit", c.OffsetCommit(commitReq("g", -1, "", map[int32]int64{0: 5})).Topics[0].Partitions[0].ErrorCode, 0)
	r := c.ConsumerGroupHeartbeat(cgJoin("g", "m1", "t"), "c", "/h")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Assignment.Topics[0].Partitions) != 3 {
		t.Fatalf("join: %+v", r)
	}

	commit := func(member string, epoch int32, version int16) int16 {
		req := commitReq("g", epoch, member, map[int32]int64{1: 7})
		req.Version = version
		return c.OffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit at the member epoch", commit("m1", 1, 9), 0)
	wantCode(t, "commit at a stale epoch", commit("m1", 0, 9), kerr.StaleMemberEpoch.Code)
	wantCode(t, "commit from an unknown member", commit("zz", 1, 9), kerr.UnknownMemberID.Code)
	wantCode(t, "commit with v8", commit("m1", 1, 8), kerr.UnsupportedVersion.Code)
	wantCode(t, "admin commit to an active group", commit("", -1, 9), kerr.UnknownMemberID.Code)

	fetch := func(member *string, epoch int32) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", member, epoch
		req.Groups = append(req.Groups, rg)
		return c.OffsetFetch(req).Groups[0]
	}
	m1, zz := "m1", "zz"
	if g := fetch(&m1, 1); g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 2 {
		t.Fatalf("member fetch: %+v", g)
	}
	wantCode(t, "fetch at a stale epoch", fetch(&m1, 5).ErrorCode, kerr.StaleMemberEpoch.Code)
	wantCode(t, "fetch as an unknown member", fetch(&zz, 1).ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "admin fetch", fetch(nil, -1).ErrorCode, 0)

	// Listed as a consumer group; DescribeGroups does not describe it; it cannot be
	// deleted while it has a member; a classic member cannot join it.
	code, listed := c.ListGroups(nil, []string{"Consumer"})
	if code != 0 || len(listed) != 1 || listed[0].GroupType != "consumer" || listed[0].GroupState != "Stable" || listed[0].ProtocolType != "consumer" {
		t.Fatalf("listed %+v", listed)
	}
	if _, l := c.ListGroups(nil, []string{"classic"}); len(l) != 0 {
		t.Fatalf("listed as classic: %+v", l)
	}
	if d := c.DescribeGroups([]string{"g"}, 6)[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %+v", d)
	}
	wantCode(t, "delete a non-empty consumer group", c.DeleteGroups([]string{"g"})[0].ErrorCode, kerr.NonEmptyGroup.Code)
	jr := joinAndWait(t, c, joinGroupReq("g", ""))
	wantCode(t, "classic join", jr.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	if d := c.ConsumerGroupDescribe([]string{"g", "nope", ""}); d[0].ErrorCode != 0 || d[0].State != "Stable" || len(d[0].Members) != 1 ||
		d[1].ErrorCode != kerr.GroupIDNotFound.Code || d[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("ConsumerGroupDescribe: %+v", d)
	}

	// A new coordinator over the same log has the same group: the member keeps its
	// epoch and assignment and may heartbeat on.
	c.Close()
	c = startCoordinator(t, log, clk.Now)
	d := c.ConsumerGroupDescribe([]string{"g"})[0]
	if d.ErrorCode != 0 || d.Epoch != 1 || d.AssignmentEpoch != 1 || len(d.Members) != 1 || d.Members[0].MemberEpoch != 1 ||
		len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 3 || d.Members[0].Assignment.TopicPartitions[0].Topic != "t" {
		t.Fatalf("after reload: %+v", d)
	}
	hb := beatReq("m1", 1, nil)
	hb.Group = "g"
	if r := c.ConsumerGroupHeartbeat(hb, "c", "/h"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat after reload: %+v", r)
	}
	if o := c.GroupOffsets("g"); o[TopicPartition{"t", 0}].Offset != 5 || o[TopicPartition{"t", 1}].Offset != 7 {
		t.Fatalf("offsets after reload: %+v", o)
	}

	// The member leaves; the empty group is deleted with its offsets, and stays
	// deleted after a reload.
	hb.MemberEpoch = -1
	if r := c.ConsumerGroupHeartbeat(hb, "c", "/h"); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if _, l := c.ListGroups([]string{"empty"}, nil); len(l) != 1 {
		t.Fatalf("empty group not listed: %+v", l)
	}
	wantCode(t, "delete", c.DeleteGroups([]string{"g"})[0].ErrorCode, 0)
	c.Close()
	c = startCoordinator(t, log, clk.Now)
	if _, l := c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("deleted group listed after reload: %+v", l)
	}
	if d := c.ConsumerGroupDescribe([]string{"g"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group described: %+v", d)
	}
}

func TestCoordinatorConsumerGroupWriteFailure(t *testing.T) {
	log := newMemLog()
	c := startCoordinator(t, log, (&clock{now: time.UnixMilli(1_000_000_000)}).Now)
	log.fail = kerr.NotEnoughReplicas
	r := c.ConsumerGroupHeartbeat(cgJoin("w", "m", "t"), "c", "/h")
	wantCode(t, "join with a failing log", r.ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if _, l := c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("a group whose creation was not written is listed: %+v", l)
	}
	log.fail = nil
	if r := c.ConsumerGroupHeartbeat(cgJoin("w", "m", "t"), "c", "/h"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("join once the log works: %+v", r)
	}
}

// startCoordinatorWith is startCoordinator with a config and metadata of its own.
func startCoordinatorWith(t *testing.T, cfg Config, md Metadata, now func() time.Time) *GroupCoordinator {
	t.Helper()
	c := New(cfg, newMemLog(), md, now, zerolog.Nop())
	t.Cleanup(c.Close)
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		c.BecomeLeader(p)
	}
	waitLoaded(t, c.Loaded, cfg.OffsetsTopicNumPartitions)
	return c
}

func TestCoordinatorConsumerGroupSessionTimeoutTimer(t *testing.T) {
	cfg := testConfig()
	cfg.Consumer.SessionTimeout = 50 * time.Millisecond
	c := startCoordinatorWith(t, cfg, fakeMetadata{OffsetsTopic: 4, "t": 3}, nil)
	deadline := time.Now().Add(5 * time.Second)
	if r := c.ConsumerGroupHeartbeat(cgJoin("s", "m", "t"), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	for time.Now().Before(deadline) {
		if d := c.ConsumerGroupDescribe([]string{"s"})[0]; d.State == "Empty" && d.Epoch == 2 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("member not fenced after its session timeout: %+v", c.ConsumerGroupDescribe([]string{"s"})[0])
}

func TestCoordinatorConsumerGroupOffsetExpiry(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_000_000_000)}
	cfg := testConfig()
	c := startCoordinatorWith(t, cfg, fakeMetadata{OffsetsTopic: 4, "t": 3, "x": 1}, clk.Now)
	if r := c.ConsumerGroupHeartbeat(cgJoin("e", "m", "t"), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	for _, topic := range []string{"t", "x"} {
		req := commitReq("e", 1, "m", map[int32]int64{0: 4})
		req.Version = 9
		req.Topics[0].Topic = topic
		wantCode(t, "commit "+topic, c.OffsetCommit(req).Topics[0].Partitions[0].ErrorCode, 0)
	}
	// Past retention, only the offset of the topic nobody subscribes to expires.
	clk.Add(cfg.OffsetsRetention + time.Minute)
	hb := beatReq("m", 1, nil)
	hb.Group = "e"
	if r := c.ConsumerGroupHeartbeat(hb, "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v", r)
	}
	c.ExpireOffsets()
	o := c.GroupOffsets("e")
	if _, ok := o[TopicPartition{"t", 0}]; !ok || len(o) != 1 {
		t.Fatalf("offsets after expiry: %+v", o)
	}
	// Once the group is empty every offset expires, and the group goes with them.
	hb.MemberEpoch = -1
	if r := c.ConsumerGroupHeartbeat(hb, "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	c.ExpireOffsets()
	if d := c.ConsumerGroupDescribe([]string{"e"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("group after its offsets expired: %+v", d)
	}
}
