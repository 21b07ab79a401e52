package replication

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// applyWorkers is how many partitions an image applies at once. Creating a log and
// becoming its leader is a handful of fsyncs (partition.metadata, the log dir, the
// leader-epoch-checkpoint), each a disk round trip; run side by side they share the
// file system's journal commits, so a topic of thousands of partitions is created in
// a fraction of the serial time (issue 15: 1,000 partitions took about 5 s).
const applyWorkers = 16

// Outcomes of a partitionJob.
const (
	jobFailed = iota
	jobLead
	jobFollow
)

// partitionJob is one hosted partition whose metadata changed in an image.
type partitionJob struct {
	tp      storage.TopicPartition
	t       *controller.TopicImage
	pi      controller.PartitionImage
	cfg     storage.LogConfig
	minISR  int32
	p       *partition.Partition // nil until created
	created bool
	outcome int
}

// partitionJobs lists the hosted partitions of next whose state or topic config
// differs from prev's: a topic of N partitions where one changed costs one job, not N
// (its ISR changes come in one by one). Lock should be held.
func (rm *ReplicaManager) partitionJobs(prev, next *controller.MetadataImage) []partitionJob {
	var jobs []partitionJob
	// A dynamic broker config is the default of every topic that does not override it.
	brokerConfigs := prev == nil || brokerConfigsChanged(prev, next, rm.nodeID)
	for name, t := range next.Topics {
		var old *controller.TopicImage
		if prev != nil {
			old = prev.Topics[name]
		}
		if old == t && !brokerConfigs { // images share unchanged topics
			continue
		}
		sameConfig := !brokerConfigs && old != nil && old.ID == t.ID && maps.Equal(old.Configs, t.Configs)
		var cfg storage.LogConfig
		cfgDone := false
		minISR := int32(1)
		for i, pi := range t.Partitions {
			if !hosts(pi.Replicas, rm.nodeID) {
				continue
			}
			tp := storage.TopicPartition{Topic: name, Partition: int32(i)}
			p := rm.mu.partitions[tp]
			if p != nil && sameConfig && i < len(old.Partitions) && samePartitionImage(old.Partitions[i], pi) {
				continue
			}
			if !cfgDone {
				cfg, cfgDone = rm.logConfig(t), true
				if rm.TopicMinISR != nil {
					minISR = rm.TopicMinISR(t)
				}
			}
			jobs = append(jobs, partitionJob{tp: tp, t: t, pi: pi, cfg: cfg, minISR: minISR, p: p})
		}
	}
	return jobs
}

func samePartitionImage(a, b controller.PartitionImage) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas) &&
		slices.Equal(a.ELR, b.ELR) && slices.Equal(a.LastKnownELR, b.LastKnownELR)
}

// applyJobs creates the missing logs and applies every job's state, up to
// applyWorkers partitions at a time (each job touches only its own partition).
func (rm *ReplicaManager) applyJobs(jobs []partitionJob) {
	workers := min(applyWorkers, len(jobs))
	if workers <= 1 {
		for i := range jobs {
			rm.applyJob(&jobs[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				rm.applyJob(&jobs[i])
			}
		}()
	}
	wg.Wait()
}

func (rm *ReplicaManager) applyJob(j *partitionJob) {
	if j.p == nil {
		log, err := rm.logs.GetOrCreateLog(j.tp, j.t.ID, j.cfg)
		if err != nil {
			rm.logger.Error().Err(err).Str("topic", j.tp.Topic).Int32("partition", j.tp.Partition).Msg("creating log")
			return
		}
		j.p = partition.New(j.tp, j.t.ID, log, rm.nodeID, rm.logger)
		j.p.ISRChanges = &rm.ISRChanges
		j.created = true
	} else {
		j.p.Log.SetConfig(j.cfg)
	}
	j.p.Configure(j.minISR, rm.ReplicaLagTimeMaxMs, rm.eligible)
	err := j.p.ApplyState(partition.State{
		Replicas: j.pi.Replicas, ISR: j.pi.ISR, Leader: j.pi.Leader,
		LeaderEpoch: j.pi.LeaderEpoch, PartitionEpoch: j.pi.PartitionEpoch,
	}, rm.Now())
	if err != nil {
		rm.logger.Error().Err(err).Str("topic", j.tp.Topic).Int32("partition", j.tp.Partition).Msg("applying partition state")
		return
	}
	if j.p.IsFollower() {
		j.outcome = jobFollow
	} else {
		j.outcome = jobLead
	}
}
