package kafkatest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/storage"
)

// PartitionSnapshot is one partition as the cluster holds it at one moment: the
// controller's view (from the newest metadata image any running node has) and each
// replica's own offsets, read from the in-process brokers' replica managers.
type PartitionSnapshot struct {
	Topic     string
	Partition int32
	// Leader is the leader in the metadata (-1: none, or a partition nobody knows).
	Leader int32
	// LeaderEpoch and PartitionEpoch are the metadata's epochs (-1: unknown partition).
	LeaderEpoch    int32
	PartitionEpoch int32
	// Replicas is the assignment (nil: no running node knows the partition).
	Replicas []int32
	// ISR is the committed in-sync replica set.
	ISR []int32
	// ELR are the eligible leader replicas and LastKnownELR the last known ones
	// (KIP-966; both empty unless eligible.leader.replicas.version is enabled).
	ELR, LastKnownELR []int32
	// ReplicaStates has one entry per replica, in Replicas' order.
	ReplicaStates []ReplicaSnapshot
}

// ReplicaSnapshot is one replica of a partition, as its own broker holds it.
type ReplicaSnapshot struct {
	Broker int32
	// Running is false when the broker is stopped (killed or shut down) or does not
	// host the partition yet; the offsets are then -1.
	Running bool
	// IsLeader reports whether the broker acts as the partition's leader.
	IsLeader bool
	// LeaderEpoch is the leader epoch the broker has applied.
	LeaderEpoch int32
	// LogStartOffset, LogEndOffset (LEO), HighWatermark and LastStableOffset are the
	// replica's log offsets. A follower's high watermark is the one its leader last
	// sent it.
	LogStartOffset   int64
	LogEndOffset     int64
	HighWatermark    int64
	LastStableOffset int64

	// FetchedLogEndOffset is the replica's LEO as the serving leader knows it from the
	// replica's last fetch (the leader's own LEO for the leader; -1: unknown, or no
	// serving leader). The high watermark is the smallest of the ISR's.
	FetchedLogEndOffset int64
	// Lag is the leader's LEO minus FetchedLogEndOffset (-1 when unknown).
	Lag int64
	// LastCaughtUp is when the leader last knew this follower to have everything it
	// had, as replica.lag.time.max.ms measures it (zero: unknown, and for the leader).
	LastCaughtUp time.Time
}

// newestImage is the metadata image with the highest offset among the running
// nodes' (brokers' served images and controllers' committed ones); nil when no node
// runs.
func (c *Cluster) newestImage() *controller.MetadataImage {
	var best *controller.MetadataImage
	consider := func(img *controller.MetadataImage) {
		if img != nil && (best == nil || img.Offset > best.Offset) {
			best = img
		}
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		b := n.running()
		if b == nil {
			continue
		}
		if ctl := b.Controller(); ctl != nil {
			consider(ctl.Image())
		}
		if n.broker {
			consider(b.Image())
		}
	}
	return best
}

// Image returns the newest metadata image among the running nodes' (brokers'
// served images and controllers' committed ones; nil when no node runs): topics,
// partitions, broker registrations (fenced or not, broker epochs) and configs. It is
// immutable; read it, never change it.
func (c *Cluster) Image() *controller.MetadataImage { return c.newestImage() }

// Partitions returns a snapshot of every partition of every topic in Image (internal
// topics included), by topic name and partition.
func (c *Cluster) Partitions() []PartitionSnapshot {
	img := c.newestImage()
	if img == nil {
		return nil
	}
	var out []PartitionSnapshot
	for _, name := range slices.Sorted(maps.Keys(img.Topics)) {
		for p := range img.Topics[name].Partitions {
			out = append(out, c.Partition(name, int32(p)))
		}
	}
	return out
}

