package integration

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
)

// fastLifecycle keeps cluster tests short: fencing after 1s of silence.
var fastLifecycle = map[string]string{
	"broker.session.timeout.ms":    "1000",
	"broker.heartbeat.interval.ms": "100",
}

// partition is partition 0 of a topic as one broker's metadata shows it.
type partition struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

// partitionState asks the first seed broker of cl (only that broker: a client's
// metadata requests could otherwise go to a dead one) for topic's partition 0 and the
// live brokers (ok false while the topic is unknown).
func partitionState(ctx context.Context, cl *kgo.Client, topic string) (partition, []int32, bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return partition{}, nil, false
	}
	resp := r.(*kmsg.MetadataResponse)
	var brokers []int32
	for _, b := range resp.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		return partition{}, brokers, false
	}
	p := resp.Topics[0].Partitions[0]
	return partition{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR}, brokers, true
}

// createAssigned creates topic with one partition on replicas, through any broker
// (which forwards to the active controller).
func createAssigned(t *testing.T, cl *kgo.Client, topic string, replicas ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(Ctx(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	// The tests' producers do not retry (producer), so wait until the leader itself
	// knows it leads: a ListOffsets it answers without NOT_LEADER_OR_FOLLOWER.
	adm := kadm.NewClient(cl)
	WaitFor(t, 20*time.Second, "the leader of "+topic+" to serve it", func() bool {
		offs, err := adm.ListEndOffsets(Ctx(t, 5*time.Second), topic)
		if err != nil {
			return false
		}
		o, ok := offs.Lookup(topic, 0)
		return ok && o.Err == nil
	})
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSeparateControllerFencingAndControlledShutdown: three brokers and one
// controller-only node; leadership follows Kafka's rules when a broker is killed,
// comes back, and shuts down cleanly.
func TestSeparateControllerFencingAndControlledShutdown(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, fastLifecycle)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...))
	ctx := Ctx(t, 60*time.Second)
	b3 := NewClient(t, c.Nodes[3].Addr)
	WaitFor(t, 10*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b3, "none")
		return len(brokers) == 3
	})
	// kadm sees every broker (and a live broker as the controller: the controller-only
	// node is not reachable by clients, so the answering broker stands in).
	if bs, err := kadm.NewClient(b3).ListBrokers(ctx); err != nil || len(bs) != 3 {
		t.Fatalf("kadm ListBrokers: %v %v", bs, err)
	}
	// Auto-creation forwards the broker's own CreateTopics to the controller.
	auto := NewClient(t, c.Nodes[2].Addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto"))
	if err := auto.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with auto-creation through a broker-only node: %v", err)
	}
	createAssigned(t, cl, "t", 1, 2, 3)
	WaitFor(t, 10*time.Second, "broker 1 to lead t", func() bool {
		p, _, ok := partitionState(ctx, b3, "t")
		return ok && p.Leader == 1
	})
	p0, _, _ := partitionState(ctx, b3, "t")

	// SIGKILL the leader: fenced within the session timeout (+ a heartbeat), and the
	// first live ISR member in assignment order leads with a higher leader epoch.
	c.Nodes[1].Kill()
	killed := time.Now()
	WaitFor(t, 10*time.Second, "leadership to move off the killed broker", func() bool {
		p, brokers, ok := partitionState(ctx, b3, "t")
		return ok && p.Leader == 2 && p.LeaderEpoch > p0.LeaderEpoch && !contains(brokers, 1) && !contains(p.ISR, 1)
	})
	// Session 1s + a heartbeat interval, plus the fence check and the brokers'
	// metadata fetch.
	if took := time.Since(killed); took > 2500*time.Millisecond {
		t.Errorf("fencing took %v, want about the 1s session timeout\n%s", took, c.Logs())
	}

	// The broker comes back: it registers again, with a new broker epoch, and is
	// listed again.
	c.Nodes[1].Start()
	WaitFor(t, 10*time.Second, "broker 1 back", func() bool {
		_, brokers, _ := partitionState(ctx, b3, "t")
		return contains(brokers, 1)
	})
	epochs := registrationEpochs(c.Nodes[100].Log(), 1)
	if len(epochs) != 2 || epochs[1] <= epochs[0] {
		t.Fatalf("broker 1 registrations: epochs %v, want two, increasing", epochs)
	}

	// SIGTERM the new leader: its leadership moves before it exits.
	p1, _, _ := partitionState(ctx, b3, "t")
	c.Nodes[2].Stop()
	if !strings.Contains(c.Nodes[2].Log(), "controlled shutdown done") {
		t.Fatalf("broker 2 exited without a controlled shutdown:\n%s", c.Nodes[2].Log())
	}
	// The new leader is the first live ISR member in assignment order at that moment:
	// 3, or 1 if the restarted broker had already caught up and rejoined the ISR
	// (followers replicate); the ISR may grow again after.
	WaitFor(t, 5*time.Second, "leadership to move off the stopped broker", func() bool {
		p, _, ok := partitionState(ctx, b3, "t")
		return ok && (p.Leader == 3 || p.Leader == 1) && !contains(p.ISR, 2) && p.LeaderEpoch > p1.LeaderEpoch
	})
}

