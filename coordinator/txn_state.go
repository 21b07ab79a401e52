package coordinator

// The transaction state machine, pure: each function takes a transactional id's
// current metadata (nil when unknown) and a request, and returns the next metadata to
// write (nil when nothing is written) and the Kafka code to answer, as Kafka's
// TransactionMetadata.prepare* transitions and the checks of TransactionCoordinator.
// The TxnCoordinator writes the next state to __transaction_state and only then makes
// it current; time comes in as nowMs.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTxnMetadata is a new transactional id's first state: Empty, epoch 0.
func newTxnMetadata(id string, pid int64, timeoutMs int32, nowMs int64) *TxnMetadata {
	return &TxnMetadata{TransactionalID: id, ProducerID: pid, LastProducerID: -1, ProducerEpoch: 0,
		LastProducerEpoch: -1, NextProducerID: -1, TimeoutMs: timeoutMs, State: kmsg.TransactionStateEmpty,
		Partitions: map[TopicPartition]struct{}{}, StartTimestamp: -1, LastUpdateTimestamp: nowMs}
}

// initStep is InitProducerId on a known id, as handleInitProducerId with
// prepareInitProducerIdTransit:
//   - code != 0, next == nil: answer code;
//   - code == CONCURRENT_TRANSACTIONS, next != nil: next fences and aborts the open
//     transaction (write it, send its markers), the client retries;
//   - code == 0, next == nil: a retried bump; answer the current producer id and epoch;
//   - code == 0, next != nil: write next and answer its id and epoch; when rotate is set
//     the epoch is exhausted and next needs a fresh producer id (rotateProducerID).
func initStep(m *TxnMetadata, timeoutMs int32, expectedPID int64, expectedEpoch int16, tv int16, nowMs int64) (next *TxnMetadata, rotate bool, code int16) {
	expected := expectedPID >= 0
	// isValidProducerId.
	if expected && !(m.ProducerEpoch == -1 || expectedPID == m.ProducerID ||
		(expectedPID == m.LastProducerID && epochExhausted(expectedEpoch))) {
		return nil, false, kerr.ProducerFenced.Code
	}
	switch m.State {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return nil, false, kerr.ConcurrentTransactions.Code
	case kmsg.TransactionStateOngoing:
		// Fence the current producer and abort its transaction at the cluster's
		// transaction version (as handleInitProducerId); the client retries and then
		// gets a second bump.
		next, rotate = fenceStep(m, tv, nowMs)
		return next, rotate, kerr.ConcurrentTransactions.Code
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
	default:
		return nil, false, kerr.UnknownServerError.Code
	}
	next = m.clone()
	next.TimeoutMs, next.State, next.LastUpdateTimestamp = timeoutMs, kmsg.TransactionStateEmpty, nowMs
	next.Partitions = map[TopicPartition]struct{}{}
	next.StartTimestamp = -1
	if epochExhausted(m.ProducerEpoch) && (!expected || expectedEpoch == m.ProducerEpoch) {
		return next, true, 0
	}
	// prepareIncrementProducerEpoch.
	switch {
	case !expected:
		next.ProducerEpoch, next.LastProducerEpoch = m.ProducerEpoch+1, -1
	case m.ProducerEpoch == -1 || expectedEpoch == m.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = m.ProducerEpoch+1, m.ProducerEpoch
	case expectedEpoch == m.LastProducerEpoch:
		return nil, false, 0 // a retry of a bump that succeeded
	default:
		return nil, false, kerr.ProducerFenced.Code
	}
	return next, false, 0
}

// rotateProducerID gives next (from initStep with rotate) the fresh producer id pid,
// as prepareProducerIdRotation.
func (next *TxnMetadata) rotateProducerID(prev, pid int64) {
	next.LastProducerID, next.ProducerID, next.ProducerEpoch, next.LastProducerEpoch = prev, pid, 0, -1
}

// fenceStep bumps the epoch of m's producer (prepareFenceProducerEpoch) and aborts its
// open transaction with the new epoch at transaction version tv, so the old producer's
// writes and markers are refused everywhere: a PrepareAbort whose markers the caller
// sends. At tv 2 the abort is an end like EndTxn v5's (prepareAbortOrCommit: one bump,
// the previous epoch kept, and rotate set when the epoch is exhausted: the caller gives
// next a NextProducerID); below, the epoch stops at its maximum.
func fenceStep(m *TxnMetadata, tv int16, nowMs int64) (next *TxnMetadata, rotate bool) {
	next = m.clone()
	next.State = kmsg.TransactionStatePrepareAbort
	next.LastUpdateTimestamp = nowMs
	if tv >= 2 {
		if m.ProducerEpoch < math.MaxInt16 {
			next.ProducerEpoch = m.ProducerEpoch + 1
		}
		next.LastProducerEpoch, next.ClientTV = m.ProducerEpoch, tv
		return next, epochExhausted(m.ProducerEpoch)
	}
	if !epochExhausted(m.ProducerEpoch) {
		next.ProducerEpoch = m.ProducerEpoch + 1
	}
	next.LastProducerEpoch, next.ClientTV = -1, 0
	return next, false
}

