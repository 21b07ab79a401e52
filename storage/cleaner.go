package storage

// Log compaction (cleanup.policy=compact), as Kafka's LogCleaner / Cleaner /
// LogCleanerManager:
//
//   - A log is cleanable up to its first uncleanable offset: the smallest of the active
//     segment's base, the last stable offset (so never at or above the HW) and, with
//     min.compaction.lag.ms, the base of the first segment holding a record younger than
//     that. gokafkad cleans whole segments only: a segment is cleanable when the next
//     segment starts at or below that offset.
//   - The dirty section is the cleanable part from the cleaner checkpoint (first dirty
//     offset, written to cleaner-offset-checkpoint with the other checkpoints) on. The
//     log is cleaned when dirty bytes / cleanable bytes >= min.cleanable.dirty.ratio, when
//     a dirty segment's first batch is older than max.compaction.lag.ms, or when the
//     delete horizon of a retained tombstone or marker passed.
//   - A key -> latest offset map is built over the dirty section (records of aborted
//     transactions left out), then every cleanable segment is rewritten, grouped up to
//     segment.bytes, keeping per key only its latest record (Cleaner.shouldRetainRecord).
//     Batches keep their base and last offset, leader epoch and producer fields; a batch
//     left empty is dropped unless it is the last batch of its producer (RETAIN_EMPTY,
//     so the producer's sequence survives); compressed batches are decompressed,
//     filtered and recompressed with their codec.
//   - Tombstones (null value) and markers of transactions with no data left get a delete
//     horizon (now + delete.retention.ms) in the batch's base timestamp with attribute
//     bit 0x40 the first time they are cleaned (KIP-534), and are removed by the first
//     cleaning after it. Records of aborted transactions are removed, their ABORT marker
//     once no data of the transaction is left (CleanedTransactionMetadata).
//   - A cleaned group is written to "<base>.log.cleaned" (and its three indexes), fsynced,
//     renamed to ".swap" (the .log rename is the commit point), the replaced segments
//     renamed ".deleted" (closed and unlinked file.delete.delay.ms later, so FileSlices
//     stay valid), then the ".swap" files renamed to their final names. Recovery removes
//     ".cleaned" files and finishes a swap whose .log.swap exists (completeSwaps).
//
// Not done: the offset map is a Go map (no log.cleaner.dedupe.buffer.size bound);
// records without a key are discarded by the cleaner, as Kafka (the produce path
// refuses them on compacted topics); there is one cleaner goroutine per log dir and no
// log.cleaner.io.max.bytes.per.second.

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

// Suffixes of the cleaner's temporary files. Part of the on-disk format (Kafka's
// names); do not change.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// Byte positions in a v2 batch header that the cleaner rewrites (see protocol/batch.go).
const (
	hdrAttrPos    = 21
	hdrBaseTsPos  = 27
	hdrMaxTsPos   = 35
	hdrCountPos   = 57
	maxCleanBatch = 256 << 20 // decompressed size limit of one batch while cleaning
)

// ErrCleanAborted: the log changed (truncation, retention, close) while being cleaned;
// nothing was swapped in.
var ErrCleanAborted = errors.New("storage: cleaning aborted")

// CleanStats describes one cleaning of a log.
type CleanStats struct {
	Cleaned        bool // segments were rewritten
	SegmentsBefore int
	SegmentsAfter  int
	BytesBefore    int64
	BytesAfter     int64
	// FirstUncleanableOffset bounds what was cleaned.
	FirstUncleanableOffset int64
}

// cleanSeg is a snapshot (taken under Log.mu) of an inactive segment to clean.
type cleanSeg struct {
	s          *segment
	size       int64
	nextOffset int64
	// upper is the next segment's base: every offset of s is below it.
	upper        int64
	firstBatchTs int64
	maxTs        int64
}

// Clean compacts the log now if its config says compact and there is something
// cleanable, ignoring min.cleanable.dirty.ratio (tests, and the LogManager's cleaner
// when it picked the log).
func (l *Log) Clean() (CleanStats, error) { return l.clean(true) }

