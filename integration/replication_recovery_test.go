package integration

// Issue 12's defects on real processes: followers that must find their way back to
// the leader's log after missing part of it.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logStartOf is the log start offset of topic-0 as its leader answers ListOffsets
// (earliest).
func logStartOf(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).ListStartOffsets(Ctx(t, 10*time.Second), topic)
	if err != nil {
		return -1
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

// TestFollowerBehindLeaderLogStartRejoins: followers whose logs end below the
// leader's log start offset — broker 2 was down while DeleteRecords moved it, broker 3
// comes back with an empty data dir — start over at the leader's log start, as Kafka's
// AbstractFetcherThread.fetchOffsetAndTruncate, and rejoin the ISR, without a log line
// per fetch. On "near" the leader's log start (5) is below broker 2's end (10): broker
// 2 fetches on, broker 3 starts over.
func TestFollowerBehindLeaderLogStartRejoins(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.lag.time.max.ms": "2000", "replica.fetch.wait.max.ms": "100"})
	topics := map[string]int64{"far": 15, "near": 5} // topic: the leader's log start after DeleteRecords
	for topic := range topics {
		createAssigned(t, b1, topic, 1, 2, 3)
	}
	ctx := Ctx(t, 90*time.Second)
	WaitFor(t, 10*time.Second, "both topics led by broker 1 with all replicas in sync", func() bool {
		return slices.Equal(isrOf(t, b1, "far"), []int32{1, 2, 3}) && slices.Equal(isrOf(t, b1, "near"), []int32{1, 2, 3})
	})
	all := producer(t, c, "all")
	for i := range 10 {
		for topic := range topics {
			if _, err := send(ctx, all, topic, fmt.Sprintf("before-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Nodes[2].Kill()
	c.Nodes[3].Kill()
	WaitFor(t, 15*time.Second, "brokers 2 and 3 to leave the ISRs", func() bool {
		return slices.Equal(isrOf(t, b1, "far"), []int32{1}) && slices.Equal(isrOf(t, b1, "near"), []int32{1})
	})
	for i := range 10 {
		for topic := range topics {
			if _, err := send(ctx, all, topic, fmt.Sprintf("while-down-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(b1)
	del := kadm.Offsets{}
	for topic, start := range topics {
		del.Add(kadm.Offset{Topic: topic, Partition: 0, At: start})
	}
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "the leader's log start to move", func() bool {
		return logStartOf(t, b1, "far") == 15 && logStartOf(t, b1, "near") == 5
	})
	if err := os.RemoveAll(c.Nodes[3].Props["log.dirs"]); err != nil {
		t.Fatal(err)
	}
	c.StartAll()
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(isrOf(t, b1, "far"), []int32{1, 2, 3}) || !slices.Equal(isrOf(t, b1, "near"), []int32{1, 2, 3}) {
		if time.Now().After(deadline) {
			t.Fatalf("brokers 2 and 3 did not rejoin the ISRs (far %v, near %v); they logged %d and %d lines:\n== broker 2\n%s\n== broker 3\n%s",
				isrOf(t, b1, "far"), isrOf(t, b1, "near"), strings.Count(c.Nodes[2].Log(), "\n"), strings.Count(c.Nodes[3].Log(), "\n"),
				tail(c.Nodes[2].Log(), 30), tail(c.Nodes[3].Log(), 30)+"\n== broker 1\n"+tail(c.Nodes[1].Log(), 40))
		}
		poll := time.NewTimer(50 * time.Millisecond)
		<-poll.C
	}
	// Each copy starts where the leader's does (broker 2's "near" keeps its own start).
	for _, id := range []int32{2, 3} {
		for topic, start := range topics {
			if id == 2 && topic == "near" {
				start = 0
			}
			segs, _ := filepath.Glob(filepath.Join(c.Nodes[id].Props["log.dirs"], topic+"-0", "*.log"))
			want := filepath.Join(c.Nodes[id].Props["log.dirs"], topic+"-0", fmt.Sprintf("%020d.log", start))
			if !slices.Contains(segs, want) {
				t.Errorf("%s on broker %d: segments %v, want one starting at %d", topic, id, segs, start)
			}
		}
		// A bound far below the line per fetch of the old loop (hundreds of thousands).
		if n := strings.Count(c.Nodes[id].Log(), "\n"); n > 2000 {
			t.Errorf("broker %d wrote %d log lines while recovering", id, n)
		}
	}
	recs := consumeN(t, c.Nodes[1].Addr, "far", 5)
	if got := string(recs[0].Value); recs[0].Offset != 15 || got != "while-down-5" {
		t.Errorf("first record of far: offset %d %q, want 15 \"while-down-5\"", recs[0].Offset, got)
	}
}

// TestFormerLeaderWithEmptyEpochCatchesUp: broker 2 becomes leader of an idle
// partition (epoch 1 starts at its LEO, 10, and it writes nothing), freezes at once
// (SIGSTOP: not a restart, which would trim the cache on open), and broker 3 leads
// epoch 2 from offset 10 and writes there. When broker 2 comes back as a follower the leader answers its fetches with a diverging epoch (0, end 10): the
// follower's truncation point is its own LEO, and it must still drop its empty epoch
// 1 (Kafka's UnifiedLog.truncateTo always trims the epoch cache) or it gets the same
// answer on every fetch and never catches up.
func TestFormerLeaderWithEmptyEpochCatchesUp(t *testing.T) {
	c, b1 := threeBrokers(t, map[string]string{"replica.lag.time.max.ms": "2000", "replica.fetch.wait.max.ms": "100"})
	createAssigned(t, b1, "idle", 1, 2, 3)
	ctx := Ctx(t, 90*time.Second)
	all := producer(t, c, "all")
	for i := range 10 {
		if _, err := send(ctx, all, "idle", fmt.Sprintf("epoch0-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Nodes[1].Kill()
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 15*time.Second, "broker 2 to lead idle in epoch 1", func() bool {
		p, _, ok := partitionState(ctx, b2, "idle")
		return ok && p.Leader == 2 && p.LeaderEpoch == 1
	})
	WaitFor(t, 10*time.Second, "broker 2 to record epoch 1", func() bool {
		return epochCheckpointOf(c.Nodes[2], "idle") == "0 2 0 0 1 10"
	})
	c.Nodes[2].Pause()
	b3 := NewClient(t, c.Nodes[3].Addr)
	WaitFor(t, 15*time.Second, "broker 3 to lead idle in epoch 2", func() bool {
		p, _, ok := partitionState(ctx, b3, "idle")
		return ok && p.Leader == 3 && p.LeaderEpoch == 2
	})
	one := NewClient(t, c.Nodes[3].Addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		if off, err := send(ctx, one, "idle", fmt.Sprintf("epoch2-%d", i)); err != nil || off != int64(10+i) {
			t.Fatalf("epoch2-%d: offset %d, %v", i, off, err)
		}
	}
	c.Nodes[2].Resume()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Equal(isrOf(t, b3, "idle"), []int32{2, 3}) {
		if time.Now().After(deadline) {
			t.Fatalf("broker 2 did not catch up (ISR %v, its leader-epoch-checkpoint %q):\n%s",
				isrOf(t, b3, "idle"), epochCheckpointOf(c.Nodes[2], "idle"), tail(c.Nodes[2].Log(), 60))
		}
		poll := time.NewTimer(50 * time.Millisecond)
		<-poll.C
	}
	WaitFor(t, 10*time.Second, "broker 2's copy to match the leader's", func() bool {
		return epochCheckpointOf(c.Nodes[2], "idle") == "0 2 0 0 2 10" &&
			string(segmentOf(c.Nodes[2], "idle")) == string(segmentOf(c.Nodes[3], "idle"))
	})
}
