package coordinator

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// markerLog records the markers a TxnCoordinator writes; failures fail the next ones.
type markerLog struct {
	mu       sync.Mutex
	markers  []string
	failures int
}

func (m *markerLog) WriteMarker(tp TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool, _ int16) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures > 0 {
		m.failures--
		return kerr.NotLeaderForPartition
	}
	m.markers = append(m.markers, fmt.Sprintf("%s-%d pid=%d epoch=%d ce=%d commit=%v", tp.Topic, tp.Partition, pid, epoch, coordEpoch, commit))
	return nil
}

func (m *markerLog) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.markers
	m.markers = nil
	return out
}

func startTxnCoordinator(t *testing.T, log *memLog, markers *markerLog, now func() time.Time) *TxnCoordinator {
	t.Helper()
	return startTxnCoordinatorTV(t, log, markers, now, 0)
}

// startTxnCoordinatorTV is startTxnCoordinator in a cluster at transaction.version tv.
func startTxnCoordinatorTV(t *testing.T, log *memLog, markers *markerLog, now func() time.Time, tv int16) *TxnCoordinator {
	t.Helper()
	md := fakeMetadata{TransactionStateTopic: 4, OffsetsTopic: 4, "t": 3}
	next := int64(1000)
	var mu sync.Mutex
	alloc := func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next - 1, nil
	}
	cfg := TxnConfig{NumPartitions: 4, MaxTimeout: 15 * time.Minute, MarkerRetryBackoff: time.Millisecond, MarkerWait: 5 * time.Second,
		TransactionVersion: func() int16 { return tv }}
	c := NewTxnCoordinator(cfg, log, md, markers, alloc, func(g string) int32 { return PartitionFor(g, 4) }, now, zerolog.Nop())
	t.Cleanup(c.Close)
	for p := int32(0); p < 4; p++ {
		c.BecomeLeader(p, 7)
	}
	waitLoaded(t, c.Loaded, 4)
	return c
}