// maybeClean compacts the log when Kafka's LogCleanerManager would pick it. A
// cleaning that fails for another reason than the log changing under it marks the log
// uncleanable until it is reopened, as LogCleanerManager.markPartitionUncleanable, so a
// bad batch is reported once, not every log.cleaner.backoff.ms.
func (l *Log) maybeClean() (CleanStats, error) {
	if l.uncleanable.Load() {
		return CleanStats{}, nil
	}
	st, err := l.clean(false)
	if err != nil && !errors.Is(err, ErrCleanAborted) && !errors.Is(err, ErrLogClosed) && !errors.Is(err, ErrStorage) {
		l.uncleanable.Store(true)
		l.logger.Error().Err(err).Msg("marking the log uncleanable")
	}
	return st, err
}

func (l *Log) clean(force bool) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	now := l.now()
	nowMs := now.UnixMilli()

	l.mu.RLock()
	if err := l.writableLocked(); err != nil {
		l.mu.RUnlock()
		return CleanStats{}, err
	}
	cfg := l.mu.cfg
	if !cfg.Compact {
		l.mu.RUnlock()
		return CleanStats{}, nil
	}
	gen := l.mu.truncations
	upper := l.firstUncleanableOffsetLocked(nowMs)
	var segs []cleanSeg
	for i, s := range l.mu.segments[:len(l.mu.segments)-1] {
		next := l.mu.segments[i+1].base
		if next > upper {
			break
		}
		segs = append(segs, cleanSeg{s: s, size: s.size, nextOffset: s.nextOffset, upper: next,
			firstBatchTs: s.firstBatchTimestamp, maxTs: s.maxTimestamp})
	}
	firstDirty := max(l.mu.cleanerCheckpoint, l.mu.logStartOffset)
	if len(l.mu.segments) > 0 && firstDirty > l.activeLocked().base {
		firstDirty = l.mu.logStartOffset // as Kafka: a checkpoint past the log is reset
	}
	horizon := l.mu.cleanerDeleteHorizon
	var aborted []AbortedTxn
	for _, s := range l.mu.segments {
		aborted = append(aborted, s.txn.entries...)
	}
	lastOfProducer := make(map[int64]producerLast, len(l.mu.producers.producers))
	for pid, e := range l.mu.producers.producers {
		last := producerLast{lastDataOffset: -1, epoch: e.epoch}
		if n := len(e.batches); n > 0 {
			last.lastDataOffset = e.batches[n-1].lastOffset
		}
		lastOfProducer[pid] = last
	}
	l.mu.RUnlock()

	stats := CleanStats{FirstUncleanableOffset: upper}
	if len(segs) == 0 {
		return stats, nil
	}
	var dirtyBytes, totalBytes int64
	forced := force || (horizon >= 0 && nowMs >= horizon)
	for _, c := range segs {
		totalBytes += c.size
		if c.upper > firstDirty {
			dirtyBytes += c.size
			ts := c.firstBatchTs
			if ts < 0 {
				ts = c.maxTs
			}
			if ts >= 0 && cfg.MaxCompactionLagMs > 0 && nowMs-ts > cfg.MaxCompactionLagMs {
				forced = true // max.compaction.lag.ms
			}
		}
	}
	if !forced && (dirtyBytes == 0 || totalBytes == 0 || float64(dirtyBytes)/float64(totalBytes) < cfg.MinCleanableDirtyRatio) {
		return stats, nil
	}
	slices.SortFunc(aborted, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })

	// The offset map over the dirty section, as Cleaner.buildOffsetMap. The map is not
	// bounded, so it always covers the whole dirty section: every record up to the last
	// cleanable offset is judged against it (Kafka keeps records past the map's latest
	// offset, when its dedupe buffer filled up first).
	offsets := make(map[string]int64)
	latest := segs[len(segs)-1].upper - 1
	meta := newCleanedTxnMeta(aborted)
	for _, c := range segs {
		if c.upper <= firstDirty {
			continue
		}
		err := forEachBatch(c, func(b protocol.Batch) error {
			if b.IsControl() {
				meta.onControlBatchRead(b)
				return nil
			}
			if meta.onBatchRead(b) {
				return nil // aborted: its keys do not count
			}
			recs, err := batchRecords(b)
			if err != nil {
				return err
			}
			for _, r := range recs {
				off := b.BaseOffset() + r.offsetDelta
				if r.hasKey && off >= firstDirty {
					offsets[string(r.key)] = off
				}
			}
			return nil
		})
		if err != nil {
			return stats, err
		}
	}

	// Rewrite every cleanable segment, in groups, as Cleaner.cleanSegments.
	c := &cleaner{l: l, cfg: cfg, nowMs: nowMs, offsets: offsets, latest: latest, lastOfProducer: lastOfProducer, minHorizon: -1}
	stats.SegmentsBefore = len(segs)
	for _, g := range groupSegments(segs, cfg) {
		gstats, err := c.cleanGroup(g, aborted, gen)
		if err != nil {
			return stats, err
		}
		stats.BytesBefore += gstats.BytesBefore
		stats.BytesAfter += gstats.BytesAfter
		stats.SegmentsAfter++
	}
	stats.Cleaned = true
	l.mu.Lock()
	if l.mu.truncations == gen {
		l.mu.cleanerCheckpoint = max(l.mu.cleanerCheckpoint, segs[len(segs)-1].upper)
		l.mu.cleanerDeleteHorizon = c.minHorizon
	}
	l.mu.Unlock()
	l.logger.Info().Int("segments_before", stats.SegmentsBefore).Int("segments_after", stats.SegmentsAfter).
		Int64("bytes_before", stats.BytesBefore).Int64("bytes_after", stats.BytesAfter).
		Int64("first_uncleanable_offset", upper).Msg("cleaned log")
	return stats, nil
}

