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
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/internal/partlog"
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
	logger  partlog.Logger
	// ISRChanges, when set (before the partition is shared), counts the ISR changes
	// the controller committed or refused for this leader (snapshot.go).
	ISRChanges *ISRChangeCounts

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
		logger: partlog.New(&logger, tp.Topic, tp.Partition)}
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
//
// A state older than the one held (StateIsStale) is skipped, and one with the same
// leader and partition epochs changes nothing (an image in which only other partitions
// of the topic, or its config, changed): a pending ISR change survives it. Only a newer
// partition epoch replaces the ISR, and with it any pending change (whose answer is
// then ignored), as Kafka's makeLeader.
func (p *Partition) ApplyState(s State, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.mu.state
	if StateIsStale(s, cur) {
		p.logger.Debug().Int32("leader_epoch", s.LeaderEpoch).Int32("partition_epoch", s.PartitionEpoch).
			Int32("current_leader_epoch", cur.LeaderEpoch).Int32("current_partition_epoch", cur.PartitionEpoch).
			Msg("skipped a partition state older than the current one")
		return nil
	}
	if s.LeaderEpoch == cur.LeaderEpoch && s.PartitionEpoch == cur.PartitionEpoch && s.Leader == cur.Leader {
		if p.mu.leader != nil {
			p.maybeIncrementLeaderHWLocked(now) // the topic's min ISR may have changed
		}
		return nil
	}
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
				// Not leader until the epoch is recorded: keep isLeader == (leader
				// != nil), so requests get NOT_LEADER_OR_FOLLOWER, as Kafka answers
				// for a partition whose makeLeader failed.
				p.mu.isLeader, p.mu.leader = false, nil
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
		p.mu.leader.UpdateAssignment(s.Replicas)
		p.countAdoptedProposalLocked(s.ISR)
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
	return p.AppendRecordsToLeaderVerified(batch, requiredAcks, minISR, now, 0)
}

// AppendRecordsToLeaderVerified is AppendRecordsToLeader for a transactional batch
// verified under guard (see storage.Log.AppendAsLeaderVerified).
func (p *Partition) AppendRecordsToLeaderVerified(batch []byte, requiredAcks int16, minISR int32, now time.Time, guard uint64) (storage.AppendInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.isLeader || p.mu.leader == nil {
		return storage.AppendInfo{}, ErrNotLeaderOrFollower
	}
	p.mu.minISR = minISR
	if requiredAcks == -1 && p.mu.leader.UnderMinISR(minISR) {
		return storage.AppendInfo{}, ErrNotEnoughReplicas
	}
	info, err := p.Log.AppendAsLeaderVerified(batch, p.mu.state.LeaderEpoch, now, guard)
	if err != nil {
		return info, err
	}
	p.maybeIncrementLeaderHWLocked(now)
	return info, nil
}

// AppendTxnMarker writes a transaction marker as leader (WriteTxnMarkers, always
// acks=all: with fewer in-sync replicas than minISR nothing is written).
func (p *Partition) AppendTxnMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, minISR int32, now time.Time) (storage.AppendInfo, error) {
	return p.AppendTxnMarkerTV(producerID, producerEpoch, coordinatorEpoch, commit, 0, minISR, now)
}

