package replication

// Replication throttles, as Kafka's ReplicationQuotaManager (one for the leader side,
// one for the follower side) and DynamicConfigHandler:
//
//   - the rates are leader.replication.throttled.rate and
//     follower.replication.throttled.rate: this broker's dynamic value, else the
//     cluster-wide dynamic default, else the static one (default Long.MAX_VALUE: no
//     throttle);
//   - the throttled replicas are a topic's leader.replication.throttled.replicas /
//     follower.replication.throttled.replicas: "*" (every partition), or the partitions
//     of the partition:broker pairs naming this broker;
//   - the rate is measured as Kafka's Rate over replication.quota.window.num samples of
//     replication.quota.window.size.seconds; it is exceeded when above the bound;
//   - the leader leaves out the records of a throttled partition for a follower that
//     is not in the ISR while its rate is exceeded (the fetch still counts as the
//     follower's position); the follower leaves a throttled partition out of its fetch
//     while it is not caught up and its rate is exceeded. Both count the bytes of every
//     throttled partition they send or fetch.
//
// So, as in Kafka, a throttle lets one fetch's worth of data through (up to
// replica.fetch.max.bytes) and then holds the partition until the measured rate falls
// under the bound.
//
// A third quota, AlterLogDirs, is Kafka's ReplicationQuotaManager of QuotaType
// ALTER_LOG_DIRS_REPLICATION: replica.alter.log.dirs.io.max.bytes.per.second (same
// layering, default no throttle) over alter.log.dirs.replication.quota.window.num
// samples of .window.size.seconds. It bounds every log dir move of this broker
// together (storage's move copier takes it as its storage.MoveQuota): as Kafka's
// ReplicaAlterLogDirsThread, a chunk of replica.fetch.max.bytes is copied while the
// rate is not exceeded.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/storage"
)

// Quota is one direction's measured rate against its bound (Kafka's Sensor with a
// Rate and a Quota.upperBound). Safe for concurrent use.
type Quota struct {
	samples  int
	windowMs int64
	bound    atomic.Int64 // bytes per second; math.MaxInt64 is no throttle

	mu struct {
		sync.Mutex
		// win are the samples, oldest first; at most samples of them.
		win []quotaSample
	}
}

type quotaSample struct {
	start int64 // ms
	bytes int64
}

// NewQuota returns an unbounded quota measured over samples windows of window.
func NewQuota(samples int, window time.Duration) *Quota {
	q := &Quota{samples: max(samples, 1), windowMs: max(window.Milliseconds(), 1)}
	q.bound.Store(math.MaxInt64)
	return q
}

// SetBound sets the bound in bytes per second.
func (q *Quota) SetBound(bytesPerSec int64) { q.bound.Store(bytesPerSec) }

// Bound is the bound in bytes per second.
func (q *Quota) Bound() int64 { return q.bound.Load() }

// purgeLocked drops the samples older than the whole measured span (Kafka's
// SampledStat.purgeObsoleteSamples). Lock should be held.
func (q *Quota) purgeLocked(nowMs int64) {
	expire := int64(q.samples) * q.windowMs
	i := 0
	for i < len(q.mu.win) && nowMs-q.mu.win[i].start >= expire {
		i++
	}
	q.mu.win = q.mu.win[i:]
}

// Record counts n bytes at now.
func (q *Quota) Record(n int64, now time.Time) {
	if n <= 0 {
		return
	}
	nowMs := now.UnixMilli()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.purgeLocked(nowMs)
	if k := len(q.mu.win); k == 0 || nowMs >= q.mu.win[k-1].start+q.windowMs {
		q.mu.win = append(q.mu.win, quotaSample{start: nowMs})
		if len(q.mu.win) > q.samples {
			q.mu.win = q.mu.win[len(q.mu.win)-q.samples:]
		}
	}
	q.mu.win[len(q.mu.win)-1].bytes += n
}

// Rate is the measured rate in bytes per second (Kafka's Rate.measure: the total over
// the elapsed span, which counts at least samples-1 whole windows).
func (q *Quota) Rate(now time.Time) float64 {
	nowMs := now.UnixMilli()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.purgeLocked(nowMs)
	if len(q.mu.win) == 0 {
		return 0
	}
	var total int64
	for _, s := range q.mu.win {
		total += s.bytes
	}
	elapsed := nowMs - q.mu.win[0].start
	if full, minFull := elapsed/q.windowMs, int64(q.samples-1); full < minFull {
		elapsed += (minFull - full) * q.windowMs
	}
	return float64(total) / (float64(max(elapsed, 1)) / 1000)
}

// Exceeded reports whether the measured rate is above the bound.
func (q *Quota) Exceeded(now time.Time) bool {
	b := q.bound.Load()
	if b == math.MaxInt64 {
		return false
	}
	return q.Rate(now) > float64(b)
}

