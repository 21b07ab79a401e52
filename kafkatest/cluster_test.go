package kafkatest_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// client returns a franz-go client seeded with the cluster, closed with the test.
func client(t *testing.T, c *kafkatest.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produce writes values to partition 0 of topic with acks=all.
func produce(t *testing.T, c *kafkatest.Cluster, topic string, values ...string) {
	t.Helper()
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, v := range values {
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
}

// consume reads n records of topic from the start and returns their values.
func consume(t *testing.T, c *kafkatest.Cluster, topic string, n int) []string {
	t.Helper()
	cl := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx(t))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s after %v: %v", topic, out, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func TestProduceConsumeSingleBroker(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("events", 3, 1))
	if got := len(c.Addrs()); got != 1 {
		t.Fatalf("Addrs() = %v, want one broker", c.Addrs())
	}
	produce(t, c, "events", "a", "b", "c")
	if got := consume(t, c, "events", 3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %v", got)
	}
	c.WaitHighWatermark("events", 0, 3)
	p := c.Partition("events", 0)
	if p.Leader != 0 || !slices.Equal(p.ISR, []int32{0}) || len(p.ReplicaStates) != 1 {
		t.Fatalf("partition %+v", p)
	}
	r := p.ReplicaStates[0]
	if !r.Running || !r.IsLeader || r.LogStartOffset != 0 || r.LogEndOffset != 3 || r.HighWatermark != 3 || r.LastStableOffset != 3 || r.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("replica %+v", r)
	}
	if p := c.Partition("events", 1); p.ReplicaStates[0].LogEndOffset != 0 {
		t.Fatalf("partition 1 got records: %+v", p)
	}
	if p := c.Partition("nope", 0); p.Leader != -1 || p.Replicas != nil {
		t.Fatalf("unknown partition %+v", p)
	}
}

// TestKillLeaderElectsNewLeaderRestartRejoinsISR: in a three-broker cluster (three
// combined voters), killing a partition's leader gets a new leader elected once the
// controller fences it; acks=all produces go on with the smaller ISR; the killed broker
// restarts on the same address and data, catches up and is back in the ISR.
func TestKillLeaderElectsNewLeaderRestartRejoinsISR(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	if got := c.ControllerIDs(); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("ControllerIDs() = %v", got)
	}
	addrs := c.Addrs()
	produce(t, c, "orders", "1", "2")
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)
	epoch := c.Partition("orders", 0).LeaderEpoch

	c.Kill(old)
	if c.Running(old) || c.Broker(old) != nil {
		t.Fatalf("broker %d still running after Kill", old)
	}
	leader := c.WaitLeader("orders", 0)
	if leader == old {
		t.Fatalf("leader is still the killed broker %d", old)
	}
	p := c.Partition("orders", 0)
	if p.LeaderEpoch <= epoch || slices.Contains(p.ISR, old) {
		t.Fatalf("after the kill: %+v (old epoch %d)", p, epoch)
	}
	produce(t, c, "orders", "3")
	if got := consume(t, c, "orders", 3); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("consumed %v", got)
	}

	c.Restart(old)
	if !slices.Equal(c.Addrs(), addrs) {
		t.Fatalf("addresses changed across the restart: %v, were %v", c.Addrs(), addrs)
	}
	if e := c.Broker(old).LogManager().CleanShutdownBrokerEpoch(); e != -1 {
		t.Fatalf("a killed broker came back with a clean-shutdown marker (epoch %d)", e)
	}
	c.WaitISR("orders", 0, 0, 1, 2)
	c.WaitHighWatermark("orders", 0, 3)
	after := c.Partition("orders", 0)
	for _, r := range after.ReplicaStates {
		// The HW is the least LEO the leader knows of its ISR: each replica's
		// fetched LEO is at 3, with nothing left to fetch.
		if !r.Running || r.LogEndOffset != 3 || r.FetchedLogEndOffset != 3 || r.Lag != 0 {
			t.Fatalf("replica %+v after the restart, want LEO 3 with no lag", r)
		}
		if r.Broker != after.Leader && r.LastCaughtUp.IsZero() {
			t.Fatalf("follower %+v was never caught up", r)
		}
	}
}

// TestShutdownMovesLeadershipCleanly: a controlled shutdown moves leadership away
// before the broker stops, and its logs are closed cleanly (the restart finds the
// clean-shutdown marker).
func TestShutdownMovesLeadershipCleanly(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("t", 1, 3))
	produce(t, c, "t", "x")
	c.WaitISR("t", 0, 0, 1, 2)
	old := c.WaitLeader("t", 0)
	c.Shutdown(old)
	if p := c.Partition("t", 0); p.Leader == old || p.Leader < 0 {
		t.Fatalf("leadership did not move before the shutdown ended: %+v", p)
	}
	c.Restart(old)
	if e := c.Broker(old).LogManager().CleanShutdownBrokerEpoch(); e < 0 {
		t.Fatalf("a cleanly shut down broker came back without its clean-shutdown marker")
	}
	c.WaitISR("t", 0, 0, 1, 2)
	// Restart of a running node shuts it down first.
	c.Restart(old)
	c.WaitISR("t", 0, 0, 1, 2)
}

