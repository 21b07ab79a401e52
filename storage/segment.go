package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

// Segment file suffixes. Part of the on-disk format; do not change.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
)

// minBatchLength is the smallest batchLength field a v2 batch can carry (header
// without baseOffset and batchLength, no records).
const minBatchLength = protocol.BatchHeaderSize - protocol.BatchLogOverhead

// segmentPath is "<dir>/<20-digit base offset><suffix>", Kafka's file naming.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is Kafka's LogSegment: one .log file and its two indexes. Fields are guarded
// by the owning Log's mu (written under the write lock, read under either), except
// that the files themselves may be read through FileSlices without any lock.
type segment struct {
	base int64
	dir  string
	// fmu guards f, pins, handles, closed and deleted: a segment's descriptor is
	// closed and reopened by its handleCache without the Log's lock.
	fmu sync.Mutex
	// f is the segment's one descriptor (read-write), also what FileSlices hand out:
	// readers only read through it (a second, read-only descriptor per segment would
	// double the descriptors a broker holds, issue 15). It is nil while its
	// handleCache has closed it, the active segment's too (a partition left idle):
	// get it with use, appends included.
	f *os.File
	// pins counts the callers between use and its unpin.
	pins int
	// handles manages f (nil for a Log without a cache: always open).
	handles *handleCache
	// slot is s's place in handles' open set plus one (guarded by handles.mu).
	slot int
	// used is set by every use and cleared by the eviction's clock hand passing.
	used atomic.Bool
	// lastSliced is when f was last handed out in a FileSlice (unix nanoseconds,
	// handles' clock), sliceSeq that slice's number (handleCache.slices).
	lastSliced, sliceSeq atomic.Int64
	// closed: closeFiles ran; deleted: the files carry the ".deleted" suffix.
	closed, deleted bool
	idx             *offsetIndex
	tidx            *timeIndex
	// txn is the aborted-transaction index (.txnindex).
	txn *txnIndex
	// size is the number of valid bytes in log. Invariant: every byte below size is a
	// whole batch; bytes at or past size are not part of the log.
	size int64
	// nextOffset is the last offset in the segment + 1, or base when empty.
	nextOffset int64
	// maxTimestamp is the largest batch maxTimestamp in the segment (-1 when none);
	// offsetOfMaxTimestamp the last offset of the batch that carried it.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// firstBatchTimestamp is the first batch's maxTimestamp (-1 when empty or unknown):
	// segment.ms counts from it, as Kafka's LogSegment.rollingBasedTimestamp.
	firstBatchTimestamp int64
	// created is when this process created or opened the segment (segment.ms fallback).
	created time.Time
	// bytesSinceLastIndexEntry counts log bytes appended since the last index entry.
	bytesSinceLastIndexEntry int64
}

func (s *segment) resetStats() {
	s.nextOffset = s.base
	s.maxTimestamp = -1
	s.offsetOfMaxTimestamp = -1
	s.firstBatchTimestamp = -1
	s.bytesSinceLastIndexEntry = 0
}

