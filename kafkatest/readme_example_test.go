package kafkatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// TestOrders is the README's "In your Go tests" example, kept here so it compiles
// and passes; change both together.
func TestOrders(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t,
		kafkatest.WithBrokers(3), // ids 0, 1, 2; three combined voters
		kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2"}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("first")

	old := c.WaitLeader("orders", 0)
	c.Kill(old) // as SIGKILL: no controlled shutdown, no clean log close
	// A new leader is elected once the controller fenced old (2 s).
	if leader := c.WaitLeader("orders", 0); leader == old {
		t.Fatal("no new leader")
	}
	produce("second")               // acks=all with the two brokers left
	c.Restart(old)                  // same ports, same data; recovers as after a crash
	c.WaitISR("orders", 0, 0, 1, 2) // caught up and back in the ISR
	p := c.Partition("orders", 0)   // leader, epochs, ISR; per replica: log start, LEO, HW, LSO
	for _, r := range p.ReplicaStates {
		if r.LogEndOffset != 2 {
			t.Fatalf("broker %d has LEO %d", r.Broker, r.LogEndOffset)
		}
	}
}

// TestOrdersUnderFaults is the README's second "In your Go tests" example, kept here
// so it compiles and passes; change both together.
func TestOrdersUnderFaults(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "1000"}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(3*time.Second), kgo.RequestTimeoutOverhead(time.Second), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("first")
	leader := c.WaitLeader("orders", 0)
	follower := (leader + 1) % 3

	c.Pause(follower) // as SIGSTOP: sockets open, nothing read or answered
	produce("second") // acks=all: answered once the leader dropped it from the ISR (1 s)
	c.Resume(follower)
	c.WaitISR("orders", 0, 0, 1, 2)

	c.Isolate(leader) // cut from every node and client: fenced after 2 s, another leads
	produce("third")  // franz-go times out on the old leader, finds the new one
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)

	rule := c.Fail(kmsg.Produce, kerr.NotEnoughReplicas, kafkatest.Times(2))
	produce("fourth") // retried by the client
	if rule.Fired() != 2 {
		t.Fatalf("%v", rule)
	}
}