func waitState(t *testing.T, c *TxnCoordinator, id string, want kmsg.TransactionState) *TxnMetadata {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := c.Transaction(id)
		if m != nil && m.State == want {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %+v, want %v", id, m, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTxnRecordRoundTrip(t *testing.T) {
	m := &TxnMetadata{TransactionalID: "x", ProducerID: 5, LastProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: -1,
		NextProducerID: -1, TimeoutMs: 1000, State: kmsg.TransactionStateOngoing, StartTimestamp: 10, LastUpdateTimestamp: 20,
		Partitions: map[TopicPartition]struct{}{{"b", 1}: {}, {"a", 2}: {}, {"a", 0}: {}}}
	r := TxnRecord(m)
	id, got, err := DecodeTxnRecord(r.Key, r.Value)
	if err != nil || id != "x" {
		t.Fatal(id, err)
	}
	got.done, m.done = nil, nil
	if fmt.Sprint(*got) != fmt.Sprint(*m) {
		t.Fatalf("round trip:\n%+v\n%+v", *got, *m)
	}
	// Kafka's layout: key version 0, value version 0 with topics grouped.
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil || v.Version != 0 || len(v.Topics) != 2 || v.Topics[0].Topic != "a" {
		t.Fatalf("value %+v %v", v, err)
	}
	// At transaction.version >= 1 the value is v1 (flexible): the previous and next
	// producer ids and the client's transaction version survive the round trip.
	m.LastProducerID, m.NextProducerID, m.ClientTV = 4, 6, 2
	r1 := TxnRecordVersion(m, 2)
	if err := v.ReadFrom(r1.Value); err != nil || v.Version != 1 || v.ClientTransactionVersion != 2 || v.NextProducerID != 6 {
		t.Fatalf("value v1 %+v %v", v, err)
	}
	if _, got, err = DecodeTxnRecord(r1.Key, r1.Value); err != nil || fmt.Sprint(*got) != fmt.Sprint(*m) {
		t.Fatalf("v1 round trip:\n%+v\n%+v %v", *got, *m, err)
	}
	if _, tomb, err := DecodeTxnRecord(r.Key, nil); tomb != nil || err != nil {
		t.Fatal("tombstone")
	}
	if _, _, err := DecodeTxnRecord([]byte{0, 9}, nil); !errors.Is(err, ErrCorruptRecord) {
		t.Fatal(err)
	}
}

func TestTxnCoordinatorLifecycle(t *testing.T) {
	log, markers := newMemLog(), &markerLog{}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	c := startTxnCoordinator(t, log, markers, clk.Now)
	t0, t1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}

	_, _, code := c.InitProducerID("", 1000, -1, -1)
	wantCode(t, "empty id", code, kerr.InvalidRequest.Code)
	_, _, code = c.InitProducerID("x", int32((16 * time.Minute).Milliseconds()), -1, -1)
	wantCode(t, "timeout above max", code, kerr.InvalidTransactionTimeout.Code)
	pid, epoch, code := c.InitProducerID("x", 1000, -1, -1)
	if code != 0 || pid != 1000 || epoch != 0 {
		t.Fatal(pid, epoch, code)
	}
	pid, epoch, code = c.InitProducerID("x", 1000, -1, -1)
	if code != 0 || pid != 1000 || epoch != 1 {
		t.Fatal("second init:", pid, epoch, code)
	}
	wantCode(t, "end with no transaction", endTxnV1(c, "x", pid, epoch, true), kerr.InvalidTxnState.Code)
	wantCode(t, "unknown id", c.AddPartitions("y", pid, epoch, []TopicPartition{t0}, 0), kerr.InvalidProducerIDMapping.Code)
	wantCode(t, "wrong pid", c.AddPartitions("x", pid+1, epoch, []TopicPartition{t0}, 0), kerr.InvalidProducerIDMapping.Code)
	wantCode(t, "old epoch", c.AddPartitions("x", pid, epoch-1, []TopicPartition{t0}, 0), kerr.ProducerFenced.Code)
	wantCode(t, "add", c.AddPartitions("x", pid, epoch, []TopicPartition{t0}, 0), 0)
	wantCode(t, "add offsets", c.AddOffsets("x", pid, epoch, "g"), 0)
	if v := c.VerifyPartitions("x", pid, epoch, []TopicPartition{t0, t1}); v[0] != 0 || v[1] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify: %v", v)
	}
	if v := c.VerifyPartitions("x", pid, epoch-1, []TopicPartition{t0}); v[0] != kerr.ProducerFenced.Code {
		t.Fatalf("verify fenced: %v", v)
	}
	m := c.Transaction("x")
	if m.State != kmsg.TransactionStateOngoing || len(m.Partitions) != 2 || m.StartTimestamp != clk.Now().UnixMilli() {
		t.Fatalf("ongoing: %+v", m)
	}
	wantCode(t, "commit", endTxnV1(c, "x", pid, epoch, true), 0)
	waitState(t, c, "x", kmsg.TransactionStateCompleteCommit)
	offs := fmt.Sprintf("%s-%d", OffsetsTopic, PartitionFor("g", 4))
	if got := fmt.Sprint(markers.take()); got != "["+offs+" pid=1000 epoch=1 ce=7 commit=true t-0 pid=1000 epoch=1 ce=7 commit=true]" {
		t.Fatalf("markers: %s", got)
	}
	wantCode(t, "commit retried", endTxnV1(c, "x", pid, epoch, true), 0)
	wantCode(t, "abort after commit", endTxnV1(c, "x", pid, epoch, false), kerr.InvalidTxnState.Code)
	if v := c.VerifyPartitions("x", pid, epoch, []TopicPartition{t0}); v[0] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify after the end: %v", v)
	}

	// A new producer fences the open transaction of the old one: abort with epoch+1,
	// CONCURRENT_TRANSACTIONS until done, then epoch+2.
	wantCode(t, "add", c.AddPartitions("x", pid, epoch, []TopicPartition{t1}, 0), 0)
	markers.failures = 3 // the markers are retried
	_, _, code = c.InitProducerID("x", 1000, -1, -1)
	wantCode(t, "init with an open transaction", code, kerr.ConcurrentTransactions.Code)
	waitState(t, c, "x", kmsg.TransactionStateCompleteAbort)
	if got := fmt.Sprint(markers.take()); got != "[t-1 pid=1000 epoch=2 ce=7 commit=false]" {
		t.Fatalf("fencing markers: %s", got)
	}
	wantCode(t, "zombie end", endTxnV1(c, "x", pid, epoch, true), kerr.ProducerFenced.Code)
	_, epoch, code = c.InitProducerID("x", 1000, -1, -1)
	if code != 0 || epoch != 3 {
		t.Fatal("init after fencing:", epoch, code)
	}
	// KIP-360: the producer may recover with its own epoch; a retry of that bump gets
	// the same answer; a stale epoch is fenced.
	_, e2, code := c.InitProducerID("x", 1000, pid, epoch)
	if code != 0 || e2 != epoch+1 {
		t.Fatal("recover:", e2, code)
	}
	if _, e3, code := c.InitProducerID("x", 1000, pid, epoch); code != 0 || e3 != e2 {
		t.Fatal("retried recover:", e3, code)
	}
	_, _, code = c.InitProducerID("x", 1000, pid, epoch-1)
	wantCode(t, "stale expected epoch", code, kerr.ProducerFenced.Code)
	_, _, code = c.InitProducerID("x", 1000, pid+5, e2)
	wantCode(t, "other producer id", code, kerr.ProducerFenced.Code)

	// Timed-out transactions are fenced and aborted.
	wantCode(t, "add", c.AddPartitions("x", pid, e2, []TopicPartition{t0}, 0), 0)
	clk.Add(2 * time.Second)
	c.AbortTimedOut()
	m = waitState(t, c, "x", kmsg.TransactionStateCompleteAbort)
	if m.ProducerEpoch != e2+1 {
		t.Fatalf("timeout fence epoch %d", m.ProducerEpoch)
	}
	wantCode(t, "end after timeout", endTxnV1(c, "x", pid, e2, false), kerr.ProducerFenced.Code)

	// Describe and list.
	d := c.Describe([]string{"x", "nope"})
	if d[0].State != "CompleteAbort" || d[0].ProducerID != pid || d[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe: %+v", d)
	}
	code, unknown, l := c.List([]string{"CompleteAbort", "Nope"}, nil, -1, nil)
	if code != 0 || fmt.Sprint(unknown) != "[Nope]" || len(l) != 1 {
		t.Fatalf("list: %v %v %+v", code, unknown, l)
	}
	bad := "("
	if code, _, _ := c.List(nil, nil, -1, &bad); code != kerr.InvalidRegularExpression.Code {
		t.Fatal("bad pattern", code)
	}

	// A new coordinator replays the same state from the log.
	c2 := startTxnCoordinator(t, log, &markerLog{}, clk.Now)
	if got, want := c2.Transaction("x"), c.Transaction("x"); got == nil || got.State != want.State || got.ProducerEpoch != want.ProducerEpoch {
		t.Fatalf("reloaded %+v, want %+v", got, want)
	}

	// transactional.id.expiration.ms forgets ids with nothing in progress, for good.
	ypid, _, code := c.InitProducerID("y", 1000, -1, -1)
	if code != 0 {
		t.Fatal(code)
	}
	wantCode(t, "add", c.AddPartitions("y", ypid, 0, []TopicPartition{t0}, 0), 0)
	c.cfg.TransactionalIDExpiration = time.Hour
	clk.Add(2 * time.Hour)
	c.ExpireTransactionalIDs()
	if c.Transaction("x") != nil || c.Transaction("y") == nil {
		t.Fatalf("after expiry: x %+v, y %+v", c.Transaction("x"), c.Transaction("y"))
	}
	if c3 := startTxnCoordinator(t, log, &markerLog{}, clk.Now); c3.Transaction("x") != nil {
		t.Fatal("expired id came back on reload")
	}
}

