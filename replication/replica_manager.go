package replication

import (
	"errors"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// ReplicaManager holds every partition hosted by this broker and applies metadata
// images to them (creating logs for new replicas, makeLeader, deleting removed topics),
// as Kafka's ReplicaManager.applyDelta.
type ReplicaManager struct {
	nodeID    int32
	logs      *storage.LogManager
	logConfig func(t *controller.TopicImage) storage.LogConfig
	logger    zerolog.Logger
	// Purgatory is where acks=all produces and long-polling fetches wait.
	Purgatory *Purgatory
	// Now is the clock (time.Now unless a test sets it before use).
	Now func() time.Time
	// TopicMinISR resolves a topic's min.insync.replicas (1 when nil).
	TopicMinISR func(*controller.TopicImage) int32
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms.
	ReplicaLagTimeMaxMs int64
	// Fetchers replicate the partitions this broker follows (nil: none are followed,
	// as on a single node).
	Fetchers *FetcherManager
	// AlterPartitions carries ISR proposals to the controller (nil: none reachable).
	AlterPartitions *AlterPartitionManager
	// Throttle is this broker's replication throttles (throttle.go; nil: none),
	// updated from every image.
	Throttle *ReplicationThrottle
	// ISRChanges counts the led partitions' committed and refused ISR changes.
	ISRChanges partition.ISRChangeCounts

	// image is the last metadata image applied; eligibility reads it live.
	image atomic.Pointer[controller.MetadataImage]

	mu struct {
		sync.RWMutex
		partitions map[storage.TopicPartition]*partition.Partition
	}
}

// NewReplicaManager returns a manager over logs. logConfig resolves a topic's log config.
func NewReplicaManager(nodeID int32, logs *storage.LogManager, logConfig func(*controller.TopicImage) storage.LogConfig, logger zerolog.Logger) *ReplicaManager {
	rm := &ReplicaManager{nodeID: nodeID, logs: logs, logConfig: logConfig, logger: logger, Purgatory: NewPurgatory(),
		Now: time.Now, ReplicaLagTimeMaxMs: 30000}
	rm.mu.partitions = map[storage.TopicPartition]*partition.Partition{}
	return rm
}

// Partition returns the hosted partition tp, or nil.
func (rm *ReplicaManager) Partition(tp storage.TopicPartition) *partition.Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	return rm.mu.partitions[tp]
}

// Partitions returns every hosted partition.
func (rm *ReplicaManager) Partitions() []*partition.Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	out := make([]*partition.Partition, 0, len(rm.mu.partitions))
	for _, p := range rm.mu.partitions {
		out = append(out, p)
	}
	return out
}

// ApplyImage brings the hosted partitions in line with next: partitions whose replica
// set includes this broker get a log and their state; topics that are gone (or whose id
// changed), and partitions reassigned away from this broker, have their logs deleted;
// changed topic configs reach the logs, and so do changed dynamic broker configs (this
// broker's or the cluster-wide defaults: logConfig and TopicMinISR read them), to
// every hosted partition.
func (rm *ReplicaManager) ApplyImage(prev, next *controller.MetadataImage) {
	rm.image.Store(next)
	if rm.Throttle != nil {
		rm.Throttle.Update(next)
	}
	rm.mu.Lock()
	follow, unfollow, wake := rm.applyImageLocked(prev, next)
	rm.mu.Unlock()
	// Outside the lock: fetchers and waiting requests call back into the manager.
	if rm.Fetchers != nil {
		rm.Fetchers.RemovePartitions(unfollow)
		rm.Fetchers.AddPartitions(follow)
	}
	for _, tp := range wake {
		rm.Purgatory.CheckAndComplete(tp)
	}
}

