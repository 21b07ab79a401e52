package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/protocol"
)

// txnBatch is a transactional batch with timestamps near the test clock's start (so
// that no segment counts as expired for producer state).
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, records int) []byte {
	s := spec(records, newClock().Now().UnixMilli())
	s.pid, s.epoch, s.seq, s.txn = pid, epoch, seq, true
	return makeBatch(t, s)
}

func TestTransactionsLSOAndAbortedIndex(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	now := e.clock.Now()
	app := func(b []byte) AppendInfo {
		t.Helper()
		info, err := l.AppendAsLeader(b, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		return info
	}
	marker := func(pid int64, epoch int16, commit bool) AppendInfo {
		t.Helper()
		info, err := l.AppendTxnMarker(pid, epoch, 0, commit, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	app(makeBatch(t, spec(2, now.UnixMilli()))) // 0-1 plain
	app(txnBatch(t, 10, 0, 0, 3))               // 2-4 txn of 10
	if got := l.LastStableOffset(); got != 2 {
		t.Fatalf("LSO with an open txn at 2: %d", got)
	}
	app(txnBatch(t, 11, 0, 0, 1)) // 5 txn of 11
	app(txnBatch(t, 10, 0, 3, 1)) // 6
	// A non-transactional write from a producer with an open txn is refused.
	s := spec(1, now.UnixMilli())
	s.pid, s.epoch, s.seq = 10, 0, 4
	if _, err := l.AppendAsLeader(makeBatch(t, s), 0, now); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional write in a txn: %v", err)
	}
	m := marker(10, 0, false)        // 7: abort 10 while 11 is open since 5
	l.SetHighWatermark(m.LastOffset) // marker not yet below the HW
	if got := l.LastStableOffset(); got != 2 {
		t.Fatalf("LSO with an unreplicated abort: %d", got)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 5 {
		t.Fatalf("LSO with 11 open at 5: %d", got)
	}
	marker(11, 0, true) // 8
	if got := l.LastStableOffset(); got != 5 {
		t.Fatalf("LSO with the commit not below the HW: %d", got)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if got, hw := l.LastStableOffset(), l.HighWatermark(); got != 9 || hw != 9 {
		t.Fatalf("LSO %d HW %d after all txns ended", got, hw)
	}
	want := []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}}
	if got := l.CollectAbortedTxns(0, 9); !slices.Equal(got, want) {
		t.Fatalf("aborted: %+v", got)
	}
	if got := l.CollectAbortedTxns(8, 9); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	if got := l.CollectAbortedTxns(0, 2); len(got) != 0 {
		t.Fatalf("aborted before the txn: %+v", got)
	}
	// Markers: an older epoch is fenced; an older coordinator epoch too. A marker for
	// no open transaction is written but completes nothing (no index entry).
	if _, err := l.AppendTxnMarker(10, 0, 0, false, 0, now); err != nil {
		t.Fatalf("same epoch marker: %v", err)
	}
	if got := l.CollectAbortedTxns(0, l.LogEndOffset()); len(got) != 1 {
		t.Fatalf("a marker without a transaction was indexed: %+v", got)
	}
	app(txnBatch(t, 10, 1, 0, 1))
	if _, err := l.AppendTxnMarker(10, 0, 0, false, 0, now); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch marker: %v", err)
	}
	if _, err := l.AppendTxnMarker(10, 1, 5, false, 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarker(10, 1, 4, true, 0, now); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("old coordinator epoch: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	aborted := l.CollectAbortedTxns(0, l.LogEndOffset())
	if len(aborted) != 2 {
		t.Fatalf("aborted: %+v", aborted)
	}

	// The .txnindex file is Kafka's format: 34-byte entries.
	path := filepath.Join(partDir(e), "00000000000000000000.txnindex")
	if n := fileSize(t, path); n != 2*abortedTxnSize {
		t.Fatalf("txnindex is %d bytes", n)
	}
	buf, _ := os.ReadFile(path)
	if buf[0] != 0 || buf[1] != 0 || buf[9] != 10 || buf[17] != 2 || buf[25] != 7 || buf[33] != 5 {
		t.Fatalf("first entry bytes: %x", buf[:abortedTxnSize])
	}

	// Reopen cleanly, then after a crash (rebuilt by recovery): same state.
	e.reopen()
	l = e.log()
	if got := l.CollectAbortedTxns(0, l.LogEndOffset()); !slices.Equal(got, aborted) {
		t.Fatalf("after reopen: %+v", got)
	}
	e.crash()
	os.Remove(path)
	e.open()
	l = e.log()
	if got := l.CollectAbortedTxns(0, l.LogEndOffset()); !slices.Equal(got, aborted) {
		t.Fatalf("after recovery: %+v want %+v", got, aborted)
	}
	if got := l.LastStableOffset(); got != l.HighWatermark() {
		t.Fatalf("LSO %d HW %d", got, l.HighWatermark())
	}
}

func TestTransactionOpenAcrossRecoveryAndTruncation(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 300 // a few batches per segment
	e := newEnv(t, cfg)
	l := e.log()
	now := e.clock.Now()
	for i := range 6 {
		if _, err := l.AppendAsLeader(txnBatch(t, 3, 0, int32(i), 1), 0, now); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() < 2 {
		t.Fatalf("want several segments, got %d", l.NumSegments())
	}
	if _, err := l.AppendTxnMarker(3, 0, 0, false, 0, now); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	want := []AbortedTxn{{ProducerID: 3, FirstOffset: 0, LastOffset: 6, LastStableOffset: 7}}
	if got := l.CollectAbortedTxns(0, 7); !slices.Equal(got, want) {
		t.Fatalf("aborted: %+v", got)
	}
	// The entry lives in the marker's segment; a fetch from the first segment finds it.
	if got := l.CollectAbortedTxns(1, 3); !slices.Equal(got, want) {
		t.Fatalf("aborted from an earlier segment: %+v", got)
	}
	// Truncating below the marker reopens the transaction and drops the entry.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if got := l.CollectAbortedTxns(0, 6); len(got) != 0 {
		t.Fatalf("aborted after truncation: %+v", got)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO after truncation: %d", got)
	}
	e.crash()
	e.open()
	l = e.log()
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO after recovery: %d", got)
	}
	// An open transaction keeps the producer from expiring.
	e.clock.Advance(48 * time.Hour)
	if n := l.removeExpiredProducers(e.clock.Now()); n != 0 {
		t.Fatalf("expired %d producers with an open txn", n)
	}
	ps := l.ProducerStates()
	if len(ps) != 1 || ps[0].CurrentTxnStartOffset != 0 || ps[0].LastSequence != 5 {
		t.Fatalf("producer states: %+v", ps)
	}
}

func TestControlMarkerFormat(t *testing.T) {
	b := protocol.Batch(protocol.EndTxnMarker(7, 3, 9, true, 1234))
	if err := b.CheckHeader(); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckCRC(); err != nil {
		t.Fatal(err)
	}
	if !b.IsControl() || !b.IsTransactional() || b.ProducerID() != 7 || b.ProducerEpoch() != 3 || b.BaseSequence() != -1 || b.RecordCount() != 1 {
		t.Fatalf("header: %x", []byte(b[:protocol.BatchHeaderSize]))
	}
	if typ, err := b.ControlType(); err != nil || typ != protocol.ControlTypeCommit {
		t.Fatalf("type %d %v", typ, err)
	}
	if typ, _ := protocol.Batch(protocol.EndTxnMarker(7, 3, 9, false, 1234)).ControlType(); typ != protocol.ControlTypeAbort {
		t.Fatalf("abort type %d", typ)
	}
}

// TestVerificationGuard is the race behind Jepsen's hanging transaction: a produce
// verified while its transaction was open must not be written once the transaction's
// marker was, or it would open a transaction nobody ends.
func TestVerificationGuard(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	now := e.clock.Now()
	if _, err := l.AppendAsLeader(txnBatch(t, 5, 0, 0, 1), 0, now); err != nil {
		t.Fatal(err)
	}
	g := l.StartTxnVerification(5)
	if g2 := l.StartTxnVerification(5); g2 != g {
		t.Fatalf("a second verification in flight got guard %d, want %d", g2, g)
	}
	if _, err := l.AppendTxnMarker(5, 0, 0, false, 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 5, 0, 1, 1), 0, now, g); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("write verified before the marker: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != l.HighWatermark() {
		t.Fatalf("LSO %d held below HW %d", lso, l.HighWatermark())
	}
	// A verification after the marker holds a new guard and may open the next one.
	g = l.StartTxnVerification(5)
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 5, 0, 1, 1), 0, now, g); err != nil {
		t.Fatal(err)
	}
	// Once open, the transaction's later batches need no fresh guard.
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 5, 0, 2, 1), 0, now, g); err != nil {
		t.Fatal(err)
	}
}

