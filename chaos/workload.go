package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The workload's topics: idempotent producers write topicA, transactional ones topicT;
// both have three partitions, replication factor 3 and min.insync.replicas=2.
const (
	topicA     = "chaos-a"
	topicT     = "chaos-t"
	partitions = 3
)

var topics = []string{topicA, topicT}

// outcome is what a transaction's producer knows of its end.
type outcome int

const (
	txnOpen      outcome = iota
	txnCommitted         // EndTransaction(commit) returned nil
	txnAborted           // commit was never asked for: the transaction cannot have committed
	txnUnknown           // EndTransaction(commit) failed: committed or aborted, all or nothing
)

func (o outcome) String() string {
	return [...]string{"open", "committed", "aborted", "unknown"}[o]
}

// write is one record a producer sent. Values are unique across a run.
type write struct {
	value     string
	topic     string
	partition int32
	txn       int // index into history.txns, -1 for an idempotent write
	acked     time.Time
	offset    int64 // the acknowledged offset; -1 unless acked
	ts        int64 // the record's CreateTime (ms) as its producer set it; set with an ack
	err       error // the producer's error, for a write not acknowledged
	done      bool
}

type txn struct {
	producer string
	writes   []*write
	outcome  outcome
}

// read is one record a consumer polled.
type read struct {
	reader    string
	committed bool // read_committed
	epoch     int  // the reader's assignment generation (group consumers)
	topic     string
	partition int32
	offset    int64
	value     string
}

// history is everything the clients did, for the checker.
type history struct {
	mu      sync.Mutex
	writes  []*write
	byValue map[string]*write
	txns    []*txn
	reads   []read
	errs    map[string]int // client errors by kind, for the report
}

func newHistory() *history {
	return &history{byValue: map[string]*write{}, errs: map[string]int{}}
}

func (h *history) addWrite(w *write) {
	h.mu.Lock()
	h.writes = append(h.writes, w)
	h.byValue[w.value] = w
	h.mu.Unlock()
}

func (h *history) ack(w *write, r *kgo.Record, err error) {
	h.mu.Lock()
	w.done = true
	if err == nil {
		w.offset, w.acked, w.ts = r.Offset, time.Now(), r.Timestamp.UnixMilli()
	} else {
		w.err = err
		h.errs[errKind(err)]++
	}
	h.mu.Unlock()
}

func (h *history) noteErr(err error) {
	h.mu.Lock()
	h.errs[errKind(err)]++
	h.mu.Unlock()
}

// errKind shortens an error to a bounded key for the error census.
func errKind(err error) string {
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// workload runs the producers and consumers of one run.
type workload struct {
	seeds []string
	hist  *history
	rng   *rand.Rand // seeds the transactional producers' choices
	run   string     // makes group and transactional ids unique per run

	stopProduce chan struct{}
	stopConsume chan struct{}
	producers   sync.WaitGroup
	consumers   sync.WaitGroup
}

const (
	idempotentProducers = 2
	txnProducers        = 2
	writeInterval       = 5 * time.Millisecond // per idempotent producer
	maxInFlight         = 16                   // per idempotent producer and partition
	produceTimeout      = 5 * time.Second      // the acks=all wait a produce request asks for
	// requestOverhead is how much longer than its own timeout a producer waits for an
	// answer before it gives up on the connection (franz-go's default is 10 s): short,
	// so a paused or cut-off leader makes producers retry elsewhere (idempotent
	// retries, which must not duplicate) instead of waiting for it to come back.
	requestOverhead = 2 * time.Second
)

func startWorkload(seeds []string, seed uint64, run string) *workload {
	w := &workload{
		seeds: seeds, hist: newHistory(), rng: rand.New(rand.NewPCG(seed, 0x6b61666b61)), run: run,
		stopProduce: make(chan struct{}), stopConsume: make(chan struct{}),
	}
	for i := range idempotentProducers {
		w.producers.Add(1)
		go w.idempotent(i)
	}
	for i := range txnProducers {
		w.producers.Add(1)
		go w.transactional(i, rand.New(rand.NewPCG(w.rng.Uint64(), uint64(i))))
	}
	for i := range 2 {
		w.consumers.Add(1)
		go w.groupConsumer(fmt.Sprintf("group-%d", i))
	}
	w.consumers.Add(2)
	go w.assignedConsumer("assign-ru", false)
	go w.assignedConsumer("assign-rc", true)
	return w
}

// stop ends production (waiting for every write's answer, bounded by the producers'
// delivery timeout), then consumption.
func (w *workload) stop() {
	close(w.stopProduce)
	w.producers.Wait()
	close(w.stopConsume)
	w.consumers.Wait()
}

func (w *workload) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.seeds...)}, opts...)...)
	if err != nil {
		panic(err) // only option errors, which are the program's
	}
	return cl
}

