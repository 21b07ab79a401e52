package storage

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gokafkad/gokafkad/internal/partlog"
	"github.com/gokafkad/gokafkad/protocol"
)

// More sentinel errors (the first ones are in api.go).
var (
	// ErrRecordBatchTooLarge: a batch larger than segment.bytes can never be written
	// (Kafka: RECORD_BATCH_TOO_LARGE).
	ErrRecordBatchTooLarge = errors.New("storage: record batch larger than segment.bytes")
	// ErrInvalidTopicPartition: a topic name or partition that cannot name a directory.
	ErrInvalidTopicPartition = errors.New("storage: invalid topic or partition")
	// ErrInconsistentTopicID: partition.metadata holds another topic ID than asked for.
	ErrInconsistentTopicID = errors.New("storage: inconsistent topic id")
	// ErrInconsistentMetaProperties: meta.properties names another node or cluster.
	ErrInconsistentMetaProperties = errors.New("storage: meta.properties does not match this node")
)

// Log is Kafka's UnifiedLog for one partition directory.
//
// All methods are safe for concurrent use. Appends, truncations and retention take
// mu exclusively; reads share it. FileSlices returned by Read are read without any
// lock, later: see Read for what that allows.
type Log struct {
	// dir changes only when the log moves to another log dir (move.go), under cleanMu,
	// flushMu and mu all held: read it holding any of them.
	dir        string
	tp         TopicPartition
	topicID    [16]byte
	logger     partlog.Logger
	now        func() time.Time
	decompress func(codec int8, src []byte) ([]byte, error)
	deleter    *deleter
	// handles manages the segments' descriptors, the active one's too (nil: always open).
	handles *handleCache
	// failed is the log manager's count of failed logs (of the log's dir), counted up
	// once when this log's sticky storage error is set (nil: not counted). Changed with
	// dir, under mu.
	failed *atomic.Int64
	// producerExpirationMs is producer.id.expiration.ms.
	producerExpirationMs int64
	// flushMu serializes background flushes (flushUpTo); it guards no state.
	flushMu sync.Mutex
	// flushes counts running background flushes.
	flushes sync.WaitGroup
	// cleanMu serializes cleanings (cleaner.go); taken before mu.
	cleanMu sync.Mutex
	// uncleanable is set when a cleaning failed (cleaner.go: maybeClean).
	uncleanable atomic.Bool

	mu struct {
		sync.RWMutex
		cfg LogConfig
		// segments are sorted by base offset, each base >= the previous segment's
		// nextOffset. Invariant: len(segments) >= 1 while open; the last is active.
		segments []*segment
		// Invariant: segments[0].base <= logStartOffset <= LEO.
		logStartOffset int64
		// Invariant: logStartOffset <= hw <= LEO (as far as SetHighWatermark was told).
		hw int64
		// recoveryPoint: every offset below it is fsynced. Invariant: <= LEO.
		recoveryPoint int64
		epochs        epochCache
		// epochsDirty: epochs changed and leader-epoch-checkpoint is not yet rewritten.
		epochsDirty bool
		producers   producerState
		// unreplicated are transactions whose marker is not below the HW yet: they
		// keep the LSO at their first offset until it is (Kafka's
		// ProducerStateManager.unreplicatedTxns). Ordered by marker offset.
		unreplicated []completedTxn
		// verifying maps a producer id to the guard of its transaction verification
		// in flight (KIP-890 part 1, Kafka's VerificationStateEntry): a marker removes
		// it, so a verified write racing with the transaction's end is refused.
		verifying map[int64]uint64
		nextGuard uint64
		// storageErr is sticky: once set (wrapping ErrStorage) every write fails with it.
		storageErr error
		closed     bool
		lastFlush  time.Time
		// truncations counts truncations; a background flush started before one does
		// not move the recovery point (the offsets it covered may have been rewritten).
		truncations uint64
		// cleanerCheckpoint is the first dirty offset: the cleaner cleaned everything
		// below it (Kafka's cleaner-offset-checkpoint entry). Invariant: <= LEO.
		cleanerCheckpoint int64
		// cleanerDeleteHorizon is the earliest delete horizon of a tombstone or marker
		// the last cleaning kept (-1: none): the log is cleaned again once it passes.
		cleanerDeleteHorizon int64
	}
}

