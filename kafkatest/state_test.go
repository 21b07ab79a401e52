package kafkatest_test

import (
	"slices"
	"testing"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// TestIntrospection: Image, Partitions and ActiveController say what the cluster
// holds, and a partition's snapshot carries its ELR once the ISR fell below
// min.insync.replicas (KIP-966, on by default).
func TestIntrospection(t *testing.T) {
	t.Parallel()
	// A separate controller, so that killing two brokers keeps the quorum.
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("orders", 2, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2"}))
	if img := c.Image(); img == nil || len(img.Brokers) != 3 || img.Topics["orders"] == nil {
		t.Fatalf("image %+v", img)
	}
	if id := c.ActiveController(); id != kafkatest.SeparateControllerIDBase {
		t.Fatalf("active controller %d, voters %v", id, c.ControllerIDs())
	}
	var got []string
	for _, p := range c.Partitions() {
		if p.Topic == "orders" {
			got = append(got, p.Topic+"-"+string(rune('0'+p.Partition)))
			if len(p.ReplicaStates) != 3 || len(p.ELR) != 0 {
				t.Fatalf("partition %+v", p)
			}
		}
	}
	if !slices.Equal(got, []string{"orders-0", "orders-1"}) {
		t.Fatalf("partitions of orders: %v", got)
	}

	// Kill both followers of orders-0: the first leaves the ISR at min ISR (2), the
	// second below it, and is kept as an eligible leader replica.
	leader := c.WaitLeader("orders", 0)
	var followers []int32
	for _, id := range c.BrokerIDs() {
		if id != leader {
			followers = append(followers, id)
		}
	}
	c.Kill(followers[0])
	c.WaitISR("orders", 0, leader, followers[1])
	c.Kill(followers[1])
	c.WaitISR("orders", 0, leader)
	if p := c.Partition("orders", 0); !slices.Equal(p.ELR, []int32{followers[1]}) {
		t.Fatalf("ELR %v after %d left an ISR below min ISR (partition %+v)", p.ELR, followers[1], p)
	}
}
