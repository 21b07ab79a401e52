package coordinator

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory __consumer_offsets: one slice of batches per partition.
type memLog struct {
	mu      sync.Mutex
	batches map[int32][][]byte
	next    map[int32]int64
	fail    error         // returned by Append when set
	block   chan struct{} // Read waits on it when set
}

func newMemLog() *memLog {
	return &memLog{batches: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) Append(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	b := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(b, uint64(l.next[p]))
	l.next[p] += int64(binary.BigEndian.Uint32(b[57:]))
	l.batches[p] = append(l.batches[p], b)
	return nil
}

func (l *memLog) Read(p int32, fn func([]byte) error) error {
	if l.block != nil {
		<-l.block
	}
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[p]...)
	l.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) records(p int32) []DecodedRecord {
	var out []DecodedRecord
	l.Read(p, func(b []byte) error {
		return DecodeBatches(b, func(r BatchRecord) error {
			d, err := DecodeRecord(r.Key, r.Value)
			out = append(out, d)
			return err
		})
	})
	return out
}

type fakeMetadata map[string]int32

func (m fakeMetadata) NumPartitions(t string) int32 {
	if n, ok := m[t]; ok {
		return n
	}
	return -1
}
func (m fakeMetadata) TopicName(id [16]byte) (string, bool) {
	for t := range m {
		if m.TopicID(t) == id {
			return t, true
		}
	}
	return "", false
}
func (m fakeMetadata) TopicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.OffsetsTopicNumPartitions = 4
	cfg.GroupInitialRebalanceDelay = 0
	cfg.GroupMinSessionTimeout = 10 * time.Millisecond
	cfg.OffsetsRetentionCheckInterval = 0 // tests call ExpireOffsets
	return cfg
}

// startCoordinator returns a coordinator leading every partition, loaded.
func startCoordinator(t *testing.T, log *memLog, now func() time.Time) *GroupCoordinator {
	t.Helper()
	md := fakeMetadata{OffsetsTopic: 4, "t": 3}
	c := New(testConfig(), log, md, now, zerolog.Nop())
	t.Cleanup(c.Close)
	for p := int32(0); p < 4; p++ {
		c.BecomeLeader(p)
	}
	waitLoaded(t, c.Loaded, 4)
	return c
}