// activeLocked is the segment appends go to. Lock should be held.
func (l *Log) activeLocked() *segment { return l.mu.segments[len(l.mu.segments)-1] }

// leoLocked is the log end offset. Lock should be held.
func (l *Log) leoLocked() int64 { return l.activeLocked().nextOffset }

// writableLocked returns why the log cannot be written, if it cannot. Lock should be held.
func (l *Log) writableLocked() error {
	if l.mu.closed {
		return ErrLogClosed
	}
	return l.mu.storageErr
}

// failLocked records a storage error (sticky) and returns it. Lock should be held.
func (l *Log) failLocked(op string, err error) error {
	if l.mu.storageErr == nil {
		l.mu.storageErr = fmt.Errorf("%w: %s %s: %v", ErrStorage, op, l.dir, err)
		l.logger.Error().Err(err).Str("op", op).Msg("storage error; log refuses writes from now on")
		if l.failed != nil {
			l.failed.Add(1)
		}
	}
	return l.mu.storageErr
}

// persistEpochsLocked writes leader-epoch-checkpoint. Lock should be held.
func (l *Log) persistEpochsLocked() error {
	if err := writeEpochCheckpoint(filepath.Join(l.dir, leaderEpochCheckpointFile), l.mu.epochs.entries); err != nil {
		return l.failLocked("write leader-epoch-checkpoint", err)
	}
	return nil
}

// AppendAsLeader appends exactly one validated v2 record batch (CRC already checked by
// the caller): it assigns offsets from the LEO by writing the base offset into the batch
// header in place, stamps partitionLeaderEpoch, applies LogAppendTime if configured
// (rewriting maxTimestamp and the attribute, then the CRC), checks idempotent/producer
// state (DuplicateError, ErrOutOfOrderSequence, ErrInvalidProducerEpoch), writes it,
// updates the indexes and the leader-epoch cache (assigning leaderEpoch at this offset
// if it is new), and rolls the segment first when needed. batch may be modified.
func (l *Log) AppendAsLeader(batch []byte, leaderEpoch int32, now time.Time) (AppendInfo, error) {
	return l.AppendAsLeaderVerified(batch, leaderEpoch, now, 0)
}

// StartTxnVerification records that producerID's transaction is being verified with its
// coordinator before a transactional write, and returns the guard to pass to
// AppendAsLeaderVerified.
func (l *Log) StartTxnVerification(producerID int64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.verifying == nil {
		l.mu.verifying = map[int64]uint64{}
	}
	// As Kafka's maybeStartTransactionVerification: a verification already in flight
	// for the producer shares its guard.
	if g, ok := l.mu.verifying[producerID]; ok {
		return g
	}
	l.mu.nextGuard++
	l.mu.verifying[producerID] = l.mu.nextGuard
	return l.mu.nextGuard
}

