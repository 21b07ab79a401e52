package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

// restartBroker1 restarts broker 1 (SIGTERM: its leaderships move away first) and
// waits until it is back in the ISR of topic, led by another broker.
func restartBroker1(t *testing.T, c *Cluster, b2 *kgo.Client, topic string) partition {
	t.Helper()
	c.Nodes[1].Stop()
	c.Nodes[1].Start()
	var p partition
	WaitFor(t, 30*time.Second, "broker 1 back in the ISR of "+topic+", not leading it", func() bool {
		var ok bool
		p, _, ok = partitionState(Ctx(t, 5*time.Second), b2, topic)
		return ok && p.Leader != 1 && p.Leader != -1 && slices.Contains(p.ISR, 1)
	})
	return p
}

// TestElectLeadersGivesLeadershipBack is kafka-leader-election --election-type
// PREFERRED after a restart, through kadm against real processes: broker 1 restarts
// and another broker leads its partition; a preferred election (sent to any broker,
// forwarded to the controller) gives it back, with the leader epoch bumped; asking
// again is ELECTION_NOT_NEEDED, as is an unclean election of a partition with a
// leader; unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION; and the new
// leader serves everything written before.
func TestElectLeadersGivesLeadershipBack(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"auto.leader.rebalance.enable": "false", "replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "pref", 1, 2, 3)
	createAssigned(t, b1, "other", 2, 3, 1)
	ctx := Ctx(t, 90*time.Second)
	all := producer(t, c, "all")
	for i := range 5 {
		if _, err := send(ctx, all, "pref", fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	b2 := NewClient(t, c.Nodes[2].Addr)
	before := restartBroker1(t, c, b2, "pref")

	adm := kadm.NewClient(NewClient(t, c.Nodes[2].Addr, kgo.SeedBrokers(c.Seeds()...)))
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}, 9: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs["pref"][0]; r.Err != nil {
		t.Fatalf("preferred election of pref-0: %v %s", r.Err, r.ErrMessage)
	}
	if r := rs["pref"][9]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("pref-9: %v", r.Err)
	}
	if r := rs["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("nope-0: %v", r.Err)
	}
	WaitFor(t, 10*time.Second, "broker 1 to lead pref again", func() bool {
		p, _, ok := partitionState(ctx, b2, "pref")
		return ok && p.Leader == 1 && p.LeaderEpoch == before.LeaderEpoch+1
	})

	rs, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}})
	if err != nil || !errors.Is(rs["pref"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v %+v", err, rs)
	}
	rs, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"pref": {0: {}}})
	if err != nil || !errors.Is(rs["pref"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election of a led partition: %v %+v", err, rs)
	}
	// All partitions: every topic listed, those already led by their preferred
	// replica left out (other-0: broker 2 never stopped leading it).
	rs, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"pref", "other"} {
		if got, ok := rs[topic]; !ok || len(got) != 0 {
			t.Fatalf("all-partitions election, %s: %+v (listed %v)", topic, got, ok)
		}
	}

	// The new leader serves the old records and takes new ones (a producer with
	// retries follows the leader; the test's first one has none).
	retrying := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if off, err := send(ctx, retrying, "pref", "after"); err != nil || off != 5 {
		t.Fatalf("write after the election: offset %d, %v", off, err)
	}
	consumer := NewClient(t, c.Nodes[1].Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"pref": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 6 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %v: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := []string{"r0", "r1", "r2", "r3", "r4", "after"}; !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	if !strings.Contains(c.Nodes[100].Log(), "ElectLeaders elected new leaders") {
		t.Errorf("the controller did not log the election:\n%s", tail(c.Nodes[100].Log(), 20))
	}
}

// TestAutoLeaderRebalance: with a short leader.imbalance.check.interval.seconds,
// leadership returns to broker 1 by itself after its restart, for every partition it
// is the preferred replica of.
func TestAutoLeaderRebalance(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"leader.imbalance.check.interval.seconds": "1", "replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "auto-a", 1, 2, 3)
	createAssigned(t, b1, "auto-b", 1, 3, 2)
	createAssigned(t, b1, "auto-c", 2, 1, 3)
	b2 := NewClient(t, c.Nodes[2].Addr)
	c.Nodes[1].Stop()
	WaitFor(t, 10*time.Second, "auto-a and auto-b led elsewhere", func() bool {
		a, _, ok1 := partitionState(Ctx(t, 5*time.Second), b2, "auto-a")
		b, _, ok2 := partitionState(Ctx(t, 5*time.Second), b2, "auto-b")
		return ok1 && ok2 && a.Leader != 1 && b.Leader != 1
	})
	c.Nodes[1].Start()
	WaitFor(t, 30*time.Second, "leadership back on the preferred replicas", func() bool {
		for topic, want := range map[string]int32{"auto-a": 1, "auto-b": 1, "auto-c": 2} {
			p, _, ok := partitionState(Ctx(t, 5*time.Second), b2, topic)
			if !ok || p.Leader != want {
				return false
			}
		}
		return true
	})
	if !strings.Contains(c.Nodes[100].Log(), "Leader rebalance: partitions moved back to their preferred replicas") {
		t.Errorf("the controller did not log the rebalance:\n%s", tail(c.Nodes[100].Log(), 20))
	}
}

