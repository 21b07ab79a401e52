package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/storage"
)

// fastTxns keeps the internal topics small and lets timed-out transactions be aborted
// quickly.
var fastTxns = Props("offsets.topic.num.partitions", "4", "transaction.state.log.num.partitions", "4",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms", "200", "group.min.session.timeout.ms", "100")

// consumeAll reads topic from the start until it has seen n records or the
// deadline passes.
func consumeAll(t *testing.T, seed, topic string, committed bool, n int, wait time.Duration) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := NewClient(t, seed, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func txnProducer(t *testing.T, seed string, opts ...kgo.Opt) *kgo.Client {
	return NewClient(t, seed, append([]kgo.Opt{kgo.TransactionalID("txn-test"), kgo.TransactionTimeout(10 * time.Second),
		kgo.DefaultProduceTopic("t")}, opts...)...)
}

func produceTxn(t *testing.T, cl *kgo.Client, commit bool, values ...string) {
	t.Helper()
	ctx := Ctx(t, 10*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction: %v", err)
	}
}

// txnV1 caps franz-go at the last versions of transaction version 1 (Produce v11,
// EndTxn v4, TxnOffsetCommit v4): it then runs the KIP-890 part 1 protocol
// (AddPartitionsToTxn, no epoch bump per transaction) although the cluster's
// transaction.version is 2, as a client from before KIP-890 part 2 does.
var txnV1 = func() kgo.Opt {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(26, 4)
	vs.SetMaxKeyVersion(28, 4)
	return kgo.MaxVersions(vs)
}()

// eachTxnVersion runs f with a producer option for transaction version 1 clients
// (txnV1) and for transaction version 2 ones (franz-go's own choice: the cluster
// finalizes transaction.version 2), so every transaction test covers both.
func eachTxnVersion(t *testing.T, f func(t *testing.T, tv int, opts ...kgo.Opt)) {
	t.Run("tv1", func(t *testing.T) { f(t, 1, txnV1) })
	t.Run("tv2", func(t *testing.T) { f(t, 2) })
}

func TestTransactionsCommittedAndAbortedVisibility(t *testing.T) {
	eachTxnVersion(t, testTransactionsCommittedAndAbortedVisibility)
}

func testTransactionsCommittedAndAbortedVisibility(t *testing.T, tv int, opts ...kgo.Opt) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	p := txnProducer(t, b.Addr(), opts...)
	produceTxn(t, p, true, "c1", "c2")
	produceTxn(t, p, false, "a1", "a2")
	produceTxn(t, p, true, "c3")

	got := consumeAll(t, b.Addr(), "t", true, 3, 5*time.Second)
	if fmt.Sprint(got) != "[c1 c2 c3]" {
		t.Fatalf("read_committed saw %v", got)
	}
	got = consumeAll(t, b.Addr(), "t", false, 5, 5*time.Second)
	if fmt.Sprint(got) != "[c1 c2 a1 a2 c3]" {
		t.Fatalf("read_uncommitted saw %v", got)
	}

	// An open transaction holds read_committed at its first offset (the LSO).
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(Ctx(t, 5*time.Second), kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	lso, err := adm.ListEndOffsets(Ctx(t, 5*time.Second), "t")
	if err != nil {
		t.Fatal(err)
	}
	hw := b.ReplicaManager().Partition(tp("t", 0)).HighWatermark()
	if o, _ := lso.Lookup("t", 0); o.Offset != hw {
		t.Fatalf("read_uncommitted end %d, HW %d", o.Offset, hw)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(Ctx(t, 5*time.Second), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	// 2 + marker, 2 + marker, 1 + marker: the open transaction starts at 8.
	if got := resp.Topics[0].Partitions[0].Offset; got != 8 || hw != 9 {
		t.Fatalf("read_committed end %d (HW %d), want 8", got, hw)
	}
	if err := p.EndTransaction(Ctx(t, 5*time.Second), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// DescribeProducers and DescribeTransactions / ListTransactions through kadm.
	ctx := Ctx(t, 5*time.Second)
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"t": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	// At transaction version 2 the last marker bumped the epoch, which starts the
	// producer's sequence afresh (LastSequence -1), as Kafka's ProducerStateEntry.
	var found bool
	for _, ap := range dp["t"].Partitions[0].ActiveProducers {
		found = found || ap.CurrentTxnStartOffset == -1 && (ap.LastSequence >= 0) == (tv == 1)
	}
	if !found {
		t.Fatalf("describe producers: %+v", dp)
	}
	dt, err := adm.DescribeTransactions(ctx, "txn-test")
	if err != nil {
		t.Fatal(err)
	}
	// Four transactions: at transaction version 2 each end bumped the epoch.
	if d := dt["txn-test"]; d.State != "CompleteCommit" || d.ProducerEpoch != map[int]int16{1: 0, 2: 4}[tv] {
		t.Fatalf("describe transactions: %+v", d)
	}
	lt, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lt["txn-test"]; len(lt) != 1 || !ok {
		t.Fatalf("list transactions: %v", lt)
	}
}

func TestTransactionZombieIsFenced(t *testing.T) {
	eachTxnVersion(t, testTransactionZombieIsFenced)
}

func testTransactionZombieIsFenced(t *testing.T, _ int, opts ...kgo.Opt) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	old := txnProducer(t, b.Addr(), opts...)
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(Ctx(t, 5*time.Second), kgo.StringRecord("zombie")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new producer with the same id aborts the zombie's transaction and bumps the epoch.
	fresh := txnProducer(t, b.Addr(), opts...)
	produceTxn(t, fresh, true, "fresh")
	err := old.ProduceSync(Ctx(t, 5*time.Second), kgo.StringRecord("zombie2")).FirstErr()
	if err == nil {
		err = old.EndTransaction(Ctx(t, 5*time.Second), kgo.TryCommit)
	}
	if !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("zombie: %v", err)
	}
	got := consumeAll(t, b.Addr(), "t", true, 1, 3*time.Second)
	if fmt.Sprint(got) != "[fresh]" {
		t.Fatalf("read_committed saw %v", got)
	}
}

func TestTransactionTimeoutAborts(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	p := txnProducer(t, b.Addr(), kgo.TransactionTimeout(500*time.Millisecond))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(Ctx(t, 5*time.Second), kgo.StringRecord("stuck")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		m := b.TxnCoordinator().Transaction("txn-test")
		return m != nil && m.State.String() == "CompleteAbort"
	})
	pt := b.ReplicaManager().Partition(tp("t", 0))
	if lso, hw := pt.Log.LastStableOffset(), pt.HighWatermark(); lso != hw || hw != 2 {
		t.Fatalf("after the timeout abort: LSO %d HW %d", lso, hw)
	}
}

// rawTxnCall sends req with transaction version 1's versions (txnV1: Produce v11 names
// topics, EndTxn v4 bumps no epoch).
func rawTxnCall(t *testing.T, b *Broker, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := b.Client(txnV1).Request(Ctx(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestTransactionBadInput(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	cl := b.Client()
	// The coordinator is found (creating __transaction_state).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"x", ""}
	fr := rawTxnCall(t, b, fc).(*kmsg.FindCoordinatorResponse)
	for _, co := range fr.Coordinators { // the client may reorder the keys
		if want := map[string]int16{"x": 0, "": kerr.InvalidRequest.Code}[co.Key]; co.ErrorCode != want {
			t.Fatalf("find coordinator: %+v", fr.Coordinators)
		}
	}
	waitFor(t, 5*time.Second, func() bool {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("x"), 1000
		r, err := ip.RequestWith(Ctx(t, 5*time.Second), cl)
		return err == nil && r.ErrorCode == 0
	})
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("x"), 1<<30
	if r := rawTxnCall(t, b, ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("huge timeout: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	ip.TransactionTimeoutMillis = 1000
	init := rawTxnCall(t, b, ip).(*kmsg.InitProducerIDResponse)
	if init.ErrorCode != 0 || init.ProducerEpoch != 1 {
		t.Fatalf("init again: %+v", init)
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch

	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "unknown", 1, 0, true
	if r := rawTxnCall(t, b, end).(*kmsg.EndTxnResponse); r.ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("end unknown id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = "x", pid, epoch
	if r := rawTxnCall(t, b, end).(*kmsg.EndTxnResponse); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("end with no transaction: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	end.ProducerEpoch = epoch - 1
	if r := rawTxnCall(t, b, end).(*kmsg.EndTxnResponse); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("end with an old epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "x", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}
	ar := rawTxnCall(t, b, add).(*kmsg.AddPartitionsToTxnResponse)
	if ar.Topics[0].Partitions[0].ErrorCode != kerr.OperationNotAttempted.Code || ar.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("add with an unknown topic: %+v", ar.Topics)
	}

	// A transactional produce to a partition not added (KIP-890): TRANSACTION_ABORTABLE
	// (the client sends v12).
	pr := kmsg.NewPtrProduceRequest()
	pr.Version = 11
	pr.TransactionID, pr.Acks, pr.TimeoutMillis = kmsg.StringPtr("x"), -1, 5000
	rb := txnRecordBatch(pid, epoch)
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: rb}}}}
	if r := rawTxnCall(t, b, pr).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("produce to a partition not in the transaction: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	pr.TransactionID = nil
	if r := rawTxnCall(t, b, pr).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional produce without an id: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// Once added, it is accepted; with the wrong epoch it is fenced.
	add = kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "x", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if ar := rawTxnCall(t, b, add).(*kmsg.AddPartitionsToTxnResponse); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	pr.TransactionID = kmsg.StringPtr("x")
	if r := rawTxnCall(t, b, pr).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce in the transaction: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	pr.Topics[0].Partitions[0].Records = txnRecordBatch(pid, epoch-1)
	if r := rawTxnCall(t, b, pr).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce with an old epoch: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// WriteTxnMarkers as a coordinator on another broker would send it.
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed = pid, epoch-1, false
	mk.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}
	wm.Markers = append(wm.Markers, mk)
	if r := rawTxnCall(t, b, wm).(*kmsg.WriteTxnMarkersResponse); r.Markers[0].Topics[0].Partitions[0].ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker with an old epoch: %+v", r.Markers)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"x", "missing"}
	dr := rawTxnCall(t, b, dt).(*kmsg.DescribeTransactionsResponse)
	if dr.TransactionStates[0].State != "Ongoing" || dr.TransactionStates[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe: %+v", dr.TransactionStates)
	}
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters = []string{"Ongoing", "Bogus"}
	lr := rawTxnCall(t, b, lt).(*kmsg.ListTransactionsResponse)
	if len(lr.TransactionStates) != 1 || fmt.Sprint(lr.UnknownStateFilters) != "[Bogus]" {
		t.Fatalf("list: %+v", lr)
	}
}

// txnRecordBatch is one transactional record for producer pid at sequence 0.
func txnRecordBatch(pid int64, epoch int16) []byte { return txnRecordBatchSeq(pid, epoch, 0) }

// txnRecordBatchSeq is one transactional record for producer pid at sequence seq.
func txnRecordBatchSeq(pid int64, epoch int16, seq int32) []byte {
	rec := kmsg.Record{Value: []byte("v")}
	body := rec.AppendTo(nil)[1:]
	var recs []byte
	recs = append(recs, byte(len(body)<<1))
	recs = append(recs, body...)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, FirstTimestamp: time.Now().UnixMilli(),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: recs}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32c(b[21:]))
	return b
}

func tp(topic string, p int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: topic, Partition: p}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTransactionStateSurvivesRestart(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	p := txnProducer(t, b.Addr(), kgo.TransactionTimeout(3*time.Second))
	produceTxn(t, p, true, "c1")
	produceTxn(t, p, false, "a1")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(Ctx(t, 5*time.Second), kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.Close()

	b = b.Restart()
	// The coordinator reloads the open transaction; the partition its first offset.
	var m *coordinator.TxnMetadata
	waitFor(t, 5*time.Second, func() bool { m = b.TxnCoordinator().Transaction("txn-test"); return m != nil })
	if m.State.String() != "Ongoing" || len(m.Partitions) != 1 {
		t.Fatalf("after restart: %+v", m)
	}
	pt := b.ReplicaManager().Partition(tp("t", 0))
	if lso := pt.Log.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO after restart %d, want 4 (HW %d)", lso, pt.HighWatermark())
	}
	if got := pt.Log.CollectAbortedTxns(0, pt.HighWatermark()); len(got) != 1 || got[0].FirstOffset != 2 {
		t.Fatalf("aborted transactions after restart: %+v", got)
	}
	// Its timeout still applies.
	waitFor(t, 10*time.Second, func() bool {
		m := b.TxnCoordinator().Transaction("txn-test")
		return m != nil && m.State.String() == "CompleteAbort"
	})
	if got := consumeAll(t, b.Addr(), "t", true, 2, 2*time.Second); fmt.Sprint(got) != "[c1]" {
		t.Fatalf("read_committed saw %v", got)
	}
	// A new producer continues with a bumped epoch.
	p2 := txnProducer(t, b.Addr())
	produceTxn(t, p2, true, "c2")
	if got := consumeAll(t, b.Addr(), "t", true, 2, 5*time.Second); fmt.Sprint(got) != "[c1 c2]" {
		t.Fatalf("read_committed saw %v", got)
	}
}

// TestHangingTransactionPrevented is Jepsen's hanging transaction: a produce of the
// transaction that arrives after the transaction was aborted (a delayed retry) must
// not open a new transaction on the partition, which would hold its LSO forever.
// KIP-890 part 1: the broker verifies with the coordinator first.
func TestHangingTransactionPrevented(t *testing.T) {
	b := StartBroker(t, fastTxns)
	createTopic(t, b.Admin(), "t", 1)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"h"}
	rawTxnCall(t, b, fc)
	var pid int64
	var epoch int16
	waitFor(t, 5*time.Second, func() bool {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("h"), 60000
		r := rawTxnCall(t, b, ip).(*kmsg.InitProducerIDResponse)
		pid, epoch = r.ProducerID, r.ProducerEpoch
		return r.ErrorCode == 0
	})
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "h", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if r := rawTxnCall(t, b, add).(*kmsg.AddPartitionsToTxnResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	produce := func(seq int32) int16 {
		pr := kmsg.NewPtrProduceRequest()
		pr.TransactionID, pr.Acks, pr.TimeoutMillis = kmsg.StringPtr("h"), -1, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnRecordBatchSeq(pid, epoch, seq)}}}}
		return rawTxnCall(t, b, pr).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "h", pid, epoch, false
	if r := rawTxnCall(t, b, end).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	// The late produce of the aborted transaction.
	if code := produce(1); code != kerr.TransactionAbortable.Code {
		t.Fatalf("late produce after the abort: %v", kerr.ErrorForCode(code))
	}
	pt := b.ReplicaManager().Partition(tp("t", 0))
	waitFor(t, 5*time.Second, func() bool { return pt.Log.LastStableOffset() == pt.HighWatermark() })
	if hw := pt.HighWatermark(); hw != 2 {
		t.Fatalf("HW %d: the late batch was written", hw)
	}
}