// AppendAsLeaderVerified is AppendAsLeader for a transactional batch verified with the
// transaction coordinator under guard (0: not verified): a batch that would open a
// transaction here is refused with ErrInvalidTxnState unless the guard is still the
// producer's, i.e. no marker was written since the verification started (the race
// behind Jepsen's hanging transactions).
func (l *Log) AppendAsLeaderVerified(batch []byte, leaderEpoch int32, now time.Time, guard uint64) (AppendInfo, error) {
	b := protocol.Batch(batch)
	if err := b.CheckHeader(); err != nil {
		return AppendInfo{}, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	if b.LastOffsetDelta() < 0 || b.RecordCount() <= 0 {
		return AppendInfo{}, fmt.Errorf("%w: lastOffsetDelta %d, %d records", ErrCorruptBatch, b.LastOffsetDelta(), b.RecordCount())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if int64(len(b)) > l.mu.cfg.SegmentBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d > %d", ErrRecordBatchTooLarge, len(b), l.mu.cfg.SegmentBytes)
	}
	if err := l.mu.producers.checkLeaderAppend(b); err != nil {
		return AppendInfo{}, err
	}
	if guard != 0 && b.IsTransactional() {
		if e := l.mu.producers.producers[b.ProducerID()]; (e == nil || e.currentTxnFirstOffset < 0) && l.mu.verifying[b.ProducerID()] != guard {
			return AppendInfo{}, fmt.Errorf("%w: producer %d's transaction ended during verification", ErrInvalidTxnState, b.ProducerID())
		}
		delete(l.mu.verifying, b.ProducerID())
	}
	leo := l.leoLocked()
	b.SetBaseOffset(leo)
	b.SetPartitionLeaderEpoch(leaderEpoch)
	logAppendTime := int64(-1)
	if l.mu.cfg.MessageTimestampLogAppendTime {
		logAppendTime = now.UnixMilli()
		b.SetLogAppendTime(logAppendTime)
	}
	if err := l.appendLocked(b, now); err != nil {
		return AppendInfo{}, err
	}
	return AppendInfo{
		FirstOffset:    leo,
		LastOffset:     b.LastOffset(),
		MaxTimestamp:   b.MaxTimestamp(),
		LogAppendTime:  logAppendTime,
		LogStartOffset: l.mu.logStartOffset,
		RecordCount:    b.RecordCount(),
	}, nil
}

// AppendAsFollower appends record batches as received from a leader (offsets and
// epochs kept), updating the epoch cache from each batch's partitionLeaderEpoch and the
// producer state (without sequence checks, as Kafka's REPLICATION origin).
//
// Every batch must pass its header and CRC check (ErrCorruptBatch); the first must start
// at or after the LEO and each next one after the previous one (ErrInvalidOffset). Gaps
// are accepted, as Kafka does: a compacted leader's log has them, and the follower's
// log must end identical to it. Nothing is written unless every batch is good.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	var list []protocol.Batch
	info := AppendInfo{MaxTimestamp: -1, LogAppendTime: -1}
	for rest := batches; len(rest) > 0; {
		size := protocol.BatchSize(rest)
		if size < protocol.BatchHeaderSize || size > int64(len(rest)) {
			return AppendInfo{}, fmt.Errorf("%w: truncated batch at byte %d", ErrCorruptBatch, len(batches)-len(rest))
		}
		b := protocol.Batch(rest[:size])
		if err := b.CheckHeader(); err != nil {
			return AppendInfo{}, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
		}
		if err := b.CheckCRC(); err != nil {
			return AppendInfo{}, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
		}
		if b.LastOffsetDelta() < 0 {
			return AppendInfo{}, fmt.Errorf("%w: negative lastOffsetDelta", ErrCorruptBatch)
		}
		if n := len(list); n > 0 && b.BaseOffset() <= list[n-1].LastOffset() {
			return AppendInfo{}, fmt.Errorf("%w: batch at %d does not follow %d", ErrInvalidOffset, b.BaseOffset(), list[n-1].LastOffset())
		}
		list = append(list, b)
		info.RecordCount += b.RecordCount()
		info.MaxTimestamp = max(info.MaxTimestamp, b.MaxTimestamp())
		rest = rest[size:]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	leo := l.leoLocked()
	info.LogStartOffset = l.mu.logStartOffset
	if len(list) == 0 {
		info.FirstOffset, info.LastOffset = leo, leo-1
		return info, nil
	}
	if list[0].BaseOffset() < leo {
		return AppendInfo{}, fmt.Errorf("%w: first batch at %d, log end offset %d", ErrInvalidOffset, list[0].BaseOffset(), leo)
	}
	for _, b := range list {
		if int64(len(b)) > l.mu.cfg.SegmentBytes {
			return AppendInfo{}, fmt.Errorf("%w: %d > %d", ErrRecordBatchTooLarge, len(b), l.mu.cfg.SegmentBytes)
		}
	}
	now := l.now()
	for _, b := range list {
		if err := l.appendLocked(b, now); err != nil {
			return AppendInfo{}, err
		}
	}
	info.FirstOffset, info.LastOffset = list[0].BaseOffset(), list[len(list)-1].LastOffset()
	return info, nil
}

// appendLocked writes one batch whose offsets are final: roll if needed, write, then the
// epoch cache, producer state and flush policy. Lock should be held.
func (l *Log) appendLocked(b protocol.Batch, now time.Time) error {
	if b.LastOffset()-l.activeLocked().base > math.MaxInt32 {
		// Only after a gap (a follower of a compacted leader): the batch's offsets do
		// not fit relative to the active segment's base, so a segment starts at the
		// batch, as Kafka's roll(Some(rollOffset)).
		if err := l.rollToLocked(b.BaseOffset(), now); err != nil {
			return err
		}
	} else if l.shouldRollLocked(b, now) {
		if err := l.rollLocked(now); err != nil {
			return err
		}
	}
	if err := l.activeLocked().append(b, l.mu.cfg.IndexIntervalBytes); err != nil {
		return l.failLocked("append", err)
	}
	if l.mu.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset()) {
		if err := l.persistEpochsLocked(); err != nil {
			return err
		}
	}
	if c, ok := l.replayLocked(b); ok {
		if c.aborted {
			if err := l.activeLocked().txn.append(l.abortedTxnLocked(c)); err != nil {
				return l.failLocked("append to transaction index", err)
			}
		}
		if c.lastOffset >= l.mu.hw {
			l.mu.unreplicated = append(l.mu.unreplicated, c)
		}
	}
	if l.leoLocked()-l.mu.recoveryPoint >= l.mu.cfg.FlushMessages {
		return l.flushLocked()
	}
	return nil
}