// createSegment makes a new, empty active segment at base. An existing non-empty .log
// with that name is an error (Kafka refuses to roll onto an existing segment).
func createSegment(dir string, base int64, cfg LogConfig, now time.Time) (*segment, error) {
	path := segmentPath(dir, base, logSuffix)
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("segment %s already exists with %d bytes", path, fi.Size())
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentPath(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, dir: dir, f: f, created: now}
	s.resetStats()
	if s.idx, err = openOffsetIndex(segmentPath(dir, base, indexSuffix), base, cfg.SegmentIndexBytes, 0, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	if s.tidx, err = openTimeIndex(segmentPath(dir, base, timeIndexSuffix), base, cfg.SegmentIndexBytes, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.txn = &txnIndex{path: segmentPath(dir, base, txnIndexSuffix)}
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

// openSegment opens an existing segment's files. indexOK is false when an index was
// missing or failed its sanity check (the caller rebuilds it with scan). resident loads
// the indexes into memory (the segment that will be active).
func openSegment(dir string, base int64, cfg LogConfig, now time.Time, resident bool) (s *segment, indexOK bool, err error) {
	f, err := os.OpenFile(segmentPath(dir, base, logSuffix), os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	s = &segment{base: base, dir: dir, f: f, size: fi.Size(), created: now}
	s.resetStats()
	indexOK = true
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(segmentPath(dir, base, suf)); err != nil {
			indexOK = false
		}
	}
	s.idx, err = openOffsetIndex(segmentPath(dir, base, indexSuffix), base, cfg.SegmentIndexBytes, s.size, resident)
	if errors.Is(err, errCorruptIndex) {
		indexOK = false
	} else if err != nil {
		s.closeFiles()
		return nil, false, err
	}
	s.tidx, err = openTimeIndex(segmentPath(dir, base, timeIndexSuffix), base, cfg.SegmentIndexBytes, resident)
	if errors.Is(err, errCorruptIndex) {
		indexOK = false
	} else if err != nil {
		s.closeFiles()
		return nil, false, err
	}
	s.txn, err = openTxnIndex(segmentPath(dir, base, txnIndexSuffix))
	if errors.Is(err, errCorruptIndex) {
		// Rebuilt from the batches by the caller's scan (indexOK false forces one).
		s.txn, indexOK = &txnIndex{path: segmentPath(dir, base, txnIndexSuffix)}, false
	} else if err != nil {
		s.closeFiles()
		return nil, false, err
	}
	return s, indexOK, nil
}

// checkBatchHeader is the header sanity check of recovery: magic 2, a batchLength that
// holds at least a header and fits in the file, offsets not going backwards and
// expressible relative to the segment base.
func checkBatchHeader(h protocol.Batch, pos, fileSize, minOffset, segBase int64) error {
	if h.Magic() != 2 {
		return protocol.ErrBadMagic
	}
	if h.BatchLength() < minBatchLength || pos+protocol.BatchSize(h) > fileSize {
		return protocol.ErrBadBatchSize
	}
	if h.LastOffsetDelta() < 0 || h.BaseOffset() < minOffset || h.BaseOffset() > math.MaxInt64-int64(h.LastOffsetDelta()) ||
		h.LastOffset()-segBase > math.MaxInt32 {
		return ErrInvalidOffset
	}
	return nil
}

// scanMode chooses how much of each batch scan checks.
type scanMode int

const (
	scanHeaders scanMode = iota // read and sanity-check headers only (seek by batch length)
	scanCRC                     // read whole batches and check each CRC (recovery)
)

// scan walks the whole segment from position 0, recomputing nextOffset, the max
// timestamp and, when rebuild is set, the index entries (as append would place them),
// calling onBatch for each good batch. It stops at the first batch that is torn or
// fails the checks of mode and returns its position as validBytes (the file length when
// every batch is good); the caller decides whether to cut there. err is an I/O error.
func (s *segment) scan(mode scanMode, indexInterval int64, rebuild bool, onBatch func(pos int64, b protocol.Batch)) (validBytes int64, err error) {
	f, err := s.use()
	if err != nil {
		return 0, err
	}
	defer s.unpin()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	fileSize := fi.Size()
	s.resetStats()
	var (
		entries  []offsetIndexEntry
		tentries []timeIndexEntry
		pos      int64
		hdr      = make([]byte, protocol.BatchHeaderSize)
		buf      []byte
		br       *bufio.Reader
	)
	if mode == scanCRC {
		br = bufio.NewReaderSize(io.NewSectionReader(f, 0, fileSize), 256<<10)
	}
	for pos+protocol.BatchHeaderSize <= fileSize {
		var b protocol.Batch
		if mode == scanCRC {
			if _, err := io.ReadFull(br, hdr); err != nil {
				return 0, err
			}
			if err := checkBatchHeader(hdr, pos, fileSize, s.nextOffset, s.base); err != nil {
				break
			}
			size := protocol.BatchSize(hdr)
			if int64(cap(buf)) < size {
				buf = make([]byte, size)
			}
			buf = buf[:size]
			copy(buf, hdr)
			if _, err := io.ReadFull(br, buf[protocol.BatchHeaderSize:]); err != nil {
				return 0, err
			}
			b = buf
			if b.CheckCRC() != nil {
				break
			}
		} else {
			if _, err := f.ReadAt(hdr, pos); err != nil {
				return 0, err
			}
			if err := checkBatchHeader(hdr, pos, fileSize, s.nextOffset, s.base); err != nil {
				break
			}
			b = hdr
			if b.IsControl() {
				// Whole control batches: the marker type is in the record (onBatch
				// replays transactions from it). They are tiny.
				size := protocol.BatchSize(hdr)
				if int64(cap(buf)) < size {
					buf = make([]byte, size)
				}
				buf = buf[:size]
				if _, err := f.ReadAt(buf, pos); err != nil {
					return 0, err
				}
				b = buf
			}
		}
		size := protocol.BatchSize(b)
		if s.firstBatchTimestamp == -1 && pos == 0 {
			s.firstBatchTimestamp = b.MaxTimestamp()
		}
		if b.MaxTimestamp() > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = b.MaxTimestamp(), b.LastOffset()
		}
		if s.bytesSinceLastIndexEntry > indexInterval {
			entries = append(entries, offsetIndexEntry{relOffset: int32(b.LastOffset() - s.base), pos: int32(pos)})
			if n := len(tentries); s.maxTimestamp >= 0 && (n == 0 || tentries[n-1].timestamp < s.maxTimestamp) {
				tentries = append(tentries, timeIndexEntry{timestamp: s.maxTimestamp, relOffset: int32(s.offsetOfMaxTimestamp - s.base)})
			}
			s.bytesSinceLastIndexEntry = 0
		}
		s.bytesSinceLastIndexEntry += size
		s.nextOffset = b.LastOffset() + 1
		if onBatch != nil {
			onBatch(pos, b)
		}
		pos += size
	}
	if rebuild {
		// As Kafka's LogSegment.recover: the largest timestamp always gets an entry, as a
		// normally closed segment has (quickLoad and retention rely on it).
		if n := len(tentries); s.maxTimestamp >= 0 && (n == 0 || tentries[n-1].timestamp < s.maxTimestamp) {
			tentries = append(tentries, timeIndexEntry{timestamp: s.maxTimestamp, relOffset: int32(s.offsetOfMaxTimestamp - s.base)})
		}
		if err := s.idx.resetEntries(entries); err != nil {
			return 0, err
		}
		if err := s.tidx.resetEntries(tentries); err != nil {
			return 0, err
		}
	}
	return pos, nil
}

// truncateLogFile cuts the .log file to n bytes.
func (s *segment) truncateLogFile(n int64) error {
	f, err := s.use()
	if err != nil {
		return err
	}
	defer s.unpin()
	if err := f.Truncate(n); err != nil {
		return err
	}
	s.size = n
	return nil
}

// append writes one batch (offsets already assigned) at the end of the segment and adds
// index entries every index.interval.bytes, as Kafka's LogSegment.append.
func (s *segment) append(b protocol.Batch, indexInterval int64) error {
	pos := s.size
	f, err := s.use() // reopened when the partition was idle long enough to lose it
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, pos)
	s.unpin()
	if err != nil {
		return err
	}
	s.size += int64(len(b))
	if pos == 0 {
		s.firstBatchTimestamp = b.MaxTimestamp()
	}
	if b.MaxTimestamp() > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = b.MaxTimestamp(), b.LastOffset()
	}
	if s.bytesSinceLastIndexEntry > indexInterval {
		if err := s.idx.append(b.LastOffset(), pos); err != nil {
			return err
		}
		if err := s.tidx.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, false); err != nil {
			return err
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int64(len(b))
	s.nextOffset = b.LastOffset() + 1
	return nil
}

// readHeader reads the batch header at pos into hdr (len BatchHeaderSize).
func (s *segment) readHeader(pos int64, hdr []byte) (protocol.Batch, error) {
	if pos+protocol.BatchHeaderSize > s.size {
		return nil, fmt.Errorf("%w: header at %d past segment end %d", ErrCorruptBatch, pos, s.size)
	}
	f, err := s.use()
	if err != nil {
		return nil, err
	}
	defer s.unpin()
	if _, err := f.ReadAt(hdr, pos); err != nil {
		return nil, err
	}
	b := protocol.Batch(hdr)
	if protocol.BatchSize(b) < protocol.BatchHeaderSize || pos+protocol.BatchSize(b) > s.size {
		return nil, fmt.Errorf("%w: batch at %d of %s", ErrCorruptBatch, pos, f.Name())
	}
	return b, nil
}

// translateOffset finds the first batch whose last offset >= target, starting from the
// offset index, as Kafka's LogSegment.translateOffset. found is false when the segment
// holds no such batch. hdr receives the batch header.
func (s *segment) translateOffset(target int64, hdr []byte) (pos int64, found bool, err error) {
	_, pos = s.idx.lookup(target)
	for pos < s.size {
		b, err := s.readHeader(pos, hdr)
		if err != nil {
			return 0, false, err
		}
		if b.LastOffset() >= target {
			return pos, true, nil
		}
		pos += protocol.BatchSize(b)
	}
	return s.size, false, nil
}

// truncateTo removes every batch whose last offset >= offset (so a batch holding offset
// goes whole), as Kafka's LogSegment.truncateTo, and recomputes the segment's stats.
// Returns the number of bytes removed.
func (s *segment) truncateTo(offset int64, now time.Time) (int64, error) {
	hdr := make([]byte, protocol.BatchHeaderSize)
	pos, found, err := s.translateOffset(offset, hdr)
	if err != nil || !found {
		return 0, err
	}
	removed := s.size - pos
	if err := s.idx.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.tidx.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.txn.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.truncateLogFile(pos); err != nil {
		return 0, err
	}
	// Recompute nextOffset and timestamps from what is left (headers only).
	if _, err := s.scan(scanHeaders, math.MaxInt64, false, nil); err != nil {
		return 0, err
	}
	if e, ok := s.idx.lastEntry(); ok {
		s.bytesSinceLastIndexEntry = s.size - int64(e.pos)
	}
	if s.size == 0 {
		s.created = now // as Kafka: an emptied segment's segment.ms clock restarts
	}
	return removed, nil
}

// largestTimestamp is the segment's largest timestamp, or its file's modification time
// when no batch carries one, as Kafka's LogSegment.largestTimestamp (retention.ms).
func (s *segment) largestTimestamp() int64 {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp
	}
	fi, err := os.Stat(segmentPath(s.dir, s.base, logSuffix))
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixMilli()
}

