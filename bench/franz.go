package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopic creates a topic with -partitions partitions and waits until every broker's
// metadata shows a leader for each of them.
func createTopic(ctx context.Context, c *cluster, topic string, rf int16) error {
	return createTopicN(ctx, c, topic, *partitions, rf)
}

// createTopicN is createTopic with n partitions.
func createTopicN(ctx context.Context, c *cluster, topic string, n int, rf int16) error {
	cl, err := kgo.NewClient(c.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		r, err := adm.CreateTopic(ctx, int32(n), rf, nil, topic)
		if err == nil {
			err = r.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create %s on %s: %v", topic, c.kind, err)
		}
		time.Sleep(100 * time.Millisecond) // brokers still registering
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil && len(t.Partitions) == n {
				led := 0
				for _, p := range t.Partitions {
					if p.Leader >= 0 && p.Err == nil {
						led++
					}
				}
				if led == n {
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s on %s has no leaders: %v", topic, c.kind, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReplicaLogs waits until every broker of c reports (DescribeLogDirs) a log for
// each of its replicas of topic — n partitions of rf replicas in all: leaders in
// metadata come first, and followers may still be creating logs long after (at 10,000
// partitions, through most of a produce that started then).
func waitReplicaLogs(ctx context.Context, c *cluster, topic string, n, rf int) error {
	cl, err := kgo.NewClient(c.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := kadm.TopicsSet{}
	for p := range n {
		want.Add(topic, int32(p))
	}
	have := 0
	for {
		ds, err := adm.DescribeAllLogDirs(ctx, want)
		if err == nil {
			have = 0
			ds.Each(func(d kadm.DescribedLogDir) {
				if d.Err == nil {
					have += len(d.Topics[topic])
				}
			})
			if have >= n*rf {
				return nil
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s on %s: %d of %d replica logs created: %v", topic, c.kind, have, n*rf, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteTopic deletes a measured topic (errors only logged: the next run uses another).
func deleteTopic(c *cluster, topic string) {
	cl, err := kgo.NewClient(c.clientOpts()...)
	if err == nil {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var r kadm.DeleteTopicResponses
		if r, err = kadm.NewClient(cl).DeleteTopics(ctx, topic); err == nil {
			err = r.Error()
		}
	}
	if err != nil {
		raw("%s: deleting %s: %v", c.kind, topic, err)
	}
}

// latencies are sorted durations.
type latencies []time.Duration

func (l latencies) pct(q float64) float64 {
	if len(l) == 0 {
		return 0
	}
	i := int(q * float64(len(l)))
	if i >= len(l) {
		i = len(l) - 1
	}
	return float64(l[i].Microseconds()) / 1000
}

type produceResult struct {
	mbps, recsPerSec float64
	records, bytes   int       // what was sent (and acknowledged)
	lat              latencies // send to acknowledgement
	e2e              latencies // send to a consumer's receipt (rate-limited runs only)
}

// gb is the bytes produced, in GB.
func (r produceResult) gb() float64 { return float64(r.bytes) / 1e9 }

func (r produceResult) String() string {
	s := fmt.Sprintf("%.1f MB/s %.0f rec/s; produce latency p50 %.2f p99 %.2f p99.9 %.2f ms",
		r.mbps, r.recsPerSec, r.lat.pct(.5), r.lat.pct(.99), r.lat.pct(.999))
	if len(r.e2e) > 0 {
		s += fmt.Sprintf("; end-to-end p50 %.2f p99 %.2f p99.9 %.2f ms", r.e2e.pct(.5), r.e2e.pct(.99), r.e2e.pct(.999))
	}
	return s
}

// franzProduce writes n random values of -size bytes with franz-go and measures each
// record's latency from Produce to its acknowledgement. rate 0 produces as fast as the
// client can (records buffered up to franz-go's default limit), but stops sending after
// -run-time (a slow broker is measured on fewer records); rate > 0 paces sends at
// that many records a second, and then a consumer in a group-less client reads the topic
// at the same time and measures end-to-end latency (the first 8 bytes of each value are
// its send time).
func franzProduce(c *cluster, topic string, acks kgo.Acks, n int, rate float64) (produceResult, error) {
	return franzProduceValues(c, topic, acks, n, rate, randomValues(), kgo.NoCompression())
}

// franzProduceValues is franzProduce with the given values (cycled; at least 8 bytes
// each) and batch compression.
func franzProduceValues(c *cluster, topic string, acks kgo.Acks, n int, rate float64, values [][]byte, codec kgo.CompressionCodec) (produceResult, error) {
	opts := c.clientOpts(kgo.RequiredAcks(acks), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(codec))
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return produceResult{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Warm up: metadata, connections, producer id.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		return produceResult{}, err
	}
	var e2e latencies
	var consumed chan error
	if rate > 0 {
		e2e = make(latencies, 0, n)
		consumed = make(chan error, 1)
		started := make(chan struct{})
		go func() { consumed <- consumeE2E(ctx, c, topic, n, &e2e, started) }()
		<-started
	}
	lat := make(latencies, n)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	sent := 0
	for i := 0; i < n; i++ {
		if rate == 0 && i%256 == 0 && *runTime > 0 && time.Since(start) > *runTime {
			break
		}
		sent++
		wg.Add(1)
		if rate > 0 {
			if due := start.Add(time.Duration(float64(i) / rate * float64(time.Second))); time.Until(due) > 0 {
				time.Sleep(time.Until(due))
			}
		}
		v := values[i%len(values)]
		t := time.Now()
		if rate > 0 {
			v = append([]byte(nil), v...)
			binary.BigEndian.PutUint64(v, uint64(t.UnixNano()))
		}
		i := i
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(t)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if e, _ := firstErr.Load().(error); e != nil {
		return produceResult{}, e
	}
	if consumed != nil {
		if err := <-consumed; err != nil {
			return produceResult{}, err
		}
	}
	lat = lat[:sent]
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(e2e, func(i, j int) bool { return e2e[i] < e2e[j] })
	bytes := 0
	for i := 0; i < sent; i++ {
		bytes += len(values[i%len(values)])
	}
	return produceResult{
		mbps:       float64(bytes) / el.Seconds() / 1e6,
		recsPerSec: float64(sent) / el.Seconds(),
		records:    sent,
		bytes:      bytes,
		lat:        lat,
		e2e:        e2e,
	}, nil
}

// franzProduceClients is a peak produce of n random values of -size bytes by that many
// franz-go producers at once, each its own client (its own connections and producer id)
// sending its share; the run stops sending after -run-time. Only throughput is kept.
func franzProduceClients(c *cluster, topic string, n, clients int) (produceResult, error) {
	values := randomValues()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cls := make([]*kgo.Client, clients)
	for i := range cls {
		cl, err := kgo.NewClient(c.clientOpts(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))...)
		if err != nil {
			return produceResult{}, err
		}
		defer cl.Close()
		// Warm up: metadata, connections, producer id.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			return produceResult{}, err
		}
		cls[i] = cl
	}
	var sent, bytes atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i, cl := range cls {
		share := n / clients
		if i < n%clients {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var done sync.WaitGroup
			for j := 0; j < share; j++ {
				if j%256 == 0 && *runTime > 0 && time.Since(start) > *runTime {
					break
				}
				v := values[(i+j)%len(values)]
				done.Add(1)
				cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
					} else {
						sent.Add(1)
						bytes.Add(int64(len(v)))
					}
					done.Done()
				})
			}
			done.Wait()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if e, _ := firstErr.Load().(error); e != nil {
		return produceResult{}, e
	}
	return produceResult{
		mbps:       float64(bytes.Load()) / el.Seconds() / 1e6,
		recsPerSec: float64(sent.Load()) / el.Seconds(),
		records:    int(sent.Load()), // besides each client's warm-up record
		bytes:      int(bytes.Load()),
	}, nil
}

// randomValues are 1,024 values of -size random bytes: what no codec can shrink.
func randomValues() [][]byte { return randomValuesOf(*size) }

// randomValuesOf are values of size random bytes (at least 8): 1,024 of them, or fewer
// of large ones (at most about 16 MiB in all).
func randomValuesOf(size int) [][]byte {
	size = max(size, 8)
	values := make([][]byte, max(1, min(1024, 16<<20/size)))
	for i := range values {
		values[i] = make([]byte, size)
		rand.Read(values[i])
	}
	return values
}

// consumeE2E reads the topic from its start until n timed records arrived.
func consumeE2E(ctx context.Context, c *cluster, topic string, n int, out *latencies, started chan<- struct{}) error {
	cl, err := kgo.NewClient(c.clientOpts(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		close(started)
		return err
	}
	defer cl.Close()
	// Join the fetch loop before the producer starts so the first records are not read
	// from a backlog.
	cl.PollRecords(ctx, -1)
	close(started)
	for len(*out) < n {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		if ctx.Err() != nil {
			return fmt.Errorf("end-to-end consumer read %d of %d: %v", len(*out), n, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) < 8 || string(r.Value) == "warm" {
				return
			}
			*out = append(*out, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))))
		})
	}
	return nil
}

// franzConsume reads n records of the topic from its start and returns MB/s.
func franzConsume(c *cluster, topic string, n int) (float64, error) {
	cl, err := kgo.NewClient(c.clientOpts(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got, bytes := 0, 0
	start := time.Now()
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("consumed %d of %d: %v", got, n, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) { got++; bytes += len(r.Value) })
	}
	return float64(bytes) / time.Since(start).Seconds() / 1e6, nil
}

// franzGroupConsume starts consumers franz-go consumers at once, member i in group
// i mod groups, each group reading topic from its start, and returns the MB/s all of
// them received from the first client's creation until every group had read n
// records (records a rebalance delivers twice count twice).
func franzGroupConsume(c *cluster, topic string, groups, consumers, n int) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got := make([]atomic.Int64, groups)
	var bytes atomic.Int64
	var left atomic.Int64 // groups still reading
	left.Store(int64(groups))
	allRead := make(chan struct{})
	errc := make(chan error, consumers)
	start := time.Now()
	cls := make([]*kgo.Client, 0, consumers)
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range cls {
			wg.Add(1)
			go func() { defer wg.Done(); cl.Close() }()
		}
		wg.Wait()
	}()
	for i := 0; i < consumers; i++ {
		g := i % groups
		cl, err := kgo.NewClient(c.clientOpts(kgo.ConsumeTopics(topic), kgo.ConsumerGroup(fmt.Sprintf("%s-g%d", topic, g)),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			return 0, err
		}
		cls = append(cls, cl)
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				if errs := fs.Errors(); len(errs) > 0 {
					errc <- errs[0].Err
					return
				}
				var recs, b int64
				fs.EachRecord(func(r *kgo.Record) { recs++; b += int64(len(r.Value)) })
				bytes.Add(b)
				if before := got[g].Add(recs) - recs; before < int64(n) && before+recs >= int64(n) && left.Add(-1) == 0 {
					close(allRead)
				}
			}
		}()
	}
	select {
	case <-allRead:
	case err := <-errc:
		return 0, err
	case <-ctx.Done():
		return 0, fmt.Errorf("not every group read %d records: %v", n, ctx.Err())
	}
	mbps := float64(bytes.Load()) / time.Since(start).Seconds() / 1e6
	cancel()
	return mbps, nil
}
