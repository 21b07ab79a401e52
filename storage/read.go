package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/gokafkad/gokafkad/protocol"
)

// MaxTimestampQuery is ListOffsets' MAX_TIMESTAMP (-3): the record with the largest
// timestamp.
const MaxTimestampQuery = -3

// Read returns whole batches starting at the batch containing startOffset, stopping
// before maxOffset (exclusive: the HW for consumers, the LEO for followers) and within
// maxBytes (at least one batch when minOneMessage). ErrOffsetOutOfRange when startOffset
// < LogStartOffset or > LEO. startOffset == maxOffset gives an empty result.
//
// The slice covers one segment, as Kafka's LogSegment.read; an empty result has Len 0
// and a nil File. A batch is included only when its last offset < maxOffset, and only
// whole batches are included, so Len is 0 when the first batch exceeds maxBytes and
// minOneMessage is false.
//
// File is the segment's descriptor, owned by the log: callers only read it (ReadAt,
// sendfile) and never close it.
// The slice is read later without the log's lock. Segments deleted meanwhile (retention,
// truncation) keep their file open for file.delete.delay.ms, so the bytes stay valid.
// Truncating the active segment cuts its file in place: a slice over the cut bytes then
// reads short (sendfile returns fewer bytes, which the sender must treat as an error and
// close the connection, as a client retries), and bytes appended afterwards at the same
// positions may differ from the ones the slice was made for. Followers truncate only
// below data nobody may consume (above the HW), and consumers never read past the HW,
// so only a follower fetching from a follower-to-be could see this; Kafka has the same
// window (FileRecords slices share the channel).
func (l *Log) Read(startOffset int64, maxBytes int32, maxOffset int64, minOneMessage bool) (ReadResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return ReadResult{}, ErrLogClosed
	}
	leo := l.leoLocked()
	if startOffset < l.mu.logStartOffset || startOffset > leo {
		return ReadResult{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, startOffset, l.mu.logStartOffset, leo)
	}
	maxOffset = min(maxOffset, leo)
	empty := ReadResult{FirstOffset: startOffset, NextOffset: startOffset}
	if startOffset >= maxOffset || maxBytes <= 0 && !minOneMessage {
		// Nothing can be returned: no segment is touched (a fetch whose response is
		// full asks every further partition for 0 bytes; opening each one's file
		// would cost a descriptor for nothing, issue 15).
		return empty, nil
	}
	hdr := make([]byte, protocol.BatchHeaderSize)
	for i := max(l.segmentIndexLocked(startOffset), 0); i < len(l.mu.segments); i++ {
		seg := l.mu.segments[i]
		pos, found, err := seg.translateOffset(startOffset, hdr)
		if err != nil {
			return ReadResult{}, fmt.Errorf("read %s at %d: %w", l.dir, startOffset, err)
		}
		if !found {
			continue // as Kafka: the offset fell in a gap at the segment's end
		}
		first := protocol.Batch(hdr).BaseOffset()
		// Where maxOffset's batch starts bounds the slice; when everything up to it fits
		// in maxBytes no header needs reading (the common case of a caught-up reader).
		limit := seg.size
		if maxOffset < seg.nextOffset {
			p, found, err := seg.translateOffset(maxOffset, make([]byte, protocol.BatchHeaderSize))
			if err != nil {
				return ReadResult{}, fmt.Errorf("read %s at %d: %w", l.dir, startOffset, err)
			}
			if found {
				limit = p
			}
		}
		if limit-pos <= int64(maxBytes) {
			if limit <= pos {
				return ReadResult{FirstOffset: first, NextOffset: first}, nil
			}
			next := min(maxOffset, seg.nextOffset)
			f, err := seg.sliceFile()
			if err != nil {
				return ReadResult{}, fmt.Errorf("read %s at %d: %w", l.dir, startOffset, err)
			}
			return ReadResult{Slice: FileSlice{File: f, Pos: pos, Len: limit - pos}, FirstOffset: first, NextOffset: next}, nil
		}
		next := first
		end := pos
		for end < limit {
			b, err := seg.readHeader(end, hdr)
			if err != nil {
				return ReadResult{}, fmt.Errorf("read %s at %d: %w", l.dir, startOffset, err)
			}
			if b.LastOffset() >= maxOffset {
				break
			}
			size := protocol.BatchSize(b)
			if end-pos+size > int64(maxBytes) && !(end == pos && minOneMessage) {
				break
			}
			end += size
			next = b.LastOffset() + 1
		}
		if end == pos {
			return ReadResult{FirstOffset: first, NextOffset: first}, nil
		}
		f, err := seg.sliceFile()
		if err != nil {
			return ReadResult{}, fmt.Errorf("read %s at %d: %w", l.dir, startOffset, err)
		}
		return ReadResult{Slice: FileSlice{File: f, Pos: pos, Len: end - pos}, FirstOffset: first, NextOffset: next}, nil
	}
	return empty, nil
}