// firstUncleanableOffsetLocked is LogCleanerManager.cleanableOffsets' upper bound: the
// smallest of the LSO, the active segment's base and, with min.compaction.lag.ms, the
// base of the first segment holding a record younger than the lag. Lock should be held.
func (l *Log) firstUncleanableOffsetLocked(nowMs int64) int64 {
	upper := min(l.lastStableOffsetLocked(), l.activeLocked().base)
	if lag := l.mu.cfg.MinCompactionLagMs; lag > 0 {
		for _, s := range l.mu.segments[:len(l.mu.segments)-1] {
			if s.largestTimestamp() > nowMs-lag {
				upper = min(upper, s.base)
				break
			}
		}
	}
	return upper
}

// groupSegments is Cleaner.groupSegmentsBySize: consecutive segments whose total size
// fits in segment.bytes and whose offsets fit relative to the first one's base.
func groupSegments(segs []cleanSeg, cfg LogConfig) [][]cleanSeg {
	var out [][]cleanSeg
	for len(segs) > 0 {
		n, size := 1, segs[0].size
		for n < len(segs) && size+segs[n].size <= cfg.SegmentBytes && segs[n].nextOffset-1-segs[0].s.base <= math.MaxInt32 &&
			size+segs[n].size <= math.MaxInt32 {
			size += segs[n].size
			n++
		}
		out = append(out, segs[:n])
		segs = segs[n:]
	}
	return out
}

// forEachBatch reads c's whole batches in order (without Log.mu: inactive segments are
// only removed, and a removed one's file stays open file.delete.delay.ms; a read error
// aborts the cleaning).
func forEachBatch(c cleanSeg, fn func(b protocol.Batch) error) error {
	f, err := c.s.use()
	if err != nil {
		return fmt.Errorf("%w: open segment %d: %v", ErrCleanAborted, c.s.base, err)
	}
	defer c.s.unpin()
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, c.size), 256<<10)
	var buf []byte
	for pos := int64(0); pos < c.size; {
		hdr := make([]byte, protocol.BatchHeaderSize)
		if _, err := io.ReadFull(br, hdr); err != nil {
			return fmt.Errorf("%w: read %s at %d: %v", ErrCleanAborted, f.Name(), pos, err)
		}
		size := protocol.BatchSize(hdr)
		if size < protocol.BatchHeaderSize || pos+size > c.size {
			return fmt.Errorf("%w: batch at %d of %s", ErrCorruptBatch, pos, f.Name())
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		copy(buf, hdr)
		if _, err := io.ReadFull(br, buf[protocol.BatchHeaderSize:]); err != nil {
			return fmt.Errorf("%w: read %s at %d: %v", ErrCleanAborted, f.Name(), pos, err)
		}
		if err := fn(protocol.Batch(buf)); err != nil {
			return err
		}
		pos += size
	}
	return nil
}