// waitLoaded waits up to 5s for a coordinator's partitions 0..n-1 to be loaded.
func waitLoaded(t *testing.T, loaded func(partition int32) bool, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p := int32(0); p < n; p++ {
		for !loaded(p) {
			if time.Now().After(deadline) {
				t.Fatalf("partition %d not loaded", p)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func commitReq(group string, gen int32, member string, parts map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation, req.MemberID = group, gen, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for p, o := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, 1
		md := "meta"
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchAll(c *GroupCoordinator, groups ...string) *kmsg.OffsetFetchResponse {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		req.Groups = append(req.Groups, rg)
	}
	return c.OffsetFetch(req)
}

func TestCoordinatorOffsetsPersistAndReload(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_000_000_000)}
	c := startCoordinator(t, log, clk.Now)

	resp := c.OffsetCommit(commitReq("simple", -1, "", map[int32]int64{0: 10, 2: 12, 9: 1}))
	for _, p := range resp.Topics[0].Partitions {
		want := int16(0)
		if p.Partition == 9 {
			want = kerr.UnknownTopicOrPartition.Code
		}
		wantCode(t, "commit", p.ErrorCode, want)
	}
	big := commitReq("simple", -1, "", map[int32]int64{1: 5})
	huge := string(make([]byte, 4097))
	big.Topics[0].Partitions[0].Metadata = &huge
	wantCode(t, "metadata too large", c.OffsetCommit(big).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge.Code)
	wantCode(t, "member of no generation", c.OffsetCommit(commitReq("nogroup", 3, "m", map[int32]int64{0: 1})).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration.Code)
	wantCode(t, "empty group id", c.OffsetCommit(commitReq("", -1, "", map[int32]int64{0: 1})).Topics[0].Partitions[0].ErrorCode, kerr.InvalidGroupID.Code)

	check := func(c *GroupCoordinator) {
		t.Helper()
		f := fetchAll(c, "simple", "unknown")
		if len(f.Groups) != 2 || f.Groups[0].ErrorCode != 0 || len(f.Groups[0].Topics) != 1 || len(f.Groups[1].Topics) != 0 {
			t.Fatalf("fetch %+v", f)
		}
		ps := f.Groups[0].Topics[0].Partitions
		if len(ps) != 2 || ps[0].Offset != 10 || ps[1].Offset != 12 || *ps[0].Metadata != "meta" || ps[0].LeaderEpoch != 1 {
			t.Fatalf("offsets %+v", ps)
		}
	}
	check(c)

	// A v1 fetch names partitions; an uncommitted one is -1 without error.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 1
	req.Group = "simple"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	f := c.OffsetFetch(req)
	if f.Topics[0].Partitions[0].Offset != 10 || f.Topics[0].Partitions[1].Offset != -1 || f.Topics[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("v1 fetch %+v", f)
	}

	// A new coordinator over the same log sees the same offsets.
	c.Close()
	c2 := startCoordinator(t, log, clk.Now)
	check(c2)

	// DeleteGroups writes tombstones; after a reload the group is still gone.
	dr := c2.DeleteGroups([]string{"simple", "unknown", ""})
	wantCode(t, "delete", dr[0].ErrorCode, 0)
	wantCode(t, "delete unknown", dr[1].ErrorCode, kerr.GroupIDNotFound.Code)
	wantCode(t, "delete empty id", dr[2].ErrorCode, kerr.InvalidGroupID.Code)
	c2.Close()
	c3 := startCoordinator(t, log, clk.Now)
	if f := fetchAll(c3, "simple"); len(f.Groups[0].Topics) != 0 {
		t.Fatalf("deleted group's offsets: %+v", f.Groups[0].Topics)
	}
	if _, groups := c3.ListGroups(nil, nil); len(groups) != 0 {
		t.Fatalf("listed %+v", groups)
	}
	p := c3.PartitionFor("simple")
	recs := log.records(p)
	last := recs[len(recs)-1]
	if last.GroupKey == nil || last.GroupValue != nil {
		t.Fatalf("last record is not the group tombstone: %+v", last)
	}
}

func TestCoordinatorExpiresOffsetsOfEmptyGroups(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_000_000_000)}
	c := startCoordinator(t, log, clk.Now)
	c.OffsetCommit(commitReq("simple", -1, "", map[int32]int64{0: 1}))
	clk.Add(c.cfg.OffsetsRetention - time.Second)
	c.ExpireOffsets()
	if len(c.GroupOffsets("simple")) != 1 {
		t.Fatal("offset expired early")
	}
	clk.Add(time.Second)
	c.ExpireOffsets()
	if _, groups := c.ListGroups(nil, nil); len(groups) != 0 {
		t.Fatalf("group with no offsets left not deleted: %+v", groups)
	}
	c.Close()
	c2 := startCoordinator(t, log, clk.Now)
	if _, groups := c2.ListGroups(nil, nil); len(groups) != 0 {
		t.Fatalf("expired group came back: %+v", groups)
	}
}

// joinAndWait sends a JoinGroup and waits for its answer (timers run for real).
func joinAndWait(t *testing.T, c *GroupCoordinator, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	t.Helper()
	ch := make(chan kmsg.Response, 1)
	c.JoinGroup(req, "client", "/127.0.0.1", func(m kmsg.Response) { ch <- m })
	select {
	case m := <-ch:
		return m.(*kmsg.JoinGroupResponse)
	case <-time.After(5 * time.Second):
		t.Fatal("join not answered")
		return nil
	}
}

