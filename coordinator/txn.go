package coordinator

// The transaction coordinator, as Kafka's TransactionCoordinator +
// TransactionStateManager + TransactionMetadata. Each transaction runs at its client's
// transaction version (ClientTV, kept in the log record as Kafka's
// ClientTransactionVersion): below 2 (transaction version 1 clients: EndTxn up to v4,
// explicit AddPartitionsToTxn) the epoch is bumped by InitProducerId and by fencing
// only; at 2 (KIP-890 part 2: EndTxn v5, partitions added by the brokers) every end
// bumps it, and an end at the last usable epoch moves the producer to a new producer
// id (NextProducerID, taken at the Prepare state, current at the Complete one).
//
// Each transactional id lives in partition PartitionFor(id, n) of the compacted
// internal topic __transaction_state, as a TxnMetadataKey v0 / TxnMetadataValue
// record (Kafka's TransactionLog format: value v0 while the cluster's finalized
// transaction.version is 0, the flexible v1 with the previous / next producer id and
// the client's transaction version from 1 on); the last record per id wins, a
// tombstone deletes. The broker leading a partition owns its ids (one shard each, loaded by
// replaying the partition; the coordinator epoch is the partition's leader epoch).
//
// The transitions themselves are pure functions in txn_state.go; this file is the
// coordinator that applies them: shards, log writes, markers and timers.
//
// States: Empty → Ongoing (AddPartitionsToTxn / AddOffsetsToTxn) → PrepareCommit or
// PrepareAbort (EndTxn, or an abort on timeout or on InitProducerId fencing an open
// transaction) → CompleteCommit / CompleteAbort once a marker is written to every
// partition of the transaction. Every state change is written to the log (acks=all)
// before it is applied or answered; the shard's lock is held across the write, so no
// "pending transition" state is needed. Markers go out after the Prepare record is
// written, without the lock, retried until written; EndTxn answers once they are (or
// after MarkerWait, the Prepare state being durable either way; clients meanwhile get
// CONCURRENT_TRANSACTIONS, as Kafka's).

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TransactionStateTopic is Kafka's internal transaction log topic.
const TransactionStateTopic = "__transaction_state"

// TxnConfig holds Kafka's transaction-coordinator settings.
type TxnConfig struct {
	// NumPartitions is transaction.state.log.num.partitions (50).
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (15 minutes).
	MaxTimeout time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s).
	AbortTimedOutInterval time.Duration
	// TransactionalIDExpiration is transactional.id.expiration.ms (7 days): an id whose
	// transaction ended (or never began) that long ago is forgotten.
	TransactionalIDExpiration time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 hour).
	RemoveExpiredInterval time.Duration
	// MarkerWait bounds how long EndTxn waits for its markers before answering.
	MarkerWait time.Duration
	// MarkerRetryBackoff is the pause between attempts to write a marker.
	MarkerRetryBackoff time.Duration
	// TransactionVersion is the cluster's finalized transaction.version (nil: 0). It
	// picks the record format and the version an InitProducerId fence runs at.
	TransactionVersion func() int16
}

// MarkerWriter writes transaction markers to data partitions: Kafka's
// TransactionMarkerChannelManager sending WriteTxnMarkers to partition leaders.
type MarkerWriter interface {
	// WriteMarker appends a COMMIT (commit) or ABORT marker for the producer to tp
	// as its leader and returns once it is committed; txnVersion is the transaction's
	// (WriteTxnMarkers v2, KIP-1228). A *kerr.Error carries the code.
	WriteMarker(tp TopicPartition, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, txnVersion int16) error
}