// rawRecord is one record of a batch, parsed as far as the cleaner needs.
type rawRecord struct {
	attrs       byte
	tsDelta     int64
	offsetDelta int64
	hasKey      bool
	key         []byte
	hasValue    bool
	// rest is the record body from offsetDelta on (kept as is when rewritten).
	rest []byte
}

// batchRecords decompresses (if needed) and parses b's records.
func batchRecords(b protocol.Batch) ([]rawRecord, error) {
	recs := b.Records()
	if b.Compression() != protocol.CodecNone {
		var err error
		if recs, err = protocol.Decompress(b.Compression(), recs, nil, maxCleanBatch); err != nil {
			return nil, fmt.Errorf("%w: decompress batch at %d: %v", ErrCorruptBatch, b.BaseOffset(), err)
		}
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: %s of a record in batch at %d", ErrCorruptBatch, what, b.BaseOffset())
	}
	out := make([]rawRecord, 0, max(b.RecordCount(), 0))
	for i := int32(0); i < b.RecordCount(); i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 1 || int64(len(recs)-n) < length {
			return nil, bad("length")
		}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		r := rawRecord{attrs: body[0]}
		p := 1
		var k int
		if r.tsDelta, k = binary.Varint(body[p:]); k <= 0 {
			return nil, bad("timestamp")
		}
		p += k
		r.rest = body[p:]
		if r.offsetDelta, k = binary.Varint(body[p:]); k <= 0 {
			return nil, bad("offset")
		}
		p += k
		keyLen, k := binary.Varint(body[p:])
		if k <= 0 || keyLen > int64(len(body)-p-k) {
			return nil, bad("key")
		}
		p += k
		if keyLen >= 0 {
			r.hasKey, r.key = true, body[p:p+int(keyLen)]
			p += int(keyLen)
		}
		valLen, k := binary.Varint(body[p:])
		if k <= 0 || valLen > int64(len(body)-p-k) {
			return nil, bad("value")
		}
		r.hasValue = valLen >= 0
		out = append(out, r)
	}
	return out, nil
}

// appendRecord encodes r with a new timestamp delta.
func appendRecord(dst []byte, r rawRecord, tsDelta int64) []byte {
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutVarint(tmp[:], tsDelta)
	dst = binary.AppendVarint(dst, int64(1+n+len(r.rest)))
	dst = append(dst, r.attrs)
	dst = append(dst, tmp[:n]...)
	return append(dst, r.rest...)
}

// hasDeleteHorizon reports whether b's base timestamp is a delete horizon (KIP-534).
func hasDeleteHorizon(b protocol.Batch) bool { return b.Attributes()&protocol.AttrDeleteHorizon != 0 }

// cleanedTxnMeta is Kafka's CleanedTransactionMetadata: which transactional batches
// belong to aborted transactions, and which markers may go.
type cleanedTxnMeta struct {
	aborted          []AbortedTxn // by FirstOffset, not yet started
	ongoingAborted   map[int64]*abortedTxnMeta
	ongoingCommitted map[int64]bool
	// index collects the aborted transactions whose ABORT marker is kept: the cleaned
	// segment's .txnindex.
	index []AbortedTxn
}

type abortedTxnMeta struct {
	txn      AbortedTxn
	observed bool // a batch of it was seen (and discarded) in this pass
}

func newCleanedTxnMeta(aborted []AbortedTxn) *cleanedTxnMeta {
	return &cleanedTxnMeta{aborted: aborted, ongoingAborted: map[int64]*abortedTxnMeta{}, ongoingCommitted: map[int64]bool{}}
}

func (m *cleanedTxnMeta) consumeUpTo(offset int64) {
	for len(m.aborted) > 0 && m.aborted[0].FirstOffset <= offset {
		a := m.aborted[0]
		m.aborted = m.aborted[1:]
		m.ongoingAborted[a.ProducerID] = &abortedTxnMeta{txn: a}
	}
}

// onBatchRead reports whether the data batch b belongs to an aborted transaction.
func (m *cleanedTxnMeta) onBatchRead(b protocol.Batch) bool {
	m.consumeUpTo(b.LastOffset())
	if !b.IsTransactional() {
		return false
	}
	if a := m.ongoingAborted[b.ProducerID()]; a != nil {
		a.observed = true
		return true
	}
	m.ongoingCommitted[b.ProducerID()] = true
	return false
}

