package integration

import (
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/kafkatest"
)

// TestStatusInProcessCluster: an in-process kafkatest cluster serves the metrics too
// (gokafkad.http.listener through WithBrokerConfig, each broker on its own free port,
// Broker(id).HTTPAddr()); killing a follower makes the leader report the partition
// under-replicated.
func TestStatusInProcessCluster(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{config.HTTPListenerKey: "127.0.0.1:0"}))
	leader := c.WaitLeader("orders", 0)
	addr := c.Broker(leader).HTTPAddr()
	const urp = "kafka_server_replicamanager_underreplicatedpartitions"
	WaitFor(t, 60*time.Second, "nothing under-replicated", func() bool {
		v, ok := scrapeMetric(t, addr, urp)
		return ok && v == 0
	})
	follower := c.BrokerIDs()[0]
	if follower == leader {
		follower = c.BrokerIDs()[1]
	}
	c.Kill(follower)
	WaitFor(t, 60*time.Second, "the leader to report orders-0 under-replicated", func() bool {
		v, ok := scrapeMetric(t, addr, urp)
		return ok && v == 1
	})
	for _, id := range c.BrokerIDs() {
		if id != follower && c.Broker(id).HTTPAddr() == "" {
			t.Errorf("broker %d serves no HTTP", id)
		}
	}
}
