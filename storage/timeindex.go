package storage

import (
	"encoding/binary"
	"fmt"
)

// timeIndexEntry: the largest timestamp seen up to a batch, and the last offset of the
// batch that carried it.
type timeIndexEntry struct {
	timestamp int64
	relOffset int32
}

var timeEntryCodec = &entryCodec[timeIndexEntry]{
	size: timeIndexEntrySize,
	decode: func(b []byte) timeIndexEntry {
		return timeIndexEntry{timestamp: int64(binary.BigEndian.Uint64(b)), relOffset: int32(binary.BigEndian.Uint32(b[8:]))}
	},
	appendTo: func(b []byte, e timeIndexEntry) []byte {
		b = binary.BigEndian.AppendUint64(b, uint64(e.timestamp))
		return binary.BigEndian.AppendUint32(b, uint32(e.relOffset))
	},
	relOffset: func(e timeIndexEntry) int32 { return e.relOffset },
}

// timeIndex is Kafka's TimeIndex: (timestamp, offset) pairs of one segment, strictly
// increasing in timestamp and non-decreasing in offset, used by ListOffsets by
// timestamp. Not safe for concurrent use: the owning Log's mu guards it.
type timeIndex struct {
	entryIndex[timeIndexEntry]
}

// openTimeIndex opens (creating if needed) path; errCorruptIndex (file still open)
// when it fails its sanity check (every entry when resident, else first and last).
func openTimeIndex(path string, base int64, maxIndexBytes int64, resident bool) (*timeIndex, error) {
	check := func(i int, e timeIndexEntry, prev *timeIndexEntry) error {
		if e.relOffset < 0 {
			return fmt.Errorf("%w: %s entry %d has a negative offset", errCorruptIndex, path, i)
		}
		if prev != nil && (e.timestamp <= prev.timestamp || e.relOffset < prev.relOffset) {
			return fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
		}
		return nil
	}
	x, err := openEntryIndex(path, timeEntryCodec, base, maxIndexBytes, resident, check)
	if x.indexFile == nil {
		return nil, err
	}
	return &timeIndex{x}, err
}

// maybeAppend adds (ts, offset) when ts is larger than the last entry's timestamp, as
// Kafka's TimeIndex.maybeAppend. skipFullCheck lets the final entry of a segment that is
// becoming inactive go in even when the index is full (the file is trimmed right after).
func (x *timeIndex) maybeAppend(ts int64, offset int64, skipFullCheck bool) error {
	if ts < 0 {
		return nil
	}
	if !skipFullCheck && x.isFull() {
		return nil
	}
	rel := int32(offset - x.base)
	if last, ok := x.lastEntry(); ok && (ts <= last.timestamp || rel < last.relOffset) {
		return nil
	}
	return x.appendEntry(timeIndexEntry{ts, rel})
}

// lookup returns the offset of the largest entry whose timestamp <= ts, or base (also
// when the file cannot be read: the caller then scans from the segment's start).
func (x *timeIndex) lookup(ts int64) int64 {
	e, ok := x.floor(func(e timeIndexEntry) bool { return e.timestamp > ts })
	if !ok {
		return x.base
	}
	return x.base + int64(e.relOffset)
}