// throttledReplicas is one topic's throttled partitions on this broker.
type throttledReplicas struct {
	all   bool
	parts map[int32]bool
}

// throttleState is what a metadata image says about the throttles.
type throttleState struct {
	leader, follower map[string]throttledReplicas // by topic
}

// ReplicationThrottle holds the leader, follower and log dir move quotas of this
// broker and the throttled replicas, updated from each metadata image.
type ReplicationThrottle struct {
	nodeID int32
	// Static rates: the server.properties values (default Long.MAX_VALUE).
	staticLeader, staticFollower, staticAlterLogDirs int64
	Leader, Follower, AlterLogDirs                   *Quota
	state                                            atomic.Pointer[throttleState]
}

// ThrottleConfig is the static side of a broker's replication throttles.
type ThrottleConfig struct {
	NodeID int32
	// LeaderRate, FollowerRate: leader.replication.throttled.rate,
	// follower.replication.throttled.rate.
	LeaderRate, FollowerRate int64
	// Samples, Window: replication.quota.window.num, .size.seconds.
	Samples int
	Window  time.Duration
	// AlterLogDirsRate: replica.alter.log.dirs.io.max.bytes.per.second.
	AlterLogDirsRate int64
	// AlterLogDirsSamples, AlterLogDirsWindow:
	// alter.log.dirs.replication.quota.window.num, .size.seconds.
	AlterLogDirsSamples int
	AlterLogDirsWindow  time.Duration
}

// NewReplicationThrottle returns the throttles of broker cfg.NodeID at their static
// rates.
func NewReplicationThrottle(cfg ThrottleConfig) *ReplicationThrottle {
	t := &ReplicationThrottle{nodeID: cfg.NodeID,
		staticLeader: cfg.LeaderRate, staticFollower: cfg.FollowerRate, staticAlterLogDirs: cfg.AlterLogDirsRate,
		Leader: NewQuota(cfg.Samples, cfg.Window), Follower: NewQuota(cfg.Samples, cfg.Window),
		AlterLogDirs: NewQuota(cfg.AlterLogDirsSamples, cfg.AlterLogDirsWindow)}
	t.Leader.SetBound(cfg.LeaderRate)
	t.Follower.SetBound(cfg.FollowerRate)
	t.AlterLogDirs.SetBound(cfg.AlterLogDirsRate)
	t.state.Store(&throttleState{})
	return t
}

// Update applies img's rates and throttled replicas.
func (t *ReplicationThrottle) Update(img *controller.MetadataImage) {
	rate := func(name string, static int64) int64 {
		for _, m := range []map[string]string{img.Configs["broker:"+strconv.Itoa(int(t.nodeID))], img.Configs["broker:"]} {
			if v, ok := m[name]; ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					return n
				}
			}
		}
		return static
	}
	t.Leader.SetBound(rate("leader.replication.throttled.rate", t.staticLeader))
	t.Follower.SetBound(rate("follower.replication.throttled.rate", t.staticFollower))
	t.AlterLogDirs.SetBound(rate("replica.alter.log.dirs.io.max.bytes.per.second", t.staticAlterLogDirs))
	st := &throttleState{leader: map[string]throttledReplicas{}, follower: map[string]throttledReplicas{}}
	for name, ti := range img.Topics {
		if r, ok := parseThrottledReplicas(ti.Configs["leader.replication.throttled.replicas"], t.nodeID); ok {
			st.leader[name] = r
		}
		if r, ok := parseThrottledReplicas(ti.Configs["follower.replication.throttled.replicas"], t.nodeID); ok {
			st.follower[name] = r
		}
	}
	t.state.Store(st)
}

// parseThrottledReplicas is Kafka's parseThrottledPartitions for broker: "*" is every
// partition, else the partitions paired with broker (ok false: none).
func parseThrottledReplicas(v string, broker int32) (throttledReplicas, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return throttledReplicas{}, false
	}
	if v == "*" {
		return throttledReplicas{all: true}, true
	}
	r := throttledReplicas{parts: map[int32]bool{}}
	for _, e := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok {
			continue
		}
		pi, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(bi) == broker {
			r.parts[int32(pi)] = true
		}
	}
	return r, len(r.parts) > 0
}

func (r throttledReplicas) has(p int32) bool { return r.all || r.parts[p] }

// LeaderThrottled reports whether tp is throttled on this broker as leader.
func (t *ReplicationThrottle) LeaderThrottled(tp storage.TopicPartition) bool {
	r, ok := t.state.Load().leader[tp.Topic]
	return ok && r.has(tp.Partition)
}

// FollowerThrottled reports whether tp is throttled on this broker as follower.
func (t *ReplicationThrottle) FollowerThrottled(tp storage.TopicPartition) bool {
	r, ok := t.state.Load().follower[tp.Topic]
	return ok && r.has(tp.Partition)
}
