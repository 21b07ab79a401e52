package storage

import (
	"fmt"
	"math"

	"github.com/gokafkad/gokafkad/protocol"
)

// numBatchesToRetain is how many recent batches per producer are kept for duplicate
// detection, as Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN (matches the client's
// max.in.flight.requests.per.connection limit of 5 for idempotence).
const numBatchesToRetain = 5

// batchMetadata is Kafka's BatchMetadata: enough of a written batch to answer a resend.
type batchMetadata struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is Kafka's ProducerStateEntry for one producer id.
type producerEntry struct {
	epoch int16
	// lastTimestamp is the maxTimestamp of the producer's last batch (expiry clock).
	lastTimestamp int64
	// batches are the last numBatchesToRetain batches written under epoch, oldest first.
	batches []batchMetadata
	// currentTxnFirstOffset is the first offset of the producer's ongoing transaction,
	// -1 when it has none (Kafka's ProducerStateEntry.currentTxnFirstOffset).
	currentTxnFirstOffset int64
	// coordinatorEpoch is the coordinator epoch of the last marker written for the
	// producer (-1 before any): a marker from an older coordinator is fenced.
	coordinatorEpoch int32
}

// completedTxn is Kafka's CompletedTxn: a transaction ended by a marker at lastOffset.
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64
	aborted     bool
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// producerState is the in-memory part of Kafka's ProducerStateManager: per producer id,
// its epoch and last batches. It is rebuilt from batch headers when a log opens or is
// truncated (no .snapshot files yet). Guarded by the owning Log's mu.
type producerState struct {
	producers map[int64]*producerEntry
	// ongoing maps the producers with an open transaction to its first offset (Kafka's
	// ongoingTxns), so the LSO, computed on every fetch, does not walk every producer.
	// Invariant: ongoing[pid] == producers[pid].currentTxnFirstOffset for exactly the
	// producers whose currentTxnFirstOffset >= 0.
	ongoing map[int64]int64
}

func newProducerState() producerState {
	return producerState{producers: make(map[int64]*producerEntry), ongoing: make(map[int64]int64)}
}

