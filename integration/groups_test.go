package integration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fastGroups lets tests use sub-second session timeouts and fewer offsets partitions.
var fastGroups = Props("group.min.session.timeout.ms", "100", "offsets.topic.num.partitions", "10")

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(Ctx(t, 10*time.Second), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// groupMember is a kgo group consumer that tracks what it is assigned and counts what
// it consumes.
type groupMember struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
	consumed map[string]bool // record values
	done     chan struct{}
}

func startMember(t *testing.T, seed, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{assigned: map[int32]bool{}, consumed: map[string]bool{}, done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(2 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second), kgo.AutoCommitInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
			cl.CommitMarkedOffsets(context.Background())
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			for _, p := range l[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
		}),
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(seed)}, base...), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				m.consumed[string(r.Value)] = true
				m.mu.Unlock()
			})
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *groupMember) close() {
	m.cl.Close()
	<-m.done
}

func (m *groupMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.assigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func (m *groupMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.consumed)
}

// waitSplit waits until the members' assignments are disjoint, cover every partition
// 0..n-1 and are balanced (sizes differ by at most one).
func waitSplit(t *testing.T, n int, members ...*groupMember) {
	t.Helper()
	WaitFor(t, 30*time.Second, fmt.Sprintf("%d partitions split over %d members", n, len(members)), func() bool {
		seen := map[int32]bool{}
		min, max := n, 0
		for _, m := range members {
			ps := m.partitions()
			for _, p := range ps {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
			if len(ps) < min {
				min = len(ps)
			}
			if len(ps) > max {
				max = len(ps)
			}
		}
		return len(seen) == n && max-min <= 1
	})
}

func produceValues(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(Ctx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// committedSum is a WaitFor condition: group's committed offsets add up to want, which
// for a topic consumed from the start is the number of records consumed and committed.
func committedSum(t *testing.T, adm *kadm.Client, group string, want int64) func() bool {
	return func() bool {
		o, err := adm.FetchOffsets(Ctx(t, 5*time.Second), group)
		if err != nil {
			return false
		}
		var sum int64
		o.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum == want
	}
}

// waitResumed waits until m has consumed n records, gives it a moment more, and fails
// when it consumed more than n: a member that resumes after the committed offsets
// consumes only the records produced since.
func waitResumed(t *testing.T, m *groupMember, n int) {
	t.Helper()
	WaitFor(t, 30*time.Second, fmt.Sprintf("%d new records consumed", n), func() bool { return m.count() >= n })
	time.Sleep(300 * time.Millisecond)
	if got := m.count(); got != n {
		t.Fatalf("resumed member consumed %d records, want only the %d new ones", got, n)
	}
}

func TestConsumerGroupSplitsRebalancesAndResumes(t *testing.T) {
	b := StartBroker(t, fastGroups)
	adm := b.Admin()
	createTopic(t, adm, "orders", 6)
	prod := b.Client()
	produceValues(t, prod, "orders", 0, 60)

	// Three consumers split six partitions; the third is static (kgo does not leave
	// the group on close with an instance id), so closing it exercises the session
	// timeout rather than LeaveGroup.
	m1 := startMember(t, b.Addr(), "g", "orders")
	m2 := startMember(t, b.Addr(), "g", "orders")
	m3 := startMember(t, b.Addr(), "g", "orders", kgo.InstanceID("static-3"), kgo.SessionTimeout(time.Second))
	waitSplit(t, 6, m1, m2, m3)
	for _, m := range []*groupMember{m1, m2, m3} {
		if n := len(m.partitions()); n != 2 {
			t.Fatalf("member has %d partitions, want 2", n)
		}
	}
	WaitFor(t, 30*time.Second, "all 60 records consumed", func() bool { return m1.count()+m2.count()+m3.count() >= 60 })

	dg, err := adm.DescribeGroups(Ctx(t, 10*time.Second), "g")
	if err != nil || dg["g"].Err != nil {
		t.Fatalf("describe: %v %v", err, dg["g"].Err)
	}
	if g := dg["g"]; g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 3 {
		t.Fatalf("described %+v", g)
	}

	// The static member goes silent: its session times out and the group rebalances.
	start := time.Now()
	m3.close()
	waitSplit(t, 6, m1, m2)
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("rebalanced after %v, before the 1s session timeout", took)
	}

	// A dynamic member leaves (LeaveGroup): the last one takes everything.
	m2.close()
	waitSplit(t, 6, m1)

	// Everything consumed is committed; a new member resumes after it.
	WaitFor(t, 30*time.Second, "offsets committed to the end", committedSum(t, adm, "g", 60))
	m1.close()
	produceValues(t, prod, "orders", 60, 70)
	m4 := startMember(t, b.Addr(), "g", "orders")
	waitResumed(t, m4, 10)
}

func TestAdminOffsetsAndGroups(t *testing.T) {
	b := StartBroker(t, fastGroups)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	createTopic(t, adm, "a", 3)
	createTopic(t, adm, "b", 1)

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "a", Partition: 0, At: 10, LeaderEpoch: -1, Metadata: "m0"})
	os.Add(kadm.Offset{Topic: "a", Partition: 2, At: 12, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "b", Partition: 0, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "simple", os); err != nil {
		t.Fatalf("commit: %v", err)
	}
	fetched, err := adm.FetchOffsets(ctx, "simple")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("a", 0); !ok || o.At != 10 || o.Metadata != "m0" || o.Err != nil {
		t.Fatalf("a[0] = %+v", o)
	}
	if o, ok := fetched.Lookup("a", 2); !ok || o.At != 12 {
		t.Fatalf("a[2] = %+v", o)
	}
	if _, ok := fetched.Lookup("a", 1); ok {
		t.Fatalf("a[1] was never committed but is listed")
	}

	// Wrong turns get Kafka's codes.
	var bad kadm.Offsets
	bad.Add(kadm.Offset{Topic: "a", Partition: 7, At: 1, LeaderEpoch: -1})
	bad.Add(kadm.Offset{Topic: "b", Partition: 0, At: 1, LeaderEpoch: -1, Metadata: strings.Repeat("x", 5000)})
	resp, err := adm.CommitOffsets(ctx, "simple", bad)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := resp.Lookup("a", 7); !errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("commit to a[7]: %v", o.Err)
	}
	if o, _ := resp.Lookup("b", 0); !errors.Is(o.Err, kerr.OffsetMetadataTooLarge) {
		t.Fatalf("commit with 5000 bytes of metadata: %v", o.Err)
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["simple"]; !ok || g.State != "Empty" {
		t.Fatalf("listed %+v", listed)
	}
	if listed, _ := adm.ListGroups(ctx, "Stable"); len(listed) != 0 {
		t.Fatalf("states filter: %+v", listed)
	}
	dg, err := adm.DescribeGroups(ctx, "simple")
	if err != nil || dg["simple"].State != "Empty" {
		t.Fatalf("describe: %+v %v", dg, err)
	}

	// OffsetDelete removes b's offset only.
	del, err := adm.DeleteOffsets(ctx, "simple", kadm.TopicsSet{"b": {0: {}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, del.Error())
	}
	fetched, _ = adm.FetchOffsets(ctx, "simple")
	if _, ok := fetched.Lookup("b", 0); ok {
		t.Fatal("b[0] still committed after OffsetDelete")
	}

	// A group with a live member cannot be deleted, nor its subscribed offsets.
	m := startMember(t, b.Addr(), "live", "a")
	waitSplit(t, 3, m)
	dr, err := adm.DeleteGroups(ctx, "live")
	if err != nil || !errors.Is(dr["live"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("delete live group: %v %+v", err, dr)
	}
	del, err = adm.DeleteOffsets(ctx, "live", kadm.TopicsSet{"a": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := del["a"][0]; !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("delete subscribed offset: %v", e)
	}

	// DeleteGroups removes the group and its offsets.
	dr, err = adm.DeleteGroups(ctx, "simple", "never-existed")
	if err != nil {
		t.Fatal(err)
	}
	if dr["simple"].Err != nil || !errors.Is(dr["never-existed"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("delete groups: %+v", dr)
	}
	fetched, _ = adm.FetchOffsets(ctx, "simple")
	if len(fetched) != 0 {
		t.Fatalf("offsets of a deleted group: %+v", fetched)
	}
	listed, _ = adm.ListGroups(ctx)
	if _, ok := listed["simple"]; ok {
		t.Fatal("deleted group still listed")
	}
}

func TestGroupsAndOffsetsSurviveRestart(t *testing.T) {
	// Kafka's 50 offsets partitions here: all of them are loaded again at restart.
	b := StartBroker(t, Props("group.min.session.timeout.ms", "100"))
	adm := b.Admin()
	ctx := Ctx(t, 60*time.Second)
	createTopic(t, adm, "r", 2)
	produceValues(t, b.Client(), "r", 0, 20)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "r", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "keep"})
	if err := adm.CommitAllOffsets(ctx, "simple", os); err != nil {
		t.Fatal(err)
	}
	m := startMember(t, b.Addr(), "consumers", "r")
	WaitFor(t, 30*time.Second, "consumed", func() bool { return m.count() == 20 })
	WaitFor(t, 30*time.Second, "committed", committedSum(t, adm, "consumers", 20))
	m.close()
	before, _ := adm.FetchOffsets(ctx, "consumers")

	b = b.Restart()
	adm = b.Admin()
	ctx = Ctx(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "groups listed after restart", func() bool {
		l, err := adm.ListGroups(ctx)
		if err != nil {
			return false
		}
		_, ok1 := l["simple"]
		_, ok2 := l["consumers"]
		return ok1 && ok2
	})
	after, err := adm.FetchOffsets(ctx, "consumers")
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.OffsetResponse) {
		if a, ok := after.Lookup(o.Topic, o.Partition); !ok || a.At != o.At {
			t.Errorf("%s[%d] committed %d before restart, %d after", o.Topic, o.Partition, o.At, a.At)
		}
	})
	s, _ := adm.FetchOffsets(ctx, "simple")
	if o, ok := s.Lookup("r", 0); !ok || o.At != 3 || o.Metadata != "keep" {
		t.Fatalf("simple offset after restart: %+v", o)
	}
	dg, _ := adm.DescribeGroups(ctx, "consumers")
	if g := dg["consumers"]; g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Fatalf("consumers after restart: %+v", g)
	}
	// And the group works again, resuming where it was.
	produceValues(t, b.Client(), "r", 20, 25)
	m2 := startMember(t, b.Addr(), "consumers", "r")
	waitResumed(t, m2, 5)
}

