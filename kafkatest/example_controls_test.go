package kafkatest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// exampleClient is a franz-go client of c with acks=all, and a context for it.
func exampleClient(c *kafkatest.Cluster, opts ...kgo.Opt) (*kgo.Client, context.Context, func()) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	return cl, ctx, func() { cancel(); cl.Close() }
}

// MoveLeader moves a partition's leadership as kafka-reassign-partitions and
// kafka-leader-election would: the leader epoch goes up, and a producer that still
// writes to the old leader is told NOT_LEADER_OR_FOLLOWER and follows.
func ExampleCluster_MoveLeader() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	cl, ctx, done := exampleClient(c)
	defer done()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("a")}).FirstErr(); err != nil {
		panic(err)
	}
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.Partition("orders", 0)
	to := (old.Leader + 1) % 3

	c.MoveLeader("orders", 0, to)
	p := c.Partition("orders", 0)
	fmt.Println("moved:", p.Leader == to, "epoch bumped:", p.LeaderEpoch > old.LeaderEpoch, "now preferred:", p.Replicas[0] == to)
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("b")}).FirstErr()
	fmt.Println("produce to the new leader:", err)
	// Output:
	// moved: true epoch bumped: true now preferred: true
	// produce to the new leader: <nil>
}

// ElectPreferredLeaders gives leaderships back to the preferred replicas, here after
// a controlled shutdown moved one away.
func ExampleCluster_ElectPreferredLeaders() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	preferred := c.Partition("orders", 0).Replicas[0]
	c.WaitISR("orders", 0, 0, 1, 2)
	c.Shutdown(preferred)
	c.Restart(preferred)
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("preferred replica leads:", c.WaitLeader("orders", 0) == preferred)

	moves := c.ElectPreferredLeaders("orders")
	fmt.Println("moves:", len(moves), "preferred replica leads:", c.WaitLeader("orders", 0) == preferred)
	// Output:
	// preferred replica leads: false
	// moves: 1 preferred replica leads: true
}

// ShuffleLeaders gives every partition another in-sync leader at once, as franz-go
// kfake's ShufflePartitionLeaders, but with real elections.
func ExampleCluster_ShuffleLeaders() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 3, 3))
	for p := range int32(3) {
		c.WaitISR("orders", p, 0, 1, 2)
	}
	moves := c.ShuffleLeaders("orders")
	applied := len(moves) > 0
	for _, m := range moves {
		applied = applied && m.From != m.To && c.Partition("orders", m.Partition).Leader == m.To
	}
	fmt.Println("new leaders in place:", applied)
	// Output: new leaders in place: true
}

// ShrinkISR drops a follower from the ISR at once, as its leader would after
// replica.lag.time.max.ms; held back by a one-way cut it stays out, and once healed
// it catches up and rejoins.
func ExampleCluster_ShrinkISR() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("orders", 1, 3))
	c.WaitISR("orders", 0, 0, 1, 2)
	leader := c.WaitLeader("orders", 0)
	follower := (leader + 1) % 3

	c.CutOneWay(follower, leader) // its fetches stop arriving
	c.ShrinkISR("orders", 0, follower)
	fmt.Println("ISR:", len(c.Partition("orders", 0).ISR))
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("ISR after Heal:", len(c.Partition("orders", 0).ISR))
	// Output:
	// ISR: 2
	// ISR after Heal: 3
}

// CutOneWay cuts the replica fetches of one follower: the leader drops it from the
// ISR after replica.lag.time.max.ms (here 1 s), and Heal lets it back.
func ExampleCluster_CutOneWay() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"replica.lag.time.max.ms": "1000"}))
	cl, ctx, done := exampleClient(c)
	defer done()
	c.WaitISR("orders", 0, 0, 1, 2)
	leader := c.WaitLeader("orders", 0)
	follower := (leader + 1) % 3
	others := []int32{leader, (leader + 2) % 3}

	c.CutOneWay(follower, leader)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("a")}).FirstErr(); err != nil {
		panic(err) // answered once the leader dropped the follower
	}
	c.WaitISR("orders", 0, others...)
	fmt.Println("ISR while cut:", len(c.Partition("orders", 0).ISR))
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("ISR after Heal:", len(c.Partition("orders", 0).ISR))
	// Output:
	// ISR while cut: 2
	// ISR after Heal: 3
}

// Groups shows each consumer group's members, their assignments and the committed
// offsets with their lag, as kafka-consumer-groups --describe.
func ExampleCluster_Groups() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("orders", 2, 1),
		kafkatest.WithBrokerConfig(map[string]string{"group.initial.rebalance.delay.ms": "0"}))
	cl, ctx, done := exampleClient(c, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ClientID("billing-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer done()
	for i, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	for n := 0; n < 3 && ctx.Err() == nil; n += cl.PollFetches(ctx).NumRecords() {
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		panic(err)
	}
	g, _ := c.Group("billing")
	fmt.Println(g.ID, g.Type, g.State, "members:", len(g.Members), g.Members[0].ClientID, g.Members[0].Assignment)
	lag := int64(0)
	for _, o := range g.Offsets {
		lag += o.Lag
	}
	fmt.Println("partitions committed:", len(g.Offsets), "lag:", lag)
	// Output:
	// billing classic Stable members: 1 billing-1 map[orders:[0 1]]
	// partitions committed: 2 lag: 0
}

// Transactions lists the open transactions; a committed one is gone once its markers
// are written.
func ExampleCluster_Transactions() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("orders", 1, 1))
	cl, ctx, done := exampleClient(c, kgo.TransactionalID("checkout"))
	defer done()
	if err := cl.BeginTransaction(); err != nil {
		panic(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("a")}).FirstErr(); err != nil {
		panic(err)
	}
	for _, tx := range c.Transactions() {
		fmt.Println(tx.TransactionalID, tx.State, tx.Partitions, tx.Timeout)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		panic(err)
	}
	for len(c.Transactions()) > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("open after the commit:", len(c.Transactions()))
	// Output:
	// checkout Ongoing [{orders 0}] 40s
	// open after the commit: 0
}

// Respond answers a request with the test's own response, here DescribeCluster with
// a made-up cluster id for one client id.
func ExampleCluster_Respond() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t)
	rule := c.Respond(kmsg.DescribeCluster, func(req kmsg.Request) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = "made-up"
		return resp
	}, kafkatest.FromClientID("curious"), kafkatest.Once())
	cl, ctx, done := exampleClient(c, kgo.ClientID("curious"))
	defer done()
	for range 2 {
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil {
			panic(err)
		}
		fmt.Println("cluster id is made up:", resp.ClusterID == "made-up")
	}
	fmt.Println("fired:", rule.Fired())
	// Output:
	// cluster id is made up: true
	// cluster id is made up: false
	// fired: 1
}

// Controls returns errors instead of failing the test, for other goroutines and
// for checking what a control refuses.
func ExampleCluster_Controls() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("orders", 1, 2))
	k := c.Controls()
	errs := make(chan error, 1)
	go func() { errs <- k.Pause(1) }()
	fmt.Println("pause:", <-errs, "paused:", k.Paused())
	fmt.Println("again:", k.Pause(1))
	fmt.Println("resume:", k.Resume(1))
	// Output:
	// pause: <nil> paused: [1]
	// again: Pause(1): the node is already paused
	// resume: <nil>
}
