package integration

// The three experiments of the reference walkthrough of Kafka's replication, on real
// processes (1 controller + 3 brokers), with the timeouts scaled down: what a user
// sees must match the walkthrough's printed outputs.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func threeBrokers(t *testing.T, props map[string]string) (*Cluster, *kgo.Client) {
	t.Helper()
	extra := maps.Clone(fastLifecycle)
	maps.Copy(extra, props)
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	b1 := NewClient(t, c.Nodes[1].Addr)
	WaitFor(t, 10*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(context.Background(), b1, "none")
		return len(brokers) == 3
	})
	return c, b1
}

// producer returns a client that sends with acks ("1" or "all"), no retries, no
// idempotence (as the walkthrough's Java programs), to partition 0.
func producer(t *testing.T, c *Cluster, acks string) *kgo.Client {
	a := kgo.LeaderAck()
	if acks == "all" {
		a = kgo.AllISRAcks()
	}
	return NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(a), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
}

func send(ctx context.Context, cl *kgo.Client, topic, value string) (int64, error) {
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(value)}).First()
	if err != nil {
		return -1, err
	}
	return r.Offset, nil
}

func highWatermark(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).ListEndOffsets(Ctx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

func isrOf(t *testing.T, cl *kgo.Client, topic string) []int32 {
	p, _, _ := partitionState(context.Background(), cl, topic)
	s := slices.Clone(p.ISR)
	slices.Sort(s)
	return s
}

// TestFrozenFollowerScenario is experiment 1: a frozen follower of an idle partition
// stays in the ISR; once records arrive it is dropped after the lag time, an acks=all
// record waits for that and then the HW jumps; after SIGCONT it rejoins, and every
// broker's replication-offset-checkpoint ends at the same HW.
func TestFrozenFollowerScenario(t *testing.T) {
	const lag = 1000 // replica.lag.time.max.ms (5000 in the walkthrough)
	c, b1 := threeBrokers(t, map[string]string{
		"replica.lag.time.max.ms":                       fmt.Sprint(lag),
		"replica.fetch.wait.max.ms":                     "100",
		"broker.session.timeout.ms":                     "30000", // only the leader's path shrinks the ISR
		"replica.high.watermark.checkpoint.interval.ms": "200",
	})
	createAssigned(t, b1, "rep", 1, 2, 3)
	ctx := Ctx(t, 60*time.Second)
	all, one := producer(t, c, "all"), producer(t, c, "1")
	for i := range 10 {
		if _, err := send(ctx, all, "rep", fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	// Frozen for 2.5× the lag time with no new records: still in the ISR.
	c.Nodes[3].Pause()
	idle := time.NewTimer(lag * 5 / 2 * time.Millisecond)
	<-idle.C // the scenario is "nothing happens for this long"
	if got := isrOf(t, b1, "rep"); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v after an idle freeze, want 1,2,3", got)
	}
	c.Nodes[3].Resume()

	// Warm up both producers, then freeze broker 3 again.
	if _, err := send(ctx, one, "rep", "warmup-acks1"); err != nil {
		t.Fatal(err)
	}
	if _, err := send(ctx, all, "rep", "warmup-acksall"); err != nil {
		t.Fatal(err)
	}
	hwBefore := highWatermark(t, b1, "rep")
	if hwBefore != 12 {
		t.Fatalf("HW before the freeze %d, want 12", hwBefore)
	}
	c.Nodes[3].Pause()
	for i := range 5 {
		off, err := send(ctx, one, "rep", fmt.Sprintf("acks1-%d", i))
		if err != nil || off != 12+int64(i) {
			t.Fatalf("acks=1 record %d: offset %d, %v", i, off, err)
		}
	}
	if hw := highWatermark(t, b1, "rep"); hw != 12 {
		t.Fatalf("HW %d after acks=1 records with a frozen ISR member, want 12\n%s", hw, c.Nodes[1].Log())
	}
	start := time.Now()
	off, err := send(ctx, all, "rep", "acksall-0")
	waited := time.Since(start)
	if err != nil || off != 17 {
		t.Fatalf("acks=all: offset %d, %v", off, err)
	}
	if waited < lag*time.Millisecond || waited > lag*5/2*time.Millisecond {
		t.Errorf("acks=all waited %v, want about the lag time (%d ms to %d ms)", waited, lag, lag*3/2)
	}
	if hw := highWatermark(t, b1, "rep"); hw != 18 {
		t.Fatalf("HW %d after the shrink, want 18", hw)
	}
	// The leader moves the HW once the controller has committed the shrink; its
	// metadata image shows the new ISR a moment later.
	WaitFor(t, 5*time.Second, "metadata to show ISR 1,2 after the shrink", func() bool {
		return slices.Equal(isrOf(t, b1, "rep"), []int32{1, 2})
	})
	if !strings.Contains(c.Nodes[1].Log(), "Shrinking ISR from 1,2,3 to 1,2") {
		t.Errorf("leader's log does not say it shrank the ISR:\n%s", c.Nodes[1].Log())
	}

	// SIGCONT: broker 3 catches up and rejoins.
	c.Nodes[3].Resume()
	WaitFor(t, 10*time.Second, "broker 3 to rejoin the ISR", func() bool {
		return slices.Equal(isrOf(t, b1, "rep"), []int32{1, 2, 3})
	})
	WaitFor(t, 10*time.Second, "every replication-offset-checkpoint at the HW 18", func() bool {
		for _, id := range []int32{1, 2, 3} {
			b, _ := os.ReadFile(filepath.Join(c.Nodes[id].Props["log.dirs"], "replication-offset-checkpoint"))
			if !strings.Contains(string(b), "rep 0 18") {
				return false
			}
		}
		return true
	})
}

// TestMinInsyncReplicasScenario is experiment 2: with min.insync.replicas=3 and one
// broker stopped, acks=all is refused with NOT_ENOUGH_REPLICAS and nothing is written,
// acks=1 still works, and lowering the setting at run time lets acks=all through.
func TestMinInsyncReplicasScenario(t *testing.T) {
	c, b1 := threeBrokers(t, nil)
	createAssigned(t, b1, "strict", 1, 2, 3)
	adm := kadm.NewClient(b1)
	ctx := Ctx(t, 60*time.Second)
	setMinISR := func(v string) {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &v}}, "strict")
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := rs.On("strict", nil); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	setMinISR("3")
	all, one := producer(t, c, "all"), producer(t, c, "1")
	var log []string
	expect := func(cl *kgo.Client, value string, want error) {
		t.Helper()
		_, err := send(ctx, cl, "strict", value)
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Fatalf("%s: %v, want %v", value, err, want)
		}
		if err == nil {
			log = append(log, value)
		}
	}
	expect(all, "acks-all", nil)
	expect(one, "acks-1", nil)

	c.Nodes[3].Stop() // SIGTERM: controlled shutdown takes it out of the ISR
	WaitFor(t, 10*time.Second, "ISR 1,2", func() bool { return slices.Equal(isrOf(t, b1, "strict"), []int32{1, 2}) })
	expect(all, "acks-all", kerr.NotEnoughReplicas)
	expect(one, "acks-1", nil)

	setMinISR("2")
	WaitFor(t, 10*time.Second, "the new min.insync.replicas to reach the leader", func() bool {
		_, err := send(ctx, all, "strict", "acks-all")
		if err == nil {
			log = append(log, "acks-all")
		}
		return err == nil
	})
	expect(one, "acks-1", nil)

	// The leader's log holds exactly the acknowledged records, in order.
	got := consumeN(t, c.Seeds()[0], "strict", len(log))
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	if !slices.Equal(values, log) {
		t.Fatalf("log holds %v, want the acknowledged %v", values, log)
	}
}

