package status

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Counters are what the broker counts as it happens, for /metrics. Every update is
// a handful of atomic adds; a node without an HTTP listener has no Counters (nil)
// and its request paths pay one nil check.
type Counters struct {
	// BytesIn and MessagesIn count what producers wrote (record batch bytes, records)
	// to partitions this broker leads; BytesOut the record bytes consumers fetched;
	// ReplicationBytesOut what followers fetched. As Kafka's BrokerTopicMetrics
	// (all topics).
	BytesIn             atomic.Uint64
	MessagesIn          atomic.Uint64
	BytesOut            atomic.Uint64
	ReplicationBytesOut atomic.Uint64
	// ReplicationBytesIn counts the record bytes this broker appended as a follower.
	ReplicationBytesIn atomic.Uint64

	requests [numRequestMetrics]requestMetric
}

// Request metric indices: one per API key, and Kafka's two names for Fetch
// (RequestMetrics tells consumer fetches from follower fetches).
const (
	fetchConsumerMetric = kmsg.MaxKey + 1 + iota
	fetchFollowerMetric
	numRequestMetrics
)

// maxVersions bounds the versions counted per request type (Kafka's largest is 18;
// a larger one would be counted as the last).
const maxVersions = 32

// numBuckets is the latency histogram's size: four buckets per doubling from 4 µs,
// the last one open-ended (at about 2.4 hours).
const numBuckets = 128

// requestMetric is one request type's counts: two atomic adds per request. The
// total is the sum of the versions' counts, read at scrape time.
type requestMetric struct {
	versions [maxVersions]atomic.Uint64
	buckets  [numBuckets]atomic.Uint64
}

// count is how many requests m counted.
func (m *requestMetric) count() uint64 {
	var n uint64
	for v := range m.versions {
		n += m.versions[v].Load()
	}
	return n
}

// RequestMetric is the metric index of a request with key; follower tells a replica
// fetch from a consumer's (Kafka's FetchFollower / FetchConsumer). -1 for a key
// outside kmsg's range.
func RequestMetric(key int16, follower bool) int16 {
	switch {
	case key < 0 || key > kmsg.MaxKey:
		return -1
	case key == int16(kmsg.Fetch) && follower:
		return fetchFollowerMetric
	case key == int16(kmsg.Fetch):
		return fetchConsumerMetric
	}
	return key
}

// requestName is Kafka's request tag value for a metric index.
func requestName(i int) string {
	switch i {
	case fetchConsumerMetric:
		return "FetchConsumer"
	case fetchFollowerMetric:
		return "FetchFollower"
	}
	return kmsg.NameForKey(int16(i))
}

// ObserveRequest counts one request of metric index i (RequestMetric) and version,
// answered d after it was read (Kafka's TotalTimeMs: read to sent).
func (c *Counters) ObserveRequest(i int16, version int16, d time.Duration) {
	if i < 0 || int(i) >= numRequestMetrics {
		return
	}
	m := &c.requests[i]
	m.versions[min(max(version, 0), maxVersions-1)].Add(1)
	m.buckets[bucketOf(uint64(max(d, 0)/time.Microsecond))].Add(1)
}

// bucketOf is the histogram bucket of a latency in µs: 0-3 exact, then four buckets
// per power of two (each at most 25 % wide).
func bucketOf(us uint64) int {
	if us < 4 {
		return int(us)
	}
	n := bits.Len64(us) // >= 3
	i := (n-2)*4 + int((us>>(n-3))&3)
	return min(i, numBuckets-1)
}

// bucketBounds is the range of bucket i in µs: [lo, hi).
func bucketBounds(i int) (lo, hi float64) {
	if i < 4 {
		return float64(i), float64(i + 1)
	}
	n, sub := i/4+2, uint64(i%4)
	return float64((4 + sub) << (n - 3)), float64((5 + sub) << (n - 3))
}

// histogram is a copy of one request metric's buckets.
type histogram [numBuckets]uint64

func (c *Counters) histogram(i int) (h histogram) {
	for b := range h {
		h[b] = c.requests[i].buckets[b].Load()
	}
	return h
}

// quantile estimates quantile q (0-1) in ms from h (interpolating inside a bucket);
// 0 when h is empty.
func (h *histogram) quantile(q float64) float64 {
	var total uint64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var cum float64
	for i, n := range h {
		if n == 0 {
			continue
		}
		if cum+float64(n) >= rank {
			lo, hi := bucketBounds(i)
			us := lo + (hi-lo)*(rank-cum)/float64(n)
			return math.Round(us) / 1000
		}
		cum += float64(n)
	}
	lo, _ := bucketBounds(numBuckets - 1)
	return lo / 1000
}

// ReplicationBytesInCounter is &c.ReplicationBytesIn, or nil when c is nil (no
// metrics kept), for the replica fetchers.
func (c *Counters) ReplicationBytesInCounter() *atomic.Uint64 {
	if c == nil {
		return nil
	}
	return &c.ReplicationBytesIn
}