// activeController asks the cluster (through a broker) for the Raft leader.
func activeController(ctx context.Context, cl *kgo.Client) int32 {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return -1
	}
	resp := r.(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.CurrentVoters) != 3 {
		return -1
	}
	return p.LeaderID
}

// TestCombinedQuorumFailoverAndRestart: three combined nodes; killing the active
// controller elects another, which takes writes; nothing committed is lost, also
// across a restart of the whole cluster.
func TestCombinedQuorumFailoverAndRestart(t *testing.T) {
	c := StartCluster(t, map[int32]string{1: "broker,controller", 2: "broker,controller", 3: "broker,controller"}, fastLifecycle)
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...))
	ctx := Ctx(t, 90*time.Second)
	WaitFor(t, 10*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, cl, "none")
		return len(brokers) == 3
	})
	createAssigned(t, cl, "before", 1, 2, 3)
	leader := int32(-1)
	WaitFor(t, 10*time.Second, "an active controller", func() bool {
		leader = activeController(ctx, cl)
		return leader >= 0
	})

	// Combined nodes: Metadata names the active controller, a broker clients can reach.
	WaitFor(t, 10*time.Second, "Metadata to name the active controller", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		r, err := cl.SeedBrokers()[0].Request(ctx, req)
		return err == nil && r.(*kmsg.MetadataResponse).ControllerID == leader
	})

	c.Nodes[leader].Kill()
	var others []string
	for _, id := range c.Brokers {
		if id != leader {
			others = append(others, c.Nodes[id].Addr)
		}
	}
	cl2 := NewClient(t, others[0], kgo.SeedBrokers(others...))
	adm2 := kadm.NewClient(cl2)
	one := NewClient(t, others[0])
	WaitFor(t, 15*time.Second, "another active controller", func() bool {
		id := activeController(ctx, one)
		return id >= 0 && id != leader
	})
	WaitFor(t, 15*time.Second, "a topic created after the failover", func() bool {
		r, err := adm2.CreateTopic(ctx, 1, 2, nil, "after")
		return err == nil && (r.Err == nil || r.Err == kerr.TopicAlreadyExists)
	})
	before, _, ok := partitionState(ctx, one, "before")
	if !ok {
		t.Fatal("topic created before the failover is gone")
	}

	// Whole-cluster restart: SIGKILL everything, start everything.
	c.Nodes[leader].Start()
	for _, p := range c.Nodes {
		p.Kill()
	}
	c.StartAll()
	cl3 := NewClient(t, c.Seeds()[0])
	WaitFor(t, 20*time.Second, "both topics back with their assignments", func() bool {
		p, _, ok := partitionState(ctx, cl3, "before")
		_, _, ok2 := partitionState(ctx, cl3, "after")
		return ok && ok2 && len(p.Replicas) == 3 && p.Replicas[0] == 1 && p.LeaderEpoch >= before.LeaderEpoch
	})
}

// TestExampleClusterConfigsParse keeps examples/cluster valid: every file parses with
// its role and the voters its cluster shares.
func TestExampleClusterConfigsParse(t *testing.T) {
	files, _ := filepath.Glob("../examples/cluster/*.properties")
	if len(files) != 7 {
		t.Fatalf("want 7 example files, got %v", files)
	}
	for _, f := range files {
		props, err := config.ReadPropertiesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := config.Parse(props); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// registrationEpochs returns the broker epochs a controller's log shows for broker id.
func registrationEpochs(log string, id int32) []int64 {
	var out []int64
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Broker  *int32 `json:"broker"`
			Epoch   int64  `json:"broker_epoch"`
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "broker registered" && e.Broker != nil && *e.Broker == id {
			out = append(out, e.Epoch)
		}
	}
	return out
}

// TestBrokersFollowControllerFailover: three controller-only voters and two brokers;
// when the active controller dies the brokers find the new one (heartbeats,
// metadata, forwarded admin requests) without being fenced.
func TestBrokersFollowControllerFailover(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 101: "controller", 102: "controller", 1: "broker", 2: "broker"}, fastLifecycle)
	ctx := Ctx(t, 60*time.Second)
	b1 := NewClient(t, c.Nodes[1].Addr)
	WaitFor(t, 10*time.Second, "2 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b1, "none")
		return len(brokers) == 2
	})
	leader := int32(-1)
	WaitFor(t, 10*time.Second, "an active controller", func() bool {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		r, err := b1.SeedBrokers()[0].Request(ctx, req)
		if err != nil || len(r.(*kmsg.DescribeQuorumResponse).Topics) != 1 {
			return false
		}
		p := r.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]
		leader = p.LeaderID
		return p.ErrorCode == 0 && leader >= 100
	})
	c.Nodes[leader].Kill()
	adm := kadm.NewClient(b1)
	WaitFor(t, 20*time.Second, "a topic created through a broker after the failover", func() bool {
		r, err := adm.CreateTopic(ctx, 1, 2, nil, "after-failover")
		return err == nil && (r.Err == nil || r.Err == kerr.TopicAlreadyExists)
	})
	b2 := NewClient(t, c.Nodes[2].Addr)
	WaitFor(t, 10*time.Second, "both brokers to see the topic", func() bool {
		_, _, ok1 := partitionState(ctx, b1, "after-failover")
		_, brokers, ok2 := partitionState(ctx, b2, "after-failover")
		return ok1 && ok2 && len(brokers) == 2
	})
	for _, id := range []int32{1, 2} {
		if strings.Contains(c.Nodes[id].Log(), "broker is fenced") {
			t.Errorf("broker %d was fenced during the controller failover", id)
		}
	}
}

