package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/acl"
)

// hasLogDir reports whether node keeps a live log directory for topic-0.
func hasLogDir(t *testing.T, p *Process, topic string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(p.Dir, "data", topic+"-0"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// reassigning lists topic-0's reassignment through adm (ok false when none).
func reassigning(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) (kadm.ListPartitionReassignmentsResponse, bool) {
	t.Helper()
	rs, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rs[topic][0]
	return r, ok
}

// TestReassignmentMovesPartitionUnderLoad is kafka-reassign-partitions --execute on
// real processes: partition move-0 goes from brokers {1,2} (led by 1) to {2,3} while
// an acks=all producer writes. Broker 3 joins, catches up and enters the ISR; the move
// then completes: replicas 2,3, leader 2 with a new leader epoch, broker 1 deletes its
// copy, and every acknowledged record is there to read.
func TestReassignmentMovesPartitionUnderLoad(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.fetch.wait.max.ms": "100", "auto.leader.rebalance.enable": "false"})
	createAssigned(t, b1, "move", 1, 2)
	ctx := Ctx(t, 120*time.Second)
	b2 := NewClient(t, c.Nodes[2].Addr)
	var before partition
	WaitFor(t, 10*time.Second, "move-0 led by 1 with ISR 1,2", func() bool {
		var ok bool
		before, _, ok = partitionState(ctx, b2, "move")
		return ok && before.Leader == 1 && len(before.ISR) == 2
	})
	if !hasLogDir(t, c.Nodes[1], "move") {
		t.Fatal("broker 1 has no move-0 log before the move")
	}

	// The producer retries (idempotently) through the leader change.
	prod := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var (
		mu    sync.Mutex
		acked []string
	)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			v := fmt.Sprintf("v%d", i)
			if _, err := send(ctx, prod, "move", v); err != nil {
				done <- fmt.Errorf("produce %s: %w", v, err)
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	}()
	WaitFor(t, 20*time.Second, "some records acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 50
	})

	adm := kadm.NewClient(NewClient(t, c.Nodes[3].Addr, kgo.SeedBrokers(c.Seeds()...)))
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("move", 0, []int32{2, 3})
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs["move"][0]; r.Err != nil {
		t.Fatalf("reassigning move-0: %v %s", r.Err, r.ErrMessage)
	}
	var after partition
	WaitFor(t, 60*time.Second, "the move to complete: replicas 2,3 led by 2", func() bool {
		if _, ok := reassigning(ctx, t, adm, "move"); ok {
			return false
		}
		var ok bool
		after, _, ok = partitionState(ctx, b2, "move")
		return ok && slices.Equal(after.Replicas, []int32{2, 3}) && after.Leader == 2 && slices.Equal(isrOf(t, b2, "move"), []int32{2, 3})
	})
	if after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("leader epoch %d after the move, was %d", after.LeaderEpoch, before.LeaderEpoch)
	}
	WaitFor(t, 20*time.Second, "broker 1 to delete its copy of move-0", func() bool {
		return !hasLogDir(t, c.Nodes[1], "move")
	})
	if !hasLogDir(t, c.Nodes[3], "move") {
		t.Fatal("broker 3 has no move-0 log after the move")
	}

	// More writes acknowledged by the new leader, then everything is read back.
	mu.Lock()
	n0 := len(acked)
	mu.Unlock()
	WaitFor(t, 30*time.Second, "records acknowledged after the move", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= n0+20
	})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := slices.Clone(acked)
	mu.Unlock()
	consumer := NewClient(t, c.Nodes[3].Addr, kgo.SeedBrokers(c.Seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"move": {0: kgo.NewOffset().AtStart()}}))
	got := map[string]bool{}
	for len(got) < len(want) {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %d of %d records: %v", len(got), len(want), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for _, v := range want {
		if !got[v] {
			t.Fatalf("acknowledged record %s lost (%d acknowledged)", v, len(want))
		}
	}
}