func TestTxnCoordinatorResendsMarkersOfPreparedTransactionOnLoad(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	m := &TxnMetadata{TransactionalID: "x", ProducerID: 9, LastProducerID: -1, ProducerEpoch: 2, LastProducerEpoch: -1,
		TimeoutMs: 1000, State: kmsg.TransactionStatePrepareCommit, StartTimestamp: 1, LastUpdateTimestamp: 1,
		Partitions: map[TopicPartition]struct{}{{"t", 2}: {}}}
	if err := log.Append(PartitionFor("x", 4), EncodeBatch([]Record{TxnRecord(m)}, 1)); err != nil {
		t.Fatal(err)
	}
	markers := &markerLog{}
	c := startTxnCoordinator(t, log, markers, clk.Now)
	waitState(t, c, "x", kmsg.TransactionStateCompleteCommit)
	if got := fmt.Sprint(markers.take()); got != "[t-2 pid=9 epoch=2 ce=7 commit=true]" {
		t.Fatalf("markers: %s", got)
	}
}

func TestTxnOffsetCommitPendingUntilMarker(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	c := startCoordinator(t, log, clk.Now)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "g", 42, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 1, 77
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	resp := c.TxnOffsetCommit(req, func(int32) int16 { return kerr.InvalidTxnState.Code })
	wantCode(t, "not verified", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState.Code)
	resp = c.TxnOffsetCommit(req, nil)
	wantCode(t, "commit", resp.Topics[0].Partitions[0].ErrorCode, 0)

	fetch := func(stable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version, f.RequireStable = 8, stable
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}
		f.Groups = append(f.Groups, g)
		return c.OffsetFetch(f).Groups[0].Topics[0].Partitions[0]
	}
	if p := fetch(true); p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while pending: %+v", p)
	}
	if p := fetch(false); p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("pending offset visible: %+v", p)
	}
	// An aborted transaction's offsets are dropped; a committed one's applied.
	c.CompleteTxn(PartitionFor("g", 4), 41, true) // another producer: nothing
	if p := fetch(true); p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("other producer's marker: %+v", p)
	}
	log.Append(PartitionFor("g", 4), protocol.EndTxnMarker(42, 0, 0, true, 1))
	c.CompleteTxn(PartitionFor("g", 4), 42, true)
	if p := fetch(true); p.ErrorCode != 0 || p.Offset != 77 {
		t.Fatalf("after commit: %+v", p)
	}
	// The log replays to the same offsets, and a transaction without marker stays
	// pending.
	rp.Offset = 99
	req.ProducerID = 43
	req.Topics[0].Partitions[0] = rp
	if resp := c.TxnOffsetCommit(req, nil); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal("second commit")
	}
	c2 := startCoordinator(t, log, clk.Now)
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version, f.Group, f.Topics = 7, "g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{1}}}
	if p := c2.OffsetFetch(f).Topics[0].Partitions[0]; p.Offset != 77 {
		t.Fatalf("replayed offset: %+v", p)
	}
	f.RequireStable = true
	if p := c2.OffsetFetch(f).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("replayed pending offset: %+v", p)
	}
	c2.CompleteTxn(PartitionFor("g", 4), 43, false)
	if p := c2.OffsetFetch(f).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 77 {
		t.Fatalf("after abort: %+v", p)
	}
}

