package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gokafkad/gokafkad/internal/partlog"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/rs/zerolog"
)

// logParams is what a LogManager knows about a log before opening it.
type logParams struct {
	dir     string
	tp      TopicPartition
	topicID [16]byte
	cfg     LogConfig
	// recoveryPoint from recovery-point-offset-checkpoint (0 when absent).
	recoveryPoint int64
	// logStartOffset from log-start-offset-checkpoint (0 when absent).
	logStartOffset int64
	// hw from replication-offset-checkpoint (0 when absent).
	hw int64
	// cleanerCheckpoint from cleaner-offset-checkpoint (0 when absent).
	cleanerCheckpoint int64
	hadCleanShutdown  bool
	// producerExpirationMs is producer.id.expiration.ms.
	producerExpirationMs int64
	logger               partlog.Logger
	now                  func() time.Time
	decompress           func(codec int8, src []byte) ([]byte, error)
	deleter              *deleter
	handles              *handleCache
	// failed is counted up when the log hits a storage error (nil: not counted).
	failed *atomic.Int64
}

// openLog loads (or, when the directory has no segment, creates) the log in p.dir, as
// Kafka's LogLoader: leftover temporary and ".deleted" files are removed; every segment
// is opened; after an unclean shutdown each segment from the one holding the recovery
// point on is CRC-scanned and cut at the first bad batch, later segments deleted, and its
// indexes rebuilt; otherwise headers are only read (still cutting at an insane header)
// and an index is rebuilt only when missing or failing its sanity check. The producer
// state and the segments' statistics come from the same pass.
func openLog(p logParams) (*Log, error) {
	l := &Log{
		dir:        p.dir,
		tp:         p.tp,
		topicID:    p.topicID,
		logger:     p.logger,
		now:        p.now,
		decompress: p.decompress,
		deleter:    p.deleter,
		handles:    p.handles,
		failed:     p.failed,

		producerExpirationMs: p.producerExpirationMs,
	}
	l.mu.cfg = p.cfg
	l.mu.producers = newProducerState()
	l.mu.cleanerDeleteHorizon = -1
	l.mu.cleanerCheckpoint = p.cleanerCheckpoint
	now := p.now()
	l.mu.lastFlush = now

	bases, err := listSegmentFiles(p.dir, l.logger.Logger())
	if err != nil {
		return nil, err
	}
	epochs, err := readEpochCheckpoint(filepath.Join(p.dir, leaderEpochCheckpointFile))
	if err != nil {
		l.logger.Warn().Err(err).Msg("ignoring unreadable leader-epoch-checkpoint; rebuilding it from batches")
		epochs = nil
	}
	l.mu.epochs.entries = epochs

	// Open every segment first: which ones need a full scan depends on the later ones.
	type opened struct {
		seg           *segment
		indexOK       bool
		needsRecovery bool
	}
	segs := make([]opened, 0, len(bases))
	closeOpened := func() {
		for _, o := range segs {
			if o.seg != nil {
				o.seg.closeFiles()
			}
		}
		l.closeSegments()
	}
	for i, base := range bases {
		seg, indexOK, err := openSegment(p.dir, base, p.cfg, now, i == len(bases)-1)
		if err != nil {
			closeOpened()
			return nil, fmt.Errorf("open segment %d in %s: %w", base, p.dir, err)
		}
		segs = append(segs, opened{seg: seg, indexOK: indexOK,
			needsRecovery: !p.hadCleanShutdown && (i == len(bases)-1 || bases[i+1] > p.recoveryPoint)})
	}
	// Producer state is rebuilt from the segments after the last "old" one: an old
	// segment is inactive, trusted (no recovery, index sane) and its largest timestamp
	// is older than producer.id.expiration.ms, so every producer that wrote only there
	// would have been expired by Kafka anyway. Old segments are loaded from their
	// indexes alone (quickLoad), as Kafka does, instead of reading every batch header.
	expireBefore := now.UnixMilli() - p.producerExpirationMs
	old := func(i int) bool {
		o := segs[i]
		if i == len(segs)-1 || o.needsRecovery || !o.indexOK {
			return false
		}
		e, ok := o.seg.tidx.lastEntry()
		return !ok || e.timestamp < expireBefore
	}
	isOld := make([]bool, len(segs))
	firstFed := 0
	for i := range segs {
		if isOld[i] = old(i); isOld[i] {
			firstFed = i + 1
		}
	}

	recovered := false
	for i := 0; i < len(segs); i++ {
		seg, indexOK, needsRecovery := segs[i].seg, segs[i].indexOK, segs[i].needsRecovery
		segs[i].seg = nil // owned by l.mu.segments or closed below
		base := seg.base
		if n := len(l.mu.segments); n > 0 && base < l.mu.segments[n-1].nextOffset {
			// Overlaps its predecessor (e.g. a cut predecessor's data reappearing): drop it.
			l.logger.Warn().Int64("base_offset", base).Msg("deleting segment overlapping the previous one")
			seg.closeFiles()
			if err := removeSegmentFiles(p.dir, base); err != nil {
				closeOpened()
				return nil, err
			}
			continue
		}
		if i < firstFed && isOld[i] {
			ok, err := seg.quickLoad()
			if err != nil {
				seg.closeFiles()
				closeOpened()
				return nil, fmt.Errorf("load segment %d in %s: %w", base, p.dir, err)
			}
			if ok {
				l.mu.segments = append(l.mu.segments, seg)
				continue
			}
			l.logger.Warn().Int64("base_offset", base).Msg("index disagrees with log; scanning the segment")
			indexOK = false
		}
		mode := scanHeaders
		if needsRecovery {
			mode = scanCRC
		}
		rebuild := needsRecovery || !indexOK
		var verify *indexVerifier
		if !rebuild {
			verify = newIndexVerifier(seg)
		}
		feed := i >= firstFed
		var aborted []AbortedTxn
		valid, err := seg.scan(mode, p.cfg.IndexIntervalBytes, rebuild, func(pos int64, b protocol.Batch) {
			if verify != nil {
				verify.see(pos, b)
			}
			if !feed {
				return
			}
			if b.LastOffset() >= p.logStartOffset {
				if c, ok := l.replayLocked(b); ok && c.aborted {
					aborted = append(aborted, l.abortedTxnLocked(c))
				}
			}
			// Only new epochs are added: the checkpoint is authoritative for what it
			// has (it may hold an epoch assigned at an offset no batch carries yet);
			// batches fill in what a crash kept from being checkpointed.
			if e, ok := l.mu.epochs.latest(); !ok || (b.PartitionLeaderEpoch() > e.Epoch && b.BaseOffset() >= e.StartOffset) {
				l.mu.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset())
			}
		})
		if err != nil {
			seg.closeFiles()
			closeOpened()
			return nil, fmt.Errorf("scan segment %d in %s: %w", base, p.dir, err)
		}
		if !indexOK && !needsRecovery {
			l.logger.Warn().Int64("base_offset", base).Msg("rebuilt missing or corrupt index files")
		}
		if feed && rebuild {
			// As LogSegment.recover: a recovered (or badly indexed) segment's
			// transaction index is rebuilt from the replay; otherwise the file is
			// trusted, as the other indexes.
			if err := seg.reconcileTxnIndex(aborted); err != nil {
				seg.closeFiles()
				closeOpened()
				return nil, fmt.Errorf("rebuild transaction index of segment %d in %s: %w", base, p.dir, err)
			}
		}
		l.mu.segments = append(l.mu.segments, seg)
		if verify != nil && !verify.ok() {
			l.logger.Warn().Int64("base_offset", base).Msg("index disagrees with log; rebuilding it")
			if _, err := seg.scan(scanHeaders, p.cfg.IndexIntervalBytes, true, nil); err != nil {
				closeOpened()
				return nil, err
			}
		}
		if valid < seg.size {
			l.logger.Warn().Int64("base_offset", base).Int64("valid_bytes", valid).Int64("file_bytes", seg.size).
				Int("later_segments_deleted", len(segs)-i-1).Msg("recovery cut a corrupt or torn log tail")
			if err := seg.truncateLogFile(valid); err != nil {
				closeOpened()
				return nil, err
			}
			if err := seg.idx.truncateTo(seg.nextOffset); err != nil {
				closeOpened()
				return nil, err
			}
			if err := seg.tidx.truncateTo(seg.nextOffset); err != nil {
				closeOpened()
				return nil, err
			}
			for j := i + 1; j < len(segs); j++ {
				segs[j].seg.closeFiles()
				segs[j].seg = nil
				if err := removeSegmentFiles(p.dir, bases[j]); err != nil {
					closeOpened()
					return nil, err
				}
			}
			recovered = true
			break
		}
		if mode == scanCRC {
			recovered = true
		}
	}
	if len(l.mu.segments) == 0 {
		seg, err := createSegment(p.dir, max(p.logStartOffset, 0), p.cfg, now)
		if err != nil {
			return nil, err
		}
		l.mu.segments = append(l.mu.segments, seg)
	}
	active := l.activeLocked()
	if err := active.idx.preallocate(p.cfg.SegmentIndexBytes); err != nil {
		l.closeSegments()
		return nil, err
	}
	if err := active.tidx.preallocate(p.cfg.SegmentIndexBytes); err != nil {
		l.closeSegments()
		return nil, err
	}
	if e, ok := active.idx.lastEntry(); ok {
		active.bytesSinceLastIndexEntry = active.size - int64(e.pos)
	} else {
		active.bytesSinceLastIndexEntry = active.size
	}

	// No segment holds a descriptor until read or written (nothing can be using
	// them yet), the active one included: a partition left idle since start-up
	// costs none.
	defer func() {
		for _, s := range l.mu.segments {
			s.releaseTo(l.handles, true)
		}
	}()
	leo := l.leoLocked()
	l.mu.logStartOffset = min(max(p.logStartOffset, l.mu.segments[0].base), leo)
	l.mu.hw = min(max(p.hw, l.mu.logStartOffset), leo)
	l.mu.recoveryPoint = min(p.recoveryPoint, leo)
	epochsChanged := l.mu.epochs.truncateFromEnd(leo)
	epochsChanged = l.mu.epochs.truncateFromStart(l.mu.logStartOffset) || epochsChanged
	// A recovery does not fsync what it scanned, and so leaves the recovery point where
	// the checkpoint had it, as Kafka's LogLoader (advancing it only when a flush has
	// made the log durable: the next crash scans the same segments again, a CRC pass).
	// Fsyncing each recovered log here made a restart after kill -9 wait for a few
	// fsyncs per partition before it listened: seconds on a busy disk.
	if p.hadCleanShutdown {
		l.mu.recoveryPoint = leo
	}
	if epochsChanged || !slices.Equal(epochs, l.mu.epochs.entries) {
		if err := writeEpochCheckpoint(filepath.Join(p.dir, leaderEpochCheckpointFile), l.mu.epochs.entries); err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	l.logger.Debug().Int("segments", len(l.mu.segments)).Int64("log_start_offset", l.mu.logStartOffset).
		Int64("log_end_offset", leo).Bool("recovered", recovered).Msg("loaded log")
	return l, nil
}

