package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUncleanLeaderElectionTurnedOnAtRunTime: the ISRs of two topics shrink to their
// leader (brokers 2 and 3 frozen past the session timeout), the leader is killed, and
// brokers 2 and 3 come back: live, but out of the ISR, so with the default
// unclean.leader.election.enable=false the partitions stay leaderless. Setting it on one
// topic gives that topic a leader at once, from outside the ISR, with an ISR of
// itself; setting the cluster-wide broker default does the same for the other topic.
// The controller logs that data may be lost.
func TestUncleanLeaderElectionTurnedOnAtRunTime(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.lag.time.max.ms": "2000", "replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "by-topic", 1, 2, 3)
	createAssigned(t, b1, "by-default", 1, 2, 3)
	ctx := Ctx(t, 90*time.Second)
	all := producer(t, c, "all")
	for i := range 5 {
		for _, topic := range []string{"by-topic", "by-default"} {
			if _, err := send(ctx, all, topic, fmt.Sprintf("replicated-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Nodes[2].Pause()
	c.Nodes[3].Pause()
	WaitFor(t, 15*time.Second, "both ISRs to shrink to the leader", func() bool {
		return slices.Equal(isrOf(t, b1, "by-topic"), []int32{1}) && slices.Equal(isrOf(t, b1, "by-default"), []int32{1})
	})
	one := NewClient(t, c.Nodes[1].Addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, topic := range []string{"by-topic", "by-default"} {
		if _, err := send(ctx, one, topic, "only-on-1"); err != nil {
			t.Fatal(err)
		}
	}
	c.Nodes[1].Kill()
	c.Nodes[2].Resume()
	c.Nodes[3].Resume()
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "brokers 2 and 3 back in the metadata, the partitions leaderless", func() bool {
		_, brokers, _ := partitionState(ctx, b2, "none")
		p1, _, ok1 := partitionState(ctx, b2, "by-topic")
		p2, _, ok2 := partitionState(ctx, b2, "by-default")
		return slices.Contains(brokers, 2) && slices.Contains(brokers, 3) && ok1 && ok2 && p1.Leader == -1 && p2.Leader == -1
	})
	// A bounded look that nothing elects them meanwhile: the default is false.
	settle := time.NewTimer(time.Second)
	<-settle.C
	if p, _, _ := partitionState(ctx, b2, "by-topic"); p.Leader != -1 {
		t.Fatalf("by-topic got leader %d with unclean.leader.election.enable=false", p.Leader)
	}

	adm := kadm.NewClient(b2)
	on := kmsg.StringPtr("true")
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: on}}, "by-topic")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("set unclean.leader.election.enable on by-topic: %v %v", err, rs)
	}
	uncleanLeader := func(topic string) func() bool {
		return func() bool {
			p, _, ok := partitionState(ctx, b2, topic)
			// It starts with an ISR of itself; the other revived replica may catch up
			// and join before we look, the dead broker 1 never.
			return ok && (p.Leader == 2 || p.Leader == 3) && slices.Contains(p.ISR, p.Leader) && !slices.Contains(p.ISR, 1)
		}
	}
	WaitFor(t, 10*time.Second, "an out-of-ISR replica to lead by-topic", uncleanLeader("by-topic"))
	if p, _, _ := partitionState(ctx, b2, "by-default"); p.Leader != -1 {
		t.Fatalf("by-default got leader %d from by-topic's setting", p.Leader)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: on}}); err != nil {
		t.Fatalf("set the cluster-wide unclean.leader.election.enable: %v", err)
	}
	WaitFor(t, 10*time.Second, "an out-of-ISR replica to lead by-default", uncleanLeader("by-default"))

	// The new leaders serve what they have, and take writes.
	survivors := NewClient(t, c.Nodes[2].Addr, kgo.SeedBrokers(c.Nodes[2].Addr, c.Nodes[3].Addr), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if off, err := send(ctx, survivors, "by-topic", "after"); err != nil || off != 5 {
		t.Fatalf("write to the unclean leader: offset %d, %v (want 5: only-on-1 is lost)", off, err)
	}
	if !strings.Contains(c.Nodes[100].Log(), "Unclean leader election") || !strings.Contains(c.Nodes[100].Log(), "may be lost") {
		t.Errorf("the controller did not log the unclean elections:\n%s", tail(c.Nodes[100].Log(), 40))
	}
}
