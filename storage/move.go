package storage

// Moving a replica between log dirs (AlterReplicaLogDirs, Kafka's future replicas).
//
// MoveLog starts a goroutine that copies the log into
// "<dest>/<topic>-<partition>.<uuid>-future" while the log keeps taking writes: passes
// over the segments, each copying what was appended since the last (a segment
// replaced by the cleaner or a truncation is copied again from its start), until a
// pass copies less than moveLockedBytes. Then, holding the log's cleaning, flush and
// write locks, it copies the rest and the indexes, writes the leader-epoch checkpoint
// and partition.metadata, fsyncs the future directory, and swaps:
//
//  1. rename "<src>/<tp>" to "<src>/<tp>.<uuid>-delete" (fsync src),
//  2. rename the future directory to "<dest>/<tp>" (fsync dest),
//  3. open the segments from dest and make them the log's (the same *Log, so callers
//     holding it never see the move; its in-memory state — epochs, producers, HW, log
//     start offset — carries over).
//
// The old segments' files stay open for file.delete.delay.ms for the FileSlices handed
// out, then go with the "-delete" directory. A stop in between (kill -9) leaves either
// the source and a partial future directory (the next open removes the future one and
// moves again: scanDirs) or, after step 1, a complete future directory and no source
// (the next open makes it the log). Cleaning is paused while a log moves, as Kafka's
// abortAndPauseCleaning.
//
// The unlocked passes are throttled by LogManagerConfig.MoveQuota (the broker's
// replica.alter.log.dirs.io.max.bytes.per.second, one quota for every move, as
// Kafka's ReplicaAlterLogDirsThread): each copies MoveChunkBytes at a time, and before
// a chunk waits, MoveBackoff at a time, while the quota is exceeded. What the swap
// copies under the locks (less than moveLockedBytes) is counted but never waited for:
// waiting there would hold up the log's writers.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// moveLockedBytes: a copy pass that had less than this left to copy is the last one
// without the log's lock; the remainder is copied under it.
const moveLockedBytes = 1 << 20

// maxMovePasses bounds the unlocked passes (a log written faster than it copies).
const maxMovePasses = 20

// ErrNoLog: the partition has no log here (AlterReplicaLogDirs answers
// REPLICA_NOT_AVAILABLE and remembers the dir for when it is created).
var ErrNoLog = errors.New("storage: no log for the partition here")

// errMoveStopped: the move was cancelled or the manager closed.
var errMoveStopped = errors.New("storage: log dir move stopped")

// MoveQuota is the rate bound of the log dir moves (replication.Quota is one). Safe
// for concurrent use.
type MoveQuota interface {
	// Record counts n bytes copied at now.
	Record(n int64, now time.Time)
	// Exceeded reports whether the measured rate is above the bound.
	Exceeded(now time.Time) bool
}

// move is a replica being moved to another log dir of this broker.
type move struct {
	tp   TopicPartition
	log  *Log
	src  *logDir
	dest *logDir
	// cfg is the manager's (MoveQuota, MoveChunkBytes, MoveBackoff, Now).
	cfg *LogManagerConfig
	// future is the future log's directory.
	future string
	// copied is the bytes of the future log so far.
	copied atomic.Int64
	stop   chan struct{}
	done   chan struct{}
	// keep: stopped by Close or Crash, the future directory stays for the next open.
	// Set before stop is closed.
	keep     bool
	stopOnce sync.Once
}

// halt stops the move (keep: leave its future directory) and waits for it.
func (mv *move) halt(keep bool) {
	mv.stopOnce.Do(func() {
		mv.keep = keep
		close(mv.stop)
	})
	<-mv.done
}