// indexVerifier checks loaded (not rebuilt) index entries against the batches a scan
// walks: an offset entry must sit at the start of a batch whose last offset it names;
// a time entry must name the last offset of a batch whose maxTimestamp it holds and
// which holds the largest timestamp so far. Entries of a resident index are all
// checked, of another only the first and last (the cheap check, as Kafka's sanityCheck,
// but against the log).
type indexVerifier struct {
	base  int64
	offs  []offsetIndexEntry // increasing
	times []timeIndexEntry   // increasing
	maxTs int64
	bad   bool
}

func newIndexVerifier(s *segment) *indexVerifier {
	v := &indexVerifier{base: s.base, maxTs: -1}
	pick := func(n int, all func() []int) []int {
		if n == 0 {
			return nil
		}
		if all != nil {
			return all()
		}
		if n == 1 {
			return []int{0}
		}
		return []int{0, n - 1}
	}
	var allOffs, allTimes func() []int
	if s.idx.resident {
		allOffs = func() []int { return seq(s.idx.n) }
	}
	if s.tidx.resident {
		allTimes = func() []int { return seq(s.tidx.n) }
	}
	for _, i := range pick(s.idx.n, allOffs) {
		e := s.idx.entry(i)
		if e == nil {
			v.bad = true
			return v
		}
		v.offs = append(v.offs, offsetEntryCodec.decode(e))
	}
	for _, i := range pick(s.tidx.n, allTimes) {
		e := s.tidx.entry(i)
		if e == nil {
			v.bad = true
			return v
		}
		v.times = append(v.times, timeEntryCodec.decode(e))
	}
	return v
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// see is called for each batch of the segment in order.
func (v *indexVerifier) see(pos int64, b protocol.Batch) {
	for len(v.offs) > 0 && int64(v.offs[0].pos) <= pos {
		e := v.offs[0]
		if int64(e.pos) != pos || v.base+int64(e.relOffset) != b.LastOffset() {
			v.bad = true
		}
		v.offs = v.offs[1:]
	}
	v.maxTs = max(v.maxTs, b.MaxTimestamp())
	for len(v.times) > 0 && v.base+int64(v.times[0].relOffset) <= b.LastOffset() {
		e := v.times[0]
		if v.base+int64(e.relOffset) != b.LastOffset() || e.timestamp != b.MaxTimestamp() || e.timestamp != v.maxTs {
			v.bad = true
		}
		v.times = v.times[1:]
	}
}

// ok reports whether every checked entry matched a batch.
func (v *indexVerifier) ok() bool { return !v.bad && len(v.offs) == 0 && len(v.times) == 0 }

func (l *Log) closeSegments() {
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
	l.mu.segments = nil
}

// listSegmentFiles returns the base offsets of the ".log" files in dir, sorted, after
// removing what Kafka removes on load: ".deleted", ".cleaned" and ".tmp" leftovers, and
// index files without a log.
func listSegmentFiles(dir string, logger zerolog.Logger) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := make(map[int64]bool)
	var indexes, swaps []string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, ".tmp"):
			logger.Debug().Str("file", name).Msg("removing leftover file")
			os.Remove(filepath.Join(dir, name))
		case strings.HasSuffix(name, swapSuffix):
			swaps = append(swaps, name)
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseBase(strings.TrimSuffix(name, logSuffix)); ok {
				logs[base] = true
			}
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix), strings.HasSuffix(name, txnIndexSuffix):
			indexes = append(indexes, name)
		}
	}
	if len(swaps) > 0 {
		logger.Warn().Strs("files", swaps).Msg("finishing an interrupted swap of cleaned segments")
		if err := completeSwaps(dir, swaps, logs); err != nil {
			return nil, err
		}
	}
	for _, name := range indexes {
		stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, timeIndexSuffix), indexSuffix), txnIndexSuffix)
		if base, ok := parseBase(stem); ok && !logs[base] {
			logger.Warn().Str("file", name).Msg("removing index file without a log")
			os.Remove(filepath.Join(dir, name))
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

// parseBase parses a 20-digit segment file stem.
func parseBase(stem string) (int64, bool) {
	if len(stem) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// removeSegmentFiles unlinks a segment's files right away (recovery only: nothing can
// hold a slice of them yet).
func removeSegmentFiles(dir string, base int64) error {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentPath(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