// onControlBatchRead reports whether the marker b may be removed (once its delete
// horizon passed): an ABORT whose transaction had no data in this pass, a COMMIT whose
// transaction had none, an already emptied control batch.
func (m *cleanedTxnMeta) onControlBatchRead(b protocol.Batch) bool {
	m.consumeUpTo(b.LastOffset())
	if b.RecordCount() == 0 {
		return true
	}
	typ, err := b.ControlType()
	if err != nil {
		return false
	}
	pid := b.ProducerID()
	switch typ {
	case protocol.ControlTypeAbort:
		a := m.ongoingAborted[pid]
		delete(m.ongoingAborted, pid)
		if a != nil && a.observed {
			m.index = append(m.index, a.txn)
			return false
		}
		return true
	case protocol.ControlTypeCommit:
		had := m.ongoingCommitted[pid]
		delete(m.ongoingCommitted, pid)
		return !had
	}
	return false
}

// producerLast is what the cleaner keeps of an active producer: the last offset of its
// last data batch (-1 when it has none, e.g. only markers since its epoch began) and its
// epoch.
type producerLast struct {
	lastDataOffset int64
	epoch          int16
}

// cleaner holds one cleaning's decisions.
type cleaner struct {
	l              *Log
	cfg            LogConfig
	nowMs          int64
	offsets        map[string]int64
	latest         int64 // the last offset the map covers (records after it are kept)
	lastOfProducer map[int64]producerLast
	// minHorizon is the earliest delete horizon of a kept batch (-1 when none): the
	// log is cleaned again once it passes.
	minHorizon int64
}

// shouldRetainRecord is Cleaner.shouldRetainRecord.
func (c *cleaner) shouldRetainRecord(b protocol.Batch, r rawRecord) bool {
	off := b.BaseOffset() + r.offsetDelta
	if off > c.latest {
		return true
	}
	if !r.hasKey {
		return false // as Kafka: a compacted log keeps no record without a key
	}
	if found, ok := c.offsets[string(r.key)]; ok && off < found {
		return false
	}
	return r.hasValue || !hasDeleteHorizon(b) || c.nowMs < b.BaseTimestamp()
}

// filterBatch is MemoryRecords.filterTo for one batch with Cleaner's filter: the batch
// to write (nil: drop it).
func (c *cleaner) filterBatch(b protocol.Batch, meta *cleanedTxnMeta) (protocol.Batch, error) {
	isControl := b.IsControl()
	var canDiscard bool
	if isControl {
		canDiscard = meta.onControlBatchRead(b)
	} else {
		canDiscard = meta.onBatchRead(b)
	}
	discardRecords := canDiscard
	if isControl {
		discardRecords = canDiscard && hasDeleteHorizon(b) && c.nowMs >= b.BaseTimestamp()
	}
	// isBatchLastRecordOfProducer: the batch holding an active producer's last sequence
	// (or, when it has no data batch, its marker of the current epoch) is kept, empty if
	// need be, so the producer's state survives a rebuild from the log.
	retainEmpty := false
	if pid := b.ProducerID(); pid >= 0 {
		if last, ok := c.lastOfProducer[pid]; ok {
			if last.lastDataOffset >= 0 {
				retainEmpty = b.LastOffset() == last.lastDataOffset
			} else {
				retainEmpty = isControl && b.ProducerEpoch() == last.epoch
			}
		}
	}
	if discardRecords && !retainEmpty {
		return nil, nil // BatchRetention.DELETE
	}
	recs, err := batchRecords(b)
	if err != nil {
		return nil, err
	}
	kept := recs[:0:0]
	tombstones := false
	for _, r := range recs {
		if discardRecords || !(isControl || c.shouldRetainRecord(b, r)) {
			continue
		}
		kept = append(kept, r)
		if !isControl && !r.hasValue {
			tombstones = true
		}
	}
	setHorizon := (tombstones || (isControl && canDiscard)) && !hasDeleteHorizon(b)
	if len(kept) == 0 {
		if !retainEmpty {
			return nil, nil
		}
		return emptyBatch(b), nil
	}
	if len(kept) == len(recs) && !setHorizon {
		c.noteHorizon(b)
		return slices.Clone(b), nil
	}
	out, err := rebuildBatch(b, kept, setHorizon, c.nowMs+c.cfg.DeleteRetentionMs)
	if err != nil {
		return nil, err
	}
	c.noteHorizon(out)
	return out, nil
}