// applyImageLocked does ApplyImage's work and returns the partitions to follow, to stop
// following, and whose waiting requests to re-check (deleted partitions; led ones
// whose ISR or HW may have moved, as Kafka's makeLeader completes delayed requests).
// Lock should be held.
func (rm *ReplicaManager) applyImageLocked(prev, next *controller.MetadataImage) (follow []FollowedPartition, unfollow, wake []storage.TopicPartition) {
	for tp, p := range rm.mu.partitions {
		t := next.Topics[tp.Topic]
		if t != nil && t.ID == p.TopicID && int(tp.Partition) < len(t.Partitions) {
			if hosts(t.Partitions[tp.Partition].Replicas, rm.nodeID) {
				continue
			}
			// A reassignment moved the partition off this broker: stop the replica
			// and delete its copy (Kafka's StopReplica with deletePartition).
			rm.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).
				Msg("no longer a replica: stopping it and deleting the log")
		}
		unfollow = append(unfollow, tp)
		delete(rm.mu.partitions, tp)
		if err := rm.logs.DeleteLog(tp); err != nil {
			rm.logger.Error().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("deleting log")
		}
		wake = append(wake, tp)
	}
	jobs := rm.partitionJobs(prev, next)
	rm.applyJobs(jobs)
	for _, j := range jobs {
		if j.created {
			rm.mu.partitions[j.tp] = j.p
		}
		switch j.outcome {
		case jobFollow:
			follow = append(follow, FollowedPartition{P: j.p, TopicID: j.t.ID, Leader: j.pi.Leader, LeaderEpoch: j.pi.LeaderEpoch})
		case jobLead:
			unfollow = append(unfollow, j.tp)
		}
		if j.outcome != jobFailed {
			wake = append(wake, j.tp)
		}
	}
	return follow, unfollow, wake
}

// eligible is Kafka's isReplicaIsrEligible against the current metadata image: the
// broker is registered, unfenced, not shutting down, and the broker epoch its fetches carry is the
// registered one (-1, a fetch without an epoch, is accepted).
func (rm *ReplicaManager) eligible(id int32, epoch int64) bool {
	img := rm.image.Load()
	if img == nil {
		return false
	}
	b, ok := img.Brokers[id]
	return ok && !b.Fenced && !b.InControlledShutdown && (epoch == -1 || epoch == b.Epoch)
}

// brokerConfigsChanged reports whether the dynamic configs of broker nodeID or the
// cluster-wide defaults differ between prev and next.
func brokerConfigsChanged(prev, next *controller.MetadataImage, nodeID int32) bool {
	for _, name := range []string{"", strconv.Itoa(int(nodeID))} {
		r := controller.ConfigResource{Type: controller.ResourceBroker, Name: name}
		if !maps.Equal(prev.ResourceConfigs(r), next.ResourceConfigs(r)) {
			return true
		}
	}
	return false
}

func hosts(replicas []int32, id int32) bool {
	for _, r := range replicas {
		if r == id {
			return true
		}
	}
	return false
}

// errNoController: no AlterPartition path is configured (a single node, whose ISR is
// only itself, never needs one).
var errNoController = errors.New("replication: no controller to send AlterPartition to")

// errChangeQueued: an earlier change for the partition is still unanswered (it was
// replaced by new metadata before its answer came); Kafka's manager fails the new one
// with OPERATION_NOT_ATTEMPTED.
var errChangeQueued = errors.New("replication: an earlier ISR change for the partition is still unanswered")

// SubmitISRChange sends a leader's ISR proposal through the AlterPartition manager;
// without one, or while an earlier change is still unanswered, the change is rolled
// back at once (the next fetch or shrink check may propose again).
func (rm *ReplicaManager) SubmitISRChange(p *partition.Partition, prop *partition.Proposal) {
	var err error
	switch {
	case rm.AlterPartitions == nil:
		err = errNoController
	case !rm.AlterPartitions.Submit(p, p.TopicID, prop):
		err = errChangeQueued
	default:
		return
	}
	p.AlterPartitionDone(prop, partition.ISRAnswer{Err: err, OnError: partition.ISRErrorRollback}, rm.Now())
}

// RunISRExpiration checks every led partition for lagging followers every
// replica.lag.time.max.ms / 2, as Kafka's isr-expiration task, until stop is closed.
func (rm *ReplicaManager) RunISRExpiration(stop <-chan struct{}) {
	period := time.Duration(rm.ReplicaLagTimeMaxMs/2) * time.Millisecond
	if period <= 0 {
		period = time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, p := range rm.Partitions() {
			if prop := p.MaybeShrinkISR(rm.Now()); prop != nil {
				rm.SubmitISRChange(p, prop)
			}
		}
	}
}