// idempotent writes unique values round robin over topicA's partitions with acks=all
// (franz-go is idempotent by default), at most maxInFlight unanswered per partition: a
// partition that does not answer is skipped, so the others keep their pace and the
// acknowledgements per partition show what the fault cost.
func (w *workload) idempotent(i int) {
	defer w.producers.Done()
	cl := w.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(20*time.Second), kgo.ProduceRequestTimeout(produceTimeout), kgo.RequestTimeoutOverhead(requestOverhead), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	var sems [partitions]chan struct{}
	for p := range sems {
		sems[p] = make(chan struct{}, maxInFlight)
	}
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	seq := 0
	for n := 0; ; n++ {
		select {
		case <-w.stopProduce:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = cl.Flush(ctx)
			cancel()
			return
		case <-tick.C:
		}
		p := n % partitions
		select {
		case sems[p] <- struct{}{}:
		default:
			continue // this partition is not answering; the next tick tries the next one
		}
		wr := &write{value: fmt.Sprintf("i%d-%d", i, seq), topic: topicA, partition: int32(p), txn: -1, offset: -1}
		seq++
		w.hist.addWrite(wr)
		cl.Produce(context.Background(), &kgo.Record{Topic: wr.topic, Partition: wr.partition, Value: []byte(wr.value)},
			func(r *kgo.Record, err error) {
				w.hist.ack(wr, r, err)
				<-sems[p]
			})
	}
}

// transactional runs transactions of one to four records over topicT's partitions,
// committing about 70% and aborting the rest (the choice from the run's seed).
func (w *workload) transactional(i int, rng *rand.Rand) {
	defer w.producers.Done()
	name := fmt.Sprintf("txn-%d", i)
	newClient := func() *kgo.Client {
		return w.client(kgo.TransactionalID(txnID(w.run, i)), kgo.TransactionTimeout(txnTimeout),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(15*time.Second), kgo.ProduceRequestTimeout(produceTimeout), kgo.RequestTimeoutOverhead(requestOverhead), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	cl := newClient()
	defer func() { cl.Close() }()
	fresh := func(err error) {
		w.hist.noteErr(err)
		cl.Close()
		cl = newClient()
	}
	for n := 0; ; n++ {
		select {
		case <-w.stopProduce:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if err := cl.BeginTransaction(); err != nil {
			fresh(err)
			continue
		}
		t := &txn{producer: name}
		w.hist.mu.Lock()
		ti := len(w.hist.txns)
		w.hist.txns = append(w.hist.txns, t)
		w.hist.mu.Unlock()
		var recs []*kgo.Record
		writeOf := map[*kgo.Record]*write{}
		for j := range 1 + rng.IntN(4) {
			wr := &write{value: fmt.Sprintf("t%d-%d-%d", i, n, j), topic: topicT, partition: int32(rng.IntN(partitions)), txn: ti, offset: -1}
			w.hist.mu.Lock()
			t.writes = append(t.writes, wr)
			w.hist.mu.Unlock()
			w.hist.addWrite(wr)
			rec := &kgo.Record{Topic: wr.topic, Partition: wr.partition, Value: []byte(wr.value)}
			writeOf[rec] = wr
			recs = append(recs, rec)
		}
		wantCommit := rng.Float64() < 0.7
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := cl.ProduceSync(ctx, recs...)
		cancel()
		for _, r := range res { // in the order the answers came, not the records'
			w.hist.ack(writeOf[r.Record], r.Record, r.Err)
		}
		commit := wantCommit && res.FirstErr() == nil
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		cancel()
		w.hist.mu.Lock()
		switch {
		case commit && err == nil:
			t.outcome = txnCommitted
		case commit:
			t.outcome = txnUnknown
		default:
			t.outcome = txnAborted // commit never asked for
		}
		w.hist.mu.Unlock()
		if err != nil {
			fresh(err)
		}
	}
}

// txnID is transactional producer i's id in run.
func txnID(run string, i int) string { return fmt.Sprintf("chaos-%s-txn-%d", run, i) }

// groupConsumer reads both topics read_committed in a consumer group, committing
// offsets automatically. Rebalances run only between polls, and each one starts a new
// epoch: offsets must rise within an epoch, and may go back to the committed offset
// across one.
func (w *workload) groupConsumer(name string) {
	defer w.consumers.Done()
	var epoch atomic.Int64
	bump := func(context.Context, *kgo.Client, map[string][]int32) { epoch.Add(1) }
	cl := w.client(kgo.ConsumerGroup("chaos-"+w.run), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(), kgo.OnPartitionsAssigned(bump), kgo.OnPartitionsRevoked(bump),
		kgo.OnPartitionsLost(bump), kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	w.poll(cl, name, true, func() int { return int(epoch.Load()) })
}

// assignedConsumer reads every partition of both topics from the start, no group.
func (w *workload) assignedConsumer(name string, committed bool) {
	defer w.consumers.Done()
	parts := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		parts[t] = map[int32]kgo.Offset{}
		for p := range int32(partitions) {
			parts[t][p] = kgo.NewOffset().AtStart()
		}
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := w.client(kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	w.poll(cl, name, committed, func() int { return 0 })
}

func (w *workload) poll(cl *kgo.Client, name string, committed bool, epoch func() int) {
	for {
		select {
		case <-w.stopConsume:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		e := epoch()
		var rs []read
		fs.EachRecord(func(r *kgo.Record) {
			rs = append(rs, read{reader: name, committed: committed, epoch: e, topic: r.Topic,
				partition: r.Partition, offset: r.Offset, value: string(r.Value)})
		})
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded {
				w.hist.noteErr(err)
			}
		})
		w.hist.mu.Lock()
		w.hist.reads = append(w.hist.reads, rs...)
		w.hist.mu.Unlock()
		cl.AllowRebalance()
	}
}
