//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFullLogDirTakesOnlyItsReplicasOffline: broker 1 has two log dirs, one a small
// tmpfs. When the tmpfs fills up, the partition whose replica on broker 1 is in it
// gets broker 2 as leader and loses broker 1 from its ISR (Metadata lists that
// replica offline), while the partition in broker 1's healthy dir keeps broker 1 as
// leader and both replicas in sync, and keeps taking acks=all writes; broker 1 is
// not fenced. Once the space is freed and broker 1 restarted, its replica rejoins
// the ISR, and every acknowledged record is read back once.
func TestFullLogDirTakesOnlyItsReplicasOffline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root (CI runs as root)")
	}
	c := PrepareCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker"}, nil)
	jbod := c.Nodes[1]
	mnt := mountTmpfs(t, filepath.Join(jbod.Dir, "disk"), "8m")
	smallDir, healthyDir := filepath.Join(mnt, "data"), filepath.Join(jbod.Dir, "healthy")
	jbod.Props["log.dirs"] = smallDir + "," + healthyDir
	c.StartAll()
	defer func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	}()
	ctx := Ctx(t, 180*time.Second)
	b2 := NewClient(t, c.Nodes[2].Addr)
	adm := kadm.NewClient(b2)
	WaitFor(t, 20*time.Second, "2 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b2, "none")
		return len(brokers) == 2
	})
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// A new log goes to the dir with the fewest logs: the first to the first dir.
	createAssigned(t, cl, "a", 1, 2)
	createAssigned(t, cl, "b", 1, 2)
	var onSmall, onHealthy string
	WaitFor(t, 20*time.Second, "broker 1's logs of a and b in its two dirs", func() bool {
		d, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false
		}
		onSmall, onHealthy = "", ""
		for topic := range d[smallDir].Topics {
			onSmall = topic
		}
		for topic := range d[healthyDir].Topics {
			onHealthy = topic
		}
		return onSmall != "" && onHealthy != ""
	})
	for _, topic := range []string{onSmall, onHealthy} {
		WaitFor(t, 20*time.Second, "broker 1 to lead "+topic+" with both replicas in sync", func() bool {
			p, _, ok := partitionState(ctx, b2, topic)
			return ok && p.Leader == 1 && len(p.ISR) == 2
		})
	}
	value := func(i int) []byte { return []byte(fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 16<<10))) }
	acked := map[string]int{}
	produce := func(topic string, n int) {
		t.Helper()
		for range n {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: value(acked[topic])}).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("produce record %d to %s: %v", acked[topic], topic, err)
			}
			acked[topic]++
		}
	}
	produce(onSmall, 5)
	produce(onHealthy, 5)

	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	produce(onSmall, 20) // answered by broker 2 once the controller moved the leadership
	produce(onHealthy, 20)
	p, brokers, _ := partitionState(ctx, b2, onSmall)
	if p.Leader != 2 || contains(p.ISR, 1) {
		t.Errorf("%s (broker 1's replica in the full dir): leader %d ISR %v, want 2 and broker 1 out", onSmall, p.Leader, p.ISR)
	}
	if !contains(brokers, 1) {
		t.Errorf("broker 1 fenced (brokers %v): only its full dir's replicas should go", brokers)
	}
	if p, _, _ := partitionState(ctx, b2, onHealthy); p.Leader != 1 || len(p.ISR) != 2 {
		t.Errorf("%s (broker 1's replica in the healthy dir): leader %d ISR %v, want 1 and both", onHealthy, p.Leader, p.ISR)
	}
	td, err := adm.ListTopics(ctx, onSmall, onHealthy)
	if err != nil {
		t.Fatal(err)
	}
	if off := td[onSmall].Partitions[0].OfflineReplicas; len(off) != 1 || off[0] != 1 {
		t.Errorf("%s offline replicas %v, want [1]", onSmall, off)
	}
	if off := td[onHealthy].Partitions[0].OfflineReplicas; len(off) != 0 {
		t.Errorf("%s offline replicas %v, want none", onHealthy, off)
	}
	if jbod.Exited() {
		t.Fatalf("broker 1 exited on a full log dir")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	jbod.Stop()
	jbod.Start()
	WaitFor(t, 60*time.Second, "broker 1 back in the ISR of "+onSmall, func() bool {
		p, _, ok := partitionState(ctx, b2, onSmall)
		return ok && contains(p.ISR, 1)
	})
	produce(onSmall, 5)
	produce(onHealthy, 5)
	for _, topic := range []string{onSmall, onHealthy} {
		rd := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		seen := map[string]int{}
		for n := 0; n < acked[topic]; {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records of %s back: %v", n, acked[topic], topic, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value[:5])]++
				n++
			})
		}
		for i := range acked[topic] {
			if k := fmt.Sprintf("%05d", i); seen[k] != 1 {
				t.Errorf("%s record %d read %d times, want once", topic, i, seen[k])
			}
		}
	}
}