// TestLeaderKillKeepsAcknowledgedRecords: with replication factor 3 and
// min.insync.replicas=2, every acks=all record survives a SIGKILL of the leader: the
// controller fences it and elects an ISR member, which has them all and takes new
// writes.
func TestLeaderKillKeepsAcknowledgedRecords(t *testing.T) {
	extra := maps.Clone(fastLifecycle)
	extra["min.insync.replicas"] = "2"
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker", 2: "broker", 3: "broker"}, extra)
	ctx := Ctx(t, 60*time.Second)
	b3 := NewClient(t, c.Nodes[3].Addr)
	WaitFor(t, 10*time.Second, "3 brokers in metadata", func() bool {
		_, brokers, _ := partitionState(ctx, b3, "none")
		return len(brokers) == 3
	})
	cl := NewClient(t, c.Seeds()[0], kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createAssigned(t, cl, "ha", 1, 2, 3)
	WaitFor(t, 10*time.Second, "broker 1 to lead ha with a full ISR", func() bool {
		p, _, ok := partitionState(ctx, b3, "ha")
		return ok && p.Leader == 1 && len(p.ISR) == 3
	})
	produceSeq(t, cl, "ha", 0, 100)
	c.Nodes[1].Kill()
	WaitFor(t, 10*time.Second, "broker 2 to lead ha", func() bool {
		p, _, ok := partitionState(ctx, b3, "ha")
		return ok && p.Leader == 2 && !contains(p.ISR, 1)
	})
	others := []string{c.Nodes[2].Addr, c.Nodes[3].Addr}
	cl2 := NewClient(t, others[0], kgo.SeedBrokers(others...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSeq(t, cl2, "ha", 100, 150)
	checkOffsets(t, others[0], "ha", 150)
}

// TestPausedBrokerIsFencedAndComesBack: a SIGSTOPped broker misses its heartbeats and
// is fenced (its partition, with no other replica, goes leaderless); on SIGCONT its
// heartbeats, same broker epoch, unfence it and it leads again.
func TestPausedBrokerIsFencedAndComesBack(t *testing.T) {
	c := StartCluster(t, map[int32]string{100: "controller", 1: "broker"}, fastLifecycle)
	ctx := Ctx(t, 60*time.Second)
	cl := NewClient(t, c.Nodes[1].Addr)
	createAssigned(t, cl, "solo", 1)
	WaitFor(t, 10*time.Second, "broker 1 to lead solo", func() bool {
		p, _, ok := partitionState(ctx, cl, "solo")
		return ok && p.Leader == 1
	})
	before, _, _ := partitionState(ctx, cl, "solo")
	c.Nodes[1].Signal(syscall.SIGSTOP)
	WaitFor(t, 10*time.Second, "broker 1 fenced", func() bool {
		return strings.Contains(c.Nodes[100].Log(), "broker fenced: session expired")
	})
	c.Nodes[1].Signal(syscall.SIGCONT)
	WaitFor(t, 10*time.Second, "broker 1 to lead solo again", func() bool {
		p, brokers, ok := partitionState(ctx, cl, "solo")
		return ok && p.Leader == 1 && contains(brokers, 1) && p.LeaderEpoch > before.LeaderEpoch
	})
	if epochs := registrationEpochs(c.Nodes[100].Log(), 1); len(epochs) != 1 {
		t.Fatalf("broker 1 registered %d times, want once (its epoch stays valid)", len(epochs))
	}
}
