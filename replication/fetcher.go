package replication

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/internal/lograte"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

// FetcherConfig holds the replica.fetch.* settings.
type FetcherConfig struct {
	LocalID     int32
	NumFetchers int   // num.replica.fetchers (1)
	WaitMaxMs   int32 // replica.fetch.wait.max.ms (500)
	MinBytes    int32 // replica.fetch.min.bytes (1)
	MaxBytes    int32 // replica.fetch.max.bytes (1048576): per partition
	// ResponseMaxBytes is replica.fetch.response.max.bytes (10485760).
	ResponseMaxBytes int32
	// BackoffMs is replica.fetch.backoff.ms (1000): the pause after an error.
	BackoffMs int32
	// BrokerEpoch returns this broker's current epoch, sent with every fetch.
	BrokerEpoch func() int64
	// Endpoint returns the address of a broker's inter-broker listener.
	Endpoint func(brokerID int32) (string, bool)
	// Dial connects to a leader (plain TCP when nil); the broker sets it to a TLS
	// dialer when the inter-broker listener is SSL.
	Dial   DialFunc
	Logger zerolog.Logger
	// OnPanic, when set, is told of a panic recovered while a fetch response was
	// processed (logged here with its stack; the fetcher reconnects and goes on).
	OnPanic func()
	// Throttle is the follower side of the replication throttles (nil: none).
	Throttle *ReplicationThrottle
	// BytesIn, when set, counts the record bytes appended as follower (Kafka's
	// ReplicationBytesInPerSec).
	BytesIn *atomic.Uint64
}

// FollowedPartition is a partition to replicate from its leader.
type FollowedPartition struct {
	P           *partition.Partition
	TopicID     [16]byte
	Leader      int32
	LeaderEpoch int32
}

// fetchState is a fetcher's view of one partition (Kafka's PartitionFetchState).
type fetchState struct {
	FollowedPartition
	fetchOffset int64
	// delayedUntil: after an error the partition sits out until then.
	delayedUntil time.Time
	// resetFailures counts failed out-of-range resets in a row (out_of_range.go):
	// only the first is logged above debug.
	resetFailures int
	// caughtUp: the last answer's HW was within the local log (Kafka's
	// PartitionFetchState.isReplicaInSync); a throttle never holds such a partition.
	caughtUp bool
}

type fetcherKey struct {
	leader int32
	id     int
}

// FetcherManager keeps one fetcher goroutine per (leader broker, fetcher id), as
// Kafka's ReplicaFetcherManager: the fetcher id of a partition is
// abs(31·hash(topic) + partition) mod num.replica.fetchers, so one fetcher serves all
// the partitions it follows from one leader.
type FetcherManager struct {
	cfg FetcherConfig
	// onHWMoved is called after a fetch raised a follower's HW (nil: nothing).
	onHWMoved func(storage.TopicPartition)

	mu       sync.Mutex
	fetchers map[fetcherKey]*fetcher
	closed   bool
}

// NewFetcherManager returns a manager with no fetchers.
func NewFetcherManager(cfg FetcherConfig, onHWMoved func(storage.TopicPartition)) *FetcherManager {
	if cfg.NumFetchers <= 0 {
		cfg.NumFetchers = 1
	}
	return &FetcherManager{cfg: cfg, onHWMoved: onHWMoved, fetchers: map[fetcherKey]*fetcher{}}
}

// javaStringHash is Java's String.hashCode over the UTF-16 code units of s.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// FetcherID is Kafka's AbstractFetcherManager.getFetcherId.
func FetcherID(tp storage.TopicPartition, numFetchers int) int {
	h := 31*javaStringHash(tp.Topic) + tp.Partition
	return int(h&0x7fffffff) % numFetchers // Utils.abs
}

// AddPartitions starts following parts from their leaders, each from its initial fetch
// offset (Partition.InitialFetchOffset). A partition already followed from the same
// leader and epoch keeps its position.
func (m *FetcherManager) AddPartitions(parts []FollowedPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, fp := range parts {
		tp := fp.P.TP
		key := fetcherKey{leader: fp.Leader, id: FetcherID(tp, m.cfg.NumFetchers)}
		// Leaving another leader's fetcher first (leadership moved).
		for k, f := range m.fetchers {
			if k != key {
				f.remove(tp)
			}
		}
		f := m.fetchers[key]
		if f == nil {
			f = newFetcher(m, fp.Leader, key.id)
			m.fetchers[key] = f
			go f.run()
		}
		f.add(fp)
	}
}