// AppendTxnMarkerTV is AppendTxnMarker for a marker of transaction version txnVersion
// (storage.Log.AppendTxnMarkerTV).
func (p *Partition) AppendTxnMarkerTV(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, txnVersion int16, minISR int32, now time.Time) (storage.AppendInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.isLeader || p.mu.leader == nil {
		return storage.AppendInfo{}, ErrNotLeaderOrFollower
	}
	p.mu.minISR = minISR
	if p.mu.leader.UnderMinISR(minISR) {
		return storage.AppendInfo{}, ErrNotEnoughReplicas
	}
	info, err := p.Log.AppendTxnMarkerTV(producerID, producerEpoch, coordinatorEpoch, commit, txnVersion, p.mu.state.LeaderEpoch, now)
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

// CommittedInEpoch answers a coordinator write or a transaction marker appended as
// leader in leaderEpoch, waiting for requiredOffset (last offset written + 1): done
// once the HW reaches it, with ErrNotLeaderOrFollower once this broker no longer leads
// in that epoch. The HW alone does not tell: a deposed leader's unreplicated tail is
// truncated when it becomes a follower, and a follower's HW follows the new leader's,
// past offsets that now hold other records (as Kafka's
// checkEnoughReplicasReachOffset answers NOT_LEADER_OR_FOLLOWER once not leader).
func (p *Partition) CommittedInEpoch(requiredOffset int64, leaderEpoch int32) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.leader == nil || p.mu.state.LeaderEpoch != leaderEpoch {
		return true, ErrNotLeaderOrFollower
	}
	return p.Log.HighWatermark() >= requiredOffset, nil
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.Log.HighWatermark() }

// FollowerFetch is one partition of a follower's Fetch, as the leader receives it.
type FollowerFetch struct {
	ReplicaID int32
	// BrokerEpoch is the epoch the fetch claims (-1: none, before Fetch v15);
	// RegisteredBrokerEpoch the one the leader's metadata has for ReplicaID (-1:
	// none, or fenced). See FollowerEpochCheck.
	BrokerEpoch           int64
	RegisteredBrokerEpoch int64
	FetchOffset           int64
	LastFetchedEpoch      int32
	LogStartOffset        int64
	CurrentLeaderEpoch    int32
	MaxBytes              int32
	MinOneMessage         bool
	// UpdateState is false when a long-polled fetch is re-read from the purgatory:
	// the follower's state is updated once per request, as Kafka's
	// ReplicaManager passes updateFetchState = !readFromPurgatory.
	UpdateState bool
}

// FollowerRead is the leader's answer for one partition of a follower fetch.
type FollowerRead struct {
	Slice          storage.FileSlice
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	// LastStableOffset is the leader's LSO after the fetch, as Kafka answers every
	// fetch, a follower's included.
	LastStableOffset int64
	// Diverged: the follower's log left the leader's path; DivergingEpoch and
	// DivergingEndOffset say where (no records are sent).
	Diverged           bool
	DivergingEpoch     int32
	DivergingEndOffset int64
	// HWMoved reports that the fetch moved the HW (wake acks=all produces).
	HWMoved bool
	// Proposal is an ISR expansion to send to the controller, if the fetch made the
	// follower eligible.
	Proposal *Proposal
}

