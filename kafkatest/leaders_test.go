package kafkatest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// steady keeps brokers registered through a busy machine's pauses: these tests
// fence nobody on purpose, and a broker fenced by a slow heartbeat would move the
// leaderships they check.
var steady = kafkatest.WithBrokerConfig(map[string]string{"broker.session.timeout.ms": "10000"})

// passProduce counts the clients' Produce requests for topic that broker id serves,
// letting them through.
func passProduce(c *kafkatest.Cluster, topic string, id int32) *kafkatest.Rule {
	return c.Intercept(kmsg.Produce, kafkatest.Action{Respond: func(kmsg.Request) kmsg.Response { return nil }},
		kafkatest.OnBrokers(id), kafkatest.OnTopic(topic), kafkatest.FromClients())
}

// metadataISR returns the leader and ISR of partition p of topic as a client's
// Metadata request sees them.
func metadataISR(t *testing.T, cl *kgo.Client, topic string, p int32) (int32, []int32) {
	t.Helper()
	md, err := kadm.NewClient(cl).Metadata(ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	pd := md.Topics[topic].Partitions[p]
	isr := slices.Clone(pd.ISR)
	slices.Sort(isr)
	return pd.Leader, isr
}

func TestMoveLeaderProduceGoesToNewLeader(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3), steady)
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	from := c.WaitLeader("orders", 0)
	before := c.Partition("orders", 0)
	to := (from + 1) % 3
	c.WaitISR("orders", 0, 0, 1, 2)
	served := passProduce(c, "orders", to)
	c.MoveLeader("orders", 0, to)

	after := c.Partition("orders", 0)
	if after.Leader != to || after.LeaderEpoch <= before.LeaderEpoch || after.Replicas[0] != to {
		t.Fatalf("after MoveLeader(%d): %+v (before %+v)", to, after, before)
	}
	// The client still thinks from leads: it is told NOT_LEADER_OR_FOLLOWER, refreshes
	// its metadata and produces to to.
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if served.Fired() == 0 {
		t.Fatalf("no produce reached the new leader %d", to)
	}
	if leader, _ := metadataISR(t, cl, "orders", 0); leader != to {
		t.Fatalf("Metadata names leader %d, want %d", leader, to)
	}
	if got := consume(t, c, "orders", 2); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("consumed %v", got)
	}
	// Moving to the leader does nothing.
	now := c.Partition("orders", 0)
	c.MoveLeader("orders", 0, now.Leader)
	if p := c.Partition("orders", 0); p.LeaderEpoch != now.LeaderEpoch {
		t.Fatalf("MoveLeader to the leader bumped the epoch: %+v", p)
	}
}

func TestMoveLeaderRefuses(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("one", 1, 1), kafkatest.WithTopic("two", 1, 2))
	k := c.Controls()
	leader := c.WaitLeader("one", 0)
	for _, tc := range []struct {
		topic   string
		p, to   int32
		wantErr string
	}{
		{"one", 0, 1 - leader, "is not a replica"},
		{"nope", 0, 0, `no topic "nope"`},
		{"two", 5, 0, "has no partition 5"},
	} {
		err := k.MoveLeader(context.Background(), tc.topic, tc.p, tc.to)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("MoveLeader(%s, %d, %d) = %v, want %q", tc.topic, tc.p, tc.to, err, tc.wantErr)
		}
	}
	if err := k.ShrinkISR(context.Background(), "two", 0, c.WaitLeader("two", 0)); err == nil || !strings.Contains(err.Error(), "never leaves its own ISR") {
		t.Errorf("ShrinkISR of the leader = %v", err)
	}
}

func TestElectPreferredLeaders(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3), steady)
	preferred := c.Partition("orders", 0).Replicas[0]
	c.WaitISR("orders", 0, 0, 1, 2)
	// A controlled shutdown moves the leadership away; the restarted broker rejoins
	// the ISR as a follower.
	c.Shutdown(preferred)
	other := c.WaitLeader("orders", 0)
	c.Restart(preferred)
	c.WaitISR("orders", 0, 0, 1, 2)
	if l := c.WaitLeader("orders", 0); l == preferred {
		t.Fatalf("%d leads again before any election", l)
	}
	moves := c.ElectPreferredLeaders("orders")
	want := []kafkatest.LeaderMove{{Topic: "orders", Partition: 0, From: other, To: preferred}}
	if !slices.Equal(moves, want) {
		t.Fatalf("ElectPreferredLeaders = %+v, want %+v", moves, want)
	}
	if l := c.WaitLeader("orders", 0); l != preferred {
		t.Fatalf("leader %d, want %d", l, preferred)
	}
	if moves := c.ElectPreferredLeaders(); len(moves) != 0 {
		t.Fatalf("a second election moved %+v", moves)
	}
	produce(t, c, "orders", "a")
}

func TestShuffleLeaders(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("s", 6, 3), steady)
	for p := range int32(6) {
		c.WaitISR("s", p, 0, 1, 2)
	}
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(6) {
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "s", Partition: p, Value: []byte("before")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	moves := c.ShuffleLeaders("s")
	// Every partition, unless a follower fell out of the ISR meanwhile (a busy
	// machine can fence a broker).
	if len(moves) == 0 {
		t.Fatal("ShuffleLeaders moved nothing")
	}
	for _, m := range moves {
		if m.To == m.From || c.Partition("s", m.Partition).Leader != m.To {
			t.Fatalf("move %+v: partition %+v", m, c.Partition("s", m.Partition))
		}
	}
	for p := range int32(6) {
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "s", Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatalf("produce to s-%d after the shuffle: %v", p, err)
		}
	}
}

func TestShrinkISRThenReplicaRejoins(t *testing.T) {
	t.Parallel()
	// A separate controller: the cut below holds only the follower's fetches.
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("orders", 1, 3), steady)
	produce(t, c, "orders", "a")
	c.WaitISR("orders", 0, 0, 1, 2)
	leader := c.WaitLeader("orders", 0)
	follower := (leader + 1) % 3
	c.CutOneWay(follower, leader) // its fetches no longer arrive, so it cannot rejoin
	c.ShrinkISR("orders", 0, follower)

	cl := client(t, c)
	want := slices.DeleteFunc([]int32{0, 1, 2}, func(r int32) bool { return r == follower })
	if l, isr := metadataISR(t, cl, "orders", 0); l != leader || !slices.Equal(isr, want) {
		t.Fatalf("Metadata: leader %d ISR %v, want %d %v", l, isr, leader, want)
	}
	produce(t, c, "orders", "b") // acks=all with the smaller ISR
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)
	if _, isr := metadataISR(t, cl, "orders", 0); !slices.Equal(isr, []int32{0, 1, 2}) {
		t.Fatalf("Metadata ISR %v after the follower caught up", isr)
	}
}
