package coordinator

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnIn(state kmsg.TransactionState, epoch int16, parts ...TopicPartition) *TxnMetadata {
	m := newTxnMetadata("x", 7, 1000, 1)
	m.State, m.ProducerEpoch = state, epoch
	for _, tp := range parts {
		m.Partitions[tp] = struct{}{}
	}
	return m
}

// TestEndStepCodes is Kafka's endTransactionWithTV1 table: every state × commit/abort.
func TestEndStepCodes(t *testing.T) {
	const none = -1
	for _, tc := range []struct {
		state           kmsg.TransactionState
		commit, abort   int16
		writesNext      bool
		nextCommitState kmsg.TransactionState
	}{
		{kmsg.TransactionStateEmpty, kerr.InvalidTxnState.Code, kerr.InvalidTxnState.Code, false, none},
		{kmsg.TransactionStateOngoing, 0, 0, true, kmsg.TransactionStatePrepareCommit},
		{kmsg.TransactionStatePrepareCommit, kerr.ConcurrentTransactions.Code, kerr.InvalidTxnState.Code, false, none},
		{kmsg.TransactionStatePrepareAbort, kerr.InvalidTxnState.Code, kerr.ConcurrentTransactions.Code, false, none},
		{kmsg.TransactionStateCompleteCommit, 0, kerr.InvalidTxnState.Code, false, none},
		{kmsg.TransactionStateCompleteAbort, kerr.InvalidTxnState.Code, 0, false, none},
	} {
		for _, commit := range []bool{true, false} {
			want := tc.abort
			if commit {
				want = tc.commit
			}
			next, code := endStep(txnIn(tc.state, 3), 7, 3, commit, 5)
			if code != want || (next != nil) != tc.writesNext {
				t.Errorf("%v commit=%v: next %v code %v, want %v", tc.state, commit, next != nil, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
			}
			if next != nil && commit && next.State != tc.nextCommitState {
				t.Errorf("%v: next state %v", tc.state, next.State)
			}
		}
		if _, code := endStep(txnIn(tc.state, 3), 8, 3, true, 5); code != kerr.InvalidProducerIDMapping.Code {
			t.Errorf("%v other pid: %v", tc.state, kerr.ErrorForCode(code))
		}
		if _, code := endStep(txnIn(tc.state, 3), 7, 2, true, 5); code != kerr.ProducerFenced.Code {
			t.Errorf("%v old epoch: %v", tc.state, kerr.ErrorForCode(code))
		}
	}
	if _, code := endStep(nil, 7, 3, true, 5); code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("unknown id: %v", kerr.ErrorForCode(code))
	}
}

func TestInitStep(t *testing.T) {
	// Epoch bump; exhausted epoch rotates the producer id.
	next, rotate, code := initStep(txnIn(kmsg.TransactionStateCompleteCommit, 4), 500, -1, -1, 0, 9)
	if code != 0 || rotate || next.ProducerEpoch != 5 || next.TimeoutMs != 500 || next.State != kmsg.TransactionStateEmpty {
		t.Fatalf("bump: %+v %v %v", next, rotate, code)
	}
	next, rotate, code = initStep(txnIn(kmsg.TransactionStateEmpty, 32766), 500, -1, -1, 0, 9)
	if code != 0 || !rotate {
		t.Fatalf("exhausted: %v %v", rotate, code)
	}
	next.rotateProducerID(7, 8)
	if next.ProducerID != 8 || next.LastProducerID != 7 || next.ProducerEpoch != 0 {
		t.Fatalf("rotated: %+v", next)
	}
	// An open transaction is fenced: epoch+1, PrepareAbort, CONCURRENT_TRANSACTIONS.
	next, _, code = initStep(txnIn(kmsg.TransactionStateOngoing, 4, TopicPartition{"t", 0}), 500, -1, -1, 0, 9)
	if code != kerr.ConcurrentTransactions.Code || next.State != kmsg.TransactionStatePrepareAbort || next.ProducerEpoch != 5 || len(next.Partitions) != 1 {
		t.Fatalf("fence: %+v %v", next, code)
	}
	if next, _, code := initStep(txnIn(kmsg.TransactionStatePrepareCommit, 4), 500, -1, -1, 0, 9); next != nil || code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("prepare: %v", code)
	}
	// KIP-360 expected producer id and epoch.
	if _, _, code := initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 99, 4, 0, 9); code != kerr.ProducerFenced.Code {
		t.Fatalf("other producer id: %v", code)
	}
	next, _, code = initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 7, 4, 0, 9)
	if code != 0 || next.ProducerEpoch != 5 || next.LastProducerEpoch != 4 {
		t.Fatalf("recover: %+v %v", next, code)
	}
	if next, _, code := initStep(next, 500, 7, 4, 0, 9); next != nil || code != 0 {
		t.Fatalf("retried recover: %v %v", next, code)
	}
	if _, _, code := initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 7, 2, 0, 9); code != kerr.ProducerFenced.Code {
		t.Fatalf("stale epoch: %v", code)
	}
}