// TestDivergenceScenario is experiment 3: acks=1 records only the old leader had
// disappear. The followers freeze, the leader takes 5 acks=1 records and is killed;
// a follower becomes leader in epoch 1 and takes 3 acks=all records; the old leader
// restarts, truncates to offset 10, and all three logs end byte-identical with epochs
// "0 0" and "1 10".
func TestDivergenceScenario(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.lag.time.max.ms": "10000", "replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "div", 1, 2, 3)
	ctx := Ctx(t, 60*time.Second)
	all := producer(t, c, "all")
	for i := range 10 {
		if _, err := send(ctx, all, "div", fmt.Sprintf("ok-%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	c.Nodes[2].Pause()
	c.Nodes[3].Pause()
	// A fetch each follower sent just before freezing is parked at the leader for up to
	// replica.fetch.wait.max.ms; a record written meanwhile would complete it and sit in
	// the frozen follower's socket, to be appended after SIGCONT (the walkthrough saw
	// this too). Let those fetches expire empty first.
	expire := time.NewTimer(300 * time.Millisecond)
	<-expire.C
	leaderOnly := NewClient(t, c.Nodes[1].Addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		off, err := send(ctx, leaderOnly, "div", fmt.Sprintf("lost-%d", i+1))
		if err != nil || off != int64(10+i) {
			t.Fatalf("acks=1 lost-%d: offset %d, %v", i+1, off, err)
		}
	}
	c.Nodes[1].Kill()
	c.Nodes[2].Resume()
	c.Nodes[3].Resume()

	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "broker 2 to lead div in epoch 1", func() bool {
		p, _, ok := partitionState(ctx, b2, "div")
		return ok && p.Leader == 2 && p.LeaderEpoch == 1
	})
	survivors := NewClient(t, c.Nodes[2].Addr, kgo.SeedBrokers(c.Nodes[2].Addr, c.Nodes[3].Addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 3 {
		off, err := send(ctx, survivors, "div", fmt.Sprintf("new-%d", i+1))
		if err != nil || off != int64(10+i) {
			t.Fatalf("acks=all new-%d: offset %d, %v", i+1, off, err)
		}
	}

	c.Nodes[1].Start()
	deadline := time.Now().Add(15 * time.Second)
	for !slices.Equal(isrOf(t, b2, "div"), []int32{1, 2, 3}) {
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 did not truncate and rejoin the ISR (ISR %v)\n== broker 1\n%s\n== broker 2\n%s", isrOf(t, b2, "div"), c.Nodes[1].Log(), c.Nodes[2].Log())
		}
		poll := time.NewTimer(20 * time.Millisecond)
		<-poll.C
	}
	if !strings.Contains(c.Nodes[1].Log(), "Truncating partition div-0 to offset 10") {
		t.Errorf("broker 1 did not log its truncation to offset 10:\n%s", c.Nodes[1].Log())
	}
	leader := segmentOf(c.Nodes[2], "div")
	WaitFor(t, 10*time.Second, "three byte-identical logs", func() bool {
		return bytes.Equal(segmentOf(c.Nodes[1], "div"), leader) && bytes.Equal(segmentOf(c.Nodes[3], "div"), leader)
	})
	for _, id := range []int32{1, 2, 3} {
		if got := epochCheckpointOf(c.Nodes[id], "div"); got != "0 2 0 0 1 10" {
			t.Errorf("broker %d leader-epoch-checkpoint %q, want \"0 2 0 0 1 10\"", id, got)
		}
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("ok-%d", i+1))
	}
	want = append(want, "new-1", "new-2", "new-3")
	recs := consumeN(t, c.Nodes[2].Addr, "div", len(want))
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a consumer from the beginning reads %v, want %v", got, want)
	}
}

