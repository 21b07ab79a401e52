package storage

import "sort"

// epochCache is Kafka's LeaderEpochFileCache without the file: the first offset written
// under each leader epoch. The owning Log persists it to leader-epoch-checkpoint after
// every change and guards it with its mu.
type epochCache struct {
	// entries are strictly increasing in both Epoch and StartOffset.
	entries []EpochEntry
}

// latest returns the last entry, ok false when empty.
func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// latestEpoch is the last epoch, or -1.
func (c *epochCache) latestEpoch() int32 {
	if e, ok := c.latest(); ok {
		return e.Epoch
	}
	return -1
}

// assign records that epoch starts at startOffset, as LeaderEpochFileCache.assign: nothing
// changes when epoch is the latest epoch and startOffset is not smaller than its start;
// otherwise every entry with an epoch >= epoch or a start offset >= startOffset is removed
// first, so the entries stay increasing in both. Returns whether the cache changed.
// Negative arguments are ignored (Kafka throws; batches written before epochs carry -1).
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch && startOffset >= last.StartOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// endOffsetFor is LeaderEpochFileCache.endOffsetFor: for the latest epoch, (epoch, leo);
// otherwise the largest epoch <= requested (or the requested epoch itself when the
// cache holds none smaller) and the start offset of the first larger epoch; (-1, -1)
// when the requested epoch is -1 or no larger epoch is known.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	if epoch == -1 {
		return -1, -1
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch {
		return epoch, leo
	}
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > epoch })
	if hi == len(c.entries) {
		return -1, -1
	}
	if hi == 0 {
		return epoch, c.entries[hi].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// epochForOffset is LeaderEpochFileCache.epochForOffset: the epoch of the last entry
// starting at or before offset, or -1.
func (c *epochCache) epochForOffset(offset int64) int32 {
	prev := int32(-1)
	for _, e := range c.entries {
		if e.StartOffset == offset {
			return e.Epoch
		}
		if e.StartOffset > offset {
			return prev
		}
		prev = e.Epoch
	}
	return prev
}

// truncateFromEnd removes entries starting at or after endOffset (log truncation).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart removes entries starting at or before startOffset and re-adds the
// last of them starting at startOffset (log start offset moved), as
// LeaderEpochFileCache.truncateFromStart.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if i == 0 {
		return false
	}
	last := c.entries[i-1]
	if i == 1 && last.StartOffset == startOffset {
		return false
	}
	rest := append([]EpochEntry{{Epoch: last.Epoch, StartOffset: startOffset}}, c.entries[i:]...)
	c.entries = rest
	return true
}

// clone returns a copy of the entries.
func (c *epochCache) clone() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}
