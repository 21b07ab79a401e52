package integration

import (
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type throttleCount struct{ n atomic.Int64 }

func (h *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestClientQuotasOnASeparateControllerCluster: a quota set through a broker-only
// node is forwarded to the controller, reaches every broker's metadata (each
// describes it), and is enforced by the broker leading the partition (broker 2,
// which was not asked).
func TestClientQuotasOnASeparateControllerCluster(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker"}, fastLifecycle)
	ctx := Ctx(t, 90*time.Second)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...))
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "2 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b2, "none")
		return len(brokers) == 2
	})
	createAssigned(t, cl, "quoted", 2)

	id := "quoted-producer"
	adm := kadm.NewClient(NewClient(t, c.Nodes[1].Addr))
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10000}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas through broker 1: %v %+v", err, res)
	}
	for _, bid := range c.Brokers {
		b := kadm.NewClient(NewClient(t, c.Nodes[bid].Addr))
		WaitFor(t, 15*time.Second, "the quota in every broker's DescribeClientQuotas", func() bool {
			q, err := b.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &id}})
			return err == nil && len(q) == 1 && len(q[0].Values) == 1 && q[0].Values[0].Value == 10000
		})
	}

	var h throttleCount
	p := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.ClientID(id), kgo.WithHooks(&h), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite())
	v := make([]byte, 200_000) // 200 kB over 10 s: twice the 10 kB/s quota
	rand.Read(v)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "quoted", Value: v}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if h.n.Load() == 0 {
		t.Fatal("the producer over its quota was not told throttle_time_ms by the partition's leader")
	}
}