// shouldRollLocked is Kafka's LogSegment.shouldRoll (without roll jitter): the batch
// would overflow segment.bytes, segment.ms passed since the segment's first batch
// timestamp (or its creation when it has none), an index is full, or the batch's last
// offset is too far from the base to be stored relative to it. An empty segment is never
// rolled. Lock should be held.
func (l *Log) shouldRollLocked(b protocol.Batch, now time.Time) bool {
	s := l.activeLocked()
	if s.size == 0 {
		return false
	}
	cfg := l.mu.cfg
	var waited int64
	if s.firstBatchTimestamp >= 0 {
		waited = b.MaxTimestamp() - s.firstBatchTimestamp
	} else {
		waited = now.Sub(s.created).Milliseconds()
	}
	return s.size > cfg.SegmentBytes-int64(len(b)) ||
		waited > cfg.SegmentMs ||
		s.idx.isFull() || s.tidx.isFull() ||
		b.LastOffset()-s.base > math.MaxInt32 ||
		s.size+int64(len(b)) > math.MaxInt32 // index positions are int32
}

// rollLocked makes a new active segment at the LEO after finishing the current one
// (final time index entry, indexes trimmed), as Kafka's UnifiedLog.roll. As Kafka, the
// old segment is fsynced in the background (flushUpTo), so reads and appends do not wait
// behind a long fsync under mu; the recovery point moves to the new base when it is done.
// Lock should be held.
func (l *Log) rollLocked(now time.Time) error {
	old := l.activeLocked()
	leo := old.nextOffset
	if err := old.onBecomeInactive(); err != nil {
		return l.failLocked("roll", err)
	}
	seg, err := createSegment(l.dir, leo, l.mu.cfg, now)
	if err != nil {
		return l.failLocked("roll", err)
	}
	seg.releaseTo(l.handles, false) // written next: stays open while busy
	l.mu.segments = append(l.mu.segments, seg)
	l.flushes.Add(1)
	go l.flushUpTo(leo, l.mu.truncations)
	l.logger.Info().Int64("base_offset", leo).Int64("previous_size", old.size).Msg("rolled new log segment")
	return nil
}

// rollToLocked makes a new active segment at base (>= the LEO): as rollLocked, except
// that an empty active segment is replaced rather than kept, as Kafka's LocalLog.roll.
// Lock should be held.
func (l *Log) rollToLocked(base int64, now time.Time) error {
	old := l.activeLocked()
	if old.size > 0 {
		if err := l.rollLocked(now); err != nil {
			return err
		}
		if base == l.activeLocked().base {
			return nil
		}
		old = l.activeLocked()
	}
	seg, err := createSegment(l.dir, base, l.mu.cfg, now)
	if err != nil {
		return l.failLocked("roll", err)
	}
	seg.releaseTo(l.handles, false)
	l.mu.segments = append(l.mu.segments, seg)
	if err := l.removeSegmentsLocked([]*segment{old}, "replaced by a segment after an offset gap"); err != nil {
		return err
	}
	if len(l.mu.segments) == 1 {
		// The log held nothing but the replaced segment: it now starts at base.
		l.incrementLogStartOffsetLocked(base)
		if err := l.persistEpochsIfNeededLocked(); err != nil {
			return err
		}
	}
	l.logger.Info().Int64("base_offset", base).Msg("rolled new log segment after an offset gap")
	return nil
}

