package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
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
// mirrored in its .txnindex file, which is created on the first entry.
type txnIndex struct {
	path    string
	file    *os.File // nil until the first append
	entries []AbortedTxn
	// dirty: the file has entries not yet fsynced.
	dirty bool
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
	if t.file == nil {
		f, err := os.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		t.file = f
	}
	if _, err := t.file.WriteAt(a.encode(), int64(len(t.entries))*abortedTxnSize); err != nil {
		return err
	}
	t.entries = append(t.entries, a)
	t.dirty = true
	return nil
}

// reset replaces every entry and rewrites the file (removed when empty).
func (t *txnIndex) reset(entries []AbortedTxn) error {
	if t.file != nil {
		t.file.Close()
		t.file = nil
	}
	t.entries = nil
	if err := os.Remove(t.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, a := range entries {
		if err := t.append(a); err != nil {
			return err
		}
	}
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

func (t *txnIndex) sync() error {
	if t.file == nil || !t.dirty {
		return nil
	}
	t.dirty = false
	return t.file.Sync()
}

func (t *txnIndex) close() {
	if t.file != nil {
		t.file.Close()
		t.file = nil
	}
}

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
