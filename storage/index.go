package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// Sizes of index entries. Part of the on-disk format; do not change.
const (
	offsetIndexEntrySize = 8  // int32 relative offset, int32 position
	timeIndexEntrySize   = 12 // int64 timestamp, int32 relative offset
)

// errCorruptIndex reports an index file that fails its sanity check; the caller
// rebuilds the index from the log.
var errCorruptIndex = errors.New("storage: corrupt index")

// offsetIndexEntry maps the last offset of a batch to the batch's file position.
type offsetIndexEntry struct {
	relOffset int32
	pos       int32
}

// offsetIndex is Kafka's OffsetIndex: a sparse, sorted map from offsets to file
// positions of one segment. Entries are kept in memory; the file mirrors them.
// Not safe for concurrent use: the owning Log's mu guards it.
type offsetIndex struct {
	path string
	file *os.File
	base int64
	// entries are strictly increasing in both relOffset and pos.
	entries []offsetIndexEntry
	// maxEntries is segment.index.bytes / 8 as configured when the index was opened.
	maxEntries int
	// preallocated is true while the file is sized to maxEntries*8 (active segment).
	preallocated bool
}

// openOffsetIndex opens (creating if needed) path and loads its entries. An index whose
// length is not a multiple of the entry size, or whose entries are not increasing, or
// point past logSize, gives errCorruptIndex (the file stays open so it can be rebuilt).
// Trailing all-zero entries are the unused preallocated tail of an index that was not
// trimmed (crash) and are ignored: a real entry never has position 0, because the first
// batch of a segment never gets an entry.
func openOffsetIndex(path string, base int64, maxIndexBytes int64, logSize int64) (*offsetIndex, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	idx := &offsetIndex{path: path, file: f, base: base, maxEntries: int(maxIndexBytes / offsetIndexEntrySize)}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if len(data)%offsetIndexEntrySize != 0 {
		return idx, fmt.Errorf("%w: %s has length %d", errCorruptIndex, path, len(data))
	}
	n := len(data) / offsetIndexEntrySize
	for n > 0 && binary.BigEndian.Uint64(data[(n-1)*offsetIndexEntrySize:]) == 0 {
		n--
	}
	idx.entries = make([]offsetIndexEntry, 0, n)
	for i := 0; i < n; i++ {
		e := offsetIndexEntry{
			relOffset: int32(binary.BigEndian.Uint32(data[i*8:])),
			pos:       int32(binary.BigEndian.Uint32(data[i*8+4:])),
		}
		if e.relOffset < 0 || e.pos <= 0 || int64(e.pos) >= logSize {
			return idx, fmt.Errorf("%w: %s entry %d out of range", errCorruptIndex, path, i)
		}
		if i > 0 {
			prev := idx.entries[i-1]
			if e.relOffset <= prev.relOffset || e.pos <= prev.pos {
				return idx, fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
			}
		}
		idx.entries = append(idx.entries, e)
	}
	if len(idx.entries) > idx.maxEntries {
		idx.maxEntries = len(idx.entries)
	}
	return idx, nil
}

// isFull reports whether no further entry fits (Kafka rolls the segment then).
func (x *offsetIndex) isFull() bool { return len(x.entries) >= x.maxEntries }

// lastOffset is the offset of the last entry, or base when empty.
func (x *offsetIndex) lastOffset() int64 {
	if len(x.entries) == 0 {
		return x.base
	}
	return x.base + int64(x.entries[len(x.entries)-1].relOffset)
}

// append adds an entry for offset at pos; offsets must increase.
func (x *offsetIndex) append(offset int64, pos int64) error {
	if x.isFull() {
		return nil // the caller rolls before this can matter
	}
	rel := int32(offset - x.base)
	if n := len(x.entries); n > 0 && (rel <= x.entries[n-1].relOffset || int32(pos) <= x.entries[n-1].pos) {
		return nil
	}
	var buf [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(buf[0:], uint32(rel))
	binary.BigEndian.PutUint32(buf[4:], uint32(pos))
	if _, err := x.file.WriteAt(buf[:], int64(len(x.entries))*offsetIndexEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, offsetIndexEntry{relOffset: rel, pos: int32(pos)})
	return nil
}

// lookup returns the largest entry whose offset <= target, or (base, 0).
func (x *offsetIndex) lookup(target int64) (offset int64, pos int64) {
	i := sort.Search(len(x.entries), func(i int) bool {
		return x.base+int64(x.entries[i].relOffset) > target
	})
	if i == 0 {
		return x.base, 0
	}
	e := x.entries[i-1]
	return x.base + int64(e.relOffset), int64(e.pos)
}

// truncateTo drops entries whose offset >= offset, as Kafka's OffsetIndex.truncateTo.
func (x *offsetIndex) truncateTo(offset int64) error {
	i := sort.Search(len(x.entries), func(i int) bool {
		return x.base+int64(x.entries[i].relOffset) >= offset
	})
	return x.truncateEntries(i)
}

// truncateEntries keeps the first n entries and zeroes the rest of the file.
func (x *offsetIndex) truncateEntries(n int) error {
	if n >= len(x.entries) {
		return nil
	}
	x.entries = x.entries[:n]
	return x.resize()
}

// reset replaces all entries (index rebuild) and rewrites the file.
func (x *offsetIndex) reset(entries []offsetIndexEntry) error {
	x.entries = entries
	if len(x.entries) > x.maxEntries {
		x.maxEntries = len(x.entries)
	}
	buf := make([]byte, len(entries)*offsetIndexEntrySize)
	for i, e := range entries {
		binary.BigEndian.PutUint32(buf[i*8:], uint32(e.relOffset))
		binary.BigEndian.PutUint32(buf[i*8+4:], uint32(e.pos))
	}
	if err := x.file.Truncate(0); err != nil {
		return err
	}
	if _, err := x.file.WriteAt(buf, 0); err != nil {
		return err
	}
	return x.resize()
}

// resize sets the file length: the entries only when trimmed, segment.index.bytes
// (rounded down to whole entries) while preallocated. Bytes past the entries are zero.
func (x *offsetIndex) resize() error {
	real := int64(len(x.entries)) * offsetIndexEntrySize
	if err := x.file.Truncate(real); err != nil {
		return err
	}
	if x.preallocated {
		return x.file.Truncate(int64(x.maxEntries) * offsetIndexEntrySize)
	}
	return nil
}

// preallocate sizes the file for the active segment.
func (x *offsetIndex) preallocate(maxIndexBytes int64) error {
	x.maxEntries = max(int(maxIndexBytes/offsetIndexEntrySize), len(x.entries))
	x.preallocated = true
	return x.resize()
}

// trim cuts the file to its entries (on roll and close), as Kafka's trimToValidSize.
func (x *offsetIndex) trim() error {
	x.preallocated = false
	return x.resize()
}

func (x *offsetIndex) sync() error  { return x.file.Sync() }
func (x *offsetIndex) close() error { return x.file.Close() }
