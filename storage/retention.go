package storage

import (
	"fmt"
	"sync"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

// deleter runs file deletions file.delete.delay.ms after they are scheduled, as Kafka's
// scheduler does for ".deleted" segments and "-delete" directories. flush runs every
// pending deletion now (LogManager.Close).
type deleter struct {
	mu struct {
		sync.Mutex
		pending map[*pendingDelete]struct{}
	}
	wg sync.WaitGroup
}

type pendingDelete struct {
	timer *time.Timer
	once  sync.Once
	fn    func()
}

func newDeleter() *deleter {
	d := &deleter{}
	d.mu.pending = make(map[*pendingDelete]struct{})
	return d
}

// schedule runs fn after delay (at once when delay <= 0, still asynchronously).
func (d *deleter) schedule(delay time.Duration, fn func()) {
	p := &pendingDelete{fn: fn}
	d.wg.Add(1)
	d.mu.Lock()
	d.mu.pending[p] = struct{}{}
	p.timer = time.AfterFunc(max(delay, 0), func() { d.run(p) })
	d.mu.Unlock()
}

func (d *deleter) run(p *pendingDelete) {
	p.once.Do(func() {
		p.fn()
		d.mu.Lock()
		delete(d.mu.pending, p)
		d.mu.Unlock()
		d.wg.Done()
	})
}

// flush runs every pending deletion now and waits for all of them.
func (d *deleter) flush() {
	d.mu.Lock()
	ps := make([]*pendingDelete, 0, len(d.mu.pending))
	for p := range d.mu.pending {
		ps = append(ps, p)
	}
	d.mu.Unlock()
	for _, p := range ps {
		p.timer.Stop()
		d.run(p)
	}
	d.wg.Wait()
}

// removeSegmentsLocked takes segs out of the log and deletes them asynchronously: the
// files are renamed with ".deleted" now and closed and unlinked file.delete.delay.ms
// later, so FileSlices already handed out stay readable, as Kafka's
// LocalLog.removeAndDeleteSegments(asyncDelete = true). segs must not include the
// active segment unless another segment is added right after. Lock should be held.
func (l *Log) removeSegmentsLocked(segs []*segment, reason string) error {
	if len(segs) == 0 {
		return nil
	}
	gone := make(map[*segment]bool, len(segs))
	for _, s := range segs {
		gone[s] = true
	}
	kept := l.mu.segments[:0:0]
	for _, s := range l.mu.segments {
		if !gone[s] {
			kept = append(kept, s)
		}
	}
	l.mu.segments = kept
	var firstErr error
	for _, s := range segs {
		if err := s.renameDeleted(); err != nil && firstErr == nil {
			firstErr = err
		}
		l.logger.Info().Int64("base_offset", s.base).Int64("size", s.size).Str("reason", reason).Msg("deleting log segment")
	}
	delay := time.Duration(l.mu.cfg.FileDeleteDelayMs) * time.Millisecond
	l.deleter.schedule(delay, func() {
		for _, s := range segs {
			s.removeDeleted()
		}
	})
	if firstErr != nil {
		return l.failLocked("delete segment", firstErr)
	}
	return nil
}

// deleteOldSegments is Kafka's UnifiedLog.deleteOldSegments: with cleanup.policy
// delete, segments past retention.ms (by their largest timestamp) and segments beyond
// retention.bytes; whatever the policy, segments wholly below the log start offset. Returns how many
// segments were deleted.
func (l *Log) deleteOldSegments(now time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	total := 0
	cfg := l.mu.cfg
	if cfg.Delete && cfg.RetentionMs >= 0 {
		nowMs := now.UnixMilli()
		n, err := l.deleteSegmentsMatchingLocked(func(s, _ *segment) bool {
			return nowMs-s.largestTimestamp() > cfg.RetentionMs
		}, "retention.ms breached", now)
		total += n
		if err != nil {
			return total, err
		}
	}
	if cfg.Delete && cfg.RetentionBytes >= 0 {
		var size int64
		for _, s := range l.mu.segments {
			size += s.size
		}
		if diff := size - cfg.RetentionBytes; diff > 0 {
			n, err := l.deleteSegmentsMatchingLocked(func(s, _ *segment) bool {
				if diff-s.size >= 0 {
					diff -= s.size
					return true
				}
				return false
			}, "retention.bytes breached", now)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	n, err := l.deleteLogStartOffsetBreachedLocked(now)
	return total + n, err
}

// deleteLogStartOffsetBreachedLocked deletes segments whose successor starts at or
// below the log start offset. Lock should be held.
func (l *Log) deleteLogStartOffsetBreachedLocked(now time.Time) (int, error) {
	lso := l.mu.logStartOffset
	return l.deleteSegmentsMatchingLocked(func(_, next *segment) bool {
		return next != nil && next.base <= lso
	}, "log start offset breached", now)
}

// deleteSegmentsMatchingLocked deletes the longest prefix of segments for which pred
// holds and whose offsets are all below the HW, never the active segment when it is
// empty, as Kafka's LocalLog.deletableSegments + UnifiedLog.deleteSegments: when every
// segment goes, a new active segment is rolled first. Then the log start offset moves up
// to the first remaining segment. Lock should be held.
func (l *Log) deleteSegmentsMatchingLocked(pred func(s, next *segment) bool, reason string, now time.Time) (int, error) {
	segs := l.mu.segments
	var deletable []*segment
	for i, s := range segs {
		var next *segment
		upper := l.leoLocked()
		if i+1 < len(segs) {
			next = segs[i+1]
			upper = next.base
		}
		if next == nil && s.size == 0 {
			break
		}
		if l.mu.hw < upper || !pred(s, next) {
			break
		}
		deletable = append(deletable, s)
	}
	if len(deletable) == 0 {
		return 0, nil
	}
	if len(deletable) == len(segs) {
		if err := l.rollLocked(now); err != nil {
			return 0, err
		}
	}
	if err := l.removeSegmentsLocked(deletable, reason); err != nil {
		return len(deletable), err
	}
	l.incrementLogStartOffsetLocked(l.mu.segments[0].base)
	return len(deletable), l.persistEpochsIfNeededLocked()
}

// incrementLogStartOffsetLocked moves the log start offset up (never down) and trims
// the epoch cache's start, as Kafka's UnifiedLog.maybeIncrementLogStartOffset. Lock
// should be held; the epoch checkpoint is written by persistEpochsIfNeededLocked.
func (l *Log) incrementLogStartOffsetLocked(offset int64) {
	if offset <= l.mu.logStartOffset {
		return
	}
	l.mu.logStartOffset = offset
	l.mu.hw = max(l.mu.hw, offset)
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, offset)
	if l.mu.epochs.truncateFromStart(offset) {
		l.mu.epochsDirty = true
	}
}

// persistEpochsIfNeededLocked writes the epoch checkpoint when a change is pending.
// Lock should be held.
func (l *Log) persistEpochsIfNeededLocked() error {
	if !l.mu.epochsDirty {
		return nil
	}
	l.mu.epochsDirty = false
	return l.persistEpochsLocked()
}

// MaybeIncrementLogStartOffset moves the log start offset forward (DeleteRecords);
// whole segments below it are deleted. Returns the new log start offset. An offset
// above the HW gives ErrOffsetOutOfRange, as Kafka.
func (l *Log) MaybeIncrementLogStartOffset(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return l.mu.logStartOffset, err
	}
	if offset > l.mu.hw {
		return l.mu.logStartOffset, fmt.Errorf("%w: cannot move the log start offset to %d above the high watermark %d",
			ErrOffsetOutOfRange, offset, l.mu.hw)
	}
	l.incrementLogStartOffsetLocked(offset)
	if err := l.persistEpochsIfNeededLocked(); err != nil {
		return l.mu.logStartOffset, err
	}
	_, err := l.deleteLogStartOffsetBreachedLocked(l.now())
	return l.mu.logStartOffset, err
}

// TruncateTo cuts the log so that LEO == offset (no data is cut if offset >= LEO);
// also cuts the epoch cache (entries starting at or past the new LEO removed, even
// when no data is cut, as Kafka's UnifiedLog.truncateTo) and producer state.
//
// As Kafka's UnifiedLog.truncateTo: below the first segment it is
// TruncateFullyAndStartAt; otherwise later segments are deleted (asynchronously) and the
// segment holding offset is cut at the batch holding offset (a batch is never split, so
// the LEO may end up below offset if offset was inside a batch). The log start offset and
// HW are lowered to the new LEO when above it, and the producer state is rebuilt.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrInvalidOffset, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset >= l.leoLocked() {
		// No data to cut, yet an epoch may start at the LEO: one this replica began
		// as leader and wrote nothing in before another was elected. Kafka trims it
		// here too, or a follower keeps sending it as lastFetchedEpoch and is told it
		// diverged on every fetch.
		if l.mu.epochs.truncateFromEnd(l.leoLocked()) {
			return l.persistEpochsLocked()
		}
		return nil
	}
	if l.mu.segments[0].base > offset {
		return l.truncateFullyAndStartAtLocked(offset)
	}
	oldLEO := l.leoLocked()
	l.mu.truncations++
	i := l.segmentIndexLocked(offset)
	if err := l.removeSegmentsLocked(append([]*segment(nil), l.mu.segments[i+1:]...), "truncation"); err != nil {
		return err
	}
	active := l.activeLocked()
	if _, err := active.truncateTo(offset, l.now()); err != nil {
		return l.failLocked("truncate", err)
	}
	if err := active.idx.preallocate(l.mu.cfg.SegmentIndexBytes); err != nil {
		return l.failLocked("truncate", err)
	}
	if err := active.tidx.preallocate(l.mu.cfg.SegmentIndexBytes); err != nil {
		return l.failLocked("truncate", err)
	}
	leo := l.leoLocked()
	if l.mu.epochs.truncateFromEnd(leo) {
		if err := l.persistEpochsLocked(); err != nil {
			return err
		}
	}
	l.mu.logStartOffset = min(l.mu.logStartOffset, leo)
	l.mu.hw = min(l.mu.hw, leo)
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, leo)
	// As LogCleanerManager.maybeTruncateCheckpoint: what is appended from here on is dirty.
	l.mu.cleanerCheckpoint = min(l.mu.cleanerCheckpoint, leo)
	l.pruneUnreplicatedLocked()
	if err := l.rebuildProducerStateLocked(); err != nil {
		return l.failLocked("rebuild producer state", err)
	}
	l.logger.Info().Int64("target", offset).Int64("old_log_end_offset", oldLEO).Int64("log_end_offset", leo).Msg("truncated log")
	return nil
}

