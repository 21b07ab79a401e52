package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// errCorruptIndex reports an index file that fails its sanity check; the caller
// rebuilds the index from the log.
var errCorruptIndex = errors.New("storage: corrupt index")

// indexFile is the storage under offsetIndex and timeIndex: fixed-size entries in a
// file, memory-mapped (MAP_SHARED) with no descriptor held, as Kafka's AbstractIndex:
// a broker with N partitions holds no index descriptor at all (issue 15). While its
// segment is active the file is preallocated and mapped read-write, so an append is a
// copy into the page cache (what a pwrite did, minus the system call; it survives a
// kill -9 the same way) — except an entry reaching a file system block the sparse file
// has not got yet, which is written with pwrite so that a full disk is an error, not a
// SIGBUS (see backed); an inactive segment's index is mapped read-only at its trimmed
// length. A file with no entries that is not preallocated is not mapped. Operations that
// change the file's length (trim, truncation, rebuild) open the file by path for the
// call. Not safe for concurrent use: the owning Log's mu guards it.
//
// Each mapping is one entry of the process's memory map: vm.max_map_count (Linux
// default 65530) bounds mapped index files as it bounds Kafka's.
type indexFile struct {
	path      string
	entrySize int
	// n is the number of entries. Invariant: the file's first n*entrySize bytes are
	// the entries; bytes after them, if any, are zero (preallocation).
	n int
	// mm is the mapping: the whole file (maxEntries entries while preallocated, else
	// at least n entries); nil when nothing is mapped (n == 0 and not preallocated).
	mm []byte
	// writable: mm is mapped read-write (preallocated).
	writable bool
	// resident: every entry is checked on open (the active segment, or an index that
	// was not trimmed), as the former in-memory copy was.
	resident bool
	// lazy: the entries are not mapped yet; the first access maps them (under
	// lazyMu, as readers share the Log's lock), as Kafka's LazyIndex. Set on
	// inactive segments loaded at open, so a broker maps only what it reads.
	lazy   atomic.Bool
	lazyMu sync.Mutex
	// dirty: the file changed since the last sync. Atomic: a background flush
	// (Log.flushUpTo) syncs without the log's lock.
	dirty atomic.Bool
	// last is a copy of the last entry (nil when n == 0).
	last       []byte
	maxEntries int
	// preallocated: the file is sized to maxEntries entries (active segment).
	preallocated bool
	// backed is how many bytes from the file's start are known to have storage (blocks,
	// or tmpfs pages): written through the file. A preallocated file is sparse past its
	// entries, and storing into a hole through the mapping makes the kernel allocate in
	// the page fault, which on a full disk is a SIGBUS that kills the process; so an
	// entry that reaches past backed is written with pwrite, which fails with ENOSPC
	// instead. Invariant: backed <= the file's length.
	backed int64
}

// openIndexFile opens (creating if needed) an index file, maps it and closes it.
// Trailing all-zero entries are taken for the unused preallocated tail of an index that
// was not trimmed (crash): a real offset entry never has position 0 (the first batch of
// a segment never gets one); a real time entry (0, 0) is possible but only as the first
// entry, and losing it only makes a timestamp lookup start at the segment's base, which
// is still correct.
func openIndexFile(path string, entrySize int, maxIndexBytes int64, resident bool) (*indexFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x := &indexFile{path: path, entrySize: entrySize, maxEntries: int(maxIndexBytes / int64(entrySize)), resident: resident}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size()%int64(entrySize) != 0 {
		return x, fmt.Errorf("%w: %s has length %d", errCorruptIndex, path, fi.Size())
	}
	x.n = int(fi.Size() / int64(entrySize))
	if x.n > 0 {
		// Read through the file, not the mapping: the untrimmed tail is sparse, and a
		// read fault on a hole of a full tmpfs is a SIGBUS (the page must be allocated
		// to be mapped), where read(2) just returns zeros.
		last := make([]byte, entrySize)
		if _, err := f.ReadAt(last, fi.Size()-int64(entrySize)); err != nil {
			return nil, err
		}
		if isZero(last) {
			// Untrimmed: the entries end at the first all-zero one.
			x.resident = true
			n, err := entriesBeforeZero(f, entrySize, x.n)
			if err != nil {
				return nil, err
			}
			x.n = n
		}
		if err := x.mapFile(f, fi.Size(), false); err != nil {
			return nil, err
		}
	}
	x.setLast()
	x.maxEntries = max(x.maxEntries, x.n)
	x.backed = int64(x.n) * int64(entrySize)
	return x, nil
}