// noteHorizon remembers the earliest delete horizon still ahead among kept batches. A
// kept batch whose horizon passed is kept for another reason (a marker whose
// transaction still has a batch); time alone will not remove it, so it does not make
// the log due for cleaning (which would rewrite it every log.cleaner.backoff.ms).
func (c *cleaner) noteHorizon(b protocol.Batch) {
	if h := b.BaseTimestamp(); hasDeleteHorizon(b) && h > c.nowMs && (c.minHorizon < 0 || h < c.minHorizon) {
		c.minHorizon = h
	}
}

// emptyBatch is DefaultRecordBatch.writeEmptyHeader: b's offsets, epoch and producer
// fields with no records, uncompressed, both timestamps b's maxTimestamp.
func emptyBatch(b protocol.Batch) protocol.Batch {
	out := protocol.Batch(slices.Clone(b[:protocol.BatchHeaderSize]))
	binary.BigEndian.PutUint32(out[protocol.BatchLengthOffset:], uint32(protocol.BatchHeaderSize-protocol.BatchLogOverhead))
	attrs := uint16(b.Attributes()) &^ (protocol.AttrCompressionMask | protocol.AttrDeleteHorizon)
	binary.BigEndian.PutUint16(out[hdrAttrPos:], attrs)
	binary.BigEndian.PutUint64(out[hdrBaseTsPos:], uint64(b.MaxTimestamp()))
	binary.BigEndian.PutUint32(out[hdrCountPos:], 0)
	out.UpdateCRC()
	return out
}

// rebuildBatch is Cleaner's buildRetainedRecordsInto: the kept records re-encoded (their
// timestamp deltas relative to the new base timestamp: the delete horizon when the batch
// has one, else the first kept record's timestamp) and recompressed with b's codec; base
// offset and last offset delta kept (MemoryRecordsBuilder.overrideLastOffset), so the
// producer's sequence range survives.
func rebuildBatch(b protocol.Batch, kept []rawRecord, setHorizon bool, horizon int64) (protocol.Batch, error) {
	attrs := uint16(b.Attributes())
	oldBase := b.BaseTimestamp()
	var base int64
	switch {
	case setHorizon:
		base = horizon
		attrs |= protocol.AttrDeleteHorizon
	case hasDeleteHorizon(b):
		base = oldBase
	default:
		base = oldBase + kept[0].tsDelta
	}
	maxTs := int64(-1)
	var recs []byte
	for _, r := range kept {
		ts := oldBase + r.tsDelta
		maxTs = max(maxTs, ts)
		recs = appendRecord(recs, r, ts-base)
	}
	if attrs&protocol.AttrTimestampLogAppend != 0 {
		maxTs = b.MaxTimestamp()
	}
	if codec := b.Compression(); codec != protocol.CodecNone {
		var err error
		if recs, err = protocol.Compress(codec, recs); err != nil {
			return nil, fmt.Errorf("storage: recompress batch at %d: %w", b.BaseOffset(), err)
		}
	}
	out := protocol.Batch(make([]byte, protocol.BatchHeaderSize, protocol.BatchHeaderSize+len(recs)))
	copy(out, b[:protocol.BatchHeaderSize])
	out = append(out, recs...)
	binary.BigEndian.PutUint32(out[protocol.BatchLengthOffset:], uint32(len(out)-protocol.BatchLogOverhead))
	binary.BigEndian.PutUint16(out[hdrAttrPos:], attrs)
	binary.BigEndian.PutUint64(out[hdrBaseTsPos:], uint64(base))
	binary.BigEndian.PutUint64(out[hdrMaxTsPos:], uint64(maxTs))
	binary.BigEndian.PutUint32(out[hdrCountPos:], uint32(len(kept)))
	out.UpdateCRC()
	return out, nil
}

// groupStats are one group's sizes.
type groupStats struct{ BytesBefore, BytesAfter int64 }