func TestSeparateController(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("t", 1, 2))
	if got := c.ControllerIDs(); !slices.Equal(got, []int32{kafkatest.SeparateControllerIDBase}) {
		t.Fatalf("ControllerIDs() = %v", got)
	}
	if got := c.BrokerIDs(); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("BrokerIDs() = %v", got)
	}
	if c.Broker(kafkatest.SeparateControllerIDBase).Addr() != "" {
		t.Fatal("the controller-only node has a client listener")
	}
	produce(t, c, "t", "v")
	c.WaitISR("t", 0, 0, 1)
	c.WaitHighWatermark("t", 0, 1)
	// The controller restarts on its port; the brokers follow it again.
	c.Kill(kafkatest.SeparateControllerIDBase)
	c.Restart(kafkatest.SeparateControllerIDBase)
	produce(t, c, "t", "w")
	if got := consume(t, c, "t", 2); !slices.Equal(got, []string{"v", "w"}) {
		t.Fatalf("consumed %v", got)
	}
}

// TestParallelClustersDoNotInterfere: clusters started at the same time by parallel
// tests have their own ports, data and topics.
func TestParallelClustersDoNotInterfere(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.NewCluster(t, kafkatest.WithTopic("shared-name", 1, 1))
			v := fmt.Sprintf("from cluster %d", i)
			produce(t, c, "shared-name", v)
			if got := consume(t, c, "shared-name", 1); !slices.Equal(got, []string{v}) {
				t.Fatalf("consumed %v, want only %q", got, v)
			}
			if hw := c.Partition("shared-name", 0).ReplicaStates[0].HighWatermark; hw != 1 {
				t.Fatalf("high watermark %d, want 1 (another cluster's record?)", hw)
			}
		})
	}
}

// TestBrokerConfigApplies: Kafka's keys given with WithBrokerConfig reach the brokers.
func TestBrokerConfigApplies(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfig(map[string]string{"num.partitions": "4"}))
	adm := kadm.NewClient(client(t, c))
	resp, err := adm.CreateTopic(ctx(t), -1, -1, nil, "defaulted")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	c.WaitLeader("defaulted", 3)
	if p := c.Partition("defaulted", 4); p.Replicas != nil {
		t.Fatalf("a fifth partition: %+v", p)
	}
}