// MoveLog starts moving tp's log to the log dir at path (Kafka's
// ReplicaManager.alterReplicaLogDirs): ErrLogDirNotFound for a path not in log.dirs,
// ErrLogDirOffline when a dir is offline (Kafka creates no future log then) or the log
// had a storage error, ErrNoLog when there is no log here (path is remembered: the log
// is created there). A log already in that dir has nothing to do (a move of it
// elsewhere is cancelled); a move to another dir replaces the one under way.
func (m *LogManager) MoveLog(tp TopicPartition, path string) error {
	dest := m.dirByPath(path)
	if dest == nil {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, path)
	}
	for _, ld := range m.dirs {
		if ld.failedLogs.Load() != 0 {
			return fmt.Errorf("%w: %s", ErrLogDirOffline, ld.path)
		}
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return ErrLogClosed
	}
	l := m.mu.logs[tp]
	if l == nil {
		m.mu.preferred[tp] = dest
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoLog, tp)
	}
	if cur := m.mu.moves[tp]; cur != nil && cur.dest == dest {
		m.mu.Unlock()
		return nil
	}
	src := m.mu.dirOf[tp]
	m.mu.Unlock()
	m.cancelMove(tp)
	if l.StorageError() != nil {
		return fmt.Errorf("%w: %s", ErrLogDirOffline, src.path)
	}
	if src == dest {
		return nil
	}
	return m.startMove(tp, l, src, dest)
}

// startMove registers and starts the move of l from src to dest.
func (m *LogManager) startMove(tp TopicPartition, l *Log, src, dest *logDir) error {
	var id [16]byte
	rand.Read(id[:])
	mv := &move{tp: tp, log: l, src: src, dest: dest, cfg: &m.cfg,
		future: filepath.Join(dest.path, tp.String()+"."+hex.EncodeToString(id[:])+futureDirSuffix),
		stop:   make(chan struct{}), done: make(chan struct{})}
	m.mu.Lock()
	if m.mu.closed || m.mu.logs[tp] != l || m.mu.moves[tp] != nil {
		m.mu.Unlock()
		return nil
	}
	m.mu.moves[tp] = mv
	m.mu.Unlock()
	m.cfg.Logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("from", src.path).
		Str("to", dest.path).Msg("moving log to another log dir")
	go m.runMove(mv)
	return nil
}

// resumeMoves restarts the moves a previous run left unfinished (scanDirs removed their
// partial future directories).
func (m *LogManager) resumeMoves(futures map[TopicPartition]*logDir) {
	for tp, dest := range futures {
		m.mu.Lock()
		l, src := m.mu.logs[tp], m.mu.dirOf[tp]
		m.mu.Unlock()
		if l != nil && src != dest {
			m.startMove(tp, l, src, dest)
		}
	}
}

// cancelMove stops tp's move, if any, and removes its future directory.
func (m *LogManager) cancelMove(tp TopicPartition) {
	m.mu.Lock()
	mv := m.mu.moves[tp]
	m.mu.Unlock()
	if mv == nil {
		return
	}
	mv.halt(false)
}

// stopMoves stops every move (Close, Crash). The future directories stay: the next
// open starts those moves again.
func (m *LogManager) stopMoves() {
	m.mu.Lock()
	var mvs []*move
	for _, mv := range m.mu.moves {
		mvs = append(mvs, mv)
	}
	m.mu.Unlock()
	for _, mv := range mvs {
		mv.halt(true)
	}
}

// runMove copies and swaps mv's log; on failure or cancellation the future directory
// is removed (unless the manager is stopping: then the next open moves again).
func (m *LogManager) runMove(mv *move) {
	defer close(mv.done)
	start := time.Now()
	err := mv.run(m)
	m.mu.Lock()
	if m.mu.moves[mv.tp] == mv {
		delete(m.mu.moves, mv.tp)
	}
	if err == nil {
		m.mu.dirOf[mv.tp] = mv.dest
		m.placements.Add(1)
	}
	m.mu.Unlock()
	ev := m.cfg.Logger.Info()
	switch {
	case err == nil:
		ev.Str("topic", mv.tp.Topic).Int32("partition", mv.tp.Partition).Str("log_dir", mv.dest.path).
			Int64("bytes", mv.copied.Load()).Dur("took", time.Since(start)).Msg("moved log to another log dir")
		return
	case errors.Is(err, errMoveStopped):
		if mv.keep {
			return
		}
	default:
		m.cfg.Logger.Error().Err(err).Str("topic", mv.tp.Topic).Int32("partition", mv.tp.Partition).
			Str("log_dir", mv.dest.path).Msg("moving log to another log dir failed")
	}
	os.RemoveAll(mv.future)
}