// entriesBeforeZero returns how many of the file's entries come before the
// first all-zero one (of at most limit), reading the file in chunks.
func entriesBeforeZero(f *os.File, entrySize, limit int) (int, error) {
	buf := make([]byte, (64<<10)/entrySize*entrySize)
	n := 0
	for n < limit {
		k, err := f.ReadAt(buf, int64(n)*int64(entrySize))
		k -= k % entrySize
		for i := 0; i < k; i += entrySize {
			if isZero(buf[i : i+entrySize]) {
				return n, nil
			}
			n++
		}
		if err != nil || k == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// mapFile maps size bytes of f (replacing any mapping), read-write when writable.
func (x *indexFile) mapFile(f *os.File, size int64, writable bool) error {
	x.unmap()
	if size == 0 {
		return nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	mm, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap %s: %w", x.path, err)
	}
	x.mm, x.writable = mm, writable
	return nil
}

func (x *indexFile) unmap() {
	x.lazy.Store(false)
	if x.mm != nil {
		unix.Munmap(x.mm)
		x.mm, x.writable = nil, false
	}
}

// setFile runs fn on the file opened by path, then maps it again as preallocated says
// (the whole preallocated length read-write, else the entries read-only), never past
// the file's end (whatever fn managed to do before an error), so no access to the
// mapping can fault.
func (x *indexFile) setFile(fn func(f *os.File) error) error {
	f, err := os.OpenFile(x.path, os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	x.unmap()
	x.dirty.Store(true)
	err = fn(f)
	want := int64(x.n) * int64(x.entrySize)
	if x.preallocated && x.n > 0 {
		// An empty index is mapped at its first entry (append's slow path): a
		// partition that never got one holds no mapping.
		want = int64(x.maxEntries) * int64(x.entrySize)
	}
	size := int64(0)
	if fi, serr := f.Stat(); serr == nil {
		size = min(want, fi.Size()-fi.Size()%int64(x.entrySize))
	}
	if merr := x.mapFile(f, size, x.preallocated && size > 0 && size == want); merr != nil && err == nil {
		err = merr
	}
	x.n = min(x.n, len(x.mm)/x.entrySize)
	x.backed = int64(x.n) * int64(x.entrySize) // what is known written; the rest may be a hole
	return err
}

func (x *indexFile) setLast() {
	if x.n == 0 {
		x.last = nil
		return
	}
	e := x.entry(x.n - 1)
	if e == nil {
		x.last = nil
		return
	}
	x.last = append(x.last[:0], e...)
}

// unmapUntilUsed drops the mapping of an inactive index until an entry is read again.
// The Log's write lock must be held (or the log not yet shared).
func (x *indexFile) unmapUntilUsed() {
	if x.n == 0 || x.writable {
		return
	}
	x.unmap()
	x.lazy.Store(true)
}

// mapLazy maps an index unmapped by unmapUntilUsed.
func (x *indexFile) mapLazy() {
	x.lazyMu.Lock()
	defer x.lazyMu.Unlock()
	if !x.lazy.Load() {
		return
	}
	if f, err := os.Open(x.path); err == nil {
		if fi, err := f.Stat(); err == nil {
			if size := min(int64(x.n)*int64(x.entrySize), fi.Size()-fi.Size()%int64(x.entrySize)); size > 0 {
				if mm, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED); err == nil {
					x.mm = mm // published to readers by the Store below
				}
			}
		}
		f.Close()
	}
	// On failure nothing is mapped: entry returns nil and callers scan the log.
	x.lazy.Store(false)
}

// entry returns entry i (a view of the mapping: valid until the index changes), or nil
// when it is not mapped (a failed resize left less than n entries mapped).
func (x *indexFile) entry(i int) []byte {
	if x.lazy.Load() {
		x.mapLazy()
	}
	end := (i + 1) * x.entrySize
	if i < 0 || end > len(x.mm) {
		return nil
	}
	return x.mm[end-x.entrySize : end]
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

// append writes one entry after the last: into the mapping while preallocated and not
// full, else (the final time index entry of a full index, a cleaned segment) through
// the file.
func (x *indexFile) append(e []byte) error {
	off := x.n * x.entrySize
	if x.writable && off+x.entrySize <= len(x.mm) {
		if int64(off+x.entrySize) > x.backed {
			// The entry reaches storage the file may not have yet: write it through
			// the file (the mapping shares its pages), so a full disk is an error.
			if err := x.writeBacking(e, int64(off)); err != nil {
				return err
			}
		} else {
			copy(x.mm[off:], e)
		}
		x.dirty.Store(true)
	} else {
		n := x.n
		x.n++ // mapped at the new length by setFile
		x.maxEntries = max(x.maxEntries, x.n)
		err := x.setFile(func(f *os.File) error {
			_, err := f.WriteAt(e, int64(off))
			return err
		})
		if err != nil {
			x.n = min(n, x.n)
			x.setLast()
			return err
		}
		x.n--
	}
	x.n++
	x.last = append(x.last[:0], e...)
	x.maxEntries = max(x.maxEntries, x.n)
	return nil
}

// writeBacking writes entry e at off with pwrite, which allocates what the file lacks
// there or fails (ENOSPC), and counts the file system blocks it covers as backed.
func (x *indexFile) writeBacking(e []byte, off int64) error {
	f, err := os.OpenFile(x.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(e, off); err != nil {
		return err
	}
	end := off + int64(len(e))
	block := int64(512) // the smallest block a file system allocates
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blksize > 0 {
			block = int64(st.Blksize)
		}
		// Whole blocks from the end of the entry on, never past the file's end.
		x.backed = max(x.backed, min((end+block-1)/block*block, fi.Size()))
	} else {
		x.backed = max(x.backed, end)
	}
	return nil
}

// truncateEntries keeps the first n entries.
func (x *indexFile) truncateEntries(n int) error {
	if n >= x.n {
		return nil
	}
	if x.writable {
		// Preallocated: zero the dropped entries in place (what truncating and
		// extending the file did).
		clear(x.mm[n*x.entrySize : x.n*x.entrySize])
		x.n = n
		x.dirty.Store(true)
		x.setLast()
		return nil
	}
	x.n = n
	x.setLast()
	return x.resize()
}

// reset replaces every entry (index rebuild) and rewrites the file.
func (x *indexFile) reset(raw []byte) error {
	x.n = len(raw) / x.entrySize
	x.maxEntries = max(x.maxEntries, x.n)
	err := x.setFile(func(f *os.File) error {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.WriteAt(raw, 0); err != nil {
			return err
		}
		return x.resizeFile(f)
	})
	x.setLast()
	return err
}

// resizeFile sets the file length: the entries only, or maxEntries entries while
// preallocated. Bytes past the entries are zero.
func (x *indexFile) resizeFile(f *os.File) error {
	if err := f.Truncate(int64(x.n) * int64(x.entrySize)); err != nil {
		return err
	}
	if x.preallocated {
		return f.Truncate(int64(x.maxEntries) * int64(x.entrySize))
	}
	return nil
}

// resize is resizeFile on the file opened by path, mapped again after.
func (x *indexFile) resize() error { return x.setFile(x.resizeFile) }

// preallocate sizes the file for an active segment and maps it read-write.
func (x *indexFile) preallocate(maxIndexBytes int64) error {
	x.resident = true
	x.maxEntries = max(int(maxIndexBytes/int64(x.entrySize)), x.n)
	x.preallocated = true
	return x.resize()
}

// trim cuts the file to its entries and maps it read-only (on roll and close), as
// Kafka's trimToValidSize.
func (x *indexFile) trim() error {
	x.preallocated = false
	x.resident = false
	return x.resize()
}

// sync fsyncs what changed (entries written through the mapping included: on Linux
// fsync writes back a shared mapping's dirty pages, as msync does).
func (x *indexFile) sync() error {
	if !x.dirty.Swap(false) {
		return nil
	}
	f, err := os.Open(x.path)
	if err != nil {
		x.dirty.Store(true)
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		x.dirty.Store(true)
		return err
	}
	return nil
}

// close unmaps the file. What was written through the mapping stays in the page cache
// (and reaches the disk), as a pwrite's bytes would.
func (x *indexFile) close() error {
	x.unmap()
	return nil
}

// checkEntries is the sanity check offsetIndex and timeIndex run on open, as Kafka's
// AbstractIndex.sanityCheck: every entry when resident (cheap, they are in memory),
// else only the first and last. check sees each entry with the one checked before it
// (nil for the first); its error, or errCorruptIndex when the first entry cannot be
// read, is returned.
func checkEntries[E any](x *indexFile, decode func([]byte) E, check func(i int, e E, prev *E) error) error {
	if x.resident {
		var prev *E
		for i := 0; i < x.n; i++ {
			e := decode(x.entry(i))
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
