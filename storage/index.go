package storage

import (
	"encoding/binary"
	"fmt"
)

// Sizes of index entries. Part of the on-disk format; do not change.
const (
	offsetIndexEntrySize = 8  // int32 relative offset, int32 position
	timeIndexEntrySize   = 12 // int64 timestamp, int32 relative offset
)

// offsetIndexEntry maps the last offset of a batch to the batch's file position.
type offsetIndexEntry struct {
	relOffset int32
	pos       int32
}

func decodeOffsetEntry(b []byte) offsetIndexEntry {
	return offsetIndexEntry{relOffset: int32(binary.BigEndian.Uint32(b)), pos: int32(binary.BigEndian.Uint32(b[4:]))}
}

func encodeOffsetEntries(es []offsetIndexEntry) []byte {
	buf := make([]byte, 0, len(es)*offsetIndexEntrySize)
	for _, e := range es {
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.relOffset))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.pos))
	}
	return buf
}

// offsetIndex is Kafka's OffsetIndex: a sparse, sorted map from offsets to file
// positions of one segment. Not safe for concurrent use: the owning Log's mu guards it.
type offsetIndex struct {
	*indexFile
	base int64
}

// openOffsetIndex opens (creating if needed) path. A resident index (active segment)
// is checked entry by entry; otherwise, as Kafka's sanityCheck, its length and its
// first and last entries. An index that fails gives errCorruptIndex with the file still
// open so the caller can rebuild it.
func openOffsetIndex(path string, base int64, maxIndexBytes int64, logSize int64, resident bool) (*offsetIndex, error) {
	f, err := openIndexFile(path, offsetIndexEntrySize, maxIndexBytes, resident)
	if f == nil {
		return nil, err
	}
	x := &offsetIndex{indexFile: f, base: base}
	if err != nil {
		return x, err
	}
	check := func(i int, e offsetIndexEntry, prev *offsetIndexEntry) error {
		if e.relOffset < 0 || e.pos <= 0 || int64(e.pos) >= logSize {
			return fmt.Errorf("%w: %s entry %d out of range", errCorruptIndex, path, i)
		}
		if prev != nil && (e.relOffset <= prev.relOffset || e.pos <= prev.pos) {
			return fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
		}
		return nil
	}
	return x, checkEntries(x.indexFile, decodeOffsetEntry, check)
}

// lastEntry returns the last entry, ok false when empty.
func (x *offsetIndex) lastEntry() (offsetIndexEntry, bool) {
	if x.n == 0 || x.last == nil {
		return offsetIndexEntry{}, false
	}
	return decodeOffsetEntry(x.last), true
}

// append adds an entry for offset at pos; offsets and positions must increase.
func (x *offsetIndex) append(offset int64, pos int64) error {
	if x.isFull() {
		return nil // the caller rolls before this can matter
	}
	rel := int32(offset - x.base)
	if last, ok := x.lastEntry(); ok && (rel <= last.relOffset || int32(pos) <= last.pos) {
		return nil
	}
	return x.indexFile.append(encodeOffsetEntries([]offsetIndexEntry{{rel, int32(pos)}}))
}

// lookup returns the largest entry whose offset <= target, or (base, 0), as Kafka's
// OffsetIndex.lookup. (base, 0) is also the answer when the file cannot be read: the
// caller then scans the segment from its start, slower but still right.
func (x *offsetIndex) lookup(target int64) (offset int64, pos int64) {
	i, ok := x.search(func(e []byte) bool { return x.base+int64(decodeOffsetEntry(e).relOffset) > target })
	if !ok || i == 0 {
		return x.base, 0
	}
	e := x.entry(i - 1)
	if e == nil {
		return x.base, 0
	}
	d := decodeOffsetEntry(e)
	return x.base + int64(d.relOffset), int64(d.pos)
}

// truncateTo drops entries whose offset >= offset, as Kafka's OffsetIndex.truncateTo.
func (x *offsetIndex) truncateTo(offset int64) error {
	i, ok := x.search(func(e []byte) bool { return x.base+int64(decodeOffsetEntry(e).relOffset) >= offset })
	if !ok {
		i = 0
	}
	return x.truncateEntries(i)
}

// resetEntries replaces all entries (index rebuild).
func (x *offsetIndex) resetEntries(es []offsetIndexEntry) error {
	return x.reset(encodeOffsetEntries(es))
}

// entries decodes every entry (tests and diagnostics).
func (x *offsetIndex) entries() []offsetIndexEntry {
	return decodeEntries(x.indexFile, decodeOffsetEntry)
}