// inSequence is Kafka's ProducerStateEntry/ProducerAppendInfo.inSequence: next follows
// last, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkMarker validates a transaction marker the leader is about to write, as
// ProducerAppendInfo.appendEndTxnMarker (origin COORDINATOR): an epoch older than the
// producer's is ErrInvalidProducerEpoch, a coordinator epoch older than the last
// marker's is ErrTransactionCoordinatorFenced. A marker of transaction version 2
// (KIP-1228: the coordinator bumped the epoch to end the transaction) must carry an
// epoch above the producer's, except for a retry of a marker already written (the
// same epoch with no transaction open, or the epoch at its maximum).
func (s *producerState) checkMarker(pid int64, epoch int16, coordinatorEpoch int32, txnVersion int16) error {
	e := s.producers[pid]
	if e == nil {
		return nil
	}
	if txnVersion >= 2 && epoch == e.epoch && (e.currentTxnFirstOffset < 0 || epoch == math.MaxInt16) {
		// An idempotent retry: allowed, as ProducerAppendInfo.checkProducerEpoch.
	} else if epoch < e.epoch || (txnVersion >= 2 && epoch == e.epoch) {
		return fmt.Errorf("%w: marker for producer %d with epoch %d not above %d (transaction version %d)",
			ErrInvalidProducerEpoch, pid, epoch, e.epoch, txnVersion)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last was %d",
			ErrTransactionCoordinatorFenced, pid, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// firstUnstableOffset is the smallest first offset of an ongoing transaction, and ok
// false when none is ongoing. except excludes one producer.
func (s *producerState) firstUnstableOffset(except int64) (int64, bool) {
	first, ok := int64(math.MaxInt64), false
	for pid, off := range s.ongoing {
		if pid != except && off < first {
			first, ok = off, true
		}
	}
	return first, ok
}

// checkLeaderAppend validates a client batch against the producer's state, as
// UnifiedLog.analyzeAndValidateProducerState + ProducerAppendInfo (origin CLIENT): a
// resend of one of the last batches gives *DuplicateError; an older epoch gives
// ErrInvalidProducerEpoch; a new epoch must start at sequence 0 (unless the producer
// was unknown); the same epoch must continue the sequence. A producer the log knows
// nothing about (new, or all its batches removed) may start at any sequence.
func (s *producerState) checkLeaderAppend(b protocol.Batch) error {
	pid := b.ProducerID()
	if pid < 0 || b.IsControl() {
		return nil
	}
	epoch, firstSeq, lastSeq := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	e := s.producers[pid]
	if e == nil {
		return nil
	}
	if !b.IsTransactional() && e.currentTxnFirstOffset >= 0 && epoch >= e.epoch {
		// As ProducerAppendInfo.checkProducerEpoch/maybeValidateDataBatch.
		return fmt.Errorf("%w: non-transactional write from producer %d with an ongoing transaction", ErrInvalidTxnState, pid)
	}
	if epoch == e.epoch {
		for _, m := range e.batches {
			if m.firstSeq == firstSeq && m.lastSeq == lastSeq {
				return &DuplicateError{FirstOffset: m.firstOffset, LastOffset: m.lastOffset, Timestamp: m.timestamp}
			}
		}
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	}
	if firstSeq < 0 {
		// A coordinator's write (transactional offsets): no sequence, as Kafka checks
		// sequences only for origin CLIENT.
		return nil
	}
	if epoch != e.epoch {
		if firstSeq != 0 && e.epoch != -1 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil
	}
	if e.epoch == -1 {
		return nil
	}
	if !inSequence(e.lastSeq(), firstSeq) {
		return fmt.Errorf("%w: producer %d epoch %d: expected sequence %d, got %d",
			ErrOutOfOrderSequence, pid, epoch, int64(e.lastSeq())+1, firstSeq)
	}
	return nil
}

// update records a written batch (leader or follower or recovery), as
// ProducerStateEntry.addBatch: a new epoch forgets the old epoch's batches. A
// transactional data batch opens the producer's transaction when none is ongoing; a
// marker (controlType >= 0: the control batch's record type, which the caller reads
// since b may be a header only) ends it and is returned as a completedTxn, as
// ProducerAppendInfo.appendEndTxnMarker. A marker for a producer with no known ongoing
// transaction completes nothing. Every marker, written here or replicated or replayed,
// records its coordinatorEpoch (the control record's value, -1 when unreadable): a
// new leader fences a deposed coordinator's late markers as the old leader did.
func (s *producerState) update(b protocol.Batch, controlType int16, coordinatorEpoch int32) (completedTxn, bool) {
	pid := b.ProducerID()
	if pid < 0 {
		return completedTxn{}, false
	}
	e := s.producers[pid]
	if e == nil {
		e = &producerEntry{epoch: -1, currentTxnFirstOffset: -1, coordinatorEpoch: -1}
		s.producers[pid] = e
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
	}
	e.lastTimestamp = b.MaxTimestamp()
	if b.IsControl() {
		if controlType != protocol.ControlTypeAbort && controlType != protocol.ControlTypeCommit {
			return completedTxn{}, false
		}
		e.coordinatorEpoch = max(e.coordinatorEpoch, coordinatorEpoch)
		first := e.currentTxnFirstOffset
		if first < 0 {
			// As ProducerAppendInfo.appendEndTxnMarker: a marker ending no transaction
			// here (the producer wrote nothing, or before what was replayed) changes
			// neither the LSO nor the transaction index.
			return completedTxn{}, false
		}
		e.currentTxnFirstOffset = -1
		delete(s.ongoing, pid)
		return completedTxn{producerID: pid, firstOffset: first, lastOffset: b.LastOffset(),
			aborted: controlType == protocol.ControlTypeAbort}, true
	}
	if b.IsTransactional() && e.currentTxnFirstOffset < 0 {
		e.currentTxnFirstOffset = b.BaseOffset()
		s.ongoing[pid] = e.currentTxnFirstOffset
	}
	if b.BaseSequence() < 0 {
		return completedTxn{}, false
	}
	m := batchMetadata{
		firstSeq:    b.BaseSequence(),
		lastSeq:     b.LastSequence(),
		firstOffset: b.BaseOffset(),
		lastOffset:  b.LastOffset(),
		timestamp:   b.MaxTimestamp(),
	}
	if len(e.batches) == numBatchesToRetain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:numBatchesToRetain-1]
	}
	e.batches = append(e.batches, m)
	return completedTxn{}, false
}

// removeExpired forgets producers whose last batch is at least expirationMs older than
// nowMs and that have no ongoing transaction, as Kafka's
// ProducerStateManager.removeExpiredProducers. Returns how many were removed.
func (s *producerState) removeExpired(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range s.producers {
		if nowMs-e.lastTimestamp >= expirationMs && e.currentTxnFirstOffset < 0 {
			delete(s.producers, pid)
			n++
		}
	}
	return n
}