// TestReassignmentCancelMidway is kafka-reassign-partitions --cancel: move-0 goes from
// {1,2} to {1,3} while broker 3 is frozen, so it cannot catch up and the move stays in
// progress: Metadata shows replicas 1,3,2 (the target, then the replica being
// removed) and ListPartitionReassignments 3 adding, 2 removing. Cancelling reverts to
// replicas 1,2 with the ISR and leader intact; broker 3, thawed, keeps no copy.
func TestReassignmentCancelMidway(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.fetch.wait.max.ms": "100", "auto.leader.rebalance.enable": "false"})
	createAssigned(t, b1, "undo", 1, 2)
	ctx := Ctx(t, 90*time.Second)
	all := producer(t, c, "all")
	for i := range 5 {
		if _, err := send(ctx, all, "undo", fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Nodes[3].Pause()
	defer c.Nodes[3].Resume()

	adm := kadm.NewClient(NewClient(t, c.Nodes[2].Addr, kgo.SeedBrokers(c.Seeds()...)))
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("undo", 0, []int32{1, 3})
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || rs["undo"][0].Err != nil {
		t.Fatalf("reassigning undo-0: %v %+v", err, rs)
	}
	r, ok := reassigning(ctx, t, adm, "undo")
	if !ok || !slices.Equal(r.Replicas, []int32{1, 3, 2}) || !slices.Equal(r.AddingReplicas, []int32{3}) || !slices.Equal(r.RemovingReplicas, []int32{2}) {
		t.Fatalf("listed %+v (%v), want replicas 1,3,2, adding 3, removing 2", r, ok)
	}
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 10*time.Second, "metadata to show replicas 1,3,2", func() bool {
		p, _, ok := partitionState(ctx, b2, "undo")
		return ok && slices.Equal(p.Replicas, []int32{1, 3, 2}) && p.Leader == 1
	})
	if _, err := send(ctx, all, "undo", "during"); err != nil {
		t.Fatalf("write during the move: %v", err)
	}

	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("undo", 0)
	rs, err = adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil || rs["undo"][0].Err != nil {
		t.Fatalf("cancelling: %v %+v", err, rs)
	}
	if r, ok := reassigning(ctx, t, adm, "undo"); ok {
		t.Fatalf("still reassigning after the cancel: %+v", r)
	}
	WaitFor(t, 10*time.Second, "metadata to show replicas 1,2 led by 1", func() bool {
		p, _, ok := partitionState(ctx, b2, "undo")
		return ok && slices.Equal(p.Replicas, []int32{1, 2}) && p.Leader == 1 && slices.Equal(isrOf(t, b2, "undo"), []int32{1, 2})
	})
	// A second cancel has nothing to cancel.
	rs, err = adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil || rs["undo"][0].Err == nil {
		t.Fatalf("second cancel: %v %+v, want NO_REASSIGNMENT_IN_PROGRESS", err, rs)
	}
	if _, err := send(ctx, all, "undo", "after"); err != nil {
		t.Fatalf("write after the cancel: %v", err)
	}

	c.Nodes[3].Resume()
	b3 := NewClient(t, c.Nodes[3].Addr)
	WaitFor(t, 20*time.Second, "broker 3 serving metadata with replicas 1,2", func() bool {
		p, _, ok := partitionState(ctx, b3, "undo")
		return ok && slices.Equal(p.Replicas, []int32{1, 2})
	})
	WaitFor(t, 10*time.Second, "broker 3 without a copy of undo-0", func() bool {
		return !hasLogDir(t, c.Nodes[3], "undo")
	})
	consumer := NewClient(t, c.Nodes[2].Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"undo": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 7 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %v: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := []string{"r0", "r1", "r2", "r3", "r4", "during", "after"}; !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
}

// logBytes is the size of node's copy of topic-0 (its .log segments).
func logBytes(t *testing.T, p *Process, topic string) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(p.Dir, "data", topic+"-0", "*.log"))
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// alterConfigs applies one incremental config change and fails on any error.
func alterConfigs(t *testing.T, ctx context.Context, adm *kadm.Client, topic bool, op kadm.IncrementalOp, kv map[string]string, names ...string) {
	t.Helper()
	var cfgs []kadm.AlterConfig
	for k, v := range kv {
		v := v
		c := kadm.AlterConfig{Op: op, Name: k}
		if op != kadm.DeleteConfig {
			c.Value = &v
		}
		cfgs = append(cfgs, c)
	}
	var rs kadm.AlterConfigsResponses
	var err error
	if topic {
		rs, err = adm.AlterTopicConfigs(ctx, cfgs, names...)
	} else {
		var ids []int32
		for _, n := range names {
			id, _ := strconv.Atoi(n)
			ids = append(ids, int32(id))
		}
		rs, err = adm.AlterBrokerConfigs(ctx, cfgs, ids...)
	}
	for _, r := range rs {
		if err == nil && r.Err != nil {
			err = fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		t.Fatalf("altering configs %v of %v: %v", kv, names, err)
	}
}

// TestReassignmentThrottled is kafka-reassign-partitions --execute --throttle: the
// rates (leader.replication.throttled.rate on the leader, follower... on the new
// replica) at 10 kB/s and the moving replicas listed in the topic's
// *.replication.throttled.replicas. A 3 MB partition moving from broker 1 to 2 gets
// one fetch's worth (at most replica.fetch.max.bytes) and is then held while the rate
// is above the bound, so the move is still in progress with broker 2 well behind; once
// the throttle is cleared (what --verify does), it completes.
func TestReassignmentThrottled(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.fetch.wait.max.ms": "100", "auto.leader.rebalance.enable": "false"})
	createAssigned(t, b1, "slow", 1)
	ctx := Ctx(t, 120*time.Second)
	one := producer(t, c, "1")
	for i := range 3000 {
		value := make([]byte, 1000)
		rand.Read(value) // incompressible
		one.Produce(ctx, &kgo.Record{Topic: "slow", Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	if err := one.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	total := logBytes(t, c.Nodes[1], "slow")
	if total < 3_000_000 {
		t.Fatalf("broker 1 holds %d bytes, want at least 3 MB", total)
	}
	adm := kadm.NewClient(NewClient(t, c.Nodes[1].Addr, kgo.SeedBrokers(c.Seeds()...)))
	rates := map[string]string{"leader.replication.throttled.rate": "10000", "follower.replication.throttled.rate": "10000"}
	alterConfigs(t, ctx, adm, false, kadm.SetConfig, rates, "1", "2")
	alterConfigs(t, ctx, adm, true, kadm.SetConfig, map[string]string{
		"leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "0:2"}, "slow")

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("slow", 0, []int32{2})
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || rs["slow"][0].Err != nil {
		t.Fatalf("reassigning slow-0: %v %+v", err, rs)
	}
	WaitFor(t, 30*time.Second, "broker 2 to get its first throttled fetch", func() bool {
		return logBytes(t, c.Nodes[2], "slow") > 0
	})
	// One fetch is at most 1 MiB; the next waits until the 11 s measuring span has
	// let it go: for the next 3 s the move stays in progress, broker 2 behind.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); <-tick.C {
		if got := logBytes(t, c.Nodes[2], "slow"); got >= total {
			t.Fatalf("broker 2 has all %d bytes despite the throttle", got)
		}
		if _, ok := reassigning(ctx, t, adm, "slow"); !ok {
			t.Fatal("the throttled move is not in progress")
		}
	}

	alterConfigs(t, ctx, adm, false, kadm.DeleteConfig, rates, "1", "2")
	WaitFor(t, 60*time.Second, "the move to complete once unthrottled", func() bool {
		if _, ok := reassigning(ctx, t, adm, "slow"); ok {
			return false
		}
		p, _, ok := partitionState(ctx, b1, "slow")
		return ok && slices.Equal(p.Replicas, []int32{2}) && p.Leader == 2
	})
	if got := logBytes(t, c.Nodes[2], "slow"); got != total {
		t.Fatalf("broker 2 has %d bytes, broker 1 had %d", got, total)
	}
}

// TestPartitionReassignmentsNeedClusterACLs: AlterPartitionReassignments needs ALTER
// on the cluster and ListPartitionReassignments DESCRIBE, else
// CLUSTER_AUTHORIZATION_FAILED (kadm reports an AuthError); with them they run.
func TestPartitionReassignmentsNeedClusterACLs(t *testing.T) {
	b := StartBroker(t, withAuthorizer)
	adminTopic(t, b, "t")
	adm := kadm.NewClient(b.Client())
	ctx := Ctx(t, 20*time.Second)
	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("t", 0)
	var ae *kadm.AuthError
	if _, err := adm.AlterPartitionAssignments(ctx, cancel); !errors.As(err, &ae) {
		t.Fatalf("alter without ALTER on the cluster: %v, want an AuthError", err)
	}
	if _, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"t": {0: {}}}); !errors.As(err, &ae) {
		t.Fatalf("list without DESCRIBE on the cluster: %v, want an AuthError", err)
	}
	adminACL(t, b, allow(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, anonymous, acl.OpAlter))
	rs, err := adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil || !errors.Is(rs["t"][0].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel with ALTER on the cluster: %v %+v", err, rs)
	}
	// ALTER implies DESCRIBE.
	if l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"t": {0: {}}}); err != nil || len(l) != 0 {
		t.Fatalf("list with ALTER on the cluster: %v %+v", err, l)
	}
}
