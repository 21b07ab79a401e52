package kafkatest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// exampleT stands in for the *testing.T a test passes to NewCluster: an example has
// none. In a test, write kafkatest.NewCluster(t, …).
type exampleT struct{ cleanups []func() }

func (e *exampleT) Helper()                           {}
func (e *exampleT) Cleanup(f func())                  { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "kafkatest-example")
	if err != nil {
		panic(err)
	}
	e.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// finish runs the cleanups last first, as testing does when a test ends.
func (e *exampleT) finish() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// A one-broker cluster with a seed topic; a franz-go client produces to it and reads
// the record back.
func ExampleNewCluster() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("greetings", 1, 1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("greetings"))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "greetings", Value: []byte("hello")}).FirstErr(); err != nil {
		panic(err)
	}
	fs := cl.PollFetches(ctx)
	fs.EachRecord(func(r *kgo.Record) { fmt.Printf("%s at offset %d\n", r.Value, r.Offset) })
	// Output: hello at offset 0
}

// Partition shows every replica's offsets as the brokers hold them.
func ExampleCluster_Partition() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	c.WaitISR("orders", 0, 0, 1, 2)
	c.WaitHighWatermark("orders", 0, 2)
	p := c.Partition("orders", 0)
	fmt.Println("replicas:", len(p.Replicas), "isr:", len(p.ISR))
	slices.SortFunc(p.ReplicaStates, func(a, b kafkatest.ReplicaSnapshot) int { return int(a.Broker - b.Broker) })
	for _, r := range p.ReplicaStates {
		// A follower learns the high watermark from its next fetch, so only the
		// leader's is certain here; every replica has both records (acks=all).
		fmt.Printf("broker %d: log start %d, LEO %d\n", r.Broker, r.LogStartOffset, r.LogEndOffset)
	}
	// Output:
	// replicas: 3 isr: 3
	// broker 0: log start 0, LEO 2
	// broker 1: log start 0, LEO 2
	// broker 2: log start 0, LEO 2
}

// Kill the leader of a partition: the controller fences it once its session times
// out and elects another in-sync replica; Restart brings it back on the same address
// and data, and it rejoins the ISR once it has caught up.
func ExampleCluster_Kill() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)

	c.Kill(old)
	leader := c.WaitLeader("orders", 0)
	fmt.Println("new leader elected:", leader != old)
	fmt.Println("ISR without the killed broker:", len(c.Partition("orders", 0).ISR))

	c.Restart(old)
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("back in the ISR:", len(c.Partition("orders", 0).ISR))
	// Output:
	// new leader elected: true
	// ISR without the killed broker: 2
	// back in the ISR: 3
}

// Shutdown is a controlled shutdown: the controller moves the broker's leaderships
// away before it stops, so clients see no unavailable partition.
func ExampleCluster_Shutdown() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)
	c.Shutdown(old)
	p := c.Partition("orders", 0)
	fmt.Println("leadership moved before Shutdown returned:", p.Leader >= 0 && p.Leader != old)
	fmt.Println("running:", c.Running(old))
	// Output:
	// leadership moved before Shutdown returned: true
	// running: false
}

// A cluster with three controller-only nodes: kill the active controller and
// another takes over.
func ExampleCluster_WaitActiveController() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(1), kafkatest.WithSeparateControllers(3))
	fmt.Println("controllers:", c.ControllerIDs(), "brokers:", c.BrokerIDs())
	old := c.WaitActiveController()
	c.Kill(old)
	fmt.Println("failed over:", c.WaitActiveController() != old)
	// Output:
	// controllers: [3000 3001 3002] brokers: [0]
	// failed over: true
}

// Pause a follower as SIGSTOP would: it stops fetching with its connections open,
// so the leader drops it from the ISR after replica.lag.time.max.ms and acks=all
// produces go on with the others; resumed, it catches up and rejoins.
func ExampleCluster_Pause() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "1000"}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(v string) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	produce("a") // the client now knows the leader
	c.WaitISR("orders", 0, 0, 1, 2)
	leader := c.WaitLeader("orders", 0)
	follower := (leader + 1) % 3

	c.Pause(follower)
	produce("b") // answered once the leader has dropped the paused follower
	fmt.Println("ISR while paused:", len(c.Partition("orders", 0).ISR))
	c.Resume(follower)
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("ISR after Resume:", len(c.Partition("orders", 0).ISR))
	// Output:
	// ISR while paused: 2
	// ISR after Resume: 3
}

// Isolate the leader: its sockets stay open but carry nothing, so its heartbeats stop
// reaching the controller, which fences it and elects another replica; Heal lets it
// back, and it rejoins the ISR.
func ExampleCluster_Isolate() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3))
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)

	c.Isolate(old) // as c.Cut(old, x) for every other node x and kafkatest.Clients
	fmt.Println("new leader elected:", c.WaitLeader("orders", 0) != old)
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)
	fmt.Println("back in the ISR:", len(c.Partition("orders", 0).ISR))
	// Output:
	// new leader elected: true
	// back in the ISR: 3
}

// Delay adds latency to a link, here between the clients and the broker.
func ExampleCluster_Delay() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		panic(err)
	}

	c.Delay(kafkatest.Clients, 0, 100*time.Millisecond) // each way
	start := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		panic(err)
	}
	fmt.Println("at least a 200 ms round trip:", time.Since(start) >= 200*time.Millisecond)
	// Output: at least a 200 ms round trip: true
}

// Fail the next two produces with a retriable error: the client retries, and the
// record is written once.
func ExampleCluster_Fail() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	rule := c.Fail(kmsg.Produce, kerr.NotEnoughReplicas, kafkatest.Times(2))
	// franz-go refreshes its metadata before it retries, at most every MetadataMinAge
	// (5 s by default).
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr()
	fmt.Println("produce error:", err)
	fmt.Println("rule fired:", rule.Fired(), "still active:", rule.Active())
	// Output:
	// produce error: <nil>
	// rule fired: 2 still active: false
}

// Intercept combines a delay with an answer, or lets the request through after the
// delay; rules can be narrowed to brokers, topics, partitions and clients.
func ExampleCluster_Intercept() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1), kafkatest.WithTopic("u", 1, 1))
	rule := c.Intercept(kmsg.Produce, kafkatest.Action{Delay: 50 * time.Millisecond, Err: kerr.TopicAuthorizationFailed},
		kafkatest.OnTopic("u"), kafkatest.FromClients())
	defer rule.Remove()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Println("t:", cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
	fmt.Println("u:", errors.Is(cl.ProduceSync(ctx, &kgo.Record{Topic: "u", Value: []byte("v")}).FirstErr(), kerr.TopicAuthorizationFailed))
	fmt.Println(rule)
	// Output:
	// t: <nil>
	// u: true
	// rule 1: Produce → delay 50ms, then TOPIC_AUTHORIZATION_FAILED (fired 1)
}

// A cluster pretending to be Kafka 2.8: ApiVersions lists 2.8's versions (as far as
// gokafkad serves them), and franz-go negotiates down to them.
func ExampleAsVersion() {
	t := &exampleT{}
	defer t.finish()

	c := kafkatest.NewCluster(t, kafkatest.AsVersion("2.8"), kafkatest.WithMaxVersion(kmsg.Fetch, 11))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		panic(err)
	}
	for _, k := range resp.ApiKeys {
		switch kmsg.Key(k.ApiKey) {
		case kmsg.Produce, kmsg.Fetch, kmsg.ApiVersions:
			fmt.Printf("%s v%d-%d\n", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
	}
	// Output:
	// Produce v0-9
	// Fetch v4-11
	// ApiVersions v0-3
}