// TestReplicatedMarkerFencesOlderCoordinator: the coordinator epoch of a marker is
// kept by every replica, not only by the leader that wrote it (as Kafka's
// appendEndTxnMarker for every origin), and survives a reopen. Otherwise a new leader
// accepts a deposed coordinator's late COMMIT marker, which ends the producer's next
// transaction (same producer epoch under transaction version 1) before its own end.
func TestReplicatedMarkerFencesOlderCoordinator(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	now := e.clock.Now()
	// As a follower: the producer's data and the marker of coordinator epoch 5.
	var replicated []byte
	data := protocol.Batch(txnBatch(t, 10, 0, 0, 1))
	data.SetBaseOffset(0)
	data.UpdateCRC()
	marker := protocol.Batch(protocol.EndTxnMarker(10, 0, 5, true, now.UnixMilli()))
	marker.SetBaseOffset(1)
	replicated = append(append(replicated, data...), marker...)
	if _, err := l.AppendAsFollower(replicated); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if ps := l.ProducerStates(); len(ps) != 1 || ps[0].CoordinatorEpoch != 5 {
			t.Fatalf("%s: producer states %+v, want coordinator epoch 5", when, ps)
		}
		if _, err := l.AppendTxnMarker(10, 0, 4, true, 0, now); !errors.Is(err, ErrTransactionCoordinatorFenced) {
			t.Fatalf("%s: a marker of coordinator epoch 4 after one of 5: %v, want fenced", when, err)
		}
	}
	check("after replication")
	e.reopen()
	l = e.log()
	check("after reopening")
	if _, err := l.AppendTxnMarker(10, 0, 5, false, 0, now); err != nil {
		t.Fatalf("a marker of the same coordinator epoch: %v", err)
	}
}

