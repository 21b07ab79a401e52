package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
)

// txnIndexSuffix names a segment's aborted-transaction index. Part of the on-disk
// format; do not change.
const txnIndexSuffix = ".txnindex"

// abortedTxnSize is the size of one .txnindex entry, Kafka's AbortedTxn.TOTAL_SIZE:
//
//	offset  size  field
//	0       2     version (0)
//	2       8     producerId
//	10      8     firstOffset
//	18      8     lastOffset (the ABORT marker's offset)
//	26      8     lastStableOffset (the LSO once the marker was written)
//
// Part of the on-disk format; do not change.
const (
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

// AbortedTxn is one entry of a segment's transaction index: a transaction ended by an
// ABORT marker (at LastOffset) written into that segment. LastStableOffset is the first
// offset of the earliest other transaction still open when the marker was written, or
// LastOffset+1 when none was, as Kafka's ProducerStateManager.lastStableOffset.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

func (a AbortedTxn) encode() []byte {
	b := make([]byte, abortedTxnSize)
	binary.BigEndian.PutUint16(b[0:], abortedTxnVersion)
	binary.BigEndian.PutUint64(b[2:], uint64(a.ProducerID))
	binary.BigEndian.PutUint64(b[10:], uint64(a.FirstOffset))
	binary.BigEndian.PutUint64(b[18:], uint64(a.LastOffset))
	binary.BigEndian.PutUint64(b[26:], uint64(a.LastStableOffset))
	return b
}

// readTxnIndex reads a .txnindex file; a missing file is an empty index (Kafka creates
// it lazily). A trailing partial entry (torn write) is ignored; an entry with an
// unknown version is an error, as Kafka's TransactionIndex iterator.
func readTxnIndex(path string) ([]AbortedTxn, error) {
	buf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []AbortedTxn
	for len(buf) >= abortedTxnSize {
		if v := binary.BigEndian.Uint16(buf); v != abortedTxnVersion {
			return nil, fmt.Errorf("%w: %s: entry version %d", errCorruptIndex, path, v)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(buf[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(buf[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(buf[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(buf[26:])),
		})
		buf = buf[abortedTxnSize:]
	}
	return out, nil
}

// txnIndex is one segment's aborted transactions, held in memory (they are few) and
// mirrored in its .txnindex file, which is created on the first entry. No descriptor is
// held: an append opens the file, writes the entry and closes it (aborts are rare next
// to batches), so a partition that never saw an abort, or whose aborts are written,
// costs no descriptor (issue 15).
type txnIndex struct {
	path    string
	entries []AbortedTxn
	// dirty: the file has entries not yet fsynced. Atomic: a background flush
	// (Log.flushUpTo) syncs without the log's lock.
	dirty atomic.Bool
}

func openTxnIndex(path string) (*txnIndex, error) {
	entries, err := readTxnIndex(path)
	if err != nil {
		return nil, err
	}
	return &txnIndex{path: path, entries: entries}, nil
}

// append adds an entry at the end of the file, as Kafka's TransactionIndex.append
// (entries must come in increasing lastOffset order).
func (t *txnIndex) append(a AbortedTxn) error {
	if n := len(t.entries); n > 0 && a.LastOffset <= t.entries[n-1].LastOffset {
		return fmt.Errorf("storage: aborted txn at %d does not follow %d", a.LastOffset, t.entries[n-1].LastOffset)
	}
	if err := t.write(a.encode(), int64(len(t.entries))*abortedTxnSize); err != nil {
		return err
	}
	t.entries = append(t.entries, a)
	return nil
}

// write writes b at off, creating the file if needed.
func (t *txnIndex) write(b []byte, off int64) error {
	f, err := os.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	t.dirty.Store(true)
	_, err = f.WriteAt(b, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// create makes the (empty) file if it does not exist: a cleaned segment always has
// one, as the swap renames all four files.
func (t *txnIndex) create() error { return t.write(nil, 0) }

// reset replaces every entry and rewrites the file (removed when empty).
func (t *txnIndex) reset(entries []AbortedTxn) error {
	t.entries = nil
	if err := os.Remove(t.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	buf := make([]byte, 0, len(entries)*abortedTxnSize)
	for _, a := range entries {
		buf = append(buf, a.encode()...)
	}
	if err := t.write(buf, 0); err != nil {
		return err
	}
	t.entries = entries
	return nil
}

// truncateTo drops entries whose marker is at or past offset, as Kafka's
// TransactionIndex.truncateTo.
func (t *txnIndex) truncateTo(offset int64) error {
	i := len(t.entries)
	for i > 0 && t.entries[i-1].LastOffset >= offset {
		i--
	}
	if i == len(t.entries) {
		return nil
	}
	return t.reset(slices.Clone(t.entries[:i]))
}

// collect is Kafka's TransactionIndex.collectAbortedTxns: entries overlapping
// [fetchOffset, upperBound); complete once an entry's lastStableOffset reaches
// upperBound (no transaction ending later can have started below it).
func (t *txnIndex) collect(fetchOffset, upperBound int64, out []AbortedTxn) ([]AbortedTxn, bool) {
	for _, a := range t.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			out = append(out, a)
		}
		if a.LastStableOffset >= upperBound {
			return out, true
		}
	}
	return out, false
}

// sync fsyncs the file when entries were written since the last sync.
func (t *txnIndex) sync() error {
	if !t.dirty.Swap(false) {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		t.dirty.Store(true)
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.dirty.Store(true)
		return err
	}
	return nil
}

func (t *txnIndex) close() {}

// reconcileTxnIndex makes the segment's transaction index agree with the aborted
// transactions a replay of its batches found (as Kafka's LogSegment.recover rebuilds
// it). An entry the file already has for the same producer and marker is kept as it
// is: the file knows the first offset of a transaction that started before the
// replayed segments, which the replay does not. Entries for markers the scan did not
// accept (a cut tail) are dropped.
func (s *segment) reconcileTxnIndex(replayed []AbortedTxn) error {
	want := make([]AbortedTxn, 0, len(replayed))
	for _, a := range replayed {
		for _, old := range s.txn.entries {
			if old.ProducerID == a.ProducerID && old.LastOffset == a.LastOffset {
				a = old
				break
			}
		}
		want = append(want, a)
	}
	if slices.Equal(want, s.txn.entries) {
		return nil
	}
	return s.txn.reset(want)
}
