package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionsAcrossBrokers: 1 controller + 3 brokers, replication factor 3. A
// transaction spans partitions led by different brokers, so its markers travel as
// WriteTxnMarkers and the produce verifications as AddPartitionsToTxn verify_only to
// whichever broker coordinates the transactional id.
func TestTransactionsAcrossBrokers(t *testing.T) {
	extra := maps.Clone(fastLifecycle)
	maps.Copy(extra, map[string]string{
		"min.insync.replicas": "2", "default.replication.factor": "3",
		"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
		"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr": "2", "group.min.session.timeout.ms": "100",
	})
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	seeds := c.Seeds()
	adm := kadm.NewClient(NewClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	ctx := Ctx(t, 60*time.Second)
	b1 := NewClient(t, c.Nodes[1].Addr)
	WaitFor(t, 15*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b1, "none")
		return len(brokers) == 3
	})
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 15*time.Second, "leaders on every broker", func() bool {
		td, err := adm.ListTopics(ctx, "t")
		if err != nil || td["t"].Err != nil {
			return false
		}
		leaders := map[int32]bool{}
		for _, p := range td["t"].Partitions {
			if len(p.ISR) == 3 {
				leaders[p.Leader] = true
			}
		}
		return len(leaders) == 3
	})

	p := NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.TransactionalID("spread"),
		kgo.TransactionTimeout(10*time.Second), kgo.DefaultProduceTopic("t"))
	txn := func(commit bool, prefix string) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 30 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s%02d", prefix, i))})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v\n%s", err, c.Logs())
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end: %v\n%s", err, c.Logs())
		}
	}
	txn(true, "c")
	txn(false, "a")
	txn(true, "d")

	read := func(committed bool, n int) []string {
		iso := kgo.ReadUncommitted()
		if committed {
			iso = kgo.ReadCommitted()
		}
		cl := NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(iso),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		var out []string
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for len(out) < n {
			fs := cl.PollFetches(rctx)
			if rctx.Err() != nil {
				break
			}
			fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
		}
		sort.Strings(out)
		return out
	}
	if got := read(true, 61); len(got) != 60 || got[0] != "c00" || got[59] != "d29" {
		t.Fatalf("read_committed saw %d records: %v", len(got), got)
	}
	if got := read(false, 90); len(got) != 90 {
		t.Fatalf("read_uncommitted saw %d records", len(got))
	}

	// The coordinator's broker dies mid-transaction: a new leader of the id's
	// __transaction_state partition takes over, and the transaction can still commit
	// (or is fenced and retried by a new producer).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"spread"}
	r, err := fc.RequestWith(ctx, b1)
	if err != nil || r.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %+v", err, r)
	}
	dead := r.Coordinators[0].NodeID
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("orphan")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.Nodes[dead].Kill()
	p.Close()
	var live string
	for id, n := range c.Nodes {
		if id != dead && id != 100 {
			live = n.Addr
		}
	}
	p2 := NewClient(t, live, kgo.TransactionalID("spread"), kgo.TransactionTimeout(10*time.Second),
		kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	WaitFor(t, 30*time.Second, "a transaction through the new coordinator", func() bool {
		if err := p2.BeginTransaction(); err != nil {
			return false
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// A partition whose leader survived (the dead broker's partitions move too).
		err := p2.ProduceSync(rctx, &kgo.Record{Value: []byte("after"), Partition: 0}).FirstErr()
		if err == nil {
			err = p2.EndTransaction(rctx, kgo.TryCommit)
		} else {
			p2.EndTransaction(rctx, kgo.TryAbort)
		}
		return err == nil
	})
	got := read(true, 62)
	if len(got) != 61 || !slices.Contains(got, "after") || slices.Contains(got, "orphan") {
		t.Fatalf("read_committed after the coordinator failover saw %d records: %v\n%s", len(got), got, c.Logs())
	}
}