// copyState is what the future directory holds of each segment, by base offset.
type copyState struct {
	seg *segment
	n   int64
}

// run is the copy passes and the swap.
func (mv *move) run(m *LogManager) error {
	l := mv.log
	if err := os.MkdirAll(mv.future, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	copied := map[int64]copyState{}
	var gen uint64
	for pass := 0; ; pass++ {
		select {
		case <-mv.stop:
			return errMoveStopped
		default:
		}
		l.mu.RLock()
		if l.mu.closed {
			l.mu.RUnlock()
			return errMoveStopped
		}
		segs, sizes := l.segmentSizesLocked()
		truncated := l.mu.truncations != gen
		gen = l.mu.truncations
		dir := l.dir
		l.mu.RUnlock()
		if truncated {
			copied = map[int64]copyState{}
		}
		n, err := mv.copyPass(dir, segs, sizes, copied, true)
		if err != nil {
			return err
		}
		if n < moveLockedBytes || pass >= maxMovePasses {
			break
		}
	}
	if beforeMoveSwap != nil {
		beforeMoveSwap(mv.stop)
	}
	return mv.swap(m, copied, gen)
}

// beforeMoveSwap, set by tests only, runs after the copy passes, before the swap; stop
// is closed when the move is stopped.
var beforeMoveSwap func(stop <-chan struct{})

// segmentSizesLocked lists the segments and their .log sizes. Lock should be held.
func (l *Log) segmentSizesLocked() ([]*segment, []int64) {
	segs := append([]*segment(nil), l.mu.segments...)
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size
	}
	return segs, sizes
}

// copyPass brings the future directory's .log files up to sizes, from dir's, and
// drops those of segments gone. Returns the bytes copied. throttled: each chunk waits
// for the move quota first (errMoveStopped when the move is stopped meanwhile).
func (mv *move) copyPass(dir string, segs []*segment, sizes []int64, copied map[int64]copyState, throttled bool) (int64, error) {
	var total int64
	live := map[int64]bool{}
	chunk := int64(mv.cfg.MoveChunkBytes)
segments:
	for i, s := range segs {
		live[s.base] = true
		c := copied[s.base]
		if c.seg != s { // new, or replaced by the cleaner
			c = copyState{seg: s}
		}
		if c.n > sizes[i] { // truncated: copyPass is called with a reset map then
			c.n = 0
		}
		for c.n < sizes[i] || c.n == 0 {
			end := sizes[i]
			if q := mv.cfg.MoveQuota; q != nil {
				end = min(end, c.n+chunk)
				if throttled {
					if err := mv.waitQuota(q); err != nil {
						return total, err
					}
				}
			}
			if err := copyFileRange(segmentPath(dir, s.base, logSuffix), segmentPath(mv.future, s.base, logSuffix), c.n, end); err != nil {
				if errors.Is(err, os.ErrNotExist) { // deleted by retention meanwhile
					continue segments
				}
				return total, fmt.Errorf("%w: copy %s: %v", ErrStorage, segmentPath(dir, s.base, logSuffix), err)
			}
			if q := mv.cfg.MoveQuota; q != nil {
				q.Record(end-c.n, mv.cfg.Now())
			}
			total += end - c.n
			c.n = end
			copied[s.base] = c
			if end == 0 {
				break
			}
		}
	}
	var sum int64
	for base, c := range copied {
		if !live[base] {
			os.Remove(segmentPath(mv.future, base, logSuffix))
			delete(copied, base)
			continue
		}
		sum += c.n
	}
	mv.copied.Store(sum)
	return total, nil
}

// waitQuota returns once q is not exceeded, looking again every MoveBackoff, or
// errMoveStopped when the move is stopped first.
func (mv *move) waitQuota(q MoveQuota) error {
	for q.Exceeded(mv.cfg.Now()) {
		t := time.NewTimer(mv.cfg.MoveBackoff)
		select {
		case <-mv.stop:
			t.Stop()
			return errMoveStopped
		case <-t.C:
		}
	}
	return nil
}

