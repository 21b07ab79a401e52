package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errCorruptIndex reports an index file that fails its sanity check; the caller
// rebuilds the index from the log.
var errCorruptIndex = errors.New("storage: corrupt index")

// indexFile is the storage under offsetIndex and timeIndex: fixed-size entries in a
// file. While its segment is active the entries are also kept in memory (resident), so
// appends and lookups need no I/O; an inactive segment's index is read from the file
// with pread (binary search, page cache) so a broker with many segments holds no index
// in its heap, the role mmap plays in Kafka. Not safe for concurrent use: the owning
// Log's mu guards it.
type indexFile struct {
	path      string
	file      *os.File
	entrySize int
	// n is the number of entries. Invariant: the file's first n*entrySize bytes are
	// the entries; bytes after them, if any, are zero (preallocation).
	n int
	// mem holds the n entries while resident, else nil.
	mem []byte
	// last is a copy of the last entry (nil when n == 0).
	last       []byte
	maxEntries int
	// preallocated: the file is sized to maxEntries entries (active segment).
	preallocated bool
}

// openIndexFile opens (creating if needed) an index file. Trailing all-zero entries are
// taken for the unused preallocated tail of an index that was not trimmed (crash): a
// real offset entry never has position 0 (the first batch of a segment never gets one);
// a real time entry (0, 0) is possible but only as the first entry, and losing it only
// makes a timestamp lookup start at the segment's base, which is still correct.
func openIndexFile(path string, entrySize int, maxIndexBytes int64, resident bool) (*indexFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	x := &indexFile{path: path, file: f, entrySize: entrySize, maxEntries: int(maxIndexBytes / int64(entrySize))}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size()%int64(entrySize) != 0 {
		return x, fmt.Errorf("%w: %s has length %d", errCorruptIndex, path, fi.Size())
	}
	x.n = int(fi.Size() / int64(entrySize))
	if x.n > 0 && !resident {
		last := make([]byte, entrySize)
		if _, err := f.ReadAt(last, int64(x.n-1)*int64(entrySize)); err != nil {
			f.Close()
			return nil, err
		}
		if !isZero(last) {
			x.last = last
		} else {
			resident = true // untrimmed: find the real end below
		}
	}
	if resident {
		if err := x.makeResident(); err != nil {
			f.Close()
			return nil, err
		}
	}
	x.maxEntries = max(x.maxEntries, x.n)
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

// makeResident loads the entries into memory. It reads forward in chunks and stops at
// the first all-zero entry, so the sparse preallocated tail of an untrimmed index (up to
// segment.index.bytes) is neither read nor kept.
func (x *indexFile) makeResident() error {
	if x.mem != nil {
		return nil
	}
	const chunkEntries = 8192
	mem := make([]byte, 0, min(x.n, chunkEntries)*x.entrySize)
	buf := make([]byte, chunkEntries*x.entrySize)
	n := 0
	for n < x.n {
		k := min(x.n-n, chunkEntries)
		chunk := buf[:k*x.entrySize]
		if _, err := x.file.ReadAt(chunk, int64(n)*int64(x.entrySize)); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		stop := false
		for i := 0; i < k; i++ {
			e := chunk[i*x.entrySize : (i+1)*x.entrySize]
			if isZero(e) {
				stop = true
				break
			}
			mem = append(mem, e...)
			n++
		}
		if stop {
			break
		}
	}
	x.n = n
	x.mem = mem
	x.setLast()
	return nil
}

// evict drops the in-memory copy (the segment became inactive).
func (x *indexFile) evict() { x.mem = nil }

func (x *indexFile) setLast() {
	if x.n == 0 {
		x.last = nil
		return
	}
	if x.mem != nil {
		x.last = append([]byte(nil), x.mem[(x.n-1)*x.entrySize:]...)
		return
	}
	last := make([]byte, x.entrySize)
	if _, err := x.file.ReadAt(last, int64(x.n-1)*int64(x.entrySize)); err == nil {
		x.last = last
	}
}

// entry returns entry i, or nil when it cannot be read.
func (x *indexFile) entry(i int) []byte {
	if x.mem != nil {
		return x.mem[i*x.entrySize : (i+1)*x.entrySize]
	}
	b := make([]byte, x.entrySize)
	if _, err := x.file.ReadAt(b, int64(i)*int64(x.entrySize)); err != nil {
		return nil
	}
	return b
}

// search returns the smallest i in [0, n) for which after(entry(i)) holds, or n; ok is
// false when an entry could not be read (callers fall back to scanning the log).
func (x *indexFile) search(after func(e []byte) bool) (i int, ok bool) {
	lo, hi := 0, x.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		e := x.entry(mid)
		if e == nil {
			return 0, false
		}
		if after(e) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

func (x *indexFile) isFull() bool { return x.n >= x.maxEntries }

// append writes one entry after the last.
func (x *indexFile) append(e []byte) error {
	if _, err := x.file.WriteAt(e, int64(x.n)*int64(x.entrySize)); err != nil {
		return err
	}
	x.n++
	if x.mem != nil {
		x.mem = append(x.mem, e...)
	}
	x.last = append(x.last[:0], e...)
	x.maxEntries = max(x.maxEntries, x.n)
	return nil
}

// truncateEntries keeps the first n entries.
func (x *indexFile) truncateEntries(n int) error {
	if n >= x.n {
		return nil
	}
	x.n = n
	if x.mem != nil {
		x.mem = x.mem[:n*x.entrySize]
	}
	x.setLast()
	return x.resize()
}

// reset replaces every entry (index rebuild) and rewrites the file.
func (x *indexFile) reset(raw []byte) error {
	if err := x.file.Truncate(0); err != nil {
		return err
	}
	if _, err := x.file.WriteAt(raw, 0); err != nil {
		return err
	}
	x.n = len(raw) / x.entrySize
	x.maxEntries = max(x.maxEntries, x.n)
	if x.mem != nil {
		x.mem = raw
	}
	x.setLast()
	return x.resize()
}

// resize sets the file length: the entries only, or maxEntries entries while
// preallocated. Bytes past the entries are zero.
func (x *indexFile) resize() error {
	if err := x.file.Truncate(int64(x.n) * int64(x.entrySize)); err != nil {
		return err
	}
	if x.preallocated {
		return x.file.Truncate(int64(x.maxEntries) * int64(x.entrySize))
	}
	return nil
}

// preallocate makes the index resident and sizes the file for an active segment.
func (x *indexFile) preallocate(maxIndexBytes int64) error {
	if err := x.makeResident(); err != nil {
		return err
	}
	x.maxEntries = max(int(maxIndexBytes/int64(x.entrySize)), x.n)
	x.preallocated = true
	return x.resize()
}

// trim cuts the file to its entries and drops the in-memory copy (on roll and close),
// as Kafka's trimToValidSize.
func (x *indexFile) trim() error {
	x.preallocated = false
	if err := x.resize(); err != nil {
		return err
	}
	x.evict()
	return nil
}

func (x *indexFile) sync() error  { return x.file.Sync() }
func (x *indexFile) close() error { return x.file.Close() }

// checkEntries is the sanity check offsetIndex and timeIndex run on open, as Kafka's
// AbstractIndex.sanityCheck: every entry when resident (cheap, they are in memory),
// else only the first and last. check sees each entry with the one checked before it
// (nil for the first); its error, or errCorruptIndex when the first entry cannot be
// read, is returned.
func checkEntries[E any](x *indexFile, decode func([]byte) E, check func(i int, e E, prev *E) error) error {
	if x.mem != nil {
		var prev *E
		for i := 0; i < x.n; i++ {
			e := decode(x.mem[i*x.entrySize:])
			if err := check(i, e, prev); err != nil {
				return err
			}
			prev = &e
		}
		return nil
	}
	if x.n == 0 {
		return nil
	}
	first := x.entry(0)
	if first == nil {
		return fmt.Errorf("%w: %s unreadable", errCorruptIndex, x.path)
	}
	f, l := decode(first), decode(x.last)
	if err := check(0, f, nil); err != nil {
		return err
	}
	if x.n > 1 {
		return check(x.n-1, l, &f)
	}
	return nil
}

// decodeEntries decodes every entry that can be read (tests and diagnostics).
func decodeEntries[E any](x *indexFile, decode func([]byte) E) []E {
	out := make([]E, 0, x.n)
	for i := 0; i < x.n; i++ {
		if e := x.entry(i); e != nil {
			out = append(out, decode(e))
		}
	}
	return out
}
