package kafkatest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