// cleanGroup writes the cleaned form of group g to ".cleaned" files and swaps it in.
func (c *cleaner) cleanGroup(g []cleanSeg, aborted []AbortedTxn, gen uint64) (groupStats, error) {
	l := c.l
	base := g[0].s.base
	end := g[len(g)-1].upper
	var relevant []AbortedTxn
	for _, a := range aborted {
		if a.LastOffset >= base && a.FirstOffset < end {
			relevant = append(relevant, a)
		}
	}
	meta := newCleanedTxnMeta(relevant)
	seg, err := createCleanedSegment(l.dir, base, c.cfg, l.now())
	if err != nil {
		removeCleanedFiles(l.dir, base)
		return groupStats{}, fmt.Errorf("%w: create cleaned segment %d in %s: %v", ErrStorage, base, l.dir, err)
	}
	fail := func(err error) (groupStats, error) {
		seg.closeFiles()
		removeCleanedFiles(l.dir, base)
		return groupStats{}, err
	}
	var st groupStats
	for _, cs := range g {
		st.BytesBefore += cs.size
		err := forEachBatch(cs, func(b protocol.Batch) error {
			out, err := c.filterBatch(b, meta)
			if err != nil || out == nil {
				return err
			}
			return seg.append(out, c.cfg.IndexIntervalBytes)
		})
		if err != nil {
			return fail(err)
		}
	}
	st.BytesAfter = seg.size
	if err := seg.txn.reset(meta.index); err != nil {
		return fail(err)
	}
	if err := seg.txn.create(); err != nil { // always: the swap renames all four files
		return fail(err)
	}
	if err := seg.onBecomeInactive(); err != nil {
		return fail(err)
	}
	if err := seg.flush(); err != nil {
		return fail(err)
	}
	seg.closeFiles()
	return st, l.swapCleaned(g, gen)
}

