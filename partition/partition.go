// Package partition is one partition's replication state machine: role, leader epoch,
// partition epoch, ISR and the high-watermark rule.
//
// The rules are pure and tested step by step against the reference walkthrough's
// experiments: Leader (isr.go) holds the followers' states (replica.go), the ISR with
// its pending change and maximal ISR, and decides HW moves, ISR shrink and expansion
// and acks=all completion; divergence.go has the leader-epoch divergence check and
// the follower's truncation point. Partition wraps one storage.Log; on a single node
// its ISR is the local replica, and the fetchers and the AlterPartition manager
// (issue 4) drive Leader from the network. Nothing here sleeps or opens sockets; time
// comes from the callers.
package partition

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/storage"
)

// Errors mapped to Kafka codes at the protocol edge.
var (
	ErrNotLeaderOrFollower = errors.New("partition: not leader or follower")
	ErrNotEnoughReplicas   = errors.New("partition: not enough in-sync replicas")
	ErrFencedLeaderEpoch   = errors.New("partition: fenced leader epoch")
	ErrUnknownLeaderEpoch  = errors.New("partition: unknown leader epoch")
	// ErrNotEnoughReplicasAfterAppend: written, but the ISR fell under min ISR before
	// the HW reached it (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrNotEnoughReplicasAfterAppend = errors.New("partition: not enough in-sync replicas after append")
)

// State is the metadata the controller holds for a partition.
type State struct {
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// Partition is one partition on this broker.
type Partition struct {
	TP      storage.TopicPartition
	TopicID [16]byte
	Log     *storage.Log
	localID int32
	logger  zerolog.Logger

	mu struct {
		sync.RWMutex
		state State
		// isLeader is state.Leader == localID.
		isLeader bool
		// leader is the replication state while this broker leads (nil otherwise).
		// Invariant: isLeader == (leader != nil).
		leader *Leader
		// minISR is the topic's min.insync.replicas as last set.
		minISR int32
		// lagMaxMs is replica.lag.time.max.ms.
		lagMaxMs int64
		// eligible tells which brokers may join the ISR (from the metadata image).
		eligible Eligibility
	}
}

// New wraps log as partition tp hosted by broker localID.
func New(tp storage.TopicPartition, topicID [16]byte, log *storage.Log, localID int32, logger zerolog.Logger) *Partition {
	p := &Partition{TP: tp, TopicID: topicID, Log: log, localID: localID,
		logger: logger.With().Str("topic", tp.Topic).Int32("partition", tp.Partition).Logger()}
	p.mu.state.Leader = -1
	p.mu.state.LeaderEpoch = -1
	p.mu.minISR = 1
	p.mu.lagMaxMs = 30000
	return p
}

// Configure sets the topic's min.insync.replicas, replica.lag.time.max.ms, and how to
// tell which brokers may join the ISR (nil: every replica).
func (p *Partition) Configure(minISR int32, lagMaxMs int64, eligible Eligibility) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.minISR, p.mu.lagMaxMs, p.mu.eligible = minISR, lagMaxMs, eligible
}

// ApplyState adopts the controller's view of the partition, at time now. When this
// broker becomes leader for a new epoch the epoch's start offset is recorded at the
// LEO and every follower is measured afresh, as Kafka's Partition.makeLeader; a change
// within the same epoch (the controller committed an ISR change) is adopted as the
// committed ISR.
func (p *Partition) ApplyState(s State, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	newEpoch := s.LeaderEpoch != p.mu.state.LeaderEpoch
	p.mu.state = State{
		Replicas: slices.Clone(s.Replicas), ISR: slices.Clone(s.ISR), Leader: s.Leader,
		LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch,
	}
	wasLeader := p.mu.isLeader
	p.mu.isLeader = s.Leader == p.localID
	switch {
	case !p.mu.isLeader:
		p.mu.leader = nil
	case newEpoch || p.mu.leader == nil:
		leo := p.Log.LogEndOffset()
		if s.LeaderEpoch > p.Log.LatestEpoch() {
			if err := p.Log.AssignEpochStartOffset(s.LeaderEpoch, leo); err != nil {
				return err
			}
		}
		var prev *Leader
		if wasLeader {
			prev = p.mu.leader
		}
		p.mu.leader = NewLeader(p.localID, s, leo, now.UnixMilli(), prev)
		p.logger.Info().Int32("leader_epoch", s.LeaderEpoch).Int64("leo", leo).
			Ints32("isr", s.ISR).Msg("became leader")
	default:
		p.mu.leader.CommitISR(s.ISR, s.PartitionEpoch)
	}
	if p.mu.leader != nil {
		p.maybeIncrementLeaderHWLocked(now)
	}
	return nil
}

// State returns a copy of the partition's metadata state.
func (p *Partition) State() State {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.state
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.isLeader
}

// LeaderEpoch is the current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.state.LeaderEpoch
}

// CheckLeaderEpoch compares a client's current leader epoch with ours as Kafka does
// (-1 skips the check).
func (p *Partition) CheckLeaderEpoch(current int32) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.checkLeaderEpochLocked(current)
}

func (p *Partition) checkLeaderEpochLocked(current int32) error {
	switch {
	case current == -1 || current == p.mu.state.LeaderEpoch:
		return nil
	case current < p.mu.state.LeaderEpoch:
		return ErrFencedLeaderEpoch
	default:
		return ErrUnknownLeaderEpoch
	}
}

// AppendRecordsToLeader writes one validated batch as leader. With acks=-1 and fewer
// in-sync replicas than minISR nothing is written (NOT_ENOUGH_REPLICAS), as Kafka's
// Partition.appendRecordsToLeader.
func (p *Partition) AppendRecordsToLeader(batch []byte, requiredAcks int16, minISR int32, now time.Time) (storage.AppendInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.isLeader {
		return storage.AppendInfo{}, ErrNotLeaderOrFollower
	}
	p.mu.minISR = minISR
	if requiredAcks == -1 && p.mu.leader.UnderMinISR(minISR) {
		return storage.AppendInfo{}, ErrNotEnoughReplicas
	}
	info, err := p.Log.AppendAsLeader(batch, p.mu.state.LeaderEpoch, now)
	if err != nil {
		return info, err
	}
	p.maybeIncrementLeaderHWLocked(now)
	return info, nil
}

// maybeIncrementLeaderHWLocked moves the HW by the Leader's rule (smallest LEO of the
// maximal ISR and of caught-up followers about to join; frozen under min ISR; never
// lowered). Reports whether it moved. Lock should be held.
func (p *Partition) maybeIncrementLeaderHWLocked(now time.Time) bool {
	cur := p.Log.HighWatermark()
	hw := p.mu.leader.HighWatermark(p.Log.LogEndOffset(), cur, now.UnixMilli(), p.mu.lagMaxMs, p.mu.minISR, p.mu.eligible)
	if hw > cur {
		p.Log.SetHighWatermark(hw)
		return true
	}
	return false
}

// EnoughReplicas answers an acks=all produce waiting for requiredOffset (last offset
// written + 1): done once the HW reaches it, with ErrNotEnoughReplicasAfterAppend if
// the ISR fell under min ISR meanwhile, or ErrNotLeaderOrFollower if leadership moved.
func (p *Partition) EnoughReplicas(requiredOffset int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.leader == nil {
		return true, ErrNotLeaderOrFollower
	}
	return p.mu.leader.EnoughReplicas(p.Log.HighWatermark(), requiredOffset, p.mu.minISR)
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.Log.HighWatermark() }