// RemovePartitions stops following tps (this broker leads them now, or no longer hosts
// them).
func (m *FetcherManager) RemovePartitions(tps []storage.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.fetchers {
		for _, tp := range tps {
			f.remove(tp)
		}
	}
}

// Close stops every fetcher and waits for them.
func (m *FetcherManager) Close() {
	m.mu.Lock()
	m.closed = true
	fs := m.fetchers
	m.fetchers = map[fetcherKey]*fetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
}

// fetcher is one ReplicaFetcherThread: its loop truncates what needs truncating, then
// fetches every partition it follows from its leader in one request — in a fetch
// session (fetch_session.go), so once the session is open a request names only the
// partitions whose position changed.
type fetcher struct {
	m      *FetcherManager
	leader int32
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	// session and next are used by the run goroutine only.
	session *fetchSessionHandler
	next    []wantedPartition // reused by every buildFetch

	mu    sync.Mutex
	parts map[storage.TopicPartition]*fetchState
	// appendFailures bounds the lines of partitions whose appends keep failing (a
	// storage error is sticky; each is retried every backoff): the first, then one
	// per 10 s with a count (issue 15).
	appendFailures lograte.Limiter
	// refusals bounds the lines of whole fetches the leader refuses (an injected
	// fault, an authorization error): one per backoff otherwise.
	refusals lograte.Limiter
}

func newFetcher(m *FetcherManager, leader int32, id int) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &fetcher{
		m: m, leader: leader, ctx: ctx, cancel: cancel,
		log:  m.cfg.Logger.With().Str("fetcher", fmt.Sprintf("ReplicaFetcherThread-%d-%d", id, leader)).Logger(),
		done: make(chan struct{}), wake: make(chan struct{}, 1),
		parts:   map[storage.TopicPartition]*fetchState{},
		session: newFetchSessionHandler(),
	}
}

func (f *fetcher) add(fp FollowedPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.parts[fp.P.TP]; cur != nil && cur.Leader == fp.Leader && cur.LeaderEpoch == fp.LeaderEpoch {
		return
	}
	off, err := fp.P.InitialFetchOffset()
	if err != nil {
		f.log.Error().Err(err).Str("partition", fp.P.TP.String()).Msg("cannot start following")
		return
	}
	f.parts[fp.P.TP] = &fetchState{FollowedPartition: fp, fetchOffset: off}
	f.log.Info().Str("partition", fp.P.TP.String()).Int64("fetch_offset", off).Int32("leader_epoch", fp.LeaderEpoch).
		Msg("following leader")
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(tp storage.TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *fetcher) run() {
	defer close(f.done)
	var ep *LeaderEndpoint
	defer func() {
		if ep != nil {
			ep.Close()
		}
	}()
	backoff := time.Duration(f.m.cfg.BackoffMs) * time.Millisecond
	for f.ctx.Err() == nil {
		req := f.buildFetch()
		if req == nil {
			select { // nothing to fetch: wait for partitions
			case <-f.wake:
			case <-f.ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		if ep == nil {
			addr, ok := f.m.cfg.Endpoint(f.leader)
			if !ok {
				f.session.handleError() // built, never sent
				f.sleep(backoff)
				continue
			}
			ep = NewLeaderEndpoint(addr, fmt.Sprintf("broker-%d-fetcher", f.m.cfg.LocalID), f.m.cfg.ResponseMaxBytes+(1<<20))
			// A timeout on the endpoint rather than a context per fetch: one fewer
			// timer and cancel registration for every fetch.
			ep.SetTimeout(time.Duration(f.m.cfg.WaitMaxMs)*time.Millisecond + 30*time.Second)
			ep.SetDial(f.m.cfg.Dial)
		}
		// The response's records alias the endpoint's buffer: they are appended to
		// the log before the next fetch.
		resp, err := ep.RequestReusing(f.ctx, req)
		if err != nil {
			f.session.handleError()
			if f.ctx.Err() == nil {
				f.log.Warn().Err(err).Msg("fetch from leader failed")
				ep.Close()
				ep = nil
				f.sleep(backoff)
			}
			continue
		}
		if !f.processRecovered(ep, resp.(*kmsg.FetchResponse)) {
			f.session.handleError()
			ep.Close()
			ep = nil
			f.sleep(backoff)
		}
	}
}

// processRecovered is processResponse recovering a panic (a bug, or a response no
// leader should send): logged with its stack and counted; false tells the loop to
// reconnect after a backoff instead of taking the broker down.
func (f *fetcher) processRecovered(ep *LeaderEndpoint, resp *kmsg.FetchResponse) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			f.log.Error().Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).
				Msg("recovered from a panic while processing a fetch response; this is a bug")
			if f.m.cfg.OnPanic != nil {
				f.m.cfg.OnPanic()
			}
			ok = false
		}
	}()
	f.processResponse(ep, resp)
	return true
}