// TxnMetadata is Kafka's TransactionMetadata for one transactional id.
type TxnMetadata struct {
	TransactionalID string
	ProducerID      int64
	// LastProducerID is the producer id before the last rotation (-1 when none).
	LastProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump (-1 when unknown; not
	// stored in the log, as Kafka's).
	LastProducerEpoch int16
	// NextProducerID is the producer id a transaction version 2 end moves to when the
	// epoch is exhausted: set in the Prepare state, current from the Complete one
	// (-1 when none).
	NextProducerID int64
	// ClientTV is the transaction version the transaction runs at (0 or 2): 2 once a
	// broker added a partition (AddPartitionsToTxn v4+) or the client ended with EndTxn v5.
	ClientTV   int16
	TimeoutMs  int32
	State      kmsg.TransactionState
	Partitions map[TopicPartition]struct{}
	// StartTimestamp is when the transaction became Ongoing (-1 when none).
	StartTimestamp      int64
	LastUpdateTimestamp int64

	// done is closed when the markers of the Prepare state are all written.
	done chan struct{}
}

// clone copies m for the next state; done belongs to one Prepare state and is not
// carried over.
func (m *TxnMetadata) clone() *TxnMetadata {
	c := *m
	c.done = nil
	c.Partitions = make(map[TopicPartition]struct{}, len(m.Partitions))
	for tp := range m.Partitions {
		c.Partitions[tp] = struct{}{}
	}
	return &c
}

func (m *TxnMetadata) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.Partitions))
	for tp := range m.Partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// TxnRecord encodes m as its __transaction_state record (key v0, value v0).
func TxnRecord(m *TxnMetadata) Record { return TxnRecordVersion(m, 0) }

// TxnRecordVersion encodes m as its __transaction_state record for the finalized
// transaction.version tv: value v0 at 0, v1 (flexible, with the previous and next
// producer ids and the client's transaction version) from 1, as Kafka's
// TransactionLog.valueToBytes.
func TxnRecordVersion(m *TxnMetadata, tv int16) Record {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: m.TransactionalID}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	if tv >= 1 {
		v.Version = 1
		v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = m.LastProducerID, m.NextProducerID, m.ClientTV
	}
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = m.ProducerID, m.ProducerEpoch, m.TimeoutMs, m.State
	v.LastUpdateTimestamp, v.StartTimestamp = m.LastUpdateTimestamp, m.StartTimestamp
	for _, tp := range m.sortedPartitions() {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			v.Topics = append(v.Topics, t)
		}
		v.Topics[len(v.Topics)-1].Partitions = append(v.Topics[len(v.Topics)-1].Partitions, tp.Partition)
	}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// DecodeTxnRecord decodes a __transaction_state record; m is nil for a tombstone.
