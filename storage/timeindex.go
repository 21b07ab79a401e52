package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// timeIndexEntry: the largest timestamp seen up to a batch, and that batch's last offset.
type timeIndexEntry struct {
	timestamp int64
	relOffset int32
}

// timeIndex is Kafka's TimeIndex: sorted (timestamp, offset) pairs of one segment, used
// by ListOffsets-by-timestamp. Entries are kept in memory; the file mirrors them.
// Not safe for concurrent use: the owning Log's mu guards it.
type timeIndex struct {
	path string
	file *os.File
	base int64
	// entries are strictly increasing in timestamp and non-decreasing in relOffset.
	entries      []timeIndexEntry
	maxEntries   int
	preallocated bool
}

// openTimeIndex opens (creating if needed) path and loads its entries; errCorruptIndex
// when the file fails its sanity check. Trailing all-zero entries (an untrimmed
// preallocated tail) are ignored.
func openTimeIndex(path string, base int64, maxIndexBytes int64) (*timeIndex, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	x := &timeIndex{path: path, file: f, base: base, maxEntries: int(maxIndexBytes / timeIndexEntrySize)}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if len(data)%timeIndexEntrySize != 0 {
		return x, fmt.Errorf("%w: %s has length %d", errCorruptIndex, path, len(data))
	}
	n := len(data) / timeIndexEntrySize
	for n > 0 && isZero(data[(n-1)*timeIndexEntrySize:n*timeIndexEntrySize]) {
		n--
	}
	x.entries = make([]timeIndexEntry, 0, n)
	for i := 0; i < n; i++ {
		e := timeIndexEntry{
			timestamp: int64(binary.BigEndian.Uint64(data[i*12:])),
			relOffset: int32(binary.BigEndian.Uint32(data[i*12+8:])),
		}
		if e.relOffset < 0 {
			return x, fmt.Errorf("%w: %s entry %d has a negative offset", errCorruptIndex, path, i)
		}
		if i > 0 {
			prev := x.entries[i-1]
			if e.timestamp <= prev.timestamp || e.relOffset < prev.relOffset {
				return x, fmt.Errorf("%w: %s entry %d not increasing", errCorruptIndex, path, i)
			}
		}
		x.entries = append(x.entries, e)
	}
	if len(x.entries) > x.maxEntries {
		x.maxEntries = len(x.entries)
	}
	return x, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (x *timeIndex) isFull() bool { return len(x.entries) >= x.maxEntries }

// lastEntry returns the last entry, ok false when empty.
func (x *timeIndex) lastEntry() (timeIndexEntry, bool) {
	if len(x.entries) == 0 {
		return timeIndexEntry{}, false
	}
	return x.entries[len(x.entries)-1], true
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
	var buf [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(buf[0:], uint64(ts))
	binary.BigEndian.PutUint32(buf[8:], uint32(rel))
	if _, err := x.file.WriteAt(buf[:], int64(len(x.entries))*timeIndexEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, timeIndexEntry{timestamp: ts, relOffset: rel})
	if len(x.entries) > x.maxEntries {
		x.maxEntries = len(x.entries)
	}
	return nil
}

// lookup returns the offset of the largest entry whose timestamp <= ts, or base.
func (x *timeIndex) lookup(ts int64) int64 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].timestamp > ts })
	if i == 0 {
		return x.base
	}
	return x.base + int64(x.entries[i-1].relOffset)
}

// truncateTo drops entries whose offset >= offset.
func (x *timeIndex) truncateTo(offset int64) error {
	i := sort.Search(len(x.entries), func(i int) bool {
		return x.base+int64(x.entries[i].relOffset) >= offset
	})
	if i >= len(x.entries) {
		return nil
	}
	x.entries = x.entries[:i]
	return x.resize()
}

// reset replaces all entries (index rebuild) and rewrites the file.
func (x *timeIndex) reset(entries []timeIndexEntry) error {
	x.entries = entries
	if len(x.entries) > x.maxEntries {
		x.maxEntries = len(x.entries)
	}
	buf := make([]byte, len(entries)*timeIndexEntrySize)
	for i, e := range entries {
		binary.BigEndian.PutUint64(buf[i*12:], uint64(e.timestamp))
		binary.BigEndian.PutUint32(buf[i*12+8:], uint32(e.relOffset))
	}
	if err := x.file.Truncate(0); err != nil {
		return err
	}
	if _, err := x.file.WriteAt(buf, 0); err != nil {
		return err
	}
	return x.resize()
}

func (x *timeIndex) resize() error {
	if err := x.file.Truncate(int64(len(x.entries)) * timeIndexEntrySize); err != nil {
		return err
	}
	if x.preallocated {
		return x.file.Truncate(int64(x.maxEntries) * timeIndexEntrySize)
	}
	return nil
}

func (x *timeIndex) preallocate(maxIndexBytes int64) error {
	x.maxEntries = max(int(maxIndexBytes/timeIndexEntrySize), len(x.entries))
	x.preallocated = true
	return x.resize()
}

func (x *timeIndex) trim() error {
	x.preallocated = false
	return x.resize()
}

func (x *timeIndex) sync() error  { return x.file.Sync() }
func (x *timeIndex) close() error { return x.file.Close() }