// ReadForFollower serves a follower's fetch as Kafka's Partition.fetchRecords with
// isFromFollower: checks the leader epoch and the follower's replica, reads to the log
// end (followers must take what is not yet committed), answers a diverged log with its
// diverging epoch, and otherwise records the fetch offset as the follower's LEO,
// then considers ISR expansion and the HW.
func (p *Partition) ReadForFollower(f FollowerFetch, now time.Time) (FollowerRead, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader == nil {
		return FollowerRead{}, ErrNotLeaderOrFollower
	}
	if err := p.checkLeaderEpochLocked(f.CurrentLeaderEpoch); err != nil {
		return FollowerRead{}, err
	}
	if p.mu.leader.Follower(f.ReplicaID) == nil {
		return FollowerRead{}, ErrNotLeaderOrFollower
	}
	out := FollowerRead{LogStartOffset: p.Log.LogStartOffset(), LogEndOffset: p.Log.LogEndOffset()}
	if epoch, end, diverged := DivergingEpoch(f.FetchOffset, f.LastFetchedEpoch, p.Log.EndOffsetForEpoch); diverged {
		out.Diverged, out.DivergingEpoch, out.DivergingEndOffset = true, epoch, end
		out.HighWatermark, out.LastStableOffset = p.Log.HighWatermark(), p.Log.LastStableOffset()
		return out, nil
	}
	update := f.UpdateState
	if update {
		var err error
		if update, err = FollowerEpochCheck(f.BrokerEpoch, f.RegisteredBrokerEpoch); err != nil {
			return FollowerRead{}, err
		}
	}
	res, err := p.Log.Read(f.FetchOffset, f.MaxBytes, out.LogEndOffset, f.MinOneMessage)
	if err != nil {
		return FollowerRead{}, err
	}
	out.Slice = res.Slice
	if update {
		nowMs := now.UnixMilli()
		_ = p.mu.leader.UpdateFollowerFetchState(f.ReplicaID, f.FetchOffset, f.LogStartOffset, nowMs, out.LogEndOffset, f.BrokerEpoch)
		out.Proposal = p.mu.leader.MaybeExpandISR(f.ReplicaID, p.Log.HighWatermark(), p.mu.eligible)
		if out.Proposal != nil {
			p.logger.Info().Ints32("isr", p.mu.leader.ISR()).Ints32("new_isr", out.Proposal.ISR).
				Int32("replica", f.ReplicaID).Msgf("Expanding ISR from %s to %s", joinIDs(p.mu.leader.ISR()), joinIDs(out.Proposal.ISR))
		}
		out.HWMoved = p.maybeIncrementLeaderHWLocked(now)
	}
	out.HighWatermark, out.LastStableOffset = p.Log.HighWatermark(), p.Log.LastStableOffset()
	return out, nil
}

// MaybeShrinkISR is the periodic check (every replica.lag.time.max.ms / 2) that
// proposes dropping lagging followers; nil when none lag or a change is in flight.
func (p *Partition) MaybeShrinkISR(now time.Time) *Proposal {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader == nil {
		return nil
	}
	leo := p.Log.LogEndOffset()
	prop, out := p.mu.leader.MaybeShrinkISR(leo, now.UnixMilli(), p.mu.lagMaxMs)
	if prop == nil {
		return nil
	}
	ev := p.logger.Info().Int64("high_watermark", p.Log.HighWatermark()).Int64("leo", leo)
	for _, id := range out {
		if r := p.mu.leader.Follower(id); r != nil {
			ev = ev.Dict(fmt.Sprintf("replica_%d", id), zerolog.Dict().Int64("leo", r.LogEndOffset).Int64("last_caught_up_ms", r.LastCaughtUpTimeMs))
		}
	}
	ev.Msgf("Shrinking ISR from %s to %s", joinIDs(p.mu.leader.ISR()), joinIDs(prop.ISR))
	return prop
}

// AlterPartitionDone takes the controller's answer to prop (Leader.HandleISRAnswer)
// and reports whether the HW moved and whether the caller should send prop again.
func (p *Partition) AlterPartitionDone(prop *Proposal, a ISRAnswer, now time.Time) (hwMoved, retry bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader == nil || prop == nil {
		return false, false
	}
	shrink := p.mu.leader.phase == isrPendingShrink
	outcome := p.mu.leader.HandleISRAnswer(prop, a)
	p.countISRAnswerLocked(outcome, shrink)
	switch outcome {
	case ISRCommitted:
		isr, pe := p.mu.leader.ISR(), a.PartitionEpoch
		p.mu.state.ISR, p.mu.state.PartitionEpoch = slices.Clone(isr), pe
		p.logger.Info().Int32("partition_epoch", pe).Msgf("ISR updated to %s and version updated to %d", joinIDs(isr), pe)
		return p.maybeIncrementLeaderHWLocked(now), false
	case ISRRolledBack:
		p.logger.Info().Err(a.Err).Msgf("Failed to alter partition to ISR %s; reset to the committed ISR %s", joinIDs(prop.ISR), joinIDs(p.mu.leader.ISR()))
	case ISRStillPending:
		p.logger.Info().Err(a.Err).Msgf("Failed to alter partition to ISR %s; the change stays pending until new metadata arrives", joinIDs(prop.ISR))
	case ISRRetry:
		return false, true
	case ISRIgnored:
		p.logger.Debug().Err(a.Err).Int32("leader_epoch", a.LeaderEpoch).Int32("partition_epoch", a.PartitionEpoch).
			Msgf("Ignoring the answer to ISR change %s: the partition state changed meanwhile", joinIDs(prop.ISR))
	}
	return false, false
}

