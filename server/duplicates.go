package server

import "sync"

// Requests may name a partition more than once. Kafka answers Fetch and Produce with
// each partition once (its request maps keep the last entry, in the place of the
// first for Fetch, whose map keeps insertion order), ListOffsets with INVALID_REQUEST
// for every entry of a duplicated partition, Metadata with each topic once (a set),
// and OffsetForLeaderEpoch and DescribeConfigs entry by entry, as gokafkad does.
// Nothing is read once per duplicate: a Fetch naming one partition 200,000 times
// reads it once.

// firstOccurrence returns, for each key, the index of the first key equal to it, or
// nil when no key repeats (the usual case: nothing is allocated).
func firstOccurrence(keys []fetchKey) []int {
	n := len(keys)
	if n < 2 {
		return nil
	}
	if n <= 8 {
		for i := 1; i < n; i++ {
			for j := 0; j < i; j++ {
				if keys[j] == keys[i] {
					return firstOccurrenceMap(keys)
				}
			}
		}
		return nil
	}
	m := dupMaps.Get().(map[fetchKey]struct{})
	defer func() {
		clear(m)
		dupMaps.Put(m)
	}()
	for _, k := range keys {
		if _, dup := m[k]; dup {
			return firstOccurrenceMap(keys)
		}
		m[k] = struct{}{}
	}
	return nil
}

// firstOccurrenceMap is firstOccurrence once a duplicate was seen.
func firstOccurrenceMap(keys []fetchKey) []int {
	m := make(map[fetchKey]int, len(keys))
	first := make([]int, len(keys))
	for i, k := range keys {
		f, ok := m[k]
		if !ok {
			f = i
			m[k] = i
		}
		first[i] = f
	}
	return first
}

var dupMaps = sync.Pool{New: func() any { return map[fetchKey]struct{}{} }}

// keySlices recycles the key lists requests are checked with.
var keySlices = sync.Pool{New: func() any { return new([]fetchKey) }}

func getKeys() *[]fetchKey { k := keySlices.Get().(*[]fetchKey); *k = (*k)[:0]; return k }

func putKeys(k *[]fetchKey) {
	if cap(*k) > 1<<16 {
		return // not worth keeping
	}
	clear(*k) // drop the topic names
	keySlices.Put(k)
}

// dedupFetch keeps each partition of a fetch once: the last entry's values in the
// first one's place, as Kafka's FetchRequest.fetchData (a LinkedHashMap).
func dedupFetch(parts []*cachedPartition) []*cachedPartition {
	if len(parts) < 2 {
		return parts
	}
	keys := getKeys()
	defer putKeys(keys)
	for _, cp := range parts {
		*keys = append(*keys, cp.key)
	}
	first := firstOccurrence(*keys)
	if first == nil {
		return parts
	}
	out := parts[:0]
	slot := make(map[int]int, len(parts)) // first index -> place in out
	for i, cp := range parts {
		f := first[i]
		if f == i {
			slot[i] = len(out)
			out = append(out, cp)
			continue
		}
		out[slot[f]] = cp
	}
	return out
}

// repeatedPartitions flags the keys (a request's topics × partitions, in order)
// whose partition appears again later (later: true) or anywhere else (later: false).
// nil when no partition repeats.
func repeatedPartitions(keys []fetchKey, later bool) []bool {
	first := firstOccurrence(keys)
	if first == nil {
		return nil
	}
	last := make(map[int]int, len(first)) // first index -> last index
	count := make(map[int]int, len(first))
	for i, f := range first {
		last[f] = i
		count[f]++
	}
	out := make([]bool, len(first))
	for i, f := range first {
		if later {
			out[i] = last[f] != i
		} else {
			out[i] = count[f] > 1
		}
	}
	return out
}

// uniqueStrings keeps the first of each string, in order (Metadata's topics, as
// Kafka's set of them).
func uniqueStrings(ss []string) []string {
	if len(ss) < 2 {
		return ss
	}
	seen := make(map[string]struct{}, len(ss))
	out := ss[:0]
	for _, s := range ss {
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		out = append(out, s)
	}
	return out
}
