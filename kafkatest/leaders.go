package kafkatest

// Leadership and ISR controls: MoveLeader, ElectPreferredLeaders, ShuffleLeaders and
// ShrinkISR. None of them touches a broker's state directly; each goes through the
// metadata log as an operator's tool or a leader would, so the leader epoch and the
// partition epoch move as in Kafka and clients see NOT_LEADER_OR_FOLLOWER /
// FENCED_LEADER_EPOCH and refresh their metadata:
//
//   - moving a leader is kafka-reassign-partitions with the same replicas reordered
//     (the new leader first: a reassignment that adds no replica completes at once)
//     followed by kafka-leader-election --election-type PREFERRED for the partition,
//     both carried out by the active controller (AlterPartitionReassignments,
//     ElectLeaders). The new leader stays the preferred replica, so the automatic
//     leader rebalance does not move it back.
//   - shrinking an ISR is the leader's own AlterPartition, proposed at once instead of
//     after replica.lag.time.max.ms (partition.Leader.ShrinkISRNow).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/storage"
)

// LeaderMove is one partition's change of leader made by a control.
type LeaderMove struct {
	Topic     string
	Partition int32
	// From is the leader before (-1: none), To the one after.
	From, To int32
}

// MoveLeader makes broker to the leader of partition p of topic, the way Kafka's
// tools do: the replicas are reordered with to first (an AlterPartitionReassignments
// of the same replicas, which completes at once) and the preferred replica elected
// (ElectLeaders PREFERRED), so the leader epoch is bumped, the old leader becomes a
// follower and clients producing to it get NOT_LEADER_OR_FOLLOWER and move to the new
// one. to must be a replica; MoveLeader waits (up to the wait timeout) until it is in
// the ISR on a running, unfenced broker, as a follower catching up will be. It returns once
// to serves the partition and every running broker's metadata names it; moving to
// the current leader does nothing. The test fails otherwise.
func (c *Cluster) MoveLeader(topic string, p, to int32) {
	c.t.Helper()
	c.must(c.Controls().MoveLeader(context.Background(), topic, p, to))
}

