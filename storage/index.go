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

var offsetEntryCodec = &entryCodec[offsetIndexEntry]{
	size: offsetIndexEntrySize,
	decode: func(b []byte) offsetIndexEntry {
		return offsetIndexEntry{relOffset: int32(binary.BigEndian.Uint32(b)), pos: int32(binary.BigEndian.Uint32(b[4:]))}
	},
	appendTo: func(b []byte, e offsetIndexEntry) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(e.relOffset))
		return binary.BigEndian.AppendUint32(b, uint32(e.pos))
	},
	relOffset: func(e offsetIndexEntry) int32 { return e.relOffset },
}

// offsetIndex is Kafka's OffsetIndex: a sparse, sorted map from offsets to file
// positions of one segment. Not safe for concurrent use: the owning Log's mu guards it.
type offsetIndex struct {
	entryIndex[offsetIndexEntry]
}

// openOffsetIndex opens (creating if needed) path. A resident index (active segment)
// is checked entry by entry; otherwise, as Kafka's sanityCheck, its length and its
// first and last entries. An index that fails gives errCorruptIndex with the file still
// open so the caller can rebuild it.
func openOffsetIndex(path string, base int64, maxIndexBytes int64, logSize int64, resident bool) (*offsetIndex, error) {
	check := func(i int, e offsetIndexEntry, prev *offsetIndexEntry) error {
		if e.relOffset < 0 || e.pos <= 0 || int64(e.pos) >= logSize {
			return fmt.Errorf("%w: %s entry %d out of range", errCorruptIndex, path, i)
		}
		if prev != nil && (e.relOffset <= prev.relOffset || e.pos <= prev.pos) {
			return fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
		}
		return nil
	}
	x, err := openEntryIndex(path, offsetEntryCodec, base, maxIndexBytes, resident, check)
	if x.indexFile == nil {
		return nil, err
	}
	return &offsetIndex{x}, err
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
	return x.appendEntry(offsetIndexEntry{rel, int32(pos)})
}

// lookup returns the largest entry whose offset <= target, or (base, 0), as Kafka's
// OffsetIndex.lookup. (base, 0) is also the answer when the file cannot be read: the
// caller then scans the segment from its start, slower but still right.
func (x *offsetIndex) lookup(target int64) (offset int64, pos int64) {
	e, ok := x.floor(func(e offsetIndexEntry) bool { return x.base+int64(e.relOffset) > target })
	if !ok {
		return x.base, 0
	}
	return x.base + int64(e.relOffset), int64(e.pos)
}
