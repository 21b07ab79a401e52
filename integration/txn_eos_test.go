package integration

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// eosSession is one consume-transform-produce worker: it copies "in" to "out" in
// transactions that also commit the group's offsets.
func eosSession(t *testing.T, seeds ...string) *kgo.GroupTransactSession {
	t.Helper()
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID("eos-worker"), kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup("eos"), kgo.ConsumeTopics("in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.RebalanceTimeout(5*time.Second), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.DefaultProduceTopic("out"), kgo.MaxBufferedRecords(1000),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tolerateEndErrors lets the cluster test's workers ride out failovers: a failed End
// leaves the session to abort and retry, which is what exactly-once must survive.
var tolerateEndErrors bool

// step polls once and copies what it got in one transaction; stopMidway leaves the
// transaction open after producing (a worker killed mid-transaction).
func eosStep(t *testing.T, s *kgo.GroupTransactSession, stopMidway bool) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	fs := s.PollRecords(ctx, 20)
	var recs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) { recs = append(recs, kgo.StringRecord(string(r.Value))) })
	if len(recs) == 0 {
		return 0
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		s.Produce(context.Background(), r, nil)
	}
	if stopMidway {
		if err := s.Client().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		return -1
	}
	committed, err := s.End(context.Background(), kgo.TryCommit)
	if err != nil {
		if tolerateEndErrors {
			t.Logf("end: %v", err)
			return 0
		}
		t.Fatalf("end: %v", err)
	}
	if !committed {
		return 0
	}
	return len(recs)
}

// eosStopMidway runs worker s until about a third of the n input records are copied
// (at most 50 steps), then leaves it inside an open transaction: the state of a worker
// killed mid-transaction.
func eosStopMidway(t *testing.T, s *kgo.GroupTransactSession, n int) {
	t.Helper()
	done := 0
	for steps := 0; done < n/3 && steps < 50; steps++ {
		done += eosStep(t, s, false)
	}
	for i := 0; i < 20 && eosStep(t, s, true) == 0; i++ {
	}
}

// eosFinish runs worker s until read_committed readers at seed see n records in "out"
// or timeout passes, then reads "out" once more for long enough that an (n+1)th record
// would show, and returns what it read, sorted.
func eosFinish(t *testing.T, s *kgo.GroupTransactSession, seed string, n int, timeout time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(timeout)
	for len(got) < n && time.Now().Before(deadline) {
		eosStep(t, s, false)
		got = consumeAll(t, seed, "out", true, n, 300*time.Millisecond)
	}
	got = consumeAll(t, seed, "out", true, n+1, 2*time.Second)
	sort.Strings(got)
	return got
}

// exactlyOnceDiff compares the sorted read_committed output with want, the input
// records each of which must come out exactly once; "" when they match, else which
// records came out twice and which never did.
func exactlyOnceDiff(got, want []string) string {
	if fmt.Sprint(got) == fmt.Sprint(want) {
		return ""
	}
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	var dups, missing []string
	for _, v := range want {
		if seen[v] == 0 {
			missing = append(missing, v)
		} else if seen[v] > 1 {
			dups = append(dups, v)
		}
	}
	return fmt.Sprintf("read_committed output has %d records: duplicates %v, missing %v", len(got), dups, missing)
}

func TestExactlyOnceConsumeTransformProduceAcrossRestart(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "in", 2)
	createTopic(t, b.Admin(), "out", 1)
	const n = 300
	in := NewClient(t, b.Addr(), kgo.DefaultProduceTopic("in"))
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("v%03d", i)
		in.Produce(context.Background(), kgo.StringRecord(want[i]), nil)
	}
	if err := in.Flush(Ctx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}

	// The first worker commits a few transactions, then dies inside one.
	s1 := eosSession(t, b.Addr())
	eosStopMidway(t, s1, n)
	s1.Client().Close() // killed: its transaction stays open until fenced

	// A restarted worker fences it (aborting its transaction) and finishes the input.
	s2 := eosSession(t, b.Addr())
	defer s2.Close()
	got := eosFinish(t, s2, b.Addr(), n, 30*time.Second)
	if diff := exactlyOnceDiff(got, want); diff != "" {
		t.Fatal(diff)
	}
	// The aborted copies are in the log for read_uncommitted readers.
	if all := consumeAll(t, b.Addr(), "out", false, n+1, 3*time.Second); len(all) <= n {
		t.Fatalf("read_uncommitted saw %d records, want the aborted ones too", len(all))
	}
}

func TestExactlyOnceAcrossBrokerKill9(t *testing.T) {
	p := StartProcess(t, map[string]string{
		"offsets.topic.num.partitions": "4", "transaction.state.log.num.partitions": "4",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200", "group.min.session.timeout.ms": "100",
	})
	adm := kadm.NewClient(NewClient(t, p.Addr))
	createTopic(t, adm, "in", 2)
	createTopic(t, adm, "out", 1)
	const n = 200
	in := NewClient(t, p.Addr, kgo.DefaultProduceTopic("in"))
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("v%03d", i)
		in.Produce(context.Background(), kgo.StringRecord(want[i]), nil)
	}
	if err := in.Flush(Ctx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	in.Close()

	s1 := eosSession(t, p.Addr)
	eosStopMidway(t, s1, n)
	p.Signal(syscall.SIGKILL) // the broker dies with a transaction open
	p.wait(10 * time.Second)
	p.Start()
	go s1.Client().Close() // the old worker is gone too; its leave may fail

	s2 := eosSession(t, p.Addr)
	defer s2.Close()
	got := eosFinish(t, s2, p.Addr, n, 40*time.Second)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed output after a broker kill has %d records (want each of %d once)", len(got), n)
	}
}

// TestExactlyOnceAcrossBrokerKillInCluster: three brokers, replication factor 3. A
// broker is killed while the worker has a transaction open; the worker is replaced and
// finishes through the survivors (coordinators and leaders move).
func TestExactlyOnceAcrossBrokerKillInCluster(t *testing.T) {
	extra := maps.Clone(fastLifecycle)
	maps.Copy(extra, map[string]string{
		"min.insync.replicas": "2", "default.replication.factor": "3",
		"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
		"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr": "2", "group.min.session.timeout.ms": "100",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
	})
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	ctx := Ctx(t, 90*time.Second)
	b1 := NewClient(t, c.Nodes[1].Addr)
	WaitFor(t, 15*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b1, "none")
		return len(brokers) == 3
	})
	adm := kadm.NewClient(NewClient(t, c.Nodes[1].Addr, kgo.SeedBrokers(c.Seeds()...)))
	for _, tp := range []struct {
		name string
		n    int32
	}{{"in", 2}, {"out", 1}} {
		if _, err := adm.CreateTopic(ctx, tp.n, 3, nil, tp.name); err != nil {
			t.Fatal(err)
		}
	}
	const n = 200
	in := NewClient(t, c.Nodes[1].Addr, kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("in"))
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("v%03d", i)
		in.Produce(ctx, kgo.StringRecord(want[i]), nil)
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	in.Close()

	tolerateEndErrors = true
	defer func() { tolerateEndErrors = false }()
	survivors := []string{c.Nodes[1].Addr, c.Nodes[3].Addr}
	s1 := eosSession(t, survivors...)
	eosStopMidway(t, s1, n)
	c.Nodes[2].Kill()
	go s1.Client().Close()

	s2 := eosSession(t, survivors...)
	defer s2.Close()
	got := eosFinish(t, s2, survivors[0], n, 60*time.Second)
	if diff := exactlyOnceDiff(got, want); diff != "" {
		t.Fatalf("%s\n%s", diff, c.Logs())
	}
}