// Partition returns a snapshot of partition p of topic (see PartitionSnapshot).
func (c *Cluster) Partition(topic string, p int32) PartitionSnapshot {
	snap := PartitionSnapshot{Topic: topic, Partition: p, Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1}
	img := c.newestImage()
	if img == nil {
		return snap
	}
	ti := img.Topics[topic]
	if ti == nil || p < 0 || int(p) >= len(ti.Partitions) {
		return snap
	}
	pi := ti.Partitions[p]
	snap.Leader, snap.LeaderEpoch, snap.PartitionEpoch = pi.Leader, pi.LeaderEpoch, pi.PartitionEpoch
	snap.Replicas, snap.ISR = slices.Clone(pi.Replicas), slices.Clone(pi.ISR)
	snap.ELR, snap.LastKnownELR = slices.Clone(pi.ELR), slices.Clone(pi.LastKnownELR)
	tp := storage.TopicPartition{Topic: topic, Partition: p}
	// The serving leader's partition, for its view of the followers.
	var lead *partition.Partition
	if n, ok := c.nodes[pi.Leader]; ok && n.broker {
		if b := n.running(); b != nil {
			if part := b.ReplicaManager().Partition(tp); part != nil && part.IsLeader() && part.LeaderEpoch() == pi.LeaderEpoch {
				lead = part
			}
		}
	}
	for _, id := range pi.Replicas {
		r := ReplicaSnapshot{Broker: id, LeaderEpoch: -1, LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1, LastStableOffset: -1,
			FetchedLogEndOffset: -1, Lag: -1}
		if lead != nil {
			leo := lead.Log.LogEndOffset()
			if id == pi.Leader {
				r.FetchedLogEndOffset, r.Lag = leo, 0
			} else if fs, ok := lead.FollowerState(id); ok && fs.LogEndOffset >= 0 {
				r.FetchedLogEndOffset, r.Lag = fs.LogEndOffset, max(leo-fs.LogEndOffset, 0)
				if fs.LastCaughtUpTimeMs > 0 {
					r.LastCaughtUp = time.UnixMilli(fs.LastCaughtUpTimeMs)
				}
			}
		}
		if n, ok := c.nodes[id]; ok && n.broker {
			if b := n.running(); b != nil {
				if part := b.ReplicaManager().Partition(tp); part != nil {
					r.Running = true
					r.IsLeader, r.LeaderEpoch = part.IsLeader(), part.LeaderEpoch()
					r.LogStartOffset, r.LogEndOffset = part.Log.LogStartOffset(), part.Log.LogEndOffset()
					r.HighWatermark, r.LastStableOffset = part.Log.HighWatermark(), part.Log.LastStableOffset()
				}
			}
		}
		snap.ReplicaStates = append(snap.ReplicaStates, r)
	}
	return snap
}

// leader returns the partition's serving leader: the leader of the newest image when
// that broker runs, has applied leadership at the image's leader epoch, and clients
// can reach it — it is not paused, nor cut off from them (-1 otherwise).
func (c *Cluster) leader(topic string, p int32) (int32, PartitionSnapshot) {
	snap := c.Partition(topic, p)
	if snap.Leader < 0 {
		return -1, snap
	}
	for _, r := range snap.ReplicaStates {
		if r.Broker == snap.Leader && r.Running && r.IsLeader && r.LeaderEpoch == snap.LeaderEpoch && c.net.reachable(r.Broker) {
			return snap.Leader, snap
		}
	}
	return -1, snap
}

// waitUntil checks cond at every metadata image a running node applies and every few
// milliseconds (for what changes without one: high watermarks, ISRs on the leader)
// until it holds, ctx ends or the wait timeout passes; then it returns an error with
// what() (called once, for the final state).
func (c *Cluster) waitUntil(ctx context.Context, cond func() bool, what func() string) error {
	deadline := time.Now().Add(c.opts.wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		// Taken before cond runs, so that an image applied meanwhile is not missed.
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(tick.C)},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		}
		for _, b := range c.runningNodes() {
			if ch := b.ImageApplied(); ch != nil {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			}
		}
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", c.opts.wait, what())
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w waiting for %s", err, what())
		}
		reflect.Select(cases)
	}
}