// TestNoAcknowledgedWriteLostWhileBrokersDie: a producer with acks=all writes
// continuously to a replication-factor-3 topic with min.insync.replicas=2 while each
// broker in turn is killed (SIGKILL) and restarted. Every acknowledged record is
// readable afterwards, and the three replicas end with identical logs.
func TestNoAcknowledgedWriteLostWhileBrokersDie(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "2000"})
	createAssigned(t, b1, "chaos", 1, 2, 3)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))

	stop := make(chan struct{})
	type ack struct {
		value string
		err   error
	}
	acks := make(chan ack, 1<<20)
	done := make(chan struct{})
	var progress atomic.Int64
	moving := func(what string) {
		t.Helper()
		from := progress.Load()
		WaitFor(t, 30*time.Second, "acknowledged writes to continue "+what, func() bool { return progress.Load() >= from+200 })
	}
	go func() {
		defer close(done)
		// Batches of 20 in flight at a time, each waited for: a steady stream.
		for i := 0; ; i += 20 {
			select {
			case <-stop:
				return
			default:
			}
			var batch []*kgo.Record
			for j := i; j < i+20; j++ {
				batch = append(batch, &kgo.Record{Topic: "chaos", Partition: 0, Value: []byte(fmt.Sprintf("v%06d", j))})
			}
			for _, r := range cl.ProduceSync(context.Background(), batch...) {
				acks <- ack{string(r.Record.Value), r.Err}
				if r.Err == nil {
					progress.Add(1)
				}
			}
		}
	}()
	ctx := Ctx(t, 120*time.Second)
	direct := map[int32]*kgo.Client{}
	for _, id := range []int32{1, 2, 3} {
		direct[id] = NewClient(t, c.Nodes[id].Addr)
	}
	moving("before any broker dies")
	for _, id := range []int32{1, 2, 3} {
		other := direct[id%3+1] // ask a broker that stays up
		c.Nodes[id].Kill()
		// Fenced after the session timeout and out of the ISR; the others keep taking
		// acks=all writes (two of three still meet min.insync.replicas=2).
		WaitFor(t, 20*time.Second, fmt.Sprintf("killed broker %d out of the ISR", id), func() bool {
			return !slices.Contains(isrOf(t, other, "chaos"), id)
		})
		moving(fmt.Sprintf("with broker %d dead", id))
		c.Nodes[id].Start()
		WaitFor(t, 20*time.Second, fmt.Sprintf("broker %d back in the ISR", id), func() bool {
			return slices.Equal(isrOf(t, other, "chaos"), []int32{1, 2, 3})
		})
		moving(fmt.Sprintf("after broker %d is back", id))
	}
	close(stop)
	<-done
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	close(acks)
	acked := map[string]bool{}
	failed, firstErr := 0, error(nil)
	for a := range acks {
		if a.err == nil {
			acked[a.value] = true
		} else if failed++; firstErr == nil {
			firstErr = a.err
		}
	}
	if len(acked) < 100 {
		t.Fatalf("only %d records acknowledged while brokers died (%d failed, first: %v)", len(acked), failed, firstErr)
	}
	end := highWatermark(t, direct[1], "chaos")
	recs := consumeN(t, c.Seeds()[0], "chaos", int(end))
	seen := map[string]bool{}
	for _, r := range recs {
		seen[string(r.Value)] = true
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s is lost (%d acknowledged, %d in the log)", v, len(acked), len(recs))
		}
	}
	// Every replica ends with the same log.
	WaitFor(t, 20*time.Second, "three identical logs", func() bool {
		a := segmentOf(c.Nodes[1], "chaos")
		return len(a) > 0 && bytes.Equal(a, segmentOf(c.Nodes[2], "chaos")) && bytes.Equal(a, segmentOf(c.Nodes[3], "chaos"))
	})
	t.Logf("%d acknowledged, %d records in the log", len(acked), len(recs))
}