// joinIDs prints broker ids as Kafka's logs do: 1,2,3.
func joinIDs(ids []int32) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", id)
	}
	return string(b)
}

// IsFollower reports whether this broker is a follower of the partition (a replica
// with a leader elsewhere).
func (p *Partition) IsFollower() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return !p.mu.isLeader && p.mu.state.Leader >= 0 && p.mu.state.Leader != p.localID && slices.Contains(p.mu.state.Replicas, p.localID)
}

// InitialFetchOffset is where a new follower starts fetching, as Kafka's
// ReplicaManager.initialFetchOffset: its LEO when the log has leader epochs (the
// leader's divergence check then cuts any diverged tail), else its HW after cutting
// everything above it (a log without epochs cannot be checked).
func (p *Partition) InitialFetchOffset() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Log.LatestEpoch() >= 0 {
		return p.Log.LogEndOffset(), nil
	}
	hw := p.Log.HighWatermark()
	if hw < p.Log.LogEndOffset() {
		p.logger.Info().Msgf("Truncating partition %s to offset %d (no leader epochs: to the high watermark)", p.TP, hw)
		if err := p.Log.TruncateTo(hw); err != nil {
			return 0, err
		}
	}
	return p.Log.LogEndOffset(), nil
}

// LastFetchedEpoch is the epoch of the follower's last batch, for its next fetch
// (-1 without epochs).
func (p *Partition) LastFetchedEpoch() int32 { return p.Log.LatestEpoch() }

// AppendAsFollower appends what the leader sent, offsets and epochs as they are, and
// adopts the leader's HW capped at the local LEO (a follower never exposes an offset it
// does not have), as Kafka's ReplicaFetcherThread.processPartitionData. The HW follows
// the leader's down as well as up (UnifiedLog.maybeUpdateHighWatermark): a new leader
// may start below the HW the old one had reached.
func (p *Partition) AppendAsFollower(records []byte, leaderHW int64) (storage.AppendInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.isLeader {
		return storage.AppendInfo{}, ErrNotLeaderOrFollower
	}
	var info storage.AppendInfo
	if len(records) > 0 {
		var err error
		if info, err = p.Log.AppendAsFollower(records); err != nil {
			return info, err
		}
	}
	if leaderHW >= 0 {
		p.Log.SetHighWatermark(leaderHW) // bounded by the log start and end offsets
	}
	return info, nil
}

// TruncateOnDivergence cuts the follower's log after the leader reported a diverging
// epoch, to Kafka's truncation point, and returns the new LEO.
func (p *Partition) TruncateOnDivergence(leaderEpoch int32, leaderEndOffset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	leo := p.Log.LogEndOffset()
	to := TruncationOffset(leaderEpoch, leaderEndOffset, leo, p.Log.EndOffsetForEpoch)
	if to < leo {
		p.logger.Info().Int32("leader_epoch", leaderEpoch).Int64("leader_end_offset", leaderEndOffset).
			Msgf("Truncating partition %s to offset %d due to leader epoch and offset EpochEndOffset(leaderEpoch=%d, endOffset=%d)", p.TP, to, leaderEpoch, leaderEndOffset)
	}
	// Even at the LEO: the log drops epochs that start there (an epoch this broker
	// began as leader and wrote nothing in), or the next fetch would carry it as
	// lastFetchedEpoch and be told the same divergence again.
	if err := p.Log.TruncateTo(to); err != nil {
		return leo, err
	}
	return p.Log.LogEndOffset(), nil
}