// flushUpTo fsyncs every segment below upTo not yet known to be flushed, and the
// directory (new segment files' entries), then moves the recovery point to upTo, as
// Kafka's UnifiedLog.flushUptoOffsetExclusive scheduled after a roll. It runs without mu
// during the fsyncs. An error on a segment still in the log is a storage error; one on a
// segment deleted meanwhile (its file may be closed) is not.
func (l *Log) flushUpTo(upTo int64, gen uint64) {
	defer l.flushes.Done()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if l.mu.closed || l.mu.truncations != gen || l.mu.recoveryPoint >= upTo {
		l.mu.RUnlock()
		return
	}
	var segs []*segment
	for _, s := range l.mu.segments {
		if s.base < upTo && s.nextOffset > l.mu.recoveryPoint {
			segs = append(segs, s)
		}
	}
	l.mu.RUnlock()
	var failed *segment
	var err error
	for _, s := range segs {
		if err = s.flush(); err != nil {
			failed = s
			break
		}
	}
	if err == nil {
		err = syncDir(l.dir)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.truncations != gen {
		return
	}
	if err != nil {
		if failed == nil || slices.Contains(l.mu.segments, failed) {
			l.failLocked("flush", err)
		}
		return
	}
	l.mu.recoveryPoint = min(max(l.mu.recoveryPoint, upTo), l.leoLocked())
	l.mu.lastFlush = l.now()
}

// flushLocked fsyncs every segment not yet known to be flushed and moves the recovery
// point to the LEO. Lock should be held.
func (l *Log) flushLocked() error {
	for _, s := range l.mu.segments {
		if s.nextOffset > l.mu.recoveryPoint || s == l.activeLocked() {
			if err := s.flush(); err != nil {
				return l.failLocked("flush", err)
			}
		}
	}
	l.mu.recoveryPoint = l.leoLocked()
	l.mu.lastFlush = l.now()
	return nil
}

// Flush fsyncs the log up to its end and advances the recovery point.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.flushLocked()
}

// maybeFlushByTime flushes when flush.ms passed since the last flush (LogManager's
// flush check, as Kafka's LogManager.flushDirtyLogs).
func (l *Log) maybeFlushByTime(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writableLocked() != nil || l.leoLocked() == l.mu.recoveryPoint {
		return nil
	}
	if now.Sub(l.mu.lastFlush).Milliseconds() < l.mu.cfg.FlushMs {
		return nil
	}
	return l.flushLocked()
}

// LogEndOffset is the LEO: the offset the next batch gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leoLocked()
}

// LogStartOffset is the first offset still readable.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStartOffset
}

// HighWatermark as last set (recovered from replication-offset-checkpoint on open).
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.hw
}

// SetHighWatermark stores the HW (clamped to [LogStartOffset, LEO]); the LogManager
// checkpoints it.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.hw = min(max(hw, l.mu.logStartOffset), l.leoLocked())
	l.pruneUnreplicatedLocked()
}

// pruneUnreplicatedLocked forgets completed transactions whose marker is below the HW,
// as ProducerStateManager.onHighWatermarkUpdated. Lock should be held.
func (l *Log) pruneUnreplicatedLocked() {
	l.mu.unreplicated = slices.DeleteFunc(l.mu.unreplicated, func(c completedTxn) bool {
		return c.lastOffset < l.mu.hw || c.lastOffset >= l.leoLocked()
	})
}

// LastStableOffset is the LSO: the HW, lowered to the first offset of the earliest
// transaction that is still open or whose marker is not below the HW yet, and never
// below the log start offset, as Kafka's UnifiedLog.lastStableOffset. read_committed
// consumers read up to it.
func (l *Log) LastStableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastStableOffsetLocked()
}