func TestAddAndVerifySteps(t *testing.T) {
	t0, t1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	next, code := addPartitionsStep(txnIn(kmsg.TransactionStateCompleteAbort, 1, t1), 7, 1, []TopicPartition{t0}, 0, 9)
	if code != 0 || next.State != kmsg.TransactionStateOngoing || len(next.Partitions) != 1 || next.StartTimestamp != 9 {
		t.Fatalf("add to a finished one: %+v %v", next, code)
	}
	if again, code := addPartitionsStep(next, 7, 1, []TopicPartition{t0}, 0, 10); again != nil || code != 0 {
		t.Fatalf("add again: %v %v", again, code)
	}
	more, _ := addPartitionsStep(next, 7, 1, []TopicPartition{t1}, 0, 10)
	if len(more.Partitions) != 2 || more.StartTimestamp != 9 {
		t.Fatalf("add more: %+v", more)
	}
	if got := verifyStep(more, 7, 1, []TopicPartition{t0, {"t", 2}}); got[0] != 0 || got[1] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify: %v", got)
	}
	if got := verifyStep(txnIn(kmsg.TransactionStatePrepareAbort, 1, t0), 7, 1, []TopicPartition{t0}); got[0] != kerr.ConcurrentTransactions.Code {
		t.Fatalf("verify while ending: %v", got)
	}
	if got := verifyStep(nil, 7, 1, []TopicPartition{t0}); got[0] != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("verify unknown: %v", got)
	}
	done := completeStep(txnIn(kmsg.TransactionStatePrepareCommit, 1, t0), 11)
	if done.State != kmsg.TransactionStateCompleteCommit || len(done.Partitions) != 0 || !expired(done, 11) || expired(more, 100) {
		t.Fatalf("complete: %+v", done)
	}
}