// WaitLeader waits until partition p of topic has a leader that serves it — the
// metadata names a running broker, which has applied leadership at the metadata's
// leader epoch, and which is neither paused nor cut off from the clients — and
// returns it. After a Kill, Pause or Isolate this is the newly elected leader once the
// controller fenced the old one. The test fails after the wait timeout.
func (c *Cluster) WaitLeader(topic string, p int32) int32 {
	c.t.Helper()
	id, err := c.Controls().WaitLeader(context.Background(), topic, p)
	c.must(err)
	return id
}

// WaitLeader is Cluster.WaitLeader, ending early when ctx does.
func (k *Controls) WaitLeader(ctx context.Context, topic string, p int32) (int32, error) {
	c := k.c
	var id int32
	var snap PartitionSnapshot
	err := c.waitUntil(ctx, func() bool {
		id, snap = c.leader(topic, p)
		return id >= 0
	}, func() string { return fmt.Sprintf("a leader of %s-%d (now %+v)", topic, p, snap) })
	return id, err
}

// WaitISR waits until the ISR of partition p of topic is exactly ids (in any order)
// in the metadata of every running broker (but paused ones), with a serving leader (see WaitLeader).
// The test fails after the wait timeout.
func (c *Cluster) WaitISR(topic string, p int32, ids ...int32) {
	c.t.Helper()
	c.must(c.Controls().WaitISR(context.Background(), topic, p, ids...))
}

// WaitISR is Cluster.WaitISR, ending early when ctx does.
func (k *Controls) WaitISR(ctx context.Context, topic string, p int32, ids ...int32) error {
	c := k.c
	want := sortedIDs(ids)
	var snap PartitionSnapshot
	return c.waitUntil(ctx, func() bool {
		var leader int32
		leader, snap = c.leader(topic, p)
		if leader < 0 || !slices.Equal(sortedIDs(snap.ISR), want) {
			return false
		}
		return c.everyBroker(func(img *controller.MetadataImage) bool {
			ti := img.Topics[topic]
			return ti != nil && int(p) < len(ti.Partitions) && slices.Equal(sortedIDs(ti.Partitions[p].ISR), want)
		})
	}, func() string { return fmt.Sprintf("ISR %v of %s-%d (now %+v)", want, topic, p, snap) })
}

// WaitHighWatermark waits until the serving leader of partition p of topic has a
// high watermark of at least hw (records below hw are committed and readable by
// consumers). The test fails after the wait timeout.
func (c *Cluster) WaitHighWatermark(topic string, p int32, hw int64) {
	c.t.Helper()
	c.must(c.Controls().WaitHighWatermark(context.Background(), topic, p, hw))
}

// WaitHighWatermark is Cluster.WaitHighWatermark, ending early when ctx does.
func (k *Controls) WaitHighWatermark(ctx context.Context, topic string, p int32, hw int64) error {
	c := k.c
	var snap PartitionSnapshot
	return c.waitUntil(ctx, func() bool {
		var leader int32
		leader, snap = c.leader(topic, p)
		if leader < 0 {
			return false
		}
		for _, r := range snap.ReplicaStates {
			if r.Broker == leader {
				return r.HighWatermark >= hw
			}
		}
		return false
	}, func() string { return fmt.Sprintf("high watermark %d of %s-%d (now %+v)", hw, topic, p, snap) })
}

// everyBroker reports whether cond holds for the image every running broker serves
// (a paused one excepted: it learns nothing until it resumes).
func (c *Cluster) everyBroker(cond func(*controller.MetadataImage) bool) bool {
	for _, id := range c.ids {
		n := c.nodes[id]
		if !n.broker || c.Controls().isPaused(id) {
			continue
		}
		if b := n.running(); b != nil && !cond(b.Image()) {
			return false
		}
	}
	return true
}