// TestFarBehindFollowerCatchesUpAndRejoins: a follower frozen while many records
// arrive leaves the ISR; on SIGCONT it fetches its way through the backlog (many
// fetches, several segments) and rejoins, with a log identical to the leader's.
func TestFarBehindFollowerCatchesUpAndRejoins(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{
		"replica.lag.time.max.ms": "1000", "replica.fetch.wait.max.ms": "100",
		"broker.session.timeout.ms": "30000", "replica.fetch.max.bytes": "65536",
		"log.segment.bytes": "1048576",
	})
	createAssigned(t, b1, "behind", 1, 2, 3)
	ctx := Ctx(t, 120*time.Second)
	c.Nodes[3].Pause()
	one := producer(t, c, "1")
	for i := 0; i < 6000; i += 500 { // ~6 MB (random, so compression keeps it): several 1 MiB segments
		var batch []*kgo.Record
		for j := 0; j < 500; j++ {
			value := make([]byte, 1000)
			rand.Read(value)
			batch = append(batch, &kgo.Record{Topic: "behind", Partition: 0, Value: value})
		}
		if err := one.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	WaitFor(t, 10*time.Second, "the frozen follower to leave the ISR", func() bool {
		return slices.Equal(isrOf(t, b1, "behind"), []int32{1, 2})
	})
	c.Nodes[3].Resume()
	WaitFor(t, 60*time.Second, "the follower to catch up and rejoin", func() bool {
		return slices.Equal(isrOf(t, b1, "behind"), []int32{1, 2, 3})
	})
	dirs := func(id int32) []string {
		m, _ := filepath.Glob(filepath.Join(c.Nodes[id].Props["log.dirs"], "behind-0", "*.log"))
		return m
	}
	if len(dirs(1)) < 3 {
		t.Fatalf("leader has %d segments, want several", len(dirs(1)))
	}
	WaitFor(t, 10*time.Second, "identical segments on the caught-up follower", func() bool {
		l, f := dirs(1), dirs(3)
		if len(l) != len(f) {
			return false
		}
		for i := range l {
			a, _ := os.ReadFile(l[i])
			b, _ := os.ReadFile(f[i])
			if !bytes.Equal(a, b) {
				return false
			}
		}
		return true
	})
}