func (f *fetcher) sleep(d time.Duration) {
	select {
	case <-f.ctx.Done():
	case <-time.After(d):
	}
}

// buildFetch makes the fetch for every partition not sitting out a backoff, as Kafka's
// RemoteLeaderEndPoint.buildFetch: fetch offset, own log start offset, current leader
// epoch and last fetched epoch per partition; replica id and broker epoch on the request.
// The session handler sends all of them (a full fetch) or only those that changed (an
// incremental one); a partition sitting out a backoff leaves the session (forgotten),
// so the leader neither reads it nor answers its error again, and rejoins it after.
// It returns nil when there is nothing to send.
func (f *fetcher) buildFetch() *kmsg.FetchRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	req := kmsg.NewPtrFetchRequest()
	cfg := f.m.cfg
	req.ReplicaID = cfg.LocalID
	req.ReplicaState.ID, req.ReplicaState.Epoch = cfg.LocalID, cfg.BrokerEpoch()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = cfg.WaitMaxMs, cfg.MinBytes, cfg.ResponseMaxBytes
	next := f.next[:0]
	for _, st := range f.parts {
		if now.Before(st.delayedUntil) {
			continue
		}
		if st.P.Log.StorageError() != nil {
			// Its log dir failed: it cannot append, and a fetch at its log end would
			// tell the leader it is caught up, so that the leader would keep trying to
			// take it back into the ISR (and hold its high watermark for it meanwhile).
			// Kafka stops the fetcher of an offline partition (handleLogDirFailure).
			continue
		}
		if th := cfg.Throttle; th != nil && !st.caughtUp && th.FollowerThrottled(st.P.TP) && th.Follower.Exceeded(now) {
			continue // throttled (throttle.go): left out until the rate falls under the bound
		}
		next = append(next, wantedPartition{TP: st.P.TP, Data: fetchPartitionData{
			TopicID:            st.TopicID,
			FetchOffset:        st.fetchOffset,
			LogStartOffset:     st.P.Log.LogStartOffset(),
			CurrentLeaderEpoch: st.LeaderEpoch,
			LastFetchedEpoch:   st.P.LastFetchedEpoch(),
			MaxBytes:           cfg.MaxBytes,
		}})
	}
	f.next = next
	if !f.session.build(req, next) {
		return nil
	}
	return req
}