// onBecomeInactive runs when the segment stops being the active one: the final time
// index entry and the indexes trimmed to size, as Kafka's
// LogSegment.onBecomeInactiveSegment. The fsync is the caller's (Log.flushUpTo).
func (s *segment) onBecomeInactive() error {
	if err := s.tidx.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, true); err != nil {
		return err
	}
	if err := s.idx.trim(); err != nil {
		return err
	}
	return s.tidx.trim()
}

// flush fsyncs the log and the indexes.
func (s *segment) flush() error {
	f, err := s.use()
	if err != nil {
		return err
	}
	err = f.Sync()
	s.unpin()
	if err != nil {
		return err
	}
	if err := s.idx.sync(); err != nil {
		return err
	}
	if err := s.txn.sync(); err != nil {
		return err
	}
	return s.tidx.sync()
}

// renameDeleted adds the ".deleted" suffix to the segment's files; open descriptors stay
// valid, so FileSlices already handed out keep working.
func (s *segment) renameDeleted() error {
	var first error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		p := segmentPath(s.dir, s.base, suf)
		if err := os.Rename(p, p+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	s.fmu.Lock()
	s.deleted = true
	s.fmu.Unlock()
	return first
}

// removeDeleted closes the files and unlinks the ".deleted" names.
func (s *segment) removeDeleted() {
	s.closeFiles()
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		os.Remove(segmentPath(s.dir, s.base, suf) + deletedSuffix)
	}
}