// checkProducer is the common check of AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
// and verifications: the producer id must be the current one
// (INVALID_PRODUCER_ID_MAPPING, also for an unknown id), the epoch too
// (PRODUCER_FENCED).
func checkProducer(m *TxnMetadata, pid int64, epoch int16) int16 {
	switch {
	case m == nil || m.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code
	case m.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code
	}
	return 0
}

// addPartitionsStep is AddPartitionsToTxn, as handleAddPartitionsToTransaction: the
// transaction becomes Ongoing with the partitions added (next nil and code 0: they
// already are).
func addPartitionsStep(m *TxnMetadata, pid int64, epoch int16, parts []TopicPartition, tv int16, nowMs int64) (*TxnMetadata, int16) {
	if code := checkProducer(m, pid, epoch); code != 0 {
		return nil, code
	}
	switch m.State {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	case kmsg.TransactionStateOngoing:
		all := true
		for _, tp := range parts {
			if _, ok := m.Partitions[tp]; !ok {
				all = false
				break
			}
		}
		if all {
			return nil, 0
		}
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
	default:
		return nil, kerr.UnknownServerError.Code
	}
	next := m.clone()
	if m.State != kmsg.TransactionStateOngoing {
		next.Partitions = map[TopicPartition]struct{}{}
		next.StartTimestamp = nowMs
	}
	for _, tp := range parts {
		next.Partitions[tp] = struct{}{}
	}
	next.State, next.LastUpdateTimestamp, next.ClientTV = kmsg.TransactionStateOngoing, nowMs, tv
	return next, 0
}

// verifyStep answers a KIP-890 verification, as handleVerifyPartitionsInTransaction:
// one code per partition, 0 when it is in the producer's transaction,
// TRANSACTION_ABORTABLE when not; the producer checks, and CONCURRENT_TRANSACTIONS
// while the transaction ends, apply to all.
func verifyStep(m *TxnMetadata, pid int64, epoch int16, parts []TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	code := checkProducer(m, pid, epoch)
	if code == 0 && (m.State == kmsg.TransactionStatePrepareCommit || m.State == kmsg.TransactionStatePrepareAbort) {
		code = kerr.ConcurrentTransactions.Code
	}
	for i, tp := range parts {
		codes[i] = code
		if code == 0 {
			if _, ok := m.Partitions[tp]; !ok {
				codes[i] = kerr.TransactionAbortable.Code
			}
		}
	}
	return codes
}

// endStep is EndTxn, as endTransactionWithTV1: an Ongoing transaction goes to
// PrepareCommit / PrepareAbort (next; the caller then sends the markers). A retry of
// an end already done answers 0; of one in progress CONCURRENT_TRANSACTIONS; the
// opposite end, or no transaction, INVALID_TXN_STATE.
func endStep(m *TxnMetadata, pid int64, epoch int16, commit bool, nowMs int64) (*TxnMetadata, int16) {
	if code := checkProducer(m, pid, epoch); code != 0 {
		return nil, code
	}
	same := func(isCommit bool, code int16) int16 {
		if isCommit != commit {
			return kerr.InvalidTxnState.Code
		}
		return code
	}
	switch m.State {
	case kmsg.TransactionStateOngoing:
		next := m.clone()
		next.State = kmsg.TransactionStatePrepareAbort
		if commit {
			next.State = kmsg.TransactionStatePrepareCommit
		}
		next.LastUpdateTimestamp, next.ClientTV = nowMs, 0
		return next, 0
	case kmsg.TransactionStateCompleteCommit:
		return nil, same(true, 0)
	case kmsg.TransactionStateCompleteAbort:
		return nil, same(false, 0)
	case kmsg.TransactionStatePrepareCommit:
		return nil, same(true, kerr.ConcurrentTransactions.Code)
	case kmsg.TransactionStatePrepareAbort:
		return nil, same(false, kerr.ConcurrentTransactions.Code)
	case kmsg.TransactionStateEmpty:
		return nil, kerr.InvalidTxnState.Code
	}
	return nil, kerr.UnknownServerError.Code
}

