package coordinator

import (
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
	next, rotate, code := initStep(txnIn(kmsg.TransactionStateCompleteCommit, 4), 500, -1, -1, 9)
	if code != 0 || rotate || next.ProducerEpoch != 5 || next.TimeoutMs != 500 || next.State != kmsg.TransactionStateEmpty {
		t.Fatalf("bump: %+v %v %v", next, rotate, code)
	}
	next, rotate, code = initStep(txnIn(kmsg.TransactionStateEmpty, 32766), 500, -1, -1, 9)
	if code != 0 || !rotate {
		t.Fatalf("exhausted: %v %v", rotate, code)
	}
	next.rotateProducerID(7, 8)
	if next.ProducerID != 8 || next.LastProducerID != 7 || next.ProducerEpoch != 0 {
		t.Fatalf("rotated: %+v", next)
	}
	// An open transaction is fenced: epoch+1, PrepareAbort, CONCURRENT_TRANSACTIONS.
	next, _, code = initStep(txnIn(kmsg.TransactionStateOngoing, 4, TopicPartition{"t", 0}), 500, -1, -1, 9)
	if code != kerr.ConcurrentTransactions.Code || next.State != kmsg.TransactionStatePrepareAbort || next.ProducerEpoch != 5 || len(next.Partitions) != 1 {
		t.Fatalf("fence: %+v %v", next, code)
	}
	if next, _, code := initStep(txnIn(kmsg.TransactionStatePrepareCommit, 4), 500, -1, -1, 9); next != nil || code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("prepare: %v", code)
	}
	// KIP-360 expected producer id and epoch.
	if _, _, code := initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 99, 4, 9); code != kerr.ProducerFenced.Code {
		t.Fatalf("other producer id: %v", code)
	}
	next, _, code = initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 7, 4, 9)
	if code != 0 || next.ProducerEpoch != 5 || next.LastProducerEpoch != 4 {
		t.Fatalf("recover: %+v %v", next, code)
	}
	if next, _, code := initStep(next, 500, 7, 4, 9); next != nil || code != 0 {
		t.Fatalf("retried recover: %v %v", next, code)
	}
	if _, _, code := initStep(txnIn(kmsg.TransactionStateEmpty, 4), 500, 7, 2, 9); code != kerr.ProducerFenced.Code {
		t.Fatalf("stale epoch: %v", code)
	}
}

func TestAddAndVerifySteps(t *testing.T) {
	t0, t1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	next, code := addPartitionsStep(txnIn(kmsg.TransactionStateCompleteAbort, 1, t1), 7, 1, []TopicPartition{t0}, 9)
	if code != 0 || next.State != kmsg.TransactionStateOngoing || len(next.Partitions) != 1 || next.StartTimestamp != 9 {
		t.Fatalf("add to a finished one: %+v %v", next, code)
	}
	if again, code := addPartitionsStep(next, 7, 1, []TopicPartition{t0}, 10); again != nil || code != 0 {
		t.Fatalf("add again: %v %v", again, code)
	}
	more, _ := addPartitionsStep(next, 7, 1, []TopicPartition{t1}, 10)
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