// lastStableOffsetLocked: see LastStableOffset. Lock should be held.
func (l *Log) lastStableOffsetLocked() int64 {
	lso := l.mu.hw
	if f, ok := l.mu.producers.firstUnstableOffset(-1); ok {
		lso = min(lso, f)
	}
	for _, c := range l.mu.unreplicated {
		if c.lastOffset >= l.mu.hw {
			lso = min(lso, c.firstOffset)
		}
	}
	return max(lso, l.mu.logStartOffset)
}

// RecoveryPoint is the offset below which everything is known to be fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.recoveryPoint
}

// LatestEpoch is the last epoch in the leader-epoch cache (-1 when empty).
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.latestEpoch()
}

// AssignEpochStartOffset records that epoch starts at offset (leader-epoch-checkpoint),
// as Kafka's LeaderEpochFileCache.assign. Negative arguments give ErrInvalidOffset.
func (l *Log) AssignEpochStartOffset(epoch int32, offset int64) error {
	if epoch < 0 || offset < 0 {
		return fmt.Errorf("%w: epoch %d start offset %d", ErrInvalidOffset, epoch, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.mu.epochs.assign(epoch, offset) {
		return l.persistEpochsLocked()
	}
	return nil
}

// EndOffsetForEpoch is Kafka's LeaderEpochFileCache.endOffsetFor: the largest epoch <=
// epoch and the start offset of the next larger epoch (LEO when it is the latest);
// (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.leoLocked())
}

// EpochEntries returns the leader-epoch cache.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.clone()
}

// EpochForOffset returns the leader epoch of the batch holding offset (-1 when unknown),
// from the leader-epoch cache as Kafka's LeaderEpochFileCache.epochForOffset.
func (l *Log) EpochForOffset(offset int64) int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.epochForOffset(offset)
}

// Size is the total bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// NumSegments is the number of segments (for tests and metrics).
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.segments)
}

// SetConfig changes the log's config at run time (AlterConfigs). A new
// segment.index.bytes applies from the next segment on.
func (l *Log) SetConfig(cfg LogConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cfg = cfg
}

// Config returns the log's current config.
func (l *Log) Config() LogConfig {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.cfg
}

// Dir is the partition directory.
func (l *Log) Dir() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dir
}

// TopicID as stored in partition.metadata.
func (l *Log) TopicID() [16]byte { return l.topicID }

// TopicPartition names the log's partition.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// segmentIndexLocked returns the index of the segment holding offset (the last segment
// whose base <= offset), or -1. Lock should be held.
func (l *Log) segmentIndexLocked(offset int64) int {
	segs := l.mu.segments
	return sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
}

// Close fsyncs and closes the log (final time index entry, indexes trimmed). Files of
// segments already scheduled for deletion are left to the deleter.
func (l *Log) Close() error {
	l.flushes.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	err := l.mu.storageErr
	if err == nil {
		if err = l.activeLocked().onBecomeInactive(); err != nil {
			err = l.failLocked("close", err)
		} else {
			err = l.flushLocked()
		}
	}
	l.mu.closed = true
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
	return err
}

// closeForDelete marks the log closed (every call fails with ErrLogClosed) without
// closing its files, which outstanding FileSlices may still read.
func (l *Log) closeForDelete() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.closed = true
}

// closeFiles closes every segment's files (after closeForDelete, when the delay passed).
func (l *Log) closeFiles() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
}

// StorageError returns the sticky storage error (wrapping ErrStorage), or nil: once set,
// the partition must go offline (KAFKA_STORAGE_ERROR).
func (l *Log) StorageError() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.storageErr
}

// removeExpiredProducers drops producer state older than producer.id.expiration.ms.
func (l *Log) removeExpiredProducers(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.producers.removeExpired(now.UnixMilli(), l.producerExpirationMs)
}

// replay updates the producer state ps with a written batch (b may be a header only,
// except for control batches, whose marker type is in their record).
func replay(ps *producerState, b protocol.Batch) (completedTxn, bool) {
	typ, coordEpoch := int16(-1), int32(-1)
	if b.IsControl() {
		if t, err := b.ControlType(); err == nil {
			typ = t
		}
		if e, err := b.MarkerCoordinatorEpoch(); err == nil {
			coordEpoch = e
		}
	}
	return ps.update(b, typ, coordEpoch)
}

