package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSummary sums a run of follower fetches.
type fetchSummary struct {
	n, full, incremental, sessionErrors int
	partitions, forgotten, respParts    int
	reqBytes, respBytes                 int
}

func summarize(fs []tapFetch) fetchSummary {
	var s fetchSummary
	for _, f := range fs {
		if !f.Answered {
			continue
		}
		s.n++
		if f.SessionEpoch > 0 {
			s.incremental++
		} else {
			s.full++
		}
		if f.RespError != 0 {
			s.sessionErrors++
		}
		s.partitions += f.Partitions
		s.forgotten += f.Forgotten
		s.respParts += f.RespParts
		s.reqBytes += f.ReqBytes
		s.respBytes += f.RespBytes
	}
	return s
}

func (s fetchSummary) String() string {
	if s.n == 0 {
		return "no fetches"
	}
	return fmt.Sprintf("%d fetches (%d full, %d incremental, %d errors): %.1f partitions and %d bytes per request, %.1f partitions and %d bytes per response",
		s.n, s.full, s.incremental, s.sessionErrors, float64(s.partitions)/float64(s.n), s.reqBytes/s.n,
		float64(s.respParts)/float64(s.n), s.respBytes/s.n)
}

// replicationState reads every partition of topic from the metadata of cl's seed broker
// (one that does not restart: a broker just restarted may answer from the image it
// had): whether each has a leader and a full ISR, and whether each is led by its
// preferred replica.
func replicationState(ctx context.Context, cl *kgo.Client, topic string, parts int) (allFull, allPreferred bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return false, false
	}
	resp := r.(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != parts {
		return false, false
	}
	allFull, allPreferred = true, true
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			allFull = false
		}
		if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
			allPreferred = false
		}
	}
	return allFull, allPreferred
}

// checkpointHWs reads a broker's replication-offset-checkpoint: partition → HW of topic.
func checkpointHWs(p *Process, topic string) map[int32]int64 {
	b, _ := os.ReadFile(filepath.Join(p.Props["log.dirs"], "replication-offset-checkpoint"))
	out := map[int32]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		var name string
		var part int32
		var hw int64
		if n, _ := fmt.Sscanf(line, "%s %d %d", &name, &part, &hw); n == 3 && name == topic {
			out[part] = hw
		}
	}
	return out
}

