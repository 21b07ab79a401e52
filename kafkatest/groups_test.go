package kafkatest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupMember runs a group consumer of topic until the test ends.
func groupMember(t *testing.T, c *kafkatest.Cluster, group, topic, clientID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := client(t, c, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(clientID),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.AutoCommitInterval(100 * time.Millisecond)}, opts...)...)
	pctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			cl.PollFetches(pctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cl
}

func TestGroupsShowMembersAssignmentsAndLag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ  string
		opts []kgo.Opt
	}{
		{"classic", nil},
		{"consumer", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			c := kafkatest.NewCluster(t, kafkatest.WithTopic("orders", 4, 1),
				kafkatest.WithBrokerConfig(map[string]string{"group.initial.rebalance.delay.ms": "0"}))
			pcl := client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for p := range int32(4) {
				for i := range 3 {
					if err := pcl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}
			groupMember(t, c, "g", "orders", "member-a", tc.opts...)
			groupMember(t, c, "g", "orders", "member-b", tc.opts...)
			var g kafkatest.GroupSnapshot
			waitFor(t, "a Stable group of two members owning every partition, all committed", func() bool {
				var ok bool
				if g, ok = c.Group("g"); !ok || g.State != "Stable" || len(g.Members) != 2 || len(g.Offsets) != 4 {
					return false
				}
				var owned []int32
				for _, m := range g.Members {
					owned = append(owned, m.Assignment["orders"]...)
				}
				slices.Sort(owned)
				for _, o := range g.Offsets {
					if o.Offset != 3 || o.Lag != 0 {
						return false
					}
				}
				return slices.Equal(owned, []int32{0, 1, 2, 3})
			})
			if g.Type != tc.typ || g.ProtocolType != "consumer" || g.Coordinator != 0 || g.Generation < 1 || g.Protocol == "" {
				t.Fatalf("group %+v", g)
			}
			clients := []string{g.Members[0].ClientID, g.Members[1].ClientID}
			slices.Sort(clients)
			if !slices.Equal(clients, []string{"member-a", "member-b"}) || g.Members[0].ClientHost == "" || g.Members[0].MemberEpoch < 1 {
				t.Fatalf("members %+v", g.Members)
			}
			// Lag: two more records on partition 0.
			for range 2 {
				if err := pcl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if gs := c.Groups(); len(gs) != 1 || gs[0].ID != "g" {
				t.Fatalf("Groups() = %+v", gs)
			}
			waitFor(t, "the group to consume the new records", func() bool {
				g, _ = c.Group("g")
				return len(g.Offsets) == 4 && g.Offsets[0].Offset == 5 && g.Offsets[0].EndOffset == 5
			})
		})
	}
}

func TestTransactionsShowOpenOnes(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("orders", 2, 1))
	cl := client(t, c, kgo.TransactionalID("tx-1"), kgo.TransactionTimeout(45*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if got := c.Transactions(); len(got) != 0 {
		t.Fatalf("before any transaction: %+v", got)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txns := c.Transactions()
	if len(txns) != 1 {
		t.Fatalf("Transactions() = %+v, want tx-1", txns)
	}
	tx := txns[0]
	want := []kafkatest.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
	if tx.TransactionalID != "tx-1" || tx.State != "Ongoing" || tx.ProducerID < 0 || tx.ProducerEpoch < 0 ||
		!slices.Equal(tx.Partitions, want) || tx.Timeout != 45*time.Second || tx.Coordinator != 0 ||
		time.Since(tx.Started) > time.Minute || time.Since(tx.Started) < 0 {
		t.Fatalf("open transaction %+v", tx)
	}
	if err := cl.EndTransaction(ctx(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the committed transaction to be gone", func() bool { return len(c.Transactions()) == 0 })
}