// createTopics creates the seed topics through the active controller and waits until
// every partition has a serving leader known to every running broker.
func (c *Cluster) createTopics() error {
	if len(c.opts.topics) == 0 {
		return nil
	}
	// Every broker registered and unfenced in the metadata first, so that the
	// controller places the replicas on all of them (a broker's start returns once
	// it registered; the newest image may not have every registration yet).
	if err := c.waitUntil(context.Background(), func() bool {
		img := c.newestImage()
		if img == nil {
			return false
		}
		for _, id := range c.BrokerIDs() {
			if bi, ok := img.Brokers[id]; !ok || bi.Fenced {
				return false
			}
		}
		return true
	}, func() string { return "" }); err != nil {
		return fmt.Errorf("the brokers %v are not all registered and unfenced after %v", c.BrokerIDs(), c.opts.wait)
	}
	var b *server.Broker
	for _, id := range c.BrokerIDs() {
		if b = c.nodes[id].running(); b != nil {
			break
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = int32(c.opts.wait.Milliseconds())
	for _, tp := range c.opts.topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tp.name, tp.partitions, tp.rf
		for _, k := range slices.Sorted(maps.Keys(tp.configs)) {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, kmsg.StringPtr(tp.configs[k])
			rt.Configs = append(rt.Configs, cfg)
		}
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	r, err := b.ControllerRequest(ctx, req)
	if err != nil {
		return fmt.Errorf("creating the seed topics: %w", err)
	}
	for _, rt := range r.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = ": " + *rt.ErrorMessage
			}
			return fmt.Errorf("creating seed topic %s: %w%s", rt.Topic, err, msg)
		}
	}
	for _, tp := range c.opts.topics {
		for p := range tp.partitions {
			if err := c.waitUntil(context.Background(), func() bool {
				leader, _ := c.leader(tp.name, p)
				return leader >= 0 && c.everyBroker(func(img *controller.MetadataImage) bool {
					ti := img.Topics[tp.name]
					return ti != nil && int(p) < len(ti.Partitions) && ti.Partitions[p].Leader == leader
				})
			}, func() string { return "" }); err != nil {
				snap := c.Partition(tp.name, p)
				return fmt.Errorf("seed topic %s-%d has no leader known to every broker after %v (now %+v)", tp.name, p, c.opts.wait, snap)
			}
		}
	}
	return nil
}

// activeController returns the running voter whose controller is active (-1: none);
// a paused one is not (it may not know yet that it lost its quorum).
func (c *Cluster) activeController() int32 {
	for _, id := range c.ids {
		if n := c.nodes[id]; n.voter && !c.Controls().isPaused(id) {
			if b := n.running(); b != nil && b.Controller() != nil && b.Controller().IsActive() {
				return id
			}
		}
	}
	return -1
}

// ActiveController returns the running voter that is the active controller now (-1:
// none, as while an election is under way); WaitActiveController waits for one.
func (c *Cluster) ActiveController() int32 { return c.activeController() }

// WaitActiveController waits until a running voter is the active controller (the
// quorum's Raft leader, with the metadata log applied) and returns its id; Kill it to
// test a controller failover. The test fails after the wait timeout.
func (c *Cluster) WaitActiveController() int32 {
	c.t.Helper()
	id, err := c.Controls().WaitActiveController(context.Background())
	c.must(err)
	return id
}

// WaitActiveController is Cluster.WaitActiveController, ending early when ctx does.
func (k *Controls) WaitActiveController(ctx context.Context) (int32, error) {
	c := k.c
	var id int32
	err := c.waitUntil(ctx, func() bool {
		id = c.activeController()
		return id >= 0
	}, func() string { return fmt.Sprintf("an active controller among %v", c.ControllerIDs()) })
	return id, err
}