// TestTxnVersion2Markers: a transaction version 2 marker (WriteTxnMarkers v2,
// KIP-1228) carries the epoch the coordinator bumped to end the transaction, so it
// must be above the producer's; the same epoch again is a retry only once the
// transaction is closed. The producer then goes on at the bumped epoch from sequence 0,
// and its previous epoch is fenced.
func TestTxnVersion2Markers(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	now := e.clock.Now()
	if _, err := l.AppendAsLeader(txnBatch(t, 10, 3, 0, 1), 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarkerTV(10, 3, 0, true, 2, 0, now); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the producer's own epoch: %v", err)
	}
	if _, err := l.AppendTxnMarkerTV(10, 4, 0, true, 2, 0, now); err != nil {
		t.Fatalf("TV2 marker at the bumped epoch: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("LSO %d, LEO %d: the marker did not end the transaction", l.LastStableOffset(), l.LogEndOffset())
	}
	if _, err := l.AppendTxnMarkerTV(10, 4, 0, true, 2, 0, now); err != nil {
		t.Fatalf("retried TV2 marker: %v", err)
	}
	if _, err := l.AppendAsLeader(txnBatch(t, 10, 3, 1, 1), 0, now); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("write at the previous epoch: %v", err)
	}
	if _, err := l.AppendAsLeader(txnBatch(t, 10, 4, 0, 1), 0, now); err != nil {
		t.Fatalf("next transaction at the bumped epoch: %v", err)
	}
	// With a transaction open at that epoch, the same epoch is no retry.
	if _, err := l.AppendTxnMarkerTV(10, 4, 0, false, 2, 0, now); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the open transaction's epoch: %v", err)
	}
	// A transaction version 0/1 marker at the same epoch is fine, as before.
	if _, err := l.AppendTxnMarkerTV(10, 4, 0, false, 0, 0, now); err != nil {
		t.Fatalf("TV1 marker: %v", err)
	}
}