// replayLocked is replay on the log's own producer state. Lock should be held.
func (l *Log) replayLocked(b protocol.Batch) (completedTxn, bool) {
	return replay(&l.mu.producers, b)
}

// abortedTxnLocked is the .txnindex entry of an aborted transaction just completed
// (the producer state already updated). Lock should be held.
func (l *Log) abortedTxnLocked(c completedTxn) AbortedTxn {
	lso := c.lastOffset + 1
	if f, ok := l.mu.producers.firstUnstableOffset(c.producerID); ok {
		lso = f
	}
	return AbortedTxn{ProducerID: c.producerID, FirstOffset: c.firstOffset, LastOffset: c.lastOffset, LastStableOffset: lso}
}

// AppendTxnMarker writes a COMMIT or ABORT marker for producerID's transaction as the
// leader, as Kafka's UnifiedLog.appendAsLeader with origin COORDINATOR: a marker with
// an epoch older than the producer's is ErrInvalidProducerEpoch, one from an older
// coordinator epoch ErrTransactionCoordinatorFenced. A marker for a producer with no
// open transaction here is written anyway (as Kafka: markers are idempotent for
// readers).
func (l *Log) AppendTxnMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32, now time.Time) (AppendInfo, error) {
	return l.AppendTxnMarkerTV(producerID, producerEpoch, coordinatorEpoch, commit, 0, leaderEpoch, now)
}

// AppendTxnMarkerTV is AppendTxnMarker for a marker of transaction version txnVersion
// (WriteTxnMarkers v2): at 2 the marker's epoch must be above the producer's (see
// producerState.checkMarker).
func (l *Log) AppendTxnMarkerTV(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, txnVersion int16, leaderEpoch int32, now time.Time) (AppendInfo, error) {
	b := protocol.Batch(protocol.EndTxnMarker(producerID, producerEpoch, coordinatorEpoch, commit, now.UnixMilli()))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.mu.producers.checkMarker(producerID, producerEpoch, coordinatorEpoch, txnVersion); err != nil {
		return AppendInfo{}, err
	}
	leo := l.leoLocked()
	b.SetBaseOffset(leo)
	b.SetPartitionLeaderEpoch(leaderEpoch)
	if err := l.appendLocked(b, now); err != nil {
		return AppendInfo{}, err
	}
	delete(l.mu.verifying, producerID)
	return AppendInfo{FirstOffset: leo, LastOffset: leo, MaxTimestamp: b.MaxTimestamp(), LogAppendTime: -1,
		LogStartOffset: l.mu.logStartOffset, RecordCount: 1}, nil
}

// CollectAbortedTxns returns the aborted transactions overlapping [fetchOffset,
// upperBound) — ended at or after fetchOffset, started before upperBound — for a
// read_committed fetch, as Kafka's LocalLog.collectAbortedTransactions: the
// transaction indexes of the segment holding fetchOffset and the later ones, until an
// entry's lastStableOffset shows that no later one can start below upperBound.
func (l *Log) CollectAbortedTxns(fetchOffset, upperBound int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	for i := max(l.segmentIndexLocked(fetchOffset), 0); i < len(l.mu.segments); i++ {
		var done bool
		if out, done = l.mu.segments[i].txn.collect(fetchOffset, upperBound, out); done {
			break
		}
	}
	return out
}

// ProducerStateInfo describes one producer's state on this partition, for
// DescribeProducers.
type ProducerStateInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32
	// LastTimestamp is the max timestamp of the producer's last batch.
	LastTimestamp    int64
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its open transaction, -1 when none.
	CurrentTxnStartOffset int64
}

// ProducerStates lists the active producers, ordered by producer id.
func (l *Log) ProducerStates() []ProducerStateInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ProducerStateInfo, 0, len(l.mu.producers.producers))
	for pid, e := range l.mu.producers.producers {
		out = append(out, ProducerStateInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset})
	}
	slices.SortFunc(out, func(a, b ProducerStateInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}