// fatalTB records the first Fatalf and ends the goroutine, as testing does.
type fatalTB struct {
	*testing.T
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func fatalOf(t *testing.T, fn func(kafkatest.TB)) string {
	f := &fatalTB{T: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}

// TestRefusedOptions: what kafkatest cannot honour stops NewCluster with a message
// naming it.
func TestRefusedOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []kafkatest.Option
		want string
	}{
		{[]kafkatest.Option{kafkatest.WithBrokerConfig(map[string]string{"listeners": "PLAINTEXT://:9092"})}, "listeners"},
		{[]kafkatest.Option{kafkatest.WithBrokerConfig(map[string]string{"log.retention.ms": "soon"})}, "log.retention.ms"},
		{[]kafkatest.Option{kafkatest.WithBrokers(0)}, "WithBrokers(0)"},
		{[]kafkatest.Option{kafkatest.WithCombinedVoters(3)}, "WithCombinedVoters(3)"},
		{[]kafkatest.Option{kafkatest.WithTopic("t", 1, 2)}, `WithTopic("t", 1, 2)`},
	} {
		msg := fatalOf(t, func(tb kafkatest.TB) { kafkatest.NewCluster(tb, tc.opts...) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("NewCluster failed with %q, want a message naming %s", msg, tc.want)
		}
	}
}

func TestControlsOnStoppedNodeFail(t *testing.T) {
	t.Parallel()
	msg := fatalOf(t, func(tb kafkatest.TB) {
		c := kafkatest.NewCluster(tb)
		c.Kill(0)
		c.Kill(0)
	})
	if !strings.Contains(msg, "Kill(0): the node is not running") {
		t.Fatalf("a second Kill failed with %q", msg)
	}
}

// TestKillRestartSingleNodeRecovers: the only node (broker and voter) is killed and
// restarts on its address and data; the records it acknowledged are read back.
func TestKillRestartSingleNodeRecovers(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	produce(t, c, "t", "a", "b")
	c.Kill(0)
	c.Restart(0)
	if e := c.Broker(0).LogManager().CleanShutdownBrokerEpoch(); e != -1 {
		t.Fatalf("clean-shutdown marker after a kill (epoch %d)", e)
	}
	c.WaitLeader("t", 0)
	produce(t, c, "t", "c")
	if got := consume(t, c, "t", 3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %v", got)
	}
}

// TestWaitTimesOutNamingWhat: a wait that never comes true fails the test after the
// wait timeout, saying what it waited for and what it saw.
func TestWaitTimesOutNamingWhat(t *testing.T) {
	t.Parallel()
	msg := fatalOf(t, func(tb kafkatest.TB) {
		c := kafkatest.NewCluster(tb, kafkatest.WithTopic("t", 1, 1), kafkatest.WithWaitTimeout(time.Second))
		c.WaitHighWatermark("t", 0, 5)
	})
	if !strings.Contains(msg, "timed out after 1s waiting for high watermark 5 of t-0") {
		t.Fatalf("WaitHighWatermark failed with %q", msg)
	}
	msg = fatalOf(t, func(tb kafkatest.TB) {
		c := kafkatest.NewCluster(tb, kafkatest.WithTopic("t", 1, 1), kafkatest.WithWaitTimeout(time.Second))
		c.WaitISR("t", 0, 0, 7)
	})
	if !strings.Contains(msg, "waiting for ISR [0 7] of t-0") {
		t.Fatalf("WaitISR failed with %q", msg)
	}
}

// TestKillActiveSeparateController: with three separate controllers, killing the
// active one gets another elected, and the brokers take admin requests and writes
// through it; the killed controller restarts on its port and rejoins.
func TestKillActiveSeparateController(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(1), kafkatest.WithSeparateControllers(3))
	if got := c.ControllerIDs(); !slices.Equal(got, []int32{3000, 3001, 3002}) {
		t.Fatalf("ControllerIDs() = %v", got)
	}
	old := c.WaitActiveController()
	c.Kill(old)
	if now := c.WaitActiveController(); now == old {
		t.Fatalf("the killed controller %d is still active", old)
	}
	adm := kadm.NewClient(client(t, c))
	if resp, err := adm.CreateTopic(ctx(t), 1, 1, nil, "after-failover"); err != nil || resp.Err != nil {
		t.Fatalf("create after the controller failover: %v %v", err, resp.Err)
	}
	c.WaitLeader("after-failover", 0)
	produce(t, c, "after-failover", "v")
	c.Restart(old)
	if !c.Running(old) {
		t.Fatalf("controller %d not running after Restart", old)
	}
	c.WaitHighWatermark("after-failover", 0, 1)
}

// TestSeedTopicConfigs: WithTopicConfig's Kafka keys reach the topic; a value the
// broker refuses stops NewCluster with the broker's message.
func TestSeedTopicConfigs(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("compacted", 1, 1),
		kafkatest.WithTopicConfig("compacted", map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "1"}))
	adm := kadm.NewClient(client(t, c))
	rcs, err := adm.DescribeTopicConfigs(ctx(t), "compacted")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("compacted", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cfg := range rc.Configs {
		if cfg.Value != nil {
			got[cfg.Key] = *cfg.Value
		}
	}
	if got["cleanup.policy"] != "compact" || got["min.insync.replicas"] != "1" {
		t.Fatalf("configs %v", got)
	}

	for _, tc := range []struct {
		opts []kafkatest.Option
		want string
	}{
		{[]kafkatest.Option{kafkatest.WithTopic("t", 1, 1), kafkatest.WithTopicConfig("t", map[string]string{"cleanup.policy": "sometimes"})}, "cleanup.policy"},
		{[]kafkatest.Option{kafkatest.WithTopicConfig("nowhere", map[string]string{"cleanup.policy": "compact"})}, `WithTopicConfig("nowhere")`},
	} {
		msg := fatalOf(t, func(tb kafkatest.TB) { kafkatest.NewCluster(tb, tc.opts...) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("NewCluster failed with %q, want a message naming %s", msg, tc.want)
		}
	}
}

// TestFixedBrokerPorts: WithBrokerPorts puts the brokers on the ports given, and
// restarts keep them.
func TestFixedBrokerPorts(t *testing.T) {
	t.Parallel()
	var ports []int
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithBrokerPorts(ports...), kafkatest.WithTopic("t", 1, 2))
	want := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	if !slices.Equal(c.Addrs(), want) {
		t.Fatalf("Addrs() = %v, want %v", c.Addrs(), want)
	}
	c.Kill(1)
	c.Restart(1)
	if !slices.Equal(c.Addrs(), want) || c.Broker(1).Addr() != want[1] {
		t.Fatalf("after a restart Addrs() = %v, want %v", c.Addrs(), want)
	}
	produce(t, c, "t", "v")
	if msg := fatalOf(t, func(tb kafkatest.TB) { kafkatest.NewCluster(tb, kafkatest.WithBrokerPorts(1, 2)) }); !strings.Contains(msg, "one port per broker") {
		t.Fatalf("two ports for one broker: %q", msg)
	}
}