// createCleanedSegment is createSegment for the ".cleaned" files of base.
func createCleanedSegment(dir string, base int64, cfg LogConfig, now time.Time) (*segment, error) {
	removeCleanedFiles(dir, base)
	path := segmentPath(dir, base, logSuffix) + cleanedSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, dir: dir, f: f, created: now}
	s.resetStats()
	if s.idx, err = openOffsetIndex(segmentPath(dir, base, indexSuffix)+cleanedSuffix, base, cfg.SegmentIndexBytes, 0, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	if s.tidx, err = openTimeIndex(segmentPath(dir, base, timeIndexSuffix)+cleanedSuffix, base, cfg.SegmentIndexBytes, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.txn = &txnIndex{path: segmentPath(dir, base, txnIndexSuffix) + cleanedSuffix}
	if err := s.idx.preallocate(cfg.SegmentIndexBytes); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.tidx.preallocate(cfg.SegmentIndexBytes); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// segmentSuffixes are a segment's files, the .log last (the swap's commit point).
var segmentSuffixes = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}

func removeCleanedFiles(dir string, base int64) {
	for _, suf := range segmentSuffixes {
		os.Remove(segmentPath(dir, base, suf) + cleanedSuffix)
	}
}

// swapCleaned replaces the segments of g by the cleaned segment written for them, as
// Kafka's LocalLog.replaceSegments: ".cleaned" -> ".swap" (the .log last: the commit
// point), the old segments renamed ".deleted" (unlinked file.delete.delay.ms later),
// ".swap" -> final names (the .log last), then the new segment opened. The log must not
// have been truncated since gen nor lost any segment of g; otherwise the cleaned files
// are removed and ErrCleanAborted returned.
func (l *Log) swapCleaned(g []cleanSeg, gen uint64) error {
	base := g[0].s.base
	l.mu.Lock()
	defer l.mu.Unlock()
	j := slices.Index(l.mu.segments, g[0].s)
	ok := l.writableLocked() == nil && l.mu.truncations == gen && j >= 0 && j+len(g) < len(l.mu.segments)
	for i := 0; ok && i < len(g); i++ {
		ok = l.mu.segments[j+i] == g[i].s
	}
	if !ok {
		removeCleanedFiles(l.dir, base)
		return ErrCleanAborted
	}
	for _, suf := range segmentSuffixes {
		p := segmentPath(l.dir, base, suf)
		if err := os.Rename(p+cleanedSuffix, p+swapSuffix); err != nil {
			removeCleanedFiles(l.dir, base)
			return l.failLocked("swap cleaned segment", err)
		}
	}
	if err := syncDir(l.dir); err != nil {
		return l.failLocked("swap cleaned segment", err)
	}
	old := make([]*segment, len(g))
	for i, cs := range g {
		old[i] = cs.s
		if err := cs.s.renameDeleted(); err != nil {
			return l.failLocked("swap cleaned segment", err)
		}
	}
	for _, suf := range segmentSuffixes {
		p := segmentPath(l.dir, base, suf)
		if err := os.Rename(p+swapSuffix, p); err != nil {
			return l.failLocked("swap cleaned segment", err)
		}
	}
	if err := syncDir(l.dir); err != nil {
		return l.failLocked("swap cleaned segment", err)
	}
	seg, err := l.openCleanedLocked(base)
	if err != nil {
		return l.failLocked("open cleaned segment", err)
	}
	segs := make([]*segment, 0, len(l.mu.segments)-len(g)+1)
	segs = append(segs, l.mu.segments[:j]...)
	segs = append(segs, seg)
	segs = append(segs, l.mu.segments[j+len(g):]...)
	l.mu.segments = segs
	seg.releaseTo(l.handles, true) // nobody reads it yet
	delay := time.Duration(l.mu.cfg.FileDeleteDelayMs) * time.Millisecond
	l.deleter.schedule(delay, func() {
		for _, s := range old {
			s.removeDeleted()
		}
	})
	return nil
}

// openCleanedLocked opens the segment just swapped in at base and loads its statistics
// (from its indexes when they agree with it, else by reading its headers).
func (l *Log) openCleanedLocked(base int64) (*segment, error) {
	seg, indexOK, err := openSegment(l.dir, base, l.mu.cfg, l.now(), false)
	if err != nil {
		return nil, err
	}
	if indexOK {
		if ok, err := seg.quickLoad(); err == nil && ok {
			return seg, nil
		}
	}
	if _, err := seg.scan(scanHeaders, l.mu.cfg.IndexIntervalBytes, true, nil); err != nil {
		seg.closeFiles()
		return nil, err
	}
	return seg, nil
}

// completeSwaps finishes, on open, the swaps that reached their commit point (a
// "<base>.log.swap" exists), as Kafka's LogLoader does for ".swap" files: the segments
// the swapped one replaces (base offsets in [base, its next offset), and base itself)
// are removed and the ".swap" files renamed to their final names. An index ".swap"
// without its .log ".swap" belongs to a swap that did not commit and is removed. Runs
// before the segments are listed; ".cleaned" files are removed by the caller.
func completeSwaps(dir string, swaps []string, logs map[int64]bool) error {
	committed := map[int64]bool{}
	for _, name := range swaps {
		if base, ok := parseBase(strings.TrimSuffix(name, logSuffix+swapSuffix)); ok && strings.HasSuffix(name, logSuffix+swapSuffix) {
			committed[base] = true
		}
	}
	for _, name := range swaps {
		if len(name) < 20 {
			continue
		}
		if base, ok := parseBase(name[:20]); !ok || !committed[base] {
			os.Remove(filepath.Join(dir, name))
		}
	}
	bases := make([]int64, 0, len(committed))
	for b := range committed {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, base := range bases {
		next, err := nextOffsetOfLogFile(segmentPath(dir, base, logSuffix)+swapSuffix, base)
		if err != nil {
			return err
		}
		for b := range logs {
			if b > base && b < next {
				if err := removeSegmentFiles(dir, b); err != nil {
					return err
				}
				delete(logs, b)
			}
		}
		// Index files first, the .log last, as swapCleaned; an index ".swap" already
		// renamed before the crash is in place.
		for _, suf := range segmentSuffixes {
			p := segmentPath(dir, base, suf)
			if err := os.Rename(p+swapSuffix, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		logs[base] = true
	}
	if len(bases) > 0 {
		return syncDir(dir)
	}
	return nil
}

// nextOffsetOfLogFile reads the batch headers of a segment file and returns the offset
// after its last good batch (base when it has none).
func nextOffsetOfLogFile(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	hdr := make([]byte, protocol.BatchHeaderSize)
	for pos := int64(0); pos+protocol.BatchHeaderSize <= fi.Size(); pos += protocol.BatchSize(hdr) {
		if _, err := f.ReadAt(hdr, pos); err != nil {
			return 0, err
		}
		if checkBatchHeader(hdr, pos, fi.Size(), next, base) != nil {
			break
		}
		next = protocol.Batch(hdr).LastOffset() + 1
	}
	return next, nil
}