func TestTxnCoordinatorReloadsOnNewCoordinatorEpoch(t *testing.T) {
	log := newMemLog()
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	m := &TxnMetadata{TransactionalID: "x", ProducerID: 9, LastProducerID: -1, ProducerEpoch: 2, LastProducerEpoch: -1,
		TimeoutMs: 1000, State: kmsg.TransactionStatePrepareAbort, StartTimestamp: 1, LastUpdateTimestamp: 1,
		Partitions: map[TopicPartition]struct{}{{"t", 0}: {}}}
	p := PartitionFor("x", 4)
	if err := log.Append(p, EncodeBatch([]Record{TxnRecord(m)}, 1)); err != nil {
		t.Fatal(err)
	}
	markers := &markerLog{failures: 1 << 30} // the first coordinator epoch never gets through
	c := startTxnCoordinator(t, log, markers, clk.Now)
	c.BecomeLeader(p, 7) // same epoch: nothing to do
	c.BecomeLeader(p, 8)
	markers.mu.Lock()
	markers.failures = 0
	markers.mu.Unlock()
	waitState(t, c, "x", kmsg.TransactionStateCompleteAbort)
	// (The old epoch's last attempt may still land: markers are idempotent.)
	if got := markers.take(); !slices.Contains(got, "t-0 pid=9 epoch=2 ce=8 commit=false") {
		t.Fatalf("markers: %v", got)
	}
}

