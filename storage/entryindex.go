package storage

// entryCodec is one index kind's entry layout. Part of the on-disk format; do not
// change.
type entryCodec[E any] struct {
	size      int
	decode    func([]byte) E
	appendTo  func([]byte, E) []byte
	relOffset func(E) int32
}

// entryIndex is what offsetIndex and timeIndex share: an indexFile of typed entries of
// the segment with base offset base, sorted by offset. Not safe for concurrent use: the
// owning Log's mu guards it.
type entryIndex[E any] struct {
	*indexFile
	base  int64
	codec *entryCodec[E]
}

// openEntryIndex opens (creating if needed) path and runs its sanity check: every
// entry when resident, else the first and last (see checkEntries). An index that fails
// gives errCorruptIndex with the file still open, so the caller can rebuild it.
func openEntryIndex[E any](path string, codec *entryCodec[E], base, maxIndexBytes int64, resident bool, check func(i int, e E, prev *E) error) (entryIndex[E], error) {
	f, err := openIndexFile(path, codec.size, maxIndexBytes, resident)
	x := entryIndex[E]{indexFile: f, base: base, codec: codec}
	if f == nil || err != nil {
		return x, err
	}
	return x, checkEntries(f, codec.decode, check)
}

func (x *entryIndex[E]) encode(es []E) []byte {
	buf := make([]byte, 0, len(es)*x.codec.size)
	for _, e := range es {
		buf = x.codec.appendTo(buf, e)
	}
	return buf
}

// lastEntry returns the last entry, ok false when empty.
func (x *entryIndex[E]) lastEntry() (E, bool) {
	if x.n == 0 || x.last == nil {
		var zero E
		return zero, false
	}
	return x.codec.decode(x.last), true
}

// appendEntry adds e after the last entry (the caller checked the order).
func (x *entryIndex[E]) appendEntry(e E) error {
	return x.indexFile.append(x.codec.appendTo(nil, e))
}

// floor returns the last entry before the first one for which above holds (entries are
// sorted, so above is false and then true); ok false when there is none, or when the
// file cannot be read: the caller then scans the segment from its start, slower but
// still right.
func (x *entryIndex[E]) floor(above func(E) bool) (E, bool) {
	var zero E
	i, ok := x.search(func(b []byte) bool { return above(x.codec.decode(b)) })
	if !ok || i == 0 {
		return zero, false
	}
	b := x.entry(i - 1)
	if b == nil {
		return zero, false
	}
	return x.codec.decode(b), true
}

// truncateTo drops entries whose offset >= offset, as Kafka's AbstractIndex.truncateTo.
func (x *entryIndex[E]) truncateTo(offset int64) error {
	i, ok := x.search(func(b []byte) bool { return x.base+int64(x.codec.relOffset(x.codec.decode(b))) >= offset })
	if !ok {
		i = 0
	}
	return x.truncateEntries(i)
}

// resetEntries replaces all entries (index rebuild).
func (x *entryIndex[E]) resetEntries(es []E) error { return x.reset(x.encode(es)) }

// entries decodes every entry (tests and diagnostics).
func (x *entryIndex[E]) entries() []E { return decodeEntries(x.indexFile, x.codec.decode) }