// TestEndStepV2 is Kafka's endTransaction for transaction version 2 clients (EndTxn
// v5): every end bumps the epoch, retries are recognised by the epoch they carry, an
// abort with nothing open is an end of its own, and the last usable epoch rotates the
// producer id.
func TestEndStepV2(t *testing.T) {
	t0 := TopicPartition{"t", 0}
	next, rotate, code := endStepV2(txnIn(kmsg.TransactionStateOngoing, 3, t0), 7, 3, true, 5)
	if code != 0 || rotate || next.State != kmsg.TransactionStatePrepareCommit || next.ProducerEpoch != 4 ||
		next.LastProducerEpoch != 3 || next.ClientTV != 2 || len(next.Partitions) != 1 {
		t.Fatalf("commit: %+v %v %d", next, rotate, code)
	}
	done := completeStep(next, 6)
	if done.State != kmsg.TransactionStateCompleteCommit || done.ProducerID != 7 || done.ProducerEpoch != 4 {
		t.Fatalf("complete: %+v", done)
	}
	for _, tc := range []struct {
		name   string
		m      *TxnMetadata
		epoch  int16
		commit bool
		code   int16
	}{
		{"commit retried after the bump", done, 3, true, 0},
		{"abort retried after a commit", done, 3, false, kerr.InvalidTxnState.Code},
		{"commit with nothing open", done, 4, true, kerr.InvalidTxnState.Code},
		{"zombie epoch", done, 2, true, kerr.ProducerFenced.Code},
		{"epoch from the future", done, 5, true, kerr.ProducerFenced.Code},
		{"retry while the markers are written", next, 3, true, kerr.ConcurrentTransactions.Code},
		{"the bumped epoch while the markers are written", next, 4, true, kerr.ProducerFenced.Code},
		{"commit of an empty transaction", txnIn(kmsg.TransactionStateEmpty, 3), 3, true, kerr.InvalidTxnState.Code},
	} {
		if n, _, code := endStepV2(tc.m, 7, tc.epoch, tc.commit, 9); n != nil || code != tc.code {
			t.Errorf("%s: next %v, code %d, want %d", tc.name, n, code, tc.code)
		}
	}
	// An abort with no transaction open is written: PrepareAbort with no partitions.
	for _, m := range []*TxnMetadata{txnIn(kmsg.TransactionStateEmpty, 3), txnIn(kmsg.TransactionStateCompleteCommit, 3), txnIn(kmsg.TransactionStateCompleteAbort, 3)} {
		n, _, code := endStepV2(m, 7, 3, false, 9)
		if code != 0 || n == nil || n.State != kmsg.TransactionStatePrepareAbort || n.ProducerEpoch != 4 || len(n.Partitions) != 0 || n.StartTimestamp != 9 {
			t.Errorf("empty abort from %v: %+v %d", m.State, n, code)
		}
	}
	if _, _, code := endStepV2(nil, 7, 3, true, 9); code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("unknown id: %d", code)
	}
	if _, _, code := endStepV2(txnIn(kmsg.TransactionStateOngoing, 3), 8, 3, true, 9); code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("other producer id: %d", code)
	}

	// Epoch overflow: at Short.MAX-1 the end is written at MAX with a next producer
	// id, which the Complete state moves to at epoch 0; a retry with the old id and
	// epoch is recognised.
	next, rotate, code = endStepV2(txnIn(kmsg.TransactionStateOngoing, math.MaxInt16-1, t0), 7, math.MaxInt16-1, false, 5)
	if code != 0 || !rotate || next.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("overflow: %+v %v %d", next, rotate, code)
	}
	next.NextProducerID = 70
	done = completeStep(next, 6)
	if done.ProducerID != 70 || done.ProducerEpoch != 0 || done.LastProducerID != 7 || done.NextProducerID != -1 ||
		done.State != kmsg.TransactionStateCompleteAbort {
		t.Fatalf("overflow complete: %+v", done)
	}
	if n, _, code := endStepV2(done, 7, math.MaxInt16-1, false, 7); n != nil || code != 0 {
		t.Fatalf("overflow retry: %v %d", n, code)
	}
	if n, _, code := endStepV2(done, 7, math.MaxInt16-1, true, 7); n != nil || code != kerr.InvalidTxnState.Code {
		t.Fatalf("overflow retry of the other end: %v %d", n, code)
	}
	// The new producer id goes on from epoch 0.
	if n, _, code := endStepV2(done, 70, 0, false, 8); code != 0 || n.ProducerEpoch != 1 || n.ProducerID != 70 {
		t.Fatalf("after overflow: %+v %d", n, code)
	}
}

// TestFenceStepV2: an InitProducerId fence or a timeout at transaction version 2 is
// one bump like any end; at the last usable epoch it rotates the producer id.
func TestFenceStepV2(t *testing.T) {
	n, rotate := fenceStep(txnIn(kmsg.TransactionStateOngoing, 3), 2, 9)
	if rotate || n.ProducerEpoch != 4 || n.LastProducerEpoch != 3 || n.State != kmsg.TransactionStatePrepareAbort || n.ClientTV != 2 {
		t.Fatalf("fence: %+v %v", n, rotate)
	}
	if n, rotate := fenceStep(txnIn(kmsg.TransactionStateOngoing, math.MaxInt16-1), 2, 9); !rotate || n.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("fence at the last epoch: %+v %v", n, rotate)
	}
	if n, rotate := fenceStep(txnIn(kmsg.TransactionStateOngoing, 3), 0, 9); rotate || n.ProducerEpoch != 4 || n.LastProducerEpoch != -1 || n.ClientTV != 0 {
		t.Fatalf("fence v1: %+v %v", n, rotate)
	}
}
