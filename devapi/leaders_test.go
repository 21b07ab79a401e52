package devapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/devapi"
	"github.com/gokafkad/gokafkad/status"
)

// The leadership controls over HTTP, each watched by a franz-go producer.
func TestLeadershipControls(t *testing.T) {
	t.Parallel()
	c, srv := startAPI(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("a")
	c.WaitISR("orders", 0, 0, 1, 2)
	from := c.WaitLeader("orders", 0)
	to := (from + 1) % 3

	var p devapi.Partition
	if code := call(t, srv, "POST", "/v1/partitions/orders/0/move-leader", fmt.Sprintf(`{"to": %d}`, to), &p); code != 200 || p.Leader != to || p.Replicas[0] != to {
		t.Fatalf("move-leader: %d %+v", code, p)
	}
	produce("b")

	follower := (to + 1) % 3
	if code := call(t, srv, "POST", "/v1/partitions/orders/0/shrink-isr", fmt.Sprintf(`{"replica": %d}`, follower), &p); code != 200 {
		t.Fatalf("shrink-isr: %d %+v", code, p)
	}
	// The follower keeps fetching, so it rejoins.
	if code := call(t, srv, "POST", "/v1/partitions/orders/0/wait", `{"isr": [0, 1, 2]}`, &p); code != 200 {
		t.Fatalf("wait for the ISR: %d %+v", code, p)
	}

	var moves struct{ Moves []devapi.LeaderMove }
	if code := call(t, srv, "POST", "/v1/leaders/shuffle", `{"topics": ["orders"]}`, &moves); code != 200 || len(moves.Moves) != 1 || moves.Moves[0].From != to {
		t.Fatalf("shuffle: %d %+v", code, moves)
	}
	produce("c")
	if code := call(t, srv, "POST", "/v1/leaders/elect-preferred", "", &moves); code != 200 || len(moves.Moves) != 0 {
		t.Fatalf("elect-preferred after a shuffle (the new leaders are preferred): %d %+v", code, moves)
	}

	var e struct{ Error string }
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/v1/partitions/orders/0/move-leader", `{"to": 7}`, 409},
		{"/v1/partitions/orders/0/move-leader", `{}`, 400},
		{"/v1/partitions/nope/0/move-leader", `{"to": 1}`, 404},
		{"/v1/partitions/orders/0/shrink-isr", fmt.Sprintf(`{"replica": %d}`, c.WaitLeader("orders", 0)), 409},
		{"/v1/leaders/shuffle", `{"topics": ["nope"]}`, 404},
		{"/v1/leaders/bogus", ``, 404},
	} {
		if code := call(t, srv, "POST", tc.path, tc.body, &e); code != tc.code || e.Error == "" {
			t.Errorf("POST %s %s: %d %q, want %d", tc.path, tc.body, code, e.Error, tc.code)
		}
	}
}

func TestGroupsAndTransactions(t *testing.T) {
	t.Parallel()
	c, srv := startAPI(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("tx-api"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var txns struct{ Transactions []devapi.Transaction }
	if code := call(t, srv, "GET", "/v1/transactions", "", &txns); code != 200 || len(txns.Transactions) != 1 {
		t.Fatalf("transactions: %d %+v", code, txns)
	}
	if got := txns.Transactions[0]; got.TransactionalID != "tx-api" || got.State != "Ongoing" || got.StartTimeMs <= 0 ||
		!slices.Equal(got.Partitions, []devapi.TxnPartition{{Topic: "orders", Partition: 0}}) || got.TimeoutMs <= 0 {
		t.Fatalf("transaction %+v", got)
	}
	// The coordinator's status page shows it too.
	var node status.Node
	if code := call(t, srv, "GET", fmt.Sprintf("/nodes/%d/v1/status", txns.Transactions[0].Coordinator), "", &node); code != 200 ||
		len(node.Transactions) != 1 || node.Transactions[0].TransactionalID != "tx-api" || !slices.Equal(node.Transactions[0].Partitions, []string{"orders-0"}) {
		t.Fatalf("status of the transaction's coordinator: %d %+v", code, node.Transactions)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for call(t, srv, "GET", "/v1/transactions", "", &txns); len(txns.Transactions) > 0; call(t, srv, "GET", "/v1/transactions", "", &txns) {
		if time.Now().After(deadline) {
			t.Fatalf("the committed transaction is still listed: %+v", txns)
		}
		time.Sleep(10 * time.Millisecond)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("orders"),
		kgo.ClientID("reader-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for n := 0; n < 1; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	var g devapi.Group
	if code := call(t, srv, "GET", "/v1/groups/readers", "", &g); code != 200 || g.State != "Stable" || g.Type != "classic" ||
		len(g.Members) != 1 || g.Members[0].ClientID != "reader-1" || !slices.Equal(g.Members[0].Assignment["orders"], []int32{0}) ||
		len(g.Offsets) != 1 || g.Offsets[0].EndOffset != 2 || g.Offsets[0].Lag != 2-g.Offsets[0].Offset {
		// The end is 2: the record and the commit marker, which a consumer's
		// committed offset may or may not have passed (the lag counts it, as in
		// kafka-consumer-groups).
		t.Fatalf("group: %d %+v", code, g)
	}
	node = status.Node{}
	if code := call(t, srv, "GET", fmt.Sprintf("/nodes/%d/v1/status", g.Coordinator), "", &node); code != 200 ||
		len(node.Groups) != 1 || node.Groups[0].GroupID != "readers" || len(node.Groups[0].Members) != 1 || node.Groups[0].Members[0].ClientID != "reader-1" {
		t.Fatalf("status of the group's coordinator: %d %+v", code, node.Groups)
	}
	var gs struct{ Groups []devapi.Group }
	if code := call(t, srv, "GET", "/v1/groups", "", &gs); code != 200 || len(gs.Groups) != 1 || gs.Groups[0].GroupID != "readers" {
		t.Fatalf("groups: %d %+v", code, gs)
	}
	var e struct{ Error string }
	if code := call(t, srv, "GET", "/v1/groups/nope", "", &e); code != 404 || e.Error == "" {
		t.Fatalf("unknown group: %d %q", code, e.Error)
	}
}