// processResponse applies one fetch response, as Kafka's processFetchRequest: records
// are appended as they are, the leader's HW adopted up to the local LEO, a diverging
// epoch answered by truncation, and errors put the partition out for a backoff until
// the metadata tells where to fetch from. A partition of the session missing from an
// incremental answer had no news. An answer the session handler refuses is dropped and
// the next fetch is full: at once after a session error (the full fetch cannot fail
// that way, so this is one retry, not a loop), after the backoff for other errors.
func (f *fetcher) processResponse(ep *LeaderEndpoint, resp *kmsg.FetchResponse) {
	if !f.session.handleResponse(resp) {
		switch resp.ErrorCode {
		case 0:
			f.log.Info().Msg("the leader's fetch response names partitions outside the fetch session; starting a new session")
		case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
			f.log.Info().Str("error", kerr.ErrorForCode(resp.ErrorCode).Error()).Msg("fetch session lost on the leader; starting a new one")
		default:
			if ok, n := f.refusals.Fail(time.Now()); ok {
				f.log.Warn().Str("error", kerr.ErrorForCode(resp.ErrorCode).Error()).
					Int("refusals_not_logged", n).Msg("fetch refused by the leader")
			}
			f.sleep(time.Duration(f.m.cfg.BackoffMs) * time.Millisecond)
		}
		return
	}
	if ended, n := f.refusals.OK(); ended {
		f.log.Info().Int("refusals", n).Msg("the leader answers fetches again")
	}
	var outOfRange []*fetchState
	f.mu.Lock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := storage.TopicPartition{Topic: f.session.responseTopic(&t), Partition: rp.Partition}
			st := f.parts[tp]
			if st == nil {
				continue // removed meanwhile
			}
			if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
				outOfRange = append(outOfRange, st)
				continue
			}
			f.processPartition(st, &rp)
		}
	}
	f.mu.Unlock()
	// Resets ask the leader first: not while holding the partition map, which
	// metadata changes (AddPartitions, RemovePartitions) need.
	for _, st := range outOfRange {
		f.handleOutOfRange(ep, st)
	}
}

// processPartition applies one partition's answer. Lock should be held.
func (f *fetcher) processPartition(st *fetchState, rp *kmsg.FetchResponseTopicPartition) {
	backoff := time.Duration(f.m.cfg.BackoffMs) * time.Millisecond
	p := st.P
	switch rp.ErrorCode {
	case 0:
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_*: wait
		// for the metadata to say where to fetch from.
		f.log.Debug().Str("partition", p.TP.String()).Str("error", kerr.ErrorForCode(rp.ErrorCode).Error()).Msg("partition fetch failed")
		st.delayedUntil = time.Now().Add(backoff)
		return
	}
	if rp.DivergingEpoch.Epoch >= 0 && rp.DivergingEpoch.EndOffset >= 0 {
		leo, err := p.TruncateOnDivergence(rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		if err != nil {
			f.log.Error().Err(err).Str("partition", p.TP.String()).Msg("truncation failed")
			st.delayedUntil = time.Now().Add(backoff)
			return
		}
		st.fetchOffset = leo
		return
	}
	records := wholeBatches(rp.RecordBatches)
	hwBefore := p.HighWatermark()
	if _, err := p.AppendAsFollower(records, rp.HighWatermark); err != nil {
		if ok, n := f.appendFailures.Fail(time.Now()); ok {
			f.log.Error().Err(err).Str("partition", p.TP.String()).Int64("fetch_offset", st.fetchOffset).
				Int("failures_not_logged", n).Msg("appending fetched records failed")
		}
		st.delayedUntil = time.Now().Add(backoff)
		return
	}
	if rp.LogStartOffset > p.Log.LogStartOffset() && rp.LogStartOffset <= p.Log.LogEndOffset() {
		if _, err := p.Log.MaybeIncrementLogStartOffset(rp.LogStartOffset); err != nil {
			f.log.Warn().Err(err).Str("partition", p.TP.String()).Msg("moving the log start offset")
		}
	}
	if c := f.m.cfg.BytesIn; c != nil {
		c.Add(uint64(len(records)))
	}
	st.fetchOffset = p.Log.LogEndOffset()
	st.caughtUp = st.fetchOffset >= rp.HighWatermark
	if th := f.m.cfg.Throttle; th != nil && th.FollowerThrottled(p.TP) {
		th.Follower.Record(int64(len(records)), time.Now())
	}
	if p.HighWatermark() > hwBefore && f.m.onHWMoved != nil {
		f.m.onHWMoved(p.TP)
	}
}

// wholeBatches keeps the complete batches at the front of fetched records: a leader may
// cut the last batch at the size limit, and followers, like clients, discard it. What
// follows a corrupt batch is dropped too; the log's own checks refuse corrupt batches.
func wholeBatches(b []byte) []byte {
	n := 0
	_ = protocol.IterateBatches(b, func(batch protocol.Batch) error {
		n += len(batch)
		return nil
	})
	return b[:n]
}