// MoveLeader is Cluster.MoveLeader, ending early when ctx does.
func (k *Controls) MoveLeader(ctx context.Context, topic string, p, to int32) error {
	what := fmt.Sprintf("MoveLeader(%s-%d, %d)", topic, p, to)
	img := k.c.newestImage()
	pi, err := imagePartition(img, topic, p)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !slices.Contains(pi.Replicas, to) {
		return fmt.Errorf("%s: %d is not a replica (replicas %v)", what, to, pi.Replicas)
	}
	// A replica catching up, or a broker being unfenced, may lead soon: wait for it.
	var why error
	if err := k.c.waitUntil(ctx, func() bool {
		img = k.c.newestImage()
		if pi, why = imagePartition(img, topic, p); why == nil && pi.Leader != to {
			why = canLeadNow(img, pi, to)
		}
		return why == nil
	}, func() string { return fmt.Sprintf("%s: %v", what, why) }); err != nil {
		return err
	}
	if pi.Leader == to {
		return k.waitLeaders(ctx, []LeaderMove{{Topic: topic, Partition: p, From: to, To: to}})
	}
	moves := []LeaderMove{{Topic: topic, Partition: p, From: pi.Leader, To: to}}
	if err := k.moveLeaders(ctx, img, moves); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ShuffleLeaders gives every partition of topics (every topic when none is named,
// internal ones included) a new leader picked at random among its other in-sync
// replicas on running, unfenced brokers, as MoveLeader moves one — kfake's
// ShufflePartitionLeaders with real elections. Partitions with no other such replica
// keep their leader. It returns the moves once every new leader serves; the test
// fails when one cannot be made.
func (c *Cluster) ShuffleLeaders(topics ...string) []LeaderMove {
	c.t.Helper()
	moves, err := c.Controls().ShuffleLeaders(context.Background(), topics...)
	c.must(err)
	return moves
}

// ShuffleLeaders is Cluster.ShuffleLeaders, ending early when ctx does.
func (k *Controls) ShuffleLeaders(ctx context.Context, topics ...string) ([]LeaderMove, error) {
	img := k.c.newestImage()
	if img == nil {
		return nil, errors.New("ShuffleLeaders: no node is running")
	}
	names, err := topicNames(img, topics)
	if err != nil {
		return nil, fmt.Errorf("ShuffleLeaders: %w", err)
	}
	var moves []LeaderMove
	for _, name := range names {
		for i, pi := range img.Topics[name].Partitions {
			var can []int32
			for _, r := range pi.ISR {
				if r != pi.Leader && canLeadNow(img, pi, r) == nil {
					can = append(can, r)
				}
			}
			if len(can) > 0 && !reassigning(pi) {
				moves = append(moves, LeaderMove{Topic: name, Partition: int32(i), From: pi.Leader, To: can[rand.IntN(len(can))]})
			}
		}
	}
	if err := k.moveLeaders(ctx, img, moves); err != nil {
		return nil, fmt.Errorf("ShuffleLeaders: %w", err)
	}
	return moves, nil
}

// ElectPreferredLeaders elects the preferred replica (the first of the assignment) as
// the leader of every partition of topics (every topic when none is named) that it
// does not lead, as kafka-leader-election --election-type PREFERRED: the controller
// moves those whose preferred replica is in the ISR on an active broker. It returns
// the moves once every new leader serves. A named topic's partition whose preferred
// replica cannot lead (PREFERRED_LEADER_NOT_AVAILABLE) fails the test; with no topic
// named, such partitions are left out, as the tool leaves them.
func (c *Cluster) ElectPreferredLeaders(topics ...string) []LeaderMove {
	c.t.Helper()
	moves, err := c.Controls().ElectPreferredLeaders(context.Background(), topics...)
	c.must(err)
	return moves
}

// ElectPreferredLeaders is Cluster.ElectPreferredLeaders, ending early when ctx does.
func (k *Controls) ElectPreferredLeaders(ctx context.Context, topics ...string) ([]LeaderMove, error) {
	img := k.c.newestImage()
	if img == nil {
		return nil, errors.New("ElectPreferredLeaders: no node is running")
	}
	names, err := topicNames(img, topics)
	if err != nil {
		return nil, fmt.Errorf("ElectPreferredLeaders: %w", err)
	}
	var tps []LeaderMove
	for _, name := range names {
		for i, pi := range img.Topics[name].Partitions {
			if len(pi.Replicas) > 0 && pi.Leader != pi.Replicas[0] {
				tps = append(tps, LeaderMove{Topic: name, Partition: int32(i), From: pi.Leader, To: pi.Replicas[0]})
			}
		}
	}
	moved, err := k.electPreferred(ctx, tps, len(topics) > 0)
	if err != nil {
		return nil, fmt.Errorf("ElectPreferredLeaders: %w", err)
	}
	if err := k.waitLeaders(ctx, moved); err != nil {
		return nil, fmt.Errorf("ElectPreferredLeaders: %w", err)
	}
	return moved, nil
}

// ShrinkISR drops replica from the ISR of partition p of topic now, as the leader
// does once a follower has not caught up for replica.lag.time.max.ms: the leader
// proposes the smaller ISR to the controller (AlterPartition), which commits it, and
// IsrShrinksPerSec counts it. It returns once every running broker's metadata has the
// change. The replica is not stopped: a follower that keeps fetching rejoins the ISR
// as soon as it has caught up again (at its next fetch when it already had), so hold
// it back first (CutOneWay(replica, leader), Pause) to keep it out. The leader cannot
// be dropped (move the leadership first). The test fails otherwise.
func (c *Cluster) ShrinkISR(topic string, p, replica int32) {
	c.t.Helper()
	c.must(c.Controls().ShrinkISR(context.Background(), topic, p, replica))
}

// ShrinkISR is Cluster.ShrinkISR, ending early when ctx does.
func (k *Controls) ShrinkISR(ctx context.Context, topic string, p, replica int32) error {
	c := k.c
	what := fmt.Sprintf("ShrinkISR(%s-%d, %d)", topic, p, replica)
	tp := storage.TopicPartition{Topic: topic, Partition: p}
	var prop struct {
		leader int32
		epoch  int32
	}
	var lastErr error
	// The leader may have an expansion in flight: try until it has none.
	err := c.waitUntil(ctx, func() bool {
		leader, snap := c.leader(topic, p)
		if leader < 0 {
			lastErr = fmt.Errorf("no serving leader (now %+v)", snap)
			return false
		}
		if !slices.Contains(snap.ISR, replica) {
			lastErr = fmt.Errorf("%d is not in the ISR %v", replica, snap.ISR)
			return true
		}
		b := c.nodes[leader].running()
		if b == nil {
			return false
		}
		pr, err := b.ReplicaManager().ShrinkISR(tp, replica)
		if err != nil {
			lastErr = err
			// An ISR change in flight, or leadership moving: try again.
			return !errors.Is(err, partition.ErrISRChangeInFlight) && !errors.Is(err, partition.ErrNotLeaderOrFollower)
		}
		prop.leader, prop.epoch, lastErr = leader, pr.PartitionEpoch, nil
		return true
	}, func() string { return fmt.Sprintf("%s: %v", what, lastErr) })
	if err != nil {
		return err
	}
	if lastErr != nil {
		return fmt.Errorf("%s: %w", what, lastErr)
	}
	// Committed once the leader took the answer (or newer metadata) at a later
	// partition epoch and every running broker has it; refused when the leader
	// dropped the proposal at the same epoch.
	var refused bool
	err = c.waitUntil(ctx, func() bool {
		b := c.nodes[prop.leader].running()
		if b == nil {
			return false
		}
		part := b.ReplicaManager().Partition(tp)
		if part == nil {
			return false
		}
		s := part.Snapshot()
		if s.State.PartitionEpoch == prop.epoch && s.Pending == nil {
			refused = true
			return true
		}
		return s.State.PartitionEpoch > prop.epoch && c.everyBroker(func(img *controller.MetadataImage) bool {
			pi, err := imagePartition(img, topic, p)
			return err == nil && pi.PartitionEpoch > prop.epoch
		})
	}, func() string {
		return fmt.Sprintf("%s: the ISR change to be committed (now %+v)", what, c.Partition(topic, p))
	})
	if err == nil && refused {
		err = fmt.Errorf("%s: the controller refused the change (the leader's log says why)", what)
	}
	return err
}

// moveLeaders makes each move's To the preferred replica (one reassignment for
// every partition whose replicas need reordering) and elects it, then waits until
// every new leader serves.
func (k *Controls) moveLeaders(ctx context.Context, img *controller.MetadataImage, moves []LeaderMove) error {
	if len(moves) == 0 {
		return nil
	}
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(k.c.opts.wait.Milliseconds())
	for _, m := range moves {
		pi, _ := imagePartition(img, m.Topic, m.Partition)
		if len(pi.Replicas) > 0 && pi.Replicas[0] == m.To {
			continue
		}
		if reassigning(pi) {
			return fmt.Errorf("%s-%d has a reassignment in progress (adding %v, removing %v)", m.Topic, m.Partition, pi.AddingReplicas, pi.RemovingReplicas)
		}
		order := append([]int32{m.To}, slices.DeleteFunc(slices.Clone(pi.Replicas), func(r int32) bool { return r == m.To })...)
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != m.Topic {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = m.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = m.Partition, order
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	if len(req.Topics) > 0 {
		r, err := k.controllerRequest(ctx, req)
		if err != nil {
			return fmt.Errorf("reordering the replicas: %w", err)
		}
		resp := r.(*kmsg.AlterPartitionAssignmentsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("reordering the replicas: %w%s", err, msgOf(resp.ErrorMessage))
		}
		var errs []error
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("reordering the replicas of %s-%d: %w%s", t.Topic, p.Partition, err, msgOf(p.ErrorMessage)))
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	moved, err := k.electPreferred(ctx, moves, true)
	if err != nil {
		return err
	}
	return k.waitLeaders(ctx, moved)
}

// electPreferred sends one ElectLeaders PREFERRED for the moves' partitions (every
// partition when strict is false, as a null topic list) and returns the moves the
// controller made. ELECTION_NOT_NEEDED is no error; any other partition error is
// one when strict.
func (k *Controls) electPreferred(ctx context.Context, moves []LeaderMove, strict bool) ([]LeaderMove, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	req.ElectionType = controller.ElectionPreferred
	req.TimeoutMillis = int32(k.c.opts.wait.Milliseconds())
	byTP := map[string]map[int32]LeaderMove{}
	for _, m := range moves {
		if byTP[m.Topic] == nil {
			byTP[m.Topic] = map[int32]LeaderMove{}
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = m.Topic
			req.Topics = append(req.Topics, rt)
		}
		byTP[m.Topic][m.Partition] = m
		for i := range req.Topics {
			if req.Topics[i].Topic == m.Topic {
				req.Topics[i].Partitions = append(req.Topics[i].Partitions, m.Partition)
			}
		}
	}
	r, err := k.controllerRequest(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("electing the preferred leaders: %w", err)
	}
	resp := r.(*kmsg.ElectLeadersResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("electing the preferred leaders: %w", err)
	}
	var moved []LeaderMove
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			m, ok := byTP[t.Topic][p.Partition]
			switch {
			case !ok:
			case p.ErrorCode == 0:
				moved = append(moved, m)
			case p.ErrorCode == kerr.ElectionNotNeeded.Code:
			case strict:
				errs = append(errs, fmt.Errorf("electing %d the leader of %s-%d: %w%s", m.To, t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode), msgOf(p.ErrorMessage)))
			}
		}
	}
	return moved, errors.Join(errs...)
}

// waitLeaders waits until each move's To serves its partition and every running
// broker's metadata names it.
func (k *Controls) waitLeaders(ctx context.Context, moves []LeaderMove) error {
	c := k.c
	var pending LeaderMove
	return c.waitUntil(ctx, func() bool {
		for _, m := range moves {
			pending = m
			if leader, _ := c.leader(m.Topic, m.Partition); leader != m.To {
				return false
			}
			if !c.everyBroker(func(img *controller.MetadataImage) bool {
				pi, err := imagePartition(img, m.Topic, m.Partition)
				return err == nil && pi.Leader == m.To
			}) {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("%d to lead %s-%d (now %+v)", pending.To, pending.Topic, pending.Partition, c.Partition(pending.Topic, pending.Partition))
	})
}

// controllerRequest sends req to the active controller through a running broker
// that is not paused, bounded by the wait timeout.
func (k *Controls) controllerRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	var b *server.Broker
	for _, id := range k.c.BrokerIDs() {
		if !k.isPaused(id) {
			if b = k.c.nodes[id].running(); b != nil {
				break
			}
		}
	}
	if b == nil {
		return nil, errors.New("no running broker to reach the controller through")
	}
	ctx, cancel := context.WithTimeout(ctx, k.c.opts.wait)
	defer cancel()
	return b.ControllerRequest(ctx, req)
}

// imagePartition returns partition p of topic in img.
func imagePartition(img *controller.MetadataImage, topic string, p int32) (controller.PartitionImage, error) {
	if img == nil {
		return controller.PartitionImage{}, errors.New("no node is running")
	}
	ti := img.Topics[topic]
	if ti == nil {
		return controller.PartitionImage{}, fmt.Errorf("no topic %q", topic)
	}
	if p < 0 || int(p) >= len(ti.Partitions) {
		return controller.PartitionImage{}, fmt.Errorf("topic %q has no partition %d (it has %d)", topic, p, len(ti.Partitions))
	}
	return ti.Partitions[p], nil
}

// canLeadNow says why broker id cannot be elected the leader of pi without an
// unclean election (nil: it can), as the controller's preferred election checks.
func canLeadNow(img *controller.MetadataImage, pi controller.PartitionImage, id int32) error {
	if !slices.Contains(pi.Replicas, id) {
		return fmt.Errorf("%d is not a replica (replicas %v)", id, pi.Replicas)
	}
	if !slices.Contains(pi.ISR, id) {
		return fmt.Errorf("%d is not in the ISR %v", id, pi.ISR)
	}
	bi, ok := img.Brokers[id]
	switch {
	case !ok:
		return fmt.Errorf("broker %d is not registered", id)
	case bi.Fenced:
		return fmt.Errorf("broker %d is fenced", id)
	case bi.InControlledShutdown:
		return fmt.Errorf("broker %d is shutting down", id)
	}
	return nil
}

func reassigning(pi controller.PartitionImage) bool {
	return len(pi.AddingReplicas) > 0 || len(pi.RemovingReplicas) > 0
}

// topicNames returns topics, checked against img, or every topic of img in order.
func topicNames(img *controller.MetadataImage, topics []string) ([]string, error) {
	if len(topics) == 0 {
		return img.SortedTopicNames(), nil
	}
	var unknown []string
	for _, t := range topics {
		if img.Topics[t] == nil {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("no topic %s", strings.Join(unknown, ", "))
	}
	return topics, nil
}

func msgOf(s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	return ": " + *s
}