// TruncateFullyAndStartAt empties the log and starts it at offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrInvalidOffset, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.truncateFullyAndStartAtLocked(offset)
}

// truncateFullyAndStartAtLocked is Kafka's UnifiedLog.truncateFullyAndStartAt: every
// segment deleted (asynchronously), a new empty one at offset, epoch cache and producer
// state cleared, log start offset, HW and recovery point set to offset. Lock should be
// held.
func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	l.mu.truncations++
	old := append([]*segment(nil), l.mu.segments...)
	if err := l.removeSegmentsLocked(old, "truncate fully"); err != nil {
		return err
	}
	seg, err := createSegment(l.dir, offset, l.mu.cfg, l.now())
	if err != nil {
		return l.failLocked("truncate fully", err)
	}
	seg.releaseTo(l.handles, false)
	l.mu.segments = []*segment{seg}
	l.mu.epochs.entries = nil
	if err := l.persistEpochsLocked(); err != nil {
		return err
	}
	l.mu.producers = newProducerState()
	l.mu.unreplicated = nil
	l.mu.logStartOffset, l.mu.hw, l.mu.recoveryPoint = offset, offset, offset
	l.mu.cleanerCheckpoint = offset
	l.logger.Info().Int64("offset", offset).Msg("truncated log fully")
	return nil
}

// rebuildProducerStateLocked replays batch headers from the log start offset on, as
// Kafka's rebuildProducerState does from its snapshots, skipping the segments up to the
// last one whose largest timestamp is older than producer.id.expiration.ms (their
// producers would have expired, as on open). Lock should be held.
func (l *Log) rebuildProducerStateLocked() error {
	ps := newProducerState()
	expireBefore := l.now().UnixMilli() - l.producerExpirationMs
	first := 0
	for i, s := range l.mu.segments[:len(l.mu.segments)-1] {
		if s.maxTimestamp < expireBefore {
			first = i + 1
		}
	}
	hdr := make([]byte, protocol.BatchHeaderSize)
	for _, s := range l.mu.segments[first:] {
		for pos := int64(0); pos < s.size; {
			b, err := s.readHeader(pos, hdr)
			if err != nil {
				return err
			}
			if b.LastOffset() >= l.mu.logStartOffset {
				if b.IsControl() {
					if b, err = l.readBatch(s, pos, b); err != nil {
						return err
					}
				}
				replay(&ps, b)
			}
			pos += protocol.BatchSize(b)
		}
	}
	l.mu.producers = ps
	return nil
}