// endStepV2 is EndTxn at transaction version 2 (EndTxn v5), as Kafka's endTransaction
// for clients that support the epoch bump: every end bumps the epoch (the Prepare
// state carries the bumped epoch, which its markers are written with, and the previous
// one as LastProducerEpoch); rotate is set when the epoch is exhausted, and the caller
// gives next a NextProducerID. A retry is told apart by its epoch: one below the
// current (the bump of that end happened) or, after a rotation, the last epoch of the
// previous producer id; it answers 0 for the end done, INVALID_TXN_STATE for the other.
// An abort with no transaction open (Empty, or after an end that was no retry) is an
// end of its own with no partitions: the client may not know whether a produce added
// one.
func endStepV2(m *TxnMetadata, pid int64, epoch int16, commit bool, nowMs int64) (next *TxnMetadata, rotate bool, code int16) {
	if m == nil {
		return nil, false, kerr.InvalidProducerIDMapping.Code
	}
	retryOnOverflow := m.LastProducerID == pid && epoch == math.MaxInt16-1 && m.ProducerEpoch == 0
	retryOnBump := int32(m.ProducerEpoch) == int32(epoch)+1
	var valid bool
	switch m.State {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		valid = retryOnBump
	case kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		valid = retryOnBump || retryOnOverflow || epoch == m.ProducerEpoch
	default:
		valid = epoch == m.ProducerEpoch
	}
	switch {
	case m.ProducerID != pid && !retryOnOverflow:
		return nil, false, kerr.InvalidProducerIDMapping.Code
	case !valid:
		return nil, false, kerr.ProducerFenced.Code
	}
	retry := retryOnBump || retryOnOverflow
	prepare := func(state kmsg.TransactionState, noPartitions bool) (*TxnMetadata, bool, int16) {
		next := m.clone()
		next.State, next.LastUpdateTimestamp, next.ClientTV = state, nowMs, 2
		if m.ProducerEpoch < math.MaxInt16 {
			next.ProducerEpoch = m.ProducerEpoch + 1
		}
		next.LastProducerEpoch = m.ProducerEpoch
		if noPartitions {
			next.StartTimestamp = nowMs
		}
		return next, epochExhausted(m.ProducerEpoch), 0
	}
	switch m.State {
	case kmsg.TransactionStateOngoing:
		if commit {
			return prepare(kmsg.TransactionStatePrepareCommit, false)
		}
		return prepare(kmsg.TransactionStatePrepareAbort, false)
	case kmsg.TransactionStateCompleteCommit:
		switch {
		case commit && retry:
			return nil, false, 0
		case commit || retry:
			return nil, false, kerr.InvalidTxnState.Code
		}
		return prepare(kmsg.TransactionStatePrepareAbort, true)
	case kmsg.TransactionStateCompleteAbort:
		switch {
		case commit:
			return nil, false, kerr.InvalidTxnState.Code
		case retry:
			return nil, false, 0
		}
		return prepare(kmsg.TransactionStatePrepareAbort, true)
	case kmsg.TransactionStatePrepareCommit:
		if commit {
			return nil, false, kerr.ConcurrentTransactions.Code
		}
		return nil, false, kerr.InvalidTxnState.Code
	case kmsg.TransactionStatePrepareAbort:
		if !commit {
			return nil, false, kerr.ConcurrentTransactions.Code
		}
		return nil, false, kerr.InvalidTxnState.Code
	case kmsg.TransactionStateEmpty:
		if commit {
			return nil, false, kerr.InvalidTxnState.Code
		}
		return prepare(kmsg.TransactionStatePrepareAbort, true)
	}
	return nil, false, kerr.UnknownServerError.Code
}

// completeStep is the state once every marker of m (a Prepare state) is written, as
// prepareComplete: CompleteCommit / CompleteAbort with no partitions; a transaction
// version 2 end that exhausted the epoch moves to its NextProducerID at epoch 0.
func completeStep(m *TxnMetadata, nowMs int64) *TxnMetadata {
	next := m.clone()
	next.State = kmsg.TransactionStateCompleteAbort
	if m.State == kmsg.TransactionStatePrepareCommit {
		next.State = kmsg.TransactionStateCompleteCommit
	}
	if m.ClientTV >= 2 && m.NextProducerID >= 0 {
		next.LastProducerID, next.ProducerID, next.ProducerEpoch = m.ProducerID, m.NextProducerID, 0
	}
	next.NextProducerID = -1
	next.Partitions = map[TopicPartition]struct{}{}
	next.LastUpdateTimestamp = nowMs
	return next
}

// expired reports whether m may be forgotten (transactional.id.expiration.ms): no
// transaction in progress and no update since beforeMs.
func expired(m *TxnMetadata, beforeMs int64) bool {
	switch m.State {
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		return m.LastUpdateTimestamp <= beforeMs
	}
	return false
}