// FetchOffsetByTimestamp answers ListOffsets for ts >= 0: the first offset whose
// timestamp >= ts, with that timestamp and its batch's leader epoch; ok false when none.
// ts == -3 (MAX_TIMESTAMP) gives the record with the largest timestamp.
//
// As Kafka's UnifiedLog.fetchOffsetByTimestamp: the first segment whose largest
// timestamp >= ts, the time index to start near it, then batch headers, then the records
// of the first batch whose maxTimestamp >= ts. Records of compressed batches are only
// looked at when the LogManager was given a Decompress function; without one the batch's
// first offset (not below the log start offset) and its maxTimestamp are returned.
func (l *Log) FetchOffsetByTimestamp(ts int64) (TimestampOffset, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return TimestampOffset{}, false, ErrLogClosed
	}
	if ts == MaxTimestampQuery {
		return l.fetchMaxTimestampLocked()
	}
	if ts < 0 {
		return TimestampOffset{}, false, fmt.Errorf("%w: timestamp %d", ErrInvalidOffset, ts)
	}
	lso := l.mu.logStartOffset
	hdr := make([]byte, protocol.BatchHeaderSize)
	for _, seg := range l.mu.segments {
		if seg.maxTimestamp < ts || seg.nextOffset <= lso {
			continue
		}
		_, pos := seg.idx.lookup(max(seg.tidx.lookup(ts), lso))
		for ; pos < seg.size; pos += protocol.BatchSize(hdr) {
			b, err := seg.readHeader(pos, hdr)
			if err != nil {
				return TimestampOffset{}, false, err
			}
			if b.LastOffset() < lso || b.MaxTimestamp() < ts {
				continue
			}
			epoch := b.PartitionLeaderEpoch()
			batch, err := l.readBatch(seg, pos, b)
			if err != nil {
				return TimestampOffset{}, false, err
			}
			var out TimestampOffset
			found := false
			err = l.forEachRecord(batch, func(offset, rts int64) bool {
				if rts >= ts && offset >= lso {
					out, found = TimestampOffset{Timestamp: rts, Offset: offset, LeaderEpoch: epoch}, true
					return false
				}
				return true
			})
			if err != nil {
				return TimestampOffset{}, false, err
			}
			if found {
				return out, true, nil
			}
		}
	}
	return TimestampOffset{}, false, nil
}

// fetchMaxTimestampLocked answers MAX_TIMESTAMP: the first segment holding the largest
// timestamp, the batch holding its offset, the first record with that timestamp.
// Lock should be held.
func (l *Log) fetchMaxTimestampLocked() (TimestampOffset, bool, error) {
	var best *segment
	for _, s := range l.mu.segments {
		if s.maxTimestamp >= 0 && s.nextOffset > l.mu.logStartOffset && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		return TimestampOffset{}, false, nil
	}
	hdr := make([]byte, protocol.BatchHeaderSize)
	pos, found, err := best.translateOffset(best.offsetOfMaxTimestamp, hdr)
	if err != nil || !found {
		return TimestampOffset{}, false, err
	}
	b := protocol.Batch(hdr)
	epoch := b.PartitionLeaderEpoch()
	batch, err := l.readBatch(best, pos, b)
	if err != nil {
		return TimestampOffset{}, false, err
	}
	var out TimestampOffset
	ok := false
	err = l.forEachRecord(batch, func(offset, rts int64) bool {
		if rts == best.maxTimestamp {
			out, ok = TimestampOffset{Timestamp: rts, Offset: offset, LeaderEpoch: epoch}, true
			return false
		}
		return true
	})
	return out, ok, err
}

// readBatch reads the whole batch whose header hdr was read at pos.
func (l *Log) readBatch(seg *segment, pos int64, hdr protocol.Batch) (protocol.Batch, error) {
	buf := make([]byte, protocol.BatchSize(hdr))
	f, err := seg.use()
	if err != nil {
		return nil, err
	}
	defer seg.unpin()
	if _, err := f.ReadAt(buf, pos); err != nil {
		return nil, err
	}
	return buf, nil
}

// forEachRecord calls fn with each record's offset and timestamp until fn returns false.
// For LogAppendTime batches every record has the batch's maxTimestamp. A compressed batch
// without a decompressor is reported as one record at its base offset with its
// maxTimestamp (see FetchOffsetByTimestamp).
func (l *Log) forEachRecord(b protocol.Batch, fn func(offset, ts int64) bool) error {
	recs := b.Records()
	if b.Compression() != protocol.CodecNone {
		if l.decompress == nil {
			fn(b.BaseOffset(), b.MaxTimestamp())
			return nil
		}
		var err error
		if recs, err = l.decompress(b.Compression(), recs); err != nil {
			return fmt.Errorf("%w: decompress batch at %d: %v", ErrCorruptBatch, b.BaseOffset(), err)
		}
	}
	logAppend := b.Attributes()&protocol.AttrTimestampLogAppend != 0
	for i := int32(0); i < b.RecordCount() && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return fmt.Errorf("%w: record %d of batch at %d", ErrCorruptBatch, i, b.BaseOffset())
		}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(body) < 1 {
			return fmt.Errorf("%w: empty record in batch at %d", ErrCorruptBatch, b.BaseOffset())
		}
		tsDelta, n1 := binary.Varint(body[1:])
		if n1 <= 0 {
			return fmt.Errorf("%w: record timestamp in batch at %d", ErrCorruptBatch, b.BaseOffset())
		}
		offDelta, n2 := binary.Varint(body[1+n1:])
		if n2 <= 0 {
			return fmt.Errorf("%w: record offset in batch at %d", ErrCorruptBatch, b.BaseOffset())
		}
		ts := b.BaseTimestamp() + tsDelta
		if logAppend {
			ts = b.MaxTimestamp()
		}
		if !fn(b.BaseOffset()+offDelta, ts) {
			return nil
		}
	}
	return nil
}