// TestTxnMarkerDuringGroupLoad: a marker written while the __consumer_offsets
// partition is still being replayed (after the replay read past where it lands) is
// applied once the load ends.
func TestTxnMarkerDuringGroupLoad(t *testing.T) {
	log := newMemLog()
	p := PartitionFor("g", 4)
	om := OffsetAndMetadata{Offset: 77, LeaderEpoch: -1, CommitTimestamp: 1, ExpireTimestamp: -1}
	if err := log.Append(p, EncodeTxnBatch([]Record{OffsetCommitRecord("g", "t", 1, &om)}, 1, 42, 0)); err != nil {
		t.Fatal(err)
	}
	log.block = make(chan struct{})
	c := New(testConfig(), log, fakeMetadata{OffsetsTopic: 4, "t": 3}, nil, zerolog.Nop())
	t.Cleanup(c.Close)
	c.BecomeLeader(p)
	c.CompleteTxn(p, 42, true) // the replay has not read anything yet: it will not see it
	close(log.block)
	deadline := time.Now().Add(5 * time.Second)
	for !c.Loaded(p) {
		if time.Now().After(deadline) {
			t.Fatal("not loaded")
		}
		time.Sleep(time.Millisecond)
	}
	if got := c.GroupOffsets("g"); got[TopicPartition{"t", 1}].Offset != 77 {
		t.Fatalf("offsets after a marker during the load: %+v", got)
	}
}

// endTxnV1 is EndTxn at transaction version 0 (EndTxn v0-4), its code only.
func endTxnV1(c *TxnCoordinator, id string, pid int64, epoch int16, commit bool) int16 {
	_, _, code := c.EndTxn(id, pid, epoch, commit, 0)
	return code
}

// TestTxnCoordinatorV2EpochOverflow: at transaction version 2 an end at the last usable
// epoch (Short.MAX-1) writes its markers at Short.MAX and moves the producer to a new
// producer id at epoch 0, which EndTxn v5 answers; a retry with the old id and epoch
// gets the same answer, and the state survives a reload from the log (value v1).
func TestTxnCoordinatorV2EpochOverflow(t *testing.T) {
	log, markers := newMemLog(), &markerLog{}
	now := func() time.Time { return time.UnixMilli(1_700_000_000_000) }
	m := &TxnMetadata{TransactionalID: "o", ProducerID: 5, LastProducerID: -1, ProducerEpoch: math.MaxInt16 - 1,
		LastProducerEpoch: -1, NextProducerID: -1, ClientTV: 2, TimeoutMs: 60000, State: kmsg.TransactionStateOngoing,
		Partitions: map[TopicPartition]struct{}{{"t", 0}: {}}, StartTimestamp: 1, LastUpdateTimestamp: 1}
	if err := log.Append(PartitionFor("o", 4), EncodeBatch([]Record{TxnRecordVersion(m, 2)}, 1)); err != nil {
		t.Fatal(err)
	}
	c := startTxnCoordinatorTV(t, log, markers, now, 2)
	pid, epoch, code := c.EndTxn("o", 5, math.MaxInt16-1, true, 2)
	if code != 0 || pid != 1000 || epoch != 0 {
		t.Fatalf("end at the last epoch: pid %d epoch %d %v", pid, epoch, kerr.ErrorForCode(code))
	}
	if got := markers.take(); len(got) != 1 || got[0] != fmt.Sprintf("t-0 pid=5 epoch=%d ce=7 commit=true", math.MaxInt16) {
		t.Fatalf("markers %v", got)
	}
	done := waitState(t, c, "o", kmsg.TransactionStateCompleteCommit)
	if done.ProducerID != 1000 || done.ProducerEpoch != 0 || done.LastProducerID != 5 || done.NextProducerID != -1 {
		t.Fatalf("complete: %+v", done)
	}
	if pid, epoch, code := c.EndTxn("o", 5, math.MaxInt16-1, true, 2); code != 0 || pid != 1000 || epoch != 0 {
		t.Fatalf("retried end: pid %d epoch %d %v", pid, epoch, kerr.ErrorForCode(code))
	}
	if _, _, code := c.EndTxn("o", 5, math.MaxInt16-1, false, 2); code != kerr.InvalidTxnState.Code {
		t.Fatalf("retry of the other end: %v", kerr.ErrorForCode(code))
	}
	c.Close()
	c2 := startTxnCoordinatorTV(t, log, markers, now, 2)
	if got := c2.Transaction("o"); got == nil || got.ProducerID != 1000 || got.ProducerEpoch != 0 || got.LastProducerID != 5 || got.ClientTV != 2 {
		t.Fatalf("reloaded: %+v", got)
	}
	// The new producer id goes on: its next end bumps it to 1.
	if pid, epoch, code := c2.EndTxn("o", 1000, 0, false, 2); code != 0 || pid != 1000 || epoch != 1 {
		t.Fatalf("abort after the rotation: pid %d epoch %d %v", pid, epoch, kerr.ErrorForCode(code))
	}
}