// copyFileRange makes dst's bytes [from, to) those of src, and dst exactly to long.
func copyFileRange(src, dst string, from, to int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := out.Truncate(from); err != nil {
		out.Close()
		return err
	}
	if _, err := out.Seek(from, io.SeekStart); err != nil {
		out.Close()
		return err
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, from, to-from)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyWhole copies src to dst (a missing src is not an error: no such index).
func copyWhole(src, dst string) error {
	fi, err := os.Stat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return copyFileRange(src, dst, 0, fi.Size())
}

// swap finishes the copy under the log's locks and makes the future log the log.
func (mv *move) swap(m *LogManager, copied map[int64]copyState, gen uint64) error {
	l := mv.log
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-mv.stop:
		return errMoveStopped
	default:
	}
	if l.mu.closed {
		return errMoveStopped
	}
	if l.mu.storageErr != nil {
		return l.mu.storageErr
	}
	if l.mu.truncations != gen {
		clear(copied)
	}
	segs, sizes := l.segmentSizesLocked()
	src := l.dir
	if _, err := mv.copyPass(src, segs, sizes, copied, false); err != nil {
		return err
	}
	for _, s := range segs {
		if _, ok := copied[s.base]; !ok {
			return fmt.Errorf("%w: segment %d of %s vanished during the move", ErrStorage, s.base, src)
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if err := copyWhole(segmentPath(src, s.base, suf), segmentPath(mv.future, s.base, suf)); err != nil {
				return fmt.Errorf("%w: copy index: %v", ErrStorage, err)
			}
		}
	}
	if err := writeEpochCheckpoint(filepath.Join(mv.future, leaderEpochCheckpointFile), l.mu.epochs.entries); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if l.topicID != ([16]byte{}) {
		if err := writePartitionMetadata(mv.future, l.topicID); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	if err := syncTree(mv.future); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}

	var id [16]byte
	rand.Read(id[:])
	deleted := filepath.Join(mv.src.path, mv.tp.String()+"."+hex.EncodeToString(id[:])+deleteDirSuffix)
	if err := os.Rename(src, deleted); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := syncDir(mv.src.path); err != nil {
		return l.failLocked("move", err)
	}
	final := filepath.Join(mv.dest.path, mv.tp.String())
	if err := os.Rename(mv.future, final); err != nil {
		return l.failLocked("move", err)
	}
	if err := syncDir(mv.dest.path); err != nil {
		return l.failLocked("move", err)
	}
	fresh, err := openLog(logParams{
		dir: final, tp: mv.tp, topicID: l.topicID, cfg: l.mu.cfg,
		recoveryPoint: l.leoLocked(), logStartOffset: l.mu.logStartOffset, hw: l.mu.hw,
		hadCleanShutdown: true, cleanerCheckpoint: l.mu.cleanerCheckpoint,
		logger: l.logger, now: l.now, decompress: l.decompress, deleter: l.deleter, handles: l.handles,
		failed: &mv.dest.failedLogs, producerExpirationMs: l.producerExpirationMs,
	})
	if err != nil {
		return l.failLocked("move", err)
	}
	fresh.mu.Lock()
	newSegs := fresh.mu.segments
	fresh.mu.segments = nil
	fresh.mu.Unlock()
	if got, want := newSegs[len(newSegs)-1].nextOffset, l.leoLocked(); got != want {
		for _, s := range newSegs {
			s.closeFiles()
		}
		return l.failLocked("move", fmt.Errorf("moved log ends at %d, the log at %d", got, want))
	}
	old := l.mu.segments
	l.mu.segments = newSegs
	l.dir = final
	l.failed = &mv.dest.failedLogs
	l.mu.recoveryPoint = l.leoLocked()
	delay := time.Duration(l.mu.cfg.FileDeleteDelayMs) * time.Millisecond
	m.deleter.schedule(delay, func() {
		for _, s := range old {
			s.closeFiles()
		}
		os.RemoveAll(deleted)
	})
	return nil
}

// syncTree fsyncs every file of dir and dir itself.
func syncTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return syncDir(dir)
}