// TestElectLeadersNeedsAlterOnCluster: without ALTER on the cluster ElectLeaders is
// CLUSTER_AUTHORIZATION_FAILED, at the top and on every partition named (kadm reports
// an AuthError); with it the election runs.
func TestElectLeadersNeedsAlterOnCluster(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	adm := kadm.NewClient(b.Client())
	ctx := Ctx(t, 20*time.Second)
	var ae *kadm.AuthError
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"t": {0: {}}}); !errors.As(err, &ae) {
		t.Fatalf("without ALTER on the cluster: %v, want an AuthError", err)
	}
	for _, v := range []int16{0, 2} {
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(v)
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, b.Client())
		if err != nil {
			t.Fatal(err)
		}
		if (v >= 1 && resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code) || len(resp.Topics) != 1 ||
			resp.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	adminACL(t, b, allow(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, anonymous, acl.OpAlter))
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"t": {0: {}}})
	if err != nil || !errors.Is(rs["t"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("with ALTER on the cluster: %v %+v", err, rs)
	}
}

// TestElectLeadersUnclean is kafka-leader-election --election-type UNCLEAN: the ISR
// of a partition shrinks to its leader (brokers 2 and 3 frozen), the leader is killed,
// and 2 and 3 come back out of the ISR, so the partition stays leaderless (unclean
// election is off). A preferred election cannot help (PREFERRED_LEADER_NOT_AVAILABLE);
// an unclean one gives it a live out-of-ISR leader with an ISR of itself, logged as
// possible data loss; asked again it is ELECTION_NOT_NEEDED.
func TestElectLeadersUnclean(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.lag.time.max.ms": "2000", "replica.fetch.wait.max.ms": "100",
		"auto.leader.rebalance.enable": "false"})
	createAssigned(t, b1, "lost", 1, 2, 3)
	ctx := Ctx(t, 90*time.Second)
	all := producer(t, c, "all")
	if _, err := send(ctx, all, "lost", "replicated"); err != nil {
		t.Fatal(err)
	}
	c.Nodes[2].Pause()
	c.Nodes[3].Pause()
	WaitFor(t, 15*time.Second, "the ISR to shrink to the leader", func() bool {
		return slices.Equal(isrOf(t, b1, "lost"), []int32{1})
	})
	c.Nodes[1].Kill()
	c.Nodes[2].Resume()
	c.Nodes[3].Resume()
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "brokers 2 and 3 back, the partition leaderless", func() bool {
		p, brokers, ok := partitionState(ctx, b2, "lost")
		return ok && slices.Contains(brokers, 2) && slices.Contains(brokers, 3) && p.Leader == -1
	})
	adm := kadm.NewClient(NewClient(t, c.Nodes[2].Addr, kgo.SeedBrokers(c.Nodes[2].Addr, c.Nodes[3].Addr)))
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"lost": {0: {}}})
	if err != nil || !errors.Is(rs["lost"][0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election with the preferred replica dead: %v %+v", err, rs)
	}
	rs, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"lost": {0: {}}})
	if err != nil || rs["lost"][0].Err != nil {
		t.Fatalf("unclean election: %v %+v", err, rs)
	}
	// The new leader starts with an ISR of itself; the other out-of-ISR replica may
	// catch up and join it before we look, so the ISR is the leader plus perhaps that
	// one, never the dead broker 1.
	WaitFor(t, 10*time.Second, "an out-of-ISR replica to lead, the dead broker out of the ISR", func() bool {
		p, _, ok := partitionState(ctx, b2, "lost")
		return ok && (p.Leader == 2 || p.Leader == 3) && slices.Contains(p.ISR, p.Leader) && !slices.Contains(p.ISR, 1)
	})
	rs, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"lost": {0: {}}})
	if err != nil || !errors.Is(rs["lost"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election of a led partition: %v %+v", err, rs)
	}
	if !strings.Contains(c.Nodes[100].Log(), "Unclean leader election") {
		t.Errorf("the controller did not log the unclean election:\n%s", tail(c.Nodes[100].Log(), 20))
	}
}