func (s *segment) closeFiles() {
	if s.idx != nil {
		s.idx.close()
	}
	if s.tidx != nil {
		s.tidx.close()
	}
	if s.txn != nil {
		s.txn.close()
	}
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.handles != nil {
		s.handles.removed(s)
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.closed = true
}

// quickLoad loads an inactive, trusted segment from its indexes instead of reading every
// batch header, as Kafka does for segments it does not recover: the largest timestamp
// from the time index's last entry (the final entry written when the segment was rolled)
// and the next offset from the headers after the offset index's last entry. The first
// and last entries of both indexes are checked against the batches they name. ok is false
// when anything disagrees; the caller then scans the whole segment.
func (s *segment) quickLoad() (ok bool, err error) {
	f, err := s.use()
	if err != nil {
		return false, err
	}
	defer s.unpin()
	s.resetStats()
	hdr := make([]byte, protocol.BatchHeaderSize)
	batchAt := func(pos int64) (protocol.Batch, bool, error) {
		if pos < 0 || pos+protocol.BatchHeaderSize > s.size {
			return nil, false, nil
		}
		if _, err := f.ReadAt(hdr, pos); err != nil {
			return nil, false, err
		}
		b := protocol.Batch(hdr)
		return b, checkBatchHeader(b, pos, s.size, s.base, s.base) == nil, nil
	}
	pos := int64(0)
	if s.idx.n > 0 {
		first := s.idx.entry(0)
		last, _ := s.idx.lastEntry()
		if first == nil {
			return false, nil
		}
		for _, e := range []offsetIndexEntry{offsetEntryCodec.decode(first), last} {
			b, good, err := batchAt(int64(e.pos))
			if err != nil || !good || b.LastOffset() != s.base+int64(e.relOffset) {
				return false, err
			}
		}
		pos = int64(last.pos)
	}
	for pos < s.size {
		b, good, err := batchAt(pos)
		if err != nil || !good || b.BaseOffset() < s.nextOffset {
			return false, err
		}
		if b.MaxTimestamp() > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = b.MaxTimestamp(), b.LastOffset()
		}
		s.nextOffset = b.LastOffset() + 1
		pos += protocol.BatchSize(b)
	}
	if s.tidx.n > 0 {
		first := s.tidx.entry(0)
		last, _ := s.tidx.lastEntry()
		if first == nil {
			return false, nil
		}
		for _, e := range []timeIndexEntry{timeEntryCodec.decode(first), last} {
			target := s.base + int64(e.relOffset)
			_, found, err := s.translateOffset(target, hdr)
			if err != nil || !found {
				return false, nil
			}
			b := protocol.Batch(hdr)
			if b.LastOffset() != target || b.MaxTimestamp() != e.timestamp {
				return false, nil
			}
		}
		if last.timestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = last.timestamp, s.base+int64(last.relOffset)
		}
	}
	return true, nil
}
