package integration

// The classic-group scenarios of groups_test.go, with franz-go speaking the KIP-848
// consumer protocol (ConsumerGroupHeartbeat, server-side assignment).

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fast848 gives consumer groups a 1.5s session and 100ms heartbeats.
var fast848 = Props(
	"offsets.topic.num.partitions", "10",
	"group.consumer.min.session.timeout.ms", "500",
	"group.consumer.session.timeout.ms", "1500",
	"group.consumer.min.heartbeat.interval.ms", "50",
	"group.consumer.heartbeat.interval.ms", "100",
)

// start848 starts a group member using the consumer protocol.
func start848(t *testing.T, seed, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	return startMember(t, seed, group, topic, append([]kgo.Opt{kgo.ServerSideBalancer()}, opts...)...)
}

func describe848(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	d, err := adm.DescribeConsumerGroups(Ctx(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("describe consumer group: %v", err)
	}
	return d[group]
}

func TestConsumerProtocolSplitsRebalancesAndResumes(t *testing.T) {
	b := StartBroker(t, fast848)
	adm := b.Admin()
	createTopic(t, adm, "orders", 6)
	prod := b.Client()
	produceValues(t, prod, "orders", 0, 60)

	// Three consumers split six partitions; the third is static: on close it leaves
	// with epoch -2, keeping its place until its session times out.
	m1 := start848(t, b.Addr(), "g", "orders")
	m2 := start848(t, b.Addr(), "g", "orders")
	m3 := start848(t, b.Addr(), "g", "orders", kgo.InstanceID("static-3"))
	waitSplit(t, 6, m1, m2, m3)
	for _, m := range []*groupMember{m1, m2, m3} {
		if n := len(m.partitions()); n != 2 {
			t.Fatalf("member has %d partitions, want 2", n)
		}
	}
	WaitFor(t, 30*time.Second, "all 60 records consumed", func() bool { return m1.count()+m2.count()+m3.count() >= 60 })

	WaitFor(t, 10*time.Second, "group Stable", func() bool { return describe848(t, adm, "g").State == "Stable" })
	d := describe848(t, adm, "g")
	if d.Err != nil || len(d.Members) != 3 || d.AssignorName != "uniform" || d.Epoch != d.AssignmentEpoch {
		t.Fatalf("described %+v", d)
	}
	for _, m := range d.Members {
		if m.MemberEpoch != d.Epoch || len(m.Assignment["orders"]) != 2 || m.MemberType != 1 {
			t.Fatalf("member %+v", m)
		}
	}
	listed, err := adm.ListGroupsByType(Ctx(t, 10*time.Second), []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["g"]; !ok || l.GroupType != "consumer" || l.ProtocolType != "consumer" || l.State != "Stable" {
		t.Fatalf("listed %+v", listed)
	}
	// DescribeGroups (the classic API) does not describe it, as Kafka.
	dg, err := adm.DescribeGroups(Ctx(t, 10*time.Second), "g")
	if err != nil {
		t.Fatal(err)
	}
	if g := dg["g"]; !errors.Is(g.Err, kerr.GroupIDNotFound) || g.State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %+v", g)
	}

	// The static member goes: its session times out and the group rebalances.
	start := time.Now()
	m3.close()
	waitSplit(t, 6, m1, m2)
	if took := time.Since(start); took < 1400*time.Millisecond {
		t.Fatalf("rebalanced after %v, before the 1.5s session timeout", took)
	}

	// A dynamic member leaves (epoch -1): the last one takes everything.
	m2.close()
	waitSplit(t, 6, m1)

	// Everything consumed is committed; a new member resumes after it.
	WaitFor(t, 30*time.Second, "offsets committed to the end", committedSum(t, adm, "g", 60))
	m1.close()
	WaitFor(t, 10*time.Second, "group Empty", func() bool { return describe848(t, adm, "g").State == "Empty" })
	produceValues(t, prod, "orders", 60, 70)
	m4 := start848(t, b.Addr(), "g", "orders")
	waitResumed(t, m4, 10)
}

func TestConsumerProtocolSurvivesRestart(t *testing.T) {
	b := StartBroker(t, fast848)
	adm := b.Admin()
	createTopic(t, adm, "r", 2)
	produceValues(t, b.Client(), "r", 0, 20)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "r", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "keep"})
	if err := adm.CommitAllOffsets(Ctx(t, 10*time.Second), "simple", os); err != nil {
		t.Fatal(err)
	}

	// A live member across a restart: it keeps heartbeating at its epoch (the group
	// is reloaded with it), keeps its partitions, and consumes on without repeats.
	m := start848(t, b.Addr(), "consumers", "r")
	WaitFor(t, 30*time.Second, "consumed", func() bool { return m.count() == 20 })
	WaitFor(t, 30*time.Second, "committed", committedSum(t, adm, "consumers", 20))
	before := describe848(t, adm, "consumers")
	b = b.Restart()
	adm = b.Admin()
	WaitFor(t, 30*time.Second, "group reloaded", func() bool {
		d, err := adm.DescribeConsumerGroups(Ctx(t, 5*time.Second), "consumers")
		return err == nil && d["consumers"].Err == nil && d["consumers"].Epoch == before.Epoch && len(d["consumers"].Members) == 1
	})
	produceValues(t, b.Client(), "r", 20, 30)
	WaitFor(t, 30*time.Second, "consumed after restart", func() bool { return m.count() == 30 })
	if d := describe848(t, adm, "consumers"); d.Members[0].MemberID != before.Members[0].MemberID {
		t.Fatalf("member changed across the restart: %s -> %s", before.Members[0].MemberID, d.Members[0].MemberID)
	}
	WaitFor(t, 30*time.Second, "committed after restart", committedSum(t, adm, "consumers", 30))
	m.close()
	WaitFor(t, 10*time.Second, "group Empty", func() bool { return describe848(t, adm, "consumers").State == "Empty" })

	// An empty group and its offsets survive a restart too, and a new member resumes.
	b = b.Restart()
	adm = b.Admin()
	WaitFor(t, 30*time.Second, "groups listed after restart", func() bool {
		l, err := adm.ListGroups(Ctx(t, 5*time.Second))
		return err == nil && l["simple"].GroupType == "classic" && l["consumers"].GroupType == "consumer" && l["consumers"].State == "Empty"
	})
	WaitFor(t, 10*time.Second, "offsets after restart", committedSum(t, adm, "consumers", 30))
	s, _ := adm.FetchOffsets(Ctx(t, 5*time.Second), "simple")
	if o, ok := s.Lookup("r", 0); !ok || o.At != 3 || o.Metadata != "keep" {
		t.Fatalf("simple offset after restart: %+v", o)
	}
	produceValues(t, b.Client(), "r", 30, 35)
	m2 := start848(t, b.Addr(), "consumers", "r")
	waitResumed(t, m2, 5)
}

