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

func decodeTimeEntry(b []byte) timeIndexEntry {
	return timeIndexEntry{timestamp: int64(binary.BigEndian.Uint64(b)), relOffset: int32(binary.BigEndian.Uint32(b[8:]))}
}

func encodeTimeEntries(es []timeIndexEntry) []byte {
	buf := make([]byte, 0, len(es)*timeIndexEntrySize)
	for _, e := range es {
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.timestamp))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.relOffset))
	}
	return buf
}

// timeIndex is Kafka's TimeIndex: (timestamp, offset) pairs of one segment, strictly
// increasing in timestamp and non-decreasing in offset, used by ListOffsets by
// timestamp. Not safe for concurrent use: the owning Log's mu guards it.
type timeIndex struct {
	*indexFile
	base int64
}

// openTimeIndex opens (creating if needed) path; errCorruptIndex (file still open)
// when it fails its sanity check (every entry when resident, else first and last).
func openTimeIndex(path string, base int64, maxIndexBytes int64, resident bool) (*timeIndex, error) {
	f, err := openIndexFile(path, timeIndexEntrySize, maxIndexBytes, resident)
	if f == nil {
		return nil, err
	}
	x := &timeIndex{indexFile: f, base: base}
	if err != nil {
		return x, err
	}
	check := func(i int, e timeIndexEntry, prev *timeIndexEntry) error {
		if e.relOffset < 0 {
			return fmt.Errorf("%w: %s entry %d has a negative offset", errCorruptIndex, path, i)
		}
		if prev != nil && (e.timestamp <= prev.timestamp || e.relOffset < prev.relOffset) {
			return fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
		}
		return nil
	}
	return x, checkEntries(x.indexFile, decodeTimeEntry, check)
}

// lastEntry returns the last entry, ok false when empty.
func (x *timeIndex) lastEntry() (timeIndexEntry, bool) {
	if x.n == 0 || x.last == nil {
		return timeIndexEntry{}, false
	}
	return decodeTimeEntry(x.last), true
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
	return x.append(encodeTimeEntries([]timeIndexEntry{{ts, rel}}))
}

// lookup returns the offset of the largest entry whose timestamp <= ts, or base (also
// when the file cannot be read: the caller then scans from the segment's start).
func (x *timeIndex) lookup(ts int64) int64 {
	i, ok := x.search(func(e []byte) bool { return decodeTimeEntry(e).timestamp > ts })
	if !ok || i == 0 {
		return x.base
	}
	e := x.entry(i - 1)
	if e == nil {
		return x.base
	}
	return x.base + int64(decodeTimeEntry(e).relOffset)
}

// truncateTo drops entries whose offset >= offset.
func (x *timeIndex) truncateTo(offset int64) error {
	i, ok := x.search(func(e []byte) bool { return x.base+int64(decodeTimeEntry(e).relOffset) >= offset })
	if !ok {
		i = 0
	}
	return x.truncateEntries(i)
}

// resetEntries replaces all entries (index rebuild).
func (x *timeIndex) resetEntries(es []timeIndexEntry) error {
	return x.reset(encodeTimeEntries(es))
}

// entries decodes every entry (tests and diagnostics).
func (x *timeIndex) entries() []timeIndexEntry {
	return decodeEntries(x.indexFile, decodeTimeEntry)
}
