package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/integration"
)

// runT is the integration.TB of one run: temp dirs under the run's dir, cleanups run
// at the end of the run, and a fatal error ends the run (not the campaign) by a panic
// that run recovers. Only the run's own goroutine may call into the processes.
type runT struct {
	dir string
	mu  sync.Mutex
	fns []func()
	n   int
}

// abort is the panic value of runT.Fatal.
type abort struct{ msg string }

func (r *runT) Helper() {}

func (r *runT) Cleanup(f func()) {
	r.mu.Lock()
	r.fns = append(r.fns, f)
	r.mu.Unlock()
}

func (r *runT) TempDir() string {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	d := fmt.Sprintf("%s/%03d", r.dir, n)
	if err := os.MkdirAll(d, 0o755); err != nil {
		panic(abort{err.Error()})
	}
	return d
}

func (r *runT) Fatal(args ...any)                 { panic(abort{fmt.Sprint(args...)}) }
func (r *runT) Fatalf(format string, args ...any) { panic(abort{fmt.Sprintf(format, args...)}) }

// finish runs the cleanups, last registered first.
func (r *runT) finish() {
	r.mu.Lock()
	fns := r.fns
	r.fns = nil
	r.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// Node ids: brokers 1..3, controllers 100.. (one or three).
var brokerIDs = []int32{1, 2, 3}

func controllerIDs(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(100 + i)
	}
	return out
}

// Timings the faults are sized against.
const (
	sessionTimeout = 3 * time.Second // broker.session.timeout.ms
	replicaLag     = 3 * time.Second // replica.lag.time.max.ms
	txnTimeout     = 10 * time.Second
)

// clusterProps are every node's settings beyond integration's: RF 3 everywhere,
// min.insync.replicas=2, no unclean elections, a session timeout the pauses are sized
// against.
func clusterProps() map[string]string {
	return map[string]string{
		"broker.session.timeout.ms":                strconv.Itoa(int(sessionTimeout.Milliseconds())),
		"broker.heartbeat.interval.ms":             "300",
		"replica.lag.time.max.ms":                  strconv.Itoa(int(replicaLag.Milliseconds())),
		"default.replication.factor":               "3",
		"min.insync.replicas":                      "2",
		"unclean.leader.election.enable":           "false",
		"offsets.topic.num.partitions":             "3",
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.num.partitions":     "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"group.initial.rebalance.delay.ms":         "0",
		"auto.create.topics.enable":                "false",
	}
}

// cluster is one run's processes, and its network when the run uses namespaces.
type cluster struct {
	*integration.Cluster
	net         *network // nil on loopback
	controllers []int32
	admin       *kadm.Client
	raw         *kgo.Client           // the admin's client, for raw requests
	direct      map[int32]*kgo.Client // per broker, seeded with it alone
}

// startCluster starts nctl controllers and three brokers, in namespaces when net is
// set, and waits until the three brokers are registered. prepare, when set, runs on
// the prepared nodes before they start (a fault's setup: the disk-full fault mounts
// each broker's log dir on a tmpfs of its own).
func startCluster(t *runT, nctl int, net *network, prepare func(*integration.Cluster)) *cluster {
	roles := map[int32]string{}
	for _, id := range brokerIDs {
		roles[id] = "broker"
	}
	ctls := controllerIDs(nctl)
	for _, id := range ctls {
		roles[id] = "controller"
	}
	var place func(int32) integration.Placement
	if net != nil {
		place = func(id int32) integration.Placement {
			return integration.Placement{Host: net.nodes[id].ip, Wrap: net.wrap(id)}
		}
	}
	ic := integration.PrepareClusterPlaced(t, roles, clusterProps(), place)
	if prepare != nil {
		prepare(ic)
	}
	ic.StartAll()
	c := &cluster{Cluster: ic, net: net, controllers: ctls}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RequestRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.raw, c.admin = cl, kadm.NewClient(cl)
	c.direct = map[int32]*kgo.Client{}
	for _, id := range brokerIDs {
		d, err := kgo.NewClient(kgo.SeedBrokers(c.Nodes[id].Addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		c.direct[id] = d
	}
	waitUntil(t, 30*time.Second, "every broker to see three brokers", func() bool {
		for _, id := range brokerIDs {
			m, err := c.metadataFrom(id)
			if err != nil || len(m.Brokers) != 3 {
				return false
			}
		}
		return true
	})
	return c
}

// waitUntil polls cond every 50ms until it holds, or ends the run after d.
func waitUntil(t *runT, d time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metadataFrom asks broker id itself for the metadata of topics (kadm's answers may
// come from franz-go's metadata cache, which lags the brokers by seconds).
func (c *cluster) metadataFrom(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.direct[id].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// healthy reports whether every broker sees every partition of topics led, with all
// three replicas in its ISR.
func (c *cluster) healthy(topics ...string) bool {
	for _, id := range brokerIDs {
		m, err := c.metadataFrom(id, topics...)
		if err != nil || len(m.Topics) != len(topics) {
			return false
		}
		for _, t := range m.Topics {
			if t.ErrorCode != 0 || len(t.Partitions) != partitions {
				return false
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
					return false
				}
			}
		}
	}
	return true
}

// leaderOf returns the leader of topic/p as the first broker that answers sees it,
// -1 when none knows one.
func (c *cluster) leaderOf(topic string, p int32) int32 {
	for _, id := range brokerIDs {
		m, err := c.metadataFrom(id, topic)
		if err != nil || len(m.Topics) != 1 {
			continue
		}
		for _, mp := range m.Topics[0].Partitions {
			if mp.Partition == p && mp.ErrorCode == 0 && mp.Leader >= 0 {
				return mp.Leader
			}
		}
	}
	return -1
}

// activeController asks DescribeQuorum (a broker forwards it) for the Raft leader.
func (c *cluster) activeController() int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.raw)
	if err != nil || len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return -1
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || !slices.Contains(c.controllers, p.LeaderID) {
		return -1
	}
	return p.LeaderID
}

// others returns ids without the excluded ones.
func others(ids []int32, excl ...int32) []int32 {
	var out []int32
	for _, id := range ids {
		if !slices.Contains(excl, id) {
			out = append(out, id)
		}
	}
	return out
}

// coordinatorOf asks FindCoordinator which broker coordinates transactional id txnID.
func (c *cluster) coordinatorOf(txnID string) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1 // transaction
	req.CoordinatorKeys = []string{txnID}
	resp, err := req.RequestWith(ctx, c.raw)
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		return -1
	}
	if id := resp.Coordinators[0].NodeID; slices.Contains(brokerIDs, id) {
		return id
	}
	return -1
}