func DecodeTxnRecord(key, value []byte) (id string, m *TxnMetadata, err error) {
	if len(key) < 2 || binary.BigEndian.Uint16(key) != 0 {
		return "", nil, fmt.Errorf("%w: transaction log key", ErrCorruptRecord)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: transaction log key: %v", ErrCorruptRecord, err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: transaction log value: %v", ErrCorruptRecord, err)
	}
	m = &TxnMetadata{TransactionalID: k.TransactionalID, ProducerID: v.ProducerID, LastProducerID: -1,
		ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: -1, NextProducerID: -1, TimeoutMs: v.TimeoutMillis, State: v.State,
		Partitions: map[TopicPartition]struct{}{}, StartTimestamp: v.StartTimestamp, LastUpdateTimestamp: v.LastUpdateTimestamp}
	if v.Version >= 1 {
		if v.PreviousProducerID >= 0 {
			m.LastProducerID = v.PreviousProducerID
		}
		if v.NextProducerID >= 0 {
			m.NextProducerID = v.NextProducerID
		}
		m.ClientTV = v.ClientTransactionVersion
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions[TopicPartition{Topic: t.Topic, Partition: p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}

// TxnCoordinator owns the transactional ids of the __transaction_state partitions this
// broker leads.
type TxnCoordinator struct {
	cfg      TxnConfig
	log      PartitionLog
	md       Metadata
	markers  MarkerWriter
	allocate func() (int64, error)
	// offsetsPartition maps a group to its __consumer_offsets partition.
	offsetsPartition func(group string) int32
	now              func() time.Time
	logger           zerolog.Logger

	shardSet shardSet[*txnShard]
	stop     chan struct{}
	wg       sync.WaitGroup
}

type txnShard struct {
	shardState // its mu guards txns too
	// coordinatorEpoch is the partition's leader epoch when this broker took it.
	coordinatorEpoch int32
	txns             map[string]*TxnMetadata
}

// NewTxnCoordinator returns a coordinator with no partitions; BecomeLeader adds them.
func NewTxnCoordinator(cfg TxnConfig, log PartitionLog, md Metadata, markers MarkerWriter,
	allocate func() (int64, error), offsetsPartition func(string) int32, now func() time.Time, logger zerolog.Logger) *TxnCoordinator {
	if now == nil {
		now = time.Now
	}
	if cfg.MarkerWait <= 0 {
		cfg.MarkerWait = 5 * time.Second
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = 100 * time.Millisecond
	}
	c := &TxnCoordinator{cfg: cfg, log: log, md: md, markers: markers, allocate: allocate,
		offsetsPartition: offsetsPartition, now: now, logger: logger, stop: make(chan struct{})}
	if cfg.AbortTimedOutInterval > 0 {
		c.wg.Add(1)
		go every(&c.wg, c.stop, cfg.AbortTimedOutInterval, c.AbortTimedOut)
	}
	if cfg.RemoveExpiredInterval > 0 && cfg.TransactionalIDExpiration > 0 {
		c.wg.Add(1)
		go every(&c.wg, c.stop, cfg.RemoveExpiredInterval, c.ExpireTransactionalIDs)
	}
	return c
}

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *TxnCoordinator) PartitionFor(id string) int32 { return PartitionFor(id, c.cfg.NumPartitions) }

// Close stops the background work; the state stays in the log.
func (c *TxnCoordinator) Close() {
	shards, ok := c.shardSet.close()
	if !ok {
		return
	}
	close(c.stop)
	for _, s := range shards {
		s.markGone()
	}
	c.wg.Wait()
}

// BecomeLeader loads partition's transactions in the background (requests get
// COORDINATOR_LOAD_IN_PROGRESS meanwhile); coordinatorEpoch is its leader epoch. A
// partition already owned under an older epoch is dropped and loaded again, as Kafka's
// onElection (another coordinator may have written in between).
func (c *TxnCoordinator) BecomeLeader(partition, coordinatorEpoch int32) {
	s := &txnShard{shardState: shardState{partition: partition}, coordinatorEpoch: coordinatorEpoch, txns: map[string]*TxnMetadata{}}
	older := func(old *txnShard) bool { return old.coordinatorEpoch < coordinatorEpoch }
	c.shardSet.start(partition, s, older, &c.wg, c.load)
}

// Resign drops partition's transactions when the broker stops leading it.
func (c *TxnCoordinator) Resign(partition int32) {
	c.shardSet.resign(partition, nil)
}

// Leads reports whether partition is owned here (loaded or loading).
func (c *TxnCoordinator) Leads(partition int32) bool {
	return c.shardSet.leads(partition)
}

// Loaded reports whether partition's transactions are loaded.
func (c *TxnCoordinator) Loaded(partition int32) bool {
	return c.shardSet.loaded(partition)
}

func (c *TxnCoordinator) load(s *txnShard) {
	start := c.now()
	txns := map[string]*TxnMetadata{}
	err := c.log.Read(s.partition, func(batches []byte) error {
		return DecodeBatches(batches, func(r BatchRecord) error {
			id, m, err := DecodeTxnRecord(r.Key, r.Value)
			if err != nil {
				return err
			}
			if m == nil {
				delete(txns, id)
			} else {
				txns[id] = m
			}
			return nil
		})
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if err != nil {
		c.logger.Error().Err(err).Int32("partition", s.partition).Msg("loading __transaction_state partition failed")
		return
	}
	s.txns, s.loaded = txns, true
	for _, m := range txns {
		// Markers of a transaction whose end was decided before are sent again, as
		// TransactionStateManager.loadTransactionsForTxnTopicPartition does.
		if m.State == kmsg.TransactionStatePrepareCommit || m.State == kmsg.TransactionStatePrepareAbort {
			c.startMarkersLocked(s, m)
		}
	}
	c.logger.Info().Int32("partition", s.partition).Int("transactional_ids", len(txns)).
		Dur("took", c.now().Sub(start)).Msg("loaded __transaction_state partition")
}

// shardFor returns id's loaded shard locked, or the code to answer with.
func (c *TxnCoordinator) shardFor(id string) (*txnShard, int16) {
	if c.md.NumPartitions(TransactionStateTopic) < 0 {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	s := c.shardSet.get(c.PartitionFor(id))
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	if code := s.lockLoaded(); code != 0 {
		return nil, code
	}
	return s, 0
}

// writeLocked writes next as id's state and, when that worked, makes it current. It
// returns the code clients get for a failed write, as Kafka's TransactionStateManager
// appendTransactionToLog maps them.
func (c *TxnCoordinator) writeLocked(s *txnShard, next *TxnMetadata) int16 {
	err := c.log.Append(s.partition, EncodeBatch([]Record{TxnRecordVersion(next, c.finalizedTV())}, c.now().UnixMilli()))
	if err != nil {
		c.logger.Warn().Err(err).Int32("partition", s.partition).Str("transactional_id", next.TransactionalID).
			Msg("writing to __transaction_state failed")
		switch code := writeErrorCode(err); code {
		case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
			kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
			return kerr.CoordinatorNotAvailable.Code
		case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
			return kerr.NotCoordinator.Code
		default:
			return kerr.UnknownServerError.Code
		}
	}
	s.txns[next.TransactionalID] = next
	return 0
}

// InitProducerID handles InitProducerId with a transactional id, as
// TransactionCoordinator.handleInitProducerId: a new id gets a producer id and epoch 0;
// a known one gets its epoch bumped (fencing the previous producer), a fresh producer
// id when the epoch is exhausted; an open transaction is aborted first and the client
// told CONCURRENT_TRANSACTIONS to retry. expectedPID/expectedEpoch (v3+, -1 when not
// given) let a producer recover its own epoch after an error (KIP-360).
func (c *TxnCoordinator) InitProducerID(id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, int16) {
	switch {
	case id == "":
		return -1, -1, kerr.InvalidRequest.Code
	case timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout:
		return -1, -1, kerr.InvalidTransactionTimeout.Code
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return -1, -1, code
	}
	defer s.mu.Unlock()
	now := c.now().UnixMilli()
	m := s.txns[id]
	var next *TxnMetadata
	rotate := false
	if m == nil {
		next, rotate = newTxnMetadata(id, -1, timeoutMs, now), true
	} else if next, rotate, code = initStep(m, timeoutMs, expectedPID, expectedEpoch, c.finalizedTV(), now); next == nil {
		if code != 0 {
			return -1, -1, code
		}
		return m.ProducerID, m.ProducerEpoch, 0 // a retried bump
	}
	if code == kerr.ConcurrentTransactions.Code { // next fences the open transaction
		if rotate {
			if next.NextProducerID, code = c.allocateCode(); code != 0 {
				return -1, -1, code
			}
			code = kerr.ConcurrentTransactions.Code
		}
		if wcode := c.writeLocked(s, next); wcode != 0 {
			return -1, -1, wcode
		}
		c.startMarkersLocked(s, next)
		return -1, -1, code
	}
	if rotate {
		pid, err := c.allocate()
		if err != nil {
			return -1, -1, kerr.UnknownServerError.Code
		}
		if m == nil {
			next.ProducerID = pid
		} else {
			next.rotateProducerID(m.ProducerID, pid)
		}
	}
	if code := c.writeLocked(s, next); code != 0 {
		return -1, -1, code
	}
	return next.ProducerID, next.ProducerEpoch, 0
}

// AddPartitions handles AddPartitionsToTxn (and AddOffsetsToTxn, with the group's
// __consumer_offsets partition): see addPartitionsStep. tv is the client's transaction
// version: 2 when a broker adds the partitions for a produce or TxnOffsetCommit of a
// KIP-890 part 2 client (AddPartitionsToTxn v4+), 0 otherwise
// (transactionVersionForAddPartitionsToTxn). The caller checked that the partitions
// exist.
func (c *TxnCoordinator) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition, tv int16) int16 {
	if id == "" {
		return kerr.InvalidRequest.Code
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	defer s.mu.Unlock()
	next, code := addPartitionsStep(s.txns[id], pid, epoch, parts, tv, c.now().UnixMilli())
	if next == nil {
		return code
	}
	return c.writeLocked(s, next)
}

// AddOffsets handles AddOffsetsToTxn: the group's __consumer_offsets partition joins
// the transaction (as Kafka, the group id is not checked here; TxnOffsetCommit does).
func (c *TxnCoordinator) AddOffsets(id string, pid int64, epoch int16, group string) int16 {
	return c.AddPartitions(id, pid, epoch, []TopicPartition{{Topic: OffsetsTopic, Partition: c.offsetsPartition(group)}}, 0)
}

// VerifyPartitions answers a KIP-890 verification (AddPartitionsToTxn v4+ with
// verify_only, and the produce and TxnOffsetCommit paths): see verifyStep (the broker
// tells old clients INVALID_TXN_STATE for TRANSACTION_ABORTABLE).
func (c *TxnCoordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) []int16 {
	fill := func(code int16) []int16 {
		codes := make([]int16, len(parts))
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if id == "" {
		return fill(kerr.InvalidRequest.Code)
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return fill(code)
	}
	defer s.mu.Unlock()
	return verifyStep(s.txns[id], pid, epoch, parts)
}

// EndTxn handles EndTxn at the client's transaction version tv (2 for EndTxn v5,
// transactionVersionForEndTxn; see endStep and endStepV2): the Prepare state is
// written, its markers sent, then the Complete state written; the answer waits for the
// markers up to MarkerWait. It returns the producer id and epoch the client goes on
// with (EndTxn v5's answer: the bumped epoch, or the next producer id at epoch 0;
// the current ones for a retry; -1 on an error).
func (c *TxnCoordinator) EndTxn(id string, pid int64, epoch int16, commit bool, tv int16) (int64, int16, int16) {
	if id == "" {
		return -1, -1, kerr.InvalidRequest.Code
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return -1, -1, code
	}
	var done chan struct{}
	outPID, outEpoch := int64(-1), int16(-1)
	func() {
		defer s.mu.Unlock()
		m := s.txns[id]
		var next *TxnMetadata
		if tv >= 2 {
			var rotate bool
			next, rotate, code = endStepV2(m, pid, epoch, commit, c.now().UnixMilli())
			if next != nil && rotate {
				if next.NextProducerID, code = c.allocateCode(); code != 0 {
					return
				}
			}
		} else {
			next, code = endStep(m, pid, epoch, commit, c.now().UnixMilli())
		}
		switch {
		case next != nil:
			if code = c.writeLocked(s, next); code == 0 {
				c.startMarkersLocked(s, next)
				done = next.done
				outPID, outEpoch = next.ProducerID, next.ProducerEpoch
				if next.NextProducerID >= 0 {
					outPID, outEpoch = next.NextProducerID, 0
				}
			}
		case code == 0:
			outPID, outEpoch = m.ProducerID, m.ProducerEpoch
		}
	}()
	if done != nil {
		select {
		case <-done:
		case <-time.After(c.cfg.MarkerWait):
		case <-c.stop:
		}
	}
	return outPID, outEpoch, code
}

// allocateCode takes a fresh producer id, or the code to answer when none can be had.
func (c *TxnCoordinator) allocateCode() (int64, int16) {
	pid, err := c.allocate()
	if err != nil {
		c.logger.Warn().Err(err).Msg("allocating a producer id failed")
		return -1, kerr.UnknownServerError.Code
	}
	return pid, 0
}

// finalizedTV is the cluster's finalized transaction.version.
func (c *TxnCoordinator) finalizedTV() int16 {
	if c.cfg.TransactionVersion == nil {
		return 0
	}
	return c.cfg.TransactionVersion()
}

// startMarkersLocked writes m's markers in the background, then its Complete state.
// m is the Prepare state just written.
func (c *TxnCoordinator) startMarkersLocked(s *txnShard, m *TxnMetadata) {
	if m.done == nil {
		m.done = make(chan struct{})
	}
	commit := m.State == kmsg.TransactionStatePrepareCommit
	parts := m.sortedPartitions()
	pid, epoch, id, done, tv := m.ProducerID, m.ProducerEpoch, m.TransactionalID, m.done, m.ClientTV
	coordEpoch := s.coordinatorEpoch
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, tp := range parts {
			if !c.writeMarker(s, tp, pid, epoch, coordEpoch, commit, tv) {
				return
			}
		}
		c.completeTxn(s, id, pid, epoch, commit, done)
	}()
}

// writeMarker retries one marker until it is written, the partition is gone, or the
// shard is given up. It returns false when the shard is gone.
func (c *TxnCoordinator) writeMarker(s *txnShard, tp TopicPartition, pid int64, epoch int16, coordEpoch int32, commit bool, tv int16) bool {
	for attempt := 0; ; attempt++ {
		err := c.markers.WriteMarker(tp, pid, epoch, coordEpoch, commit, tv)
		if err == nil {
			return true
		}
		code := writeErrorCode(err)
		switch code {
		case kerr.UnknownTopicOrPartition.Code, kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
			// As TransactionMarkerRequestCompletionHandler: a deleted partition or a
			// marker that can never be written is dropped.
			c.logger.Warn().Str("topic", tp.Topic).Int32("partition", tp.Partition).Int64("producer_id", pid).
				Str("error", kerr.ErrorForCode(code).Error()).Msg("dropping transaction marker")
			return true
		}
		if attempt == 0 || attempt%50 == 0 {
			c.logger.Warn().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Int64("producer_id", pid).
				Msg("writing transaction marker failed; retrying")
		}
		select {
		case <-c.stop:
			return false
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
		s.mu.Lock()
		gone := s.gone
		s.mu.Unlock()
		if gone {
			return false
		}
	}
}

// completeTxn writes the Complete state once every marker is written, as
// TransactionStateManager.completeTransition after the markers.
func (c *TxnCoordinator) completeTxn(s *txnShard, id string, pid int64, epoch int16, commit bool, done chan struct{}) {
	for {
		s.mu.Lock()
		m := s.txns[id]
		if s.gone || m == nil || m.ProducerID != pid || m.ProducerEpoch != epoch ||
			(m.State != kmsg.TransactionStatePrepareCommit && m.State != kmsg.TransactionStatePrepareAbort) {
			s.mu.Unlock()
			return
		}
		code := c.writeLocked(s, completeStep(m, c.now().UnixMilli()))
		s.mu.Unlock()
		if code == 0 {
			close(done)
			return
		}
		select {
		case <-c.stop:
			return
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
	}
}

// ExpireTransactionalIDs forgets ids with no transaction in progress whose last
// update is at least transactional.id.expiration.ms old: a tombstone is written, then
// the id is dropped, as TransactionStateManager.enableTransactionalIdExpiration.
func (c *TxnCoordinator) ExpireTransactionalIDs() {
	before := c.now().Add(-c.cfg.TransactionalIDExpiration).UnixMilli()
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.loaded && !s.gone {
			var ids []string
			var recs []Record
			for id, m := range s.txns {
				if expired(m, before) {
					ids = append(ids, id)
					k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
					recs = append(recs, Record{Key: k.AppendTo(nil)})
				}
			}
			if len(recs) > 0 {
				if err := c.log.Append(s.partition, EncodeBatch(recs, c.now().UnixMilli())); err != nil {
					c.logger.Warn().Err(err).Int32("partition", s.partition).Msg("writing expired transactional id tombstones failed")
				} else {
					for _, id := range ids {
						delete(s.txns, id)
					}
					c.logger.Info().Int32("partition", s.partition).Strs("transactional_ids", ids).Msg("expired transactional ids")
				}
			}
		}
		s.mu.Unlock()
	}
}

// AbortTimedOut fences and aborts every Ongoing transaction older than its timeout, as
// TransactionCoordinator.abortTimedOutTransactions.
func (c *TxnCoordinator) AbortTimedOut() {
	now := c.now().UnixMilli()
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.loaded && !s.gone {
			for _, m := range s.txns {
				if m.State == kmsg.TransactionStateOngoing && m.StartTimestamp+int64(m.TimeoutMs) < now {
					c.logger.Info().Str("transactional_id", m.TransactionalID).Int64("producer_id", m.ProducerID).
						Int16("producer_epoch", m.ProducerEpoch).Msg("aborting timed out transaction")
					// As abortTimedOutTransactions: at the transaction's own version.
					next, rotate := fenceStep(m, m.ClientTV, now)
					if rotate {
						var code int16
						if next.NextProducerID, code = c.allocateCode(); code != 0 {
							continue
						}
					}
					if c.writeLocked(s, next) == 0 {
						c.startMarkersLocked(s, next)
					}
				}
			}
		}
		s.mu.Unlock()
	}
}

func (c *TxnCoordinator) shards() []*txnShard { return c.shardSet.all() }

// Describe handles DescribeTransactions for each id: TRANSACTIONAL_ID_NOT_FOUND for
// unknown ones, the coordinator errors otherwise.
func (c *TxnCoordinator) Describe(ids []string) []kmsg.DescribeTransactionsResponseTransactionState {
	out := make([]kmsg.DescribeTransactionsResponseTransactionState, 0, len(ids))
	for _, id := range ids {
		d := kmsg.NewDescribeTransactionsResponseTransactionState()
		d.TransactionalID, d.ProducerID, d.ProducerEpoch, d.StartTimestamp = id, -1, -1, -1
		s, code := c.shardFor(id)
		if code != 0 {
			d.ErrorCode = code
			out = append(out, d)
			continue
		}
		func() {
			defer s.mu.Unlock()
			m := s.txns[id]
			if m == nil {
				d.ErrorCode = kerr.TransactionalIDNotFound.Code
			} else {
				d.State, d.TimeoutMillis, d.StartTimestamp = m.State.String(), m.TimeoutMs, m.StartTimestamp
				d.ProducerID, d.ProducerEpoch = m.ProducerID, m.ProducerEpoch
				for _, tp := range m.sortedPartitions() {
					if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
						t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						t.Topic = tp.Topic
						d.Topics = append(d.Topics, t)
					}
					d.Topics[len(d.Topics)-1].Partitions = append(d.Topics[len(d.Topics)-1].Partitions, tp.Partition)
				}
			}
		}()
		out = append(out, d)
	}
	return out
}

// txnStateNames are the states ListTransactions filters by (Kafka's
// TransactionState.fromName).
var txnStateNames = map[string]kmsg.TransactionState{}

func init() {
	for s := kmsg.TransactionStateEmpty; s <= kmsg.TransactionStatePrepareEpochFence; s++ {
		txnStateNames[s.String()] = s
	}
}

// List handles ListTransactions, as TransactionStateManager.listTransactionStates:
// unknown state names are returned (and match nothing); filters are ANDed; the
// duration filter (v1+) keeps transactions running longer than it; the id pattern
// (v2+) is a regular expression (INVALID_REGULAR_EXPRESSION when it does not compile).
func (c *TxnCoordinator) List(states []string, pids []int64, minDurationMs int64, pattern *string) (int16, []string, []kmsg.ListTransactionsResponseTransactionState) {
	var unknown []string
	want := map[kmsg.TransactionState]bool{}
	for _, name := range states {
		if s, ok := txnStateNames[name]; ok {
			want[s] = true
		} else {
			unknown = append(unknown, name)
		}
	}
	if len(states) > 0 && len(want) == 0 {
		return 0, unknown, nil
	}
	var re *regexp.Regexp
	if pattern != nil && *pattern != "" {
		var err error
		if re, err = regexp.Compile(*pattern); err != nil {
			return kerr.InvalidRegularExpression.Code, unknown, nil
		}
	}
	now := c.now().UnixMilli()
	code := int16(0)
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, s := range c.shards() {
		s.mu.Lock()
		if !s.loaded && !s.gone {
			code = kerr.CoordinatorLoadInProgress.Code
		}
		for _, m := range s.txns {
			switch {
			case len(want) > 0 && !want[m.State],
				len(pids) > 0 && !slices.Contains(pids, m.ProducerID),
				minDurationMs >= 0 && (m.State != kmsg.TransactionStateOngoing || now-m.StartTimestamp < minDurationMs),
				re != nil && !re.MatchString(m.TransactionalID):
				continue
			}
			l := kmsg.NewListTransactionsResponseTransactionState()
			l.TransactionalID, l.ProducerID, l.TransactionState = m.TransactionalID, m.ProducerID, m.State.String()
			out = append(out, l)
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].TransactionalID, out[j].TransactionalID) < 0 })
	return code, unknown, out
}

// Transaction returns a copy of id's metadata (for tests), nil when unknown.
func (c *TxnCoordinator) Transaction(id string) *TxnMetadata {
	s, code := c.shardFor(id)
	if code != 0 {
		return nil
	}
	defer s.mu.Unlock()
	if m := s.txns[id]; m != nil {
		return m.clone()
	}
	return nil
}