func TestConsumerProtocolRangeAssignorAndNewPartitions(t *testing.T) {
	b := StartBroker(t, fast848)
	adm := b.Admin()
	createTopic(t, adm, "p", 4)
	range848 := kgo.Balancers(kgo.RangeBalancer())
	m1 := start848(t, b.Addr(), "rg", "p", range848)
	m2 := start848(t, b.Addr(), "rg", "p", range848)
	waitSplit(t, 4, m1, m2)
	if d := describe848(t, adm, "rg"); d.AssignorName != "range" {
		t.Fatalf("assignor %q", d.AssignorName)
	}
	// Partitions added later are picked up by the next heartbeats.
	if _, err := adm.UpdatePartitions(Ctx(t, 10*time.Second), 6, "p"); err != nil {
		t.Fatal(err)
	}
	waitSplit(t, 6, m1, m2)
	// A topic the members subscribe to, created later, is assigned too.
	m3 := start848(t, b.Addr(), "late", "later-topic")
	createTopic(t, adm, "later-topic", 2)
	waitSplit(t, 2, m3)
}

func TestConsumerProtocolErrors(t *testing.T) {
	b := StartBroker(t, fast848)
	adm := b.Admin()
	createTopic(t, adm, "e", 2)
	cl := b.Client()
	ctx := Ctx(t, 30*time.Second)
	hb := func(mod func(r *kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.RebalanceTimeoutMillis = "raw848", "member-1", 5000
		r.SubscribedTopicNames = []string{"e"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mod(r)
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	want := func(what string, r *kmsg.ConsumerGroupHeartbeatResponse, e *kerr.Error) {
		t.Helper()
		if r.ErrorCode != e.Code {
			t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(r.ErrorCode), e)
		}
	}
	want("unknown assignor", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("cooperative-sticky") }), kerr.UnsupportedAssignor)
	want("join without a rebalance timeout", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), kerr.InvalidRequest)
	want("unknown group", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }), kerr.GroupIDNotFound)

	joined := hb(func(*kmsg.ConsumerGroupHeartbeatRequest) {})
	if joined.ErrorCode != 0 || joined.MemberEpoch != 1 || joined.Assignment == nil || len(joined.Assignment.Topics) != 1 {
		t.Fatalf("join: %+v", joined)
	}
	want("epoch ahead", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }), kerr.FencedMemberEpoch)
	want("unknown member", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "other", 1 }), kerr.UnknownMemberID)

	// OffsetCommit at the wrong epoch is STALE_MEMBER_EPOCH.
	td, err := adm.ListTopics(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.MemberID, oc.Generation = "raw848", "member-1", 7
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic, ot.TopicID = "e", td["e"].ID // v10 names topics by id
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Offset = 1
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	ocr, err := oc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := ocr.Topics[0].Partitions[0].ErrorCode; code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a stale epoch: %v", kerr.ErrorForCode(code))
	}
	oc.Generation = 1
	if ocr, err = oc.RequestWith(ctx, cl); err != nil || ocr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit at the member epoch: %+v %v", ocr, err)
	}

	// Static membership: the instance id is held until its member leaves.
	static := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		return hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = "static848", member, epoch, kmsg.StringPtr("i-1")
		})
	}
	if r := static("s1", 0); r.ErrorCode != 0 {
		t.Fatalf("static join: %+v", r)
	}
	want("instance id in use", static("s2", 0), kerr.UnreleasedInstanceID)
	if r := static("s1", -2); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	if r := static("s2", 0); r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Assignment.Topics) != 1 {
		t.Fatalf("static replacement: %+v", r)
	}

	// ConsumerGroupDescribe of a classic group, DeleteGroups of a live one.
	d, err := adm.DescribeConsumerGroups(ctx, "raw848", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if d["raw848"].Err != nil || d["raw848"].Members[0].MemberID != "member-1" || !errors.Is(d["nope"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("describe: %+v", d)
	}
	dr, err := adm.DeleteGroups(ctx, "raw848")
	if err != nil || !errors.Is(dr["raw848"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("delete a live consumer group: %+v %v", dr, err)
	}
	if r := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	dr, err = adm.DeleteGroups(ctx, "raw848")
	if err != nil || dr["raw848"].Err != nil {
		t.Fatalf("delete an empty consumer group: %+v %v", dr, err)
	}
	if l, _ := adm.ListGroups(ctx); l["raw848"].Group != "" {
		t.Fatalf("deleted group listed: %+v", l)
	}
}

func TestConsumerProtocolRegexSubscription(t *testing.T) {
	b := StartBroker(t, fast848)
	adm := b.Admin()
	createTopic(t, adm, "logs-a", 2)
	createTopic(t, adm, "other", 1)
	m := startMember(t, b.Addr(), "rx", "logs-a", kgo.ServerSideBalancer(), kgo.ConsumeRegex(),
		kgo.ConsumeTopics("logs-.*"), kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(250*time.Millisecond))
	WaitFor(t, 30*time.Second, "logs-a assigned", func() bool {
		d := describe848(t, adm, "rx")
		return len(d.Members) == 1 && len(d.Members[0].Assignment["logs-a"]) == 2
	})
	// A matching topic created later joins the assignment; others never do.
	createTopic(t, adm, "logs-b", 1)
	WaitFor(t, 30*time.Second, "logs-b assigned", func() bool {
		d := describe848(t, adm, "rx")
		return len(d.Members) == 1 && len(d.Members[0].Assignment["logs-b"]) == 1
	})
	d := describe848(t, adm, "rx")
	if len(d.Members[0].Assignment["other"]) != 0 || d.Members[0].SubscribedTopicRegex == nil {
		t.Fatalf("described %+v", d.Members[0])
	}
	produceValues(t, b.Client(), "logs-b", 0, 3)
	WaitFor(t, 30*time.Second, "logs-b consumed", func() bool { return m.count() == 3 })
}