// TestFollowerFetchSessionsManyPartitions: three brokers, 200 partitions with RF 3.
// Each broker advertises a tap that decodes the followers' fetches passing through it.
// Followers open a fetch session with a full fetch naming every partition they follow
// from that leader, then send incremental fetches that name only what changed (none
// when idle) and get back only partitions with news. Replication stays correct through
// it: acks=all produces to every partition complete, every follower's checkpointed HW
// reaches the leader's (HW news travels in incremental answers), the ISR stays full and
// the replicas are byte-identical. After the leader of a third of the partitions
// restarts and takes them back, its followers open new sessions with it (the old ones
// died with the process) and go incremental again.
func TestFollowerFetchSessionsManyPartitions(t *testing.T) {
	const topic, parts = "many", 200
	extra := maps.Clone(fastLifecycle)
	extra["min.insync.replicas"] = "2"
	extra["auto.leader.rebalance.enable"] = "false"
	extra["replica.high.watermark.checkpoint.interval.ms"] = "200"
	c := PrepareCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	taps := map[int32]*fetchTap{}
	for _, id := range c.Brokers {
		tap := startFetchTap(t, c.Nodes[id].Addr)
		taps[id] = tap
		c.Nodes[id].Props["advertised.listeners"] = "PLAINTEXT://" + tap.Addr()
	}
	c.StartAll()
	ctx := Ctx(t, 4*time.Minute)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 20*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, cl, "none")
		return len(brokers) == 3
	})
	if _, err := adm.CreateTopic(ctx, parts, 3, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	// Brokers registering as the topic was created leave some partitions led by
	// another than their preferred replica: elect those, so that broker 1 leads its
	// third of them.
	electPreferred := func() {
		t.Helper()
		WaitFor(t, 90*time.Second, "every partition led by its preferred replica with a full ISR", func() bool {
			if full, pref := replicationState(ctx, b2, topic, parts); full && pref {
				return true
			} else if full {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, _ = adm.ElectLeaders(rctx, kadm.ElectPreferredReplica, nil)
			}
			return false
		})
	}
	electPreferred()

	// Each follower of each leader reaches an incremental fetch the leader accepted.
	others := func(leader int32) []int32 {
		var out []int32
		for _, id := range c.Brokers {
			if id != leader {
				out = append(out, id)
			}
		}
		return out
	}
	incrementalFrom := func(tap *fetchTap, from int, replica int32, newSession func(int32) bool) bool {
		for _, f := range tap.fetchesSince(from) {
			if f.Replica == replica && f.Answered && f.SessionEpoch > 0 && f.RespError == 0 && newSession(f.SessionID) {
				return true
			}
		}
		return false
	}
	anySession := func(int32) bool { return true }
	WaitFor(t, 60*time.Second, "every follower fetching incrementally from every leader", func() bool {
		for leader, tap := range taps {
			for _, f := range others(leader) {
				if !incrementalFrom(tap, 0, f, anySession) {
					return false
				}
			}
		}
		return true
	})

	// Idle: incremental fetches name no partitions and get none back.
	marks := map[int32]int{}
	for id, tap := range taps {
		marks[id] = tap.count()
	}
	WaitFor(t, 60*time.Second, "20 idle follower fetches through every leader", func() bool {
		for id, tap := range taps {
			if summarize(tap.fetchesSince(marks[id])).n < 20 {
				return false
			}
		}
		return true
	})
	var fullBefore, idle fetchSummary
	for id, tap := range taps {
		all := tap.fetchesSince(0)
		for _, f := range all {
			// The largest full fetch: a session opening with every partition followed.
			if f.Answered && f.SessionEpoch == 0 && f.Partitions > fullBefore.partitions {
				fullBefore = summarize([]tapFetch{f})
			}
		}
		s := summarize(tap.fetchesSince(marks[id]))
		t.Logf("broker %d as leader, idle: %v", id, s)
		if s.incremental < s.n*9/10 {
			t.Errorf("broker %d as leader: only %d of %d idle follower fetches incremental", id, s.incremental, s.n)
		}
		if s.partitions > s.n || s.respParts > s.n {
			t.Errorf("broker %d as leader: idle follower fetches named %d partitions and got %d back in %d fetches (a full fetch names about %d)",
				id, s.partitions, s.respParts, s.n, parts/3)
		}
		idle.n += s.n
		idle.full += s.full
		idle.incremental += s.incremental
		idle.partitions += s.partitions
		idle.respParts += s.respParts
		idle.reqBytes += s.reqBytes
		idle.respBytes += s.respBytes
	}
	t.Logf("largest full follower fetch: %v", fullBefore)
	t.Logf("idle, all leaders: %v", idle)

	produceAll := func(round int) {
		t.Helper()
		for id, tap := range taps {
			marks[id] = tap.count()
		}
		var recs []*kgo.Record
		for p := range int32(parts) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("r%d-p%d", round, p))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("acks=all produce round %d to %d partitions: %v", round, parts, err)
		}
		offs, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(parts) {
			if o, _ := offs.Lookup(topic, p); o.Offset != int64(round) {
				t.Fatalf("partition %d: high watermark %d after round %d, want %d", p, o.Offset, round, round)
			}
		}
		WaitFor(t, 60*time.Second, fmt.Sprintf("every broker's checkpointed HW of every partition at %d", round), func() bool {
			for _, id := range c.Brokers {
				hws := checkpointHWs(c.Nodes[id], topic)
				for p := range int32(parts) {
					if hws[p] != int64(round) {
						return false
					}
				}
			}
			return true
		})
		for id, tap := range taps {
			t.Logf("round %d, broker %d as leader: %v", round, id, summarize(tap.fetchesSince(marks[id])))
		}
	}
	produceAll(1)
	full, _ := replicationState(ctx, b2, topic, parts)
	if !full {
		t.Errorf("an ISR shrank while followers fetched incrementally")
	}

	// The leader of a third of the partitions restarts; once it is back in every ISR it
	// takes its partitions back, and its followers open new sessions with it.
	oldSessions := map[int32]bool{}
	for _, f := range taps[1].fetchesSince(0) {
		if f.RespSessionID != 0 {
			oldSessions[f.RespSessionID] = true
		}
	}
	c.Nodes[1].Stop()
	c.Nodes[1].Start()
	mark1 := taps[1].count()
	electPreferred()
	newSession := func(id int32) bool { return !oldSessions[id] }
	defer func() {
		if !t.Failed() {
			return
		}
		tds, _ := adm.ListTopics(context.Background(), topic)
		n := 0
		for _, p := range tds[topic].Partitions {
			if p.Leader == 1 {
				n++
			}
		}
		t.Logf("DEBUG broker 1 leads %d; fetches on tap1 since mark %d: %d", n, mark1, len(taps[1].fetchesSince(mark1)))
		var lines []string
		for _, line := range strings.Split(c.Nodes[2].Log(), "\n") {
			if strings.Contains(line, "Thread-0-1") {
				lines = append(lines, line)
			}
		}
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		for _, l := range lines {
			t.Logf("N2 %s", l)
		}
	}()
	WaitFor(t, 60*time.Second, "both followers fetching incrementally from the restarted leader in new sessions", func() bool {
		for _, f := range others(1) {
			if !incrementalFrom(taps[1], mark1, f, newSession) {
				return false
			}
		}
		return true
	})
	t.Logf("after broker 1 restarted, its followers: %v", summarize(taps[1].fetchesSince(mark1)))
	produceAll(2)
	full, _ = replicationState(ctx, b2, topic, parts)
	if !full {
		t.Errorf("an ISR shrank after the leader restart")
	}
	WaitFor(t, 30*time.Second, "every partition's replicas byte-identical", func() bool {
		for p := range parts {
			seg := func(id int32) []byte {
				b, _ := os.ReadFile(filepath.Join(c.Nodes[id].Props["log.dirs"], fmt.Sprintf("%s-%d", topic, p), "00000000000000000000.log"))
				return b
			}
			a := seg(1)
			if len(a) == 0 || !bytes.Equal(a, seg(2)) || !bytes.Equal(a, seg(3)) {
				return false
			}
		}
		return true
	})
}