func joinGroupReq(group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, member, 60000, 60000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{"t"}
	p.Metadata = md.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

func syncAndWait(t *testing.T, c *GroupCoordinator, group, member string, gen int32, assign []byte) *kmsg.SyncGroupResponse {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	if assign != nil {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = member, assign
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	ch := make(chan kmsg.Response, 1)
	c.SyncGroup(req, func(m kmsg.Response) { ch <- m })
	select {
	case m := <-ch:
		return m.(*kmsg.SyncGroupResponse)
	case <-time.After(5 * time.Second):
		t.Fatal("sync not answered")
		return nil
	}
}

func TestCoordinatorGroupLifecycleAndReload(t *testing.T) {
	log := newMemLog()
	c := startCoordinator(t, log, time.Now)
	wantCode(t, "bad session timeout", joinAndWait(t, c, func() *kmsg.JoinGroupRequest {
		r := joinGroupReq("g", "")
		r.SessionTimeoutMillis = 1
		return r
	}()).ErrorCode, kerr.InvalidSessionTimeout.Code)
	wantCode(t, "unknown member of unknown group", joinAndWait(t, c, joinGroupReq("g", "who")).ErrorCode, kerr.UnknownMemberID.Code)
	r := joinAndWait(t, c, joinGroupReq("g", ""))
	wantCode(t, "handshake", r.ErrorCode, kerr.MemberIDRequired.Code)
	// The rejoin completes through the (zero) initial-delay timer.
	r = joinAndWait(t, c, joinGroupReq("g", r.MemberID))
	wantCode(t, "join", r.ErrorCode, 0)
	s := syncAndWait(t, c, "g", r.MemberID, r.Generation, []byte("assignment"))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "assignment" {
		t.Fatalf("sync %+v", s)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", r.MemberID, r.Generation
	wantCode(t, "heartbeat", c.Heartbeat(hb), 0)
	wantCode(t, "commit", c.OffsetCommit(commitReq("g", r.Generation, r.MemberID, map[int32]int64{1: 7})).Topics[0].Partitions[0].ErrorCode, 0)

	// OffsetDelete refuses subscribed topics of an active consumer group.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}
	od.Topics = append(od.Topics, odt)
	wantCode(t, "offset delete", c.OffsetDelete(od).Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic.Code)
	wantCode(t, "delete active group", c.DeleteGroups([]string{"g"})[0].ErrorCode, kerr.NonEmptyGroup.Code)

	d := c.DescribeGroups([]string{"g", "missing"}, 6)
	if d[0].State != "Stable" || len(d[0].Members) != 1 || string(d[0].Members[0].MemberAssignment) != "assignment" {
		t.Fatalf("describe %+v", d[0])
	}
	wantCode(t, "describe missing v6", d[1].ErrorCode, kerr.GroupIDNotFound.Code)
	if d := c.DescribeGroups([]string{"missing"}, 5); d[0].ErrorCode != 0 || d[0].State != "Dead" {
		t.Fatalf("describe missing v5 %+v", d[0])
	}
	if _, gs := c.ListGroups([]string{"stable"}, []string{"Classic"}); len(gs) != 1 || gs[0].GroupState != "Stable" {
		t.Fatalf("list %+v", gs)
	}
	if _, gs := c.ListGroups(nil, []string{"consumer"}); len(gs) != 0 {
		t.Fatalf("list by type consumer %+v", gs)
	}

	// Reloaded, the group is Stable with its member, which can keep heartbeating.
	c.Close()
	c2 := startCoordinator(t, log, time.Now)
	d = c2.DescribeGroups([]string{"g"}, 5)
	if d[0].State != "Stable" || len(d[0].Members) != 1 || d[0].Members[0].MemberID != r.MemberID {
		t.Fatalf("after reload %+v", d[0])
	}
	wantCode(t, "heartbeat after reload", c2.Heartbeat(hb), 0)
	if o := c2.GroupOffsets("g"); o[TopicPartition{"t", 1}].Offset != 7 {
		t.Fatalf("offsets after reload %+v", o)
	}

	// Leaving empties the group; its generation moves on and that is written too.
	code, codes := c2.LeaveGroup("g", []LeaveMember{{MemberID: r.MemberID}})
	wantCode(t, "leave", code, 0)
	wantCode(t, "leave member", codes[0], 0)
	d = c2.DescribeGroups([]string{"g"}, 5)
	if d[0].State != "Empty" {
		t.Fatalf("after leave %+v", d[0])
	}
	c2.Close()
	c3 := startCoordinator(t, log, time.Now)
	if d := c3.DescribeGroups([]string{"g"}, 5); d[0].State != "Empty" || d[0].ProtocolType != "consumer" {
		t.Fatalf("empty group after reload %+v", d[0])
	}
	wantCode(t, "delete empty group", c3.DeleteGroups([]string{"g"})[0].ErrorCode, 0)
}

func TestCoordinatorWriteFailures(t *testing.T) {
	log := newMemLog()
	c := startCoordinator(t, log, time.Now)
	r := joinAndWait(t, c, joinGroupReq("g", ""))
	r = joinAndWait(t, c, joinGroupReq("g", r.MemberID))
	wantCode(t, "commit", c.OffsetCommit(commitReq("kept", -1, "", map[int32]int64{0: 1})).Topics[0].Partitions[0].ErrorCode, 0)

	log.mu.Lock()
	log.fail = kerr.NotEnoughReplicas
	log.mu.Unlock()
	s := syncAndWait(t, c, "g", r.MemberID, r.Generation, []byte("a"))
	wantCode(t, "sync with failed write", s.ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if d := c.DescribeGroups([]string{"g"}, 5); d[0].State != "PreparingRebalance" {
		t.Fatalf("after failed sync write: %s", d[0].State)
	}
	resp := c.OffsetCommit(commitReq("simple", -1, "", map[int32]int64{0: 1}))
	wantCode(t, "commit with failed write", resp.Topics[0].Partitions[0].ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if o := c.GroupOffsets("simple"); len(o) != 0 {
		t.Fatalf("failed commit is visible: %+v", o)
	}
	log.mu.Lock()
	log.fail = kerr.MessageTooLarge
	log.mu.Unlock()
	resp = c.OffsetCommit(commitReq("simple", -1, "", map[int32]int64{0: 1}))
	wantCode(t, "commit too large", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidCommitOffsetSize.Code)
	log.mu.Lock()
	log.fail = kerr.NotLeaderForPartition
	log.mu.Unlock()
	wantCode(t, "delete with failed write", c.DeleteGroups([]string{"kept"})[0].ErrorCode, kerr.NotCoordinator.Code)
	if d := c.DescribeGroups([]string{"kept"}, 5); d[0].State != "Empty" || len(c.GroupOffsets("kept")) != 1 {
		t.Fatalf("group after failed delete: %+v", d[0])
	}
}

func TestCoordinatorNotCoordinatorAndLoading(t *testing.T) {
	log := newMemLog()
	log.block = make(chan struct{})
	md := fakeMetadata{OffsetsTopic: 4, "t": 3}
	c := New(testConfig(), log, md, time.Now, zerolog.Nop())
	defer c.Close()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	wantCode(t, "no partition", c.Heartbeat(hb), kerr.NotCoordinator.Code)
	c.BecomeLeader(c.PartitionFor("g"))
	wantCode(t, "loading", c.Heartbeat(hb), kerr.CoordinatorLoadInProgress.Code)
	if code, _ := c.ListGroups(nil, nil); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("list while loading: %v", kerr.ErrorForCode(code))
	}
	close(log.block)
	for !c.Loaded(c.PartitionFor("g")) {
		time.Sleep(time.Millisecond)
	}
	wantCode(t, "loaded, unknown group", c.Heartbeat(hb), kerr.UnknownMemberID.Code)
	if code, codes := c.LeaveGroup("g", []LeaveMember{{MemberID: "a"}, {MemberID: "b"}}); code != 0 || len(codes) != 2 || codes[1] != kerr.UnknownMemberID.Code {
		t.Fatalf("leave unknown group: %v %v", code, codes)
	}

	// Resigning answers parked joins with NOT_COORDINATOR.
	ch := make(chan kmsg.Response, 1)
	c.JoinGroup(func() *kmsg.JoinGroupRequest { r := joinGroupReq("g", ""); r.Version = 3; return r }(), "c", "/h", func(m kmsg.Response) { ch <- m })
	// v3 joins directly; the zero initial delay answers it through the timer, so
	// resign before that may or may not win: accept either a success or NOT_COORDINATOR.
	c.Resign(c.PartitionFor("g"))
	select {
	case m := <-ch:
		if code := m.(*kmsg.JoinGroupResponse).ErrorCode; code != 0 && code != kerr.NotCoordinator.Code {
			t.Fatalf("parked join after resign: %v", kerr.ErrorForCode(code))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked join never answered after resign")
	}
	wantCode(t, "after resign", c.Heartbeat(hb), kerr.NotCoordinator.Code)
	delete(md, OffsetsTopic)
	wantCode(t, "no offsets topic", c.Heartbeat(hb), kerr.CoordinatorNotAvailable.Code)
}

func TestCoordinatorForgetsGroupsThatNeverFormed(t *testing.T) {
	c := startCoordinator(t, newMemLog(), time.Now)
	req := joinGroupReq("g", "")
	req.SessionTimeoutMillis = 20
	wantCode(t, "handshake", joinAndWait(t, c, req).ErrorCode, kerr.MemberIDRequired.Code)
	if _, gs := c.ListGroups(nil, nil); len(gs) != 1 || gs[0].GroupState != "Empty" {
		t.Fatalf("listed %+v", gs)
	}
	// The member never comes back with its id: once its pending slot expires the
	// group, never written, is gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, gs := c.ListGroups(nil, nil); len(gs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("group with an expired pending member still listed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