func TestGroupProtocolErrors(t *testing.T) {
	b := StartBroker(t, fastGroups)
	cl := b.Client()
	ctx := Ctx(t, 30*time.Second)

	// FindCoordinator: batched keys (v4+), and the transaction type is not served yet.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g1", "g2"}
	fr, err := fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.Coordinators) != 2 || fr.Coordinators[0].ErrorCode != 0 || fr.Coordinators[0].NodeID != 1 {
		t.Fatalf("find coordinator %+v", fr)
	}
	fc.CoordinatorType = 1
	fr, err = fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Coordinators[0].ErrorCode != 0 || fr.Coordinators[0].NodeID != 1 { // the transaction coordinator
		t.Fatalf("txn coordinator: %+v", fr)
	}

	join := func(member string, session int32) *kmsg.JoinGroupResponse {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "raw", member, session, 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := join("", 10); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session timeout 10ms: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := join("", 1000)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: %+v", r)
	}
	r = join(r.MemberID, 1000)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != r.MemberID {
		t.Fatalf("second join: %+v", r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "raw", r.MemberID, 7
	if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat wrong generation: %+v %v", hr, err)
	}
	hb.Group = "nope"
	if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat unknown group: %+v %v", hr, err)
	}
	// The member never syncs and never heartbeats: it is gone after its session.
	time.Sleep(1500 * time.Millisecond)
	hb.Group, hb.Generation = "raw", 1
	if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after session timeout: %+v %v", hr, err)
	}
	// A commit from a member of a generation that never existed.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "ghost-group", 3, "m"
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "x"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	ocr, err := cl.Request(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	// ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9 (as Kafka 4).
	if code := ocr.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.IllegalGeneration.Code && code != kerr.GroupIDNotFound.Code {
		t.Fatalf("commit to unknown generation: %v", kerr.ErrorForCode(code))
	}
}

func TestOffsetsTopicCreatedAsKafkaDoes(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 30*time.Second)
	cl := b.Client()
	// Auto-created by a Metadata request, __consumer_offsets still gets its own
	// partition count and configs, not num.partitions.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("__consumer_offsets")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 50 || !resp.Topics[0].IsInternal {
		t.Fatalf("__consumer_offsets: %d partitions, internal %v", len(resp.Topics[0].Partitions), resp.Topics[0].IsInternal)
	}
	img := b.Controller().Image().Topics["__consumer_offsets"]
	if img.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("configs %v", img.Configs)
	}
	// v0-3 FindCoordinator answers in the top-level fields.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 3
	fc.CoordinatorKey = "g"
	fr, err := cl.Request(ctx, fc)
	if err != nil {
		t.Fatal(err)
	}
	if r := fr.(*kmsg.FindCoordinatorResponse); r.Version >= 4 {
		if len(r.Coordinators) != 1 || r.Coordinators[0].NodeID != 1 {
			t.Fatalf("find coordinator %+v", r)
		}
	} else if r.ErrorCode != 0 || r.NodeID != 1 {
		t.Fatalf("find coordinator %+v", r)
	}
}
