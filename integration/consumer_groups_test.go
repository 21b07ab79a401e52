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
	WaitFor(t, 30*time.Second, "offsets committed to the end", func() bool {
		os, err := adm.FetchOffsets(Ctx(t, 5*time.Second), "g")
		if err != nil {
			return false
		}
		var sum int64
		os.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum == 60
	})
	m1.close()
	WaitFor(t, 10*time.Second, "group Empty", func() bool { return describe848(t, adm, "g").State == "Empty" })
	produceValues(t, prod, "orders", 60, 70)
	m4 := start848(t, b.Addr(), "g", "orders")
	WaitFor(t, 30*time.Second, "new records consumed", func() bool { return m4.count() >= 10 })
	time.Sleep(300 * time.Millisecond)
	if n := m4.count(); n != 10 {
		t.Fatalf("resumed member consumed %d records, want only the 10 new ones", n)
	}
}
