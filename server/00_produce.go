package server

// Produce: v3-13.
//
// Each partition's records must be exactly one valid v2 batch (CRC, sizes, records);
// it is appended by the partition leader (offsets and leader epoch written in place).
// acks=0 gets no response (an error closes the connection, as Kafka does); acks=1 is
// answered after the leader's write; acks=-1 waits in the purgatory as a DelayedProduce
// until the high watermark passes the last offset written, or the request's timeout
// (REQUEST_TIMED_OUT). Produce never creates topics: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION (Kafka creates topics on Metadata only). v13 names
// topics by ID (KIP-516) and answers with IDs: an ID the broker does not know is
// UNKNOWN_TOPIC_ID, before authorization (as Kafka's handleProduceRequest, which
// checks only topics it found).
//
// A topic whose compression.type names a codec (not producer) stores every batch with
// it: one the producer compressed otherwise is rebuilt by the leader, keeping its
// records and producer fields (protocol/recompress.go, as Kafka's LogValidator), and
// followers copy the leader's bytes. Produce v3-6 may not send zstd
// (UNSUPPORTED_COMPRESSION_TYPE, as Kafka).
//
// Transactional batches need the request's transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, as Kafka). From v12 (a transaction
// version 2 client, KIP-890 part 2) the leader adds the partition to the producer's
// transaction at its coordinator (AddPartitionsToTxn v4+ without verify_only when the
// coordinator is another broker; CONCURRENT_TRANSACTIONS, after retrying for 100 ms,
// while the previous transaction's markers are written). Before v12, with
// transaction.partition.verification.enable, the transaction coordinator's word that
// the partition was added to the producer's ongoing transaction (KIP-890 part 1):
// TRANSACTION_ABORTABLE when not (INVALID_TXN_STATE before v11, as Kafka's
// AddPartitionsToTxnManager); the log refuses the write (INVALID_TXN_STATE) if the
// transaction ended while this was checked. Fenced producers get
// INVALID_PRODUCER_EPOCH.
//
// With an authorizer: WRITE on the request's transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each topic
// (TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not).

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

// pendingAck is one partition of an acks=-1 produce still waiting for the HW.
type pendingAck struct {
	p              *partition.Partition
	requiredOffset int64 // last offset written + 1
	ti, pi         int   // where its answer is in the response
	out            *kmsg.ProduceResponseTopicPartition
}

func handleProduce(c *conn, r *request) error {
	req := r.req.(*kmsg.ProduceRequest)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(req.Version)
	now := c.b.cfg.Now()
	img := c.b.ctl.Image()
	acksOK := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	var waits []pendingAck
	failed := false
	// Authorization (authz.go): WRITE on the transactional id, then on each topic,
	// before the topic's existence is looked at (Kafka's order: an unauthorized
	// client learns nothing of the topic).
	writeTopic := c.topicAuthorizerIfOn(acl.OpWrite)
	txnDenied := writeTopic != nil && req.TransactionID != nil &&
		!c.authorize(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)
	// v13 names topics by ID (KIP-516): resolved here, as Kafka's handleProduceRequest;
	// an ID this image does not know stays nameless and is UNKNOWN_TOPIC_ID.
	byID := req.Version >= 13
	if byID {
		for i := range req.Topics {
			req.Topics[i].Topic = ""
			if t := img.TopicsByID[controller.TopicID(req.Topics[i].TopicID)]; t != nil {
				req.Topics[i].Topic = t.Name
			}
		}
	}
	// A partition named twice is written once, from its last entry (duplicates.go).
	keys := getKeys()
	for _, rt := range req.Topics {
		key := rt.Topic
		if byID && key == "" {
			key = string(rt.TopicID[:]) // unknown IDs stay apart
		}
		for _, rp := range rt.Partitions {
			*keys = append(*keys, fetchKey{topic: key, partition: rp.Partition})
		}
	}
	superseded := repeatedPartitions(*keys, true)
	putKeys(keys)
	flat := -1

	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := img.Topics[rt.Topic]
		unknownID := byID && rt.Topic == ""
		for _, rp := range rt.Partitions {
			if flat++; superseded != nil && superseded[flat] {
				continue
			}
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			code, msg := int16(0), ""
			var p *partition.Partition
			switch {
			case !acksOK:
				code = kerr.InvalidRequiredAcks.Code
			case txnDenied:
				code = kerr.TransactionalIDAuthorizationFailed.Code
			case unknownID:
				code = kerr.UnknownTopicID.Code
			case !writeTopic.ok(rt.Topic):
				code = kerr.TopicAuthorizationFailed.Code
			case t == nil:
				code = kerr.UnknownTopicOrPartition.Code
			default:
				p = c.b.rm.Partition(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				if p == nil {
					code = kerr.UnknownTopicOrPartition.Code
					if rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
						code = kerr.NotLeaderForPartition.Code
					}
				}
			}
			if code == 0 {
				var last int64
				tc := c.b.topicConfigFor(t)
				code, msg, last = c.b.appendToPartition(p, rp.Records, req.Acks, &tc, now, &sp, req.TransactionID, req.Version)
				if code == 0 && req.Acks == -1 {
					waits = append(waits, pendingAck{p: p, requiredOffset: last + 1, ti: len(resp.Topics), pi: len(st.Partitions)})
				}
			}
			if code != 0 {
				failed = true
				sp.ErrorCode = code
				if msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) == 0 && len(rt.Partitions) > 0 {
			continue // every entry superseded by a later one
		}
		resp.Topics = append(resp.Topics, st)
	}

	if req.Acks == 0 {
		r.resp.skip()
		if failed {
			return errors.New("server: acks=0 produce failed")
		}
		return nil
	}
	if len(waits) == 0 {
		r.resp.finish(resp)
		return nil
	}
	for i := range waits { // the response slices are final now
		waits[i].out = &resp.Topics[waits[i].ti].Partitions[waits[i].pi]
	}
	c.delayProduce(r, resp, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
	return nil
}

// appendToPartition validates and appends one partition's records, filling sp; it
// returns the error code and message, and the last offset written.
func (b *Broker) appendToPartition(p *partition.Partition, records []byte, acks int16, tc *config.Topic, now time.Time, sp *kmsg.ProduceResponseTopicPartition, txnID *string, version int16) (int16, string, int64) {
	v := protocol.NewProduceValidator(int(tc.MaxMessageBytes))
	v.Compacted = slices.Contains(tc.CleanupPolicy, "compact")
	v.TimestampBeforeMaxMs, v.TimestampAfterMaxMs = tc.MessageTimestampBeforeMaxMs, tc.MessageTimestampAfterMaxMs
	v.NoZstd = version < 7 // as Kafka's ProduceRequest.validateRecords
	// compression.type: batches of another codec are rebuilt with the topic's (compression.go).
	if target, ok := storedCompression(tc); ok {
		v.Target = &target
	}
	// LogAppendTime is stamped by the log, with the same clock, at the append.
	batch, err := v.Validate(records, now.UnixMilli())
	if err != nil {
		var rve *protocol.RecordValidationError
		if errors.As(err, &rve) {
			for _, re := range rve.Records {
				e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				e.RelativeOffset = re.BatchIndex
				m := re.Message
				e.ErrorMessage = &m
				sp.ErrorRecords = append(sp.ErrorRecords, e)
			}
		}
		return protocol.ErrorCode(err), err.Error(), -1
	}
	var guard uint64
	if batch.IsTransactional() {
		if txnID == nil {
			return kerr.TransactionalIDAuthorizationFailed.Code, "", -1
		}
		// v12+ is a transaction version 2 client (KIP-890 part 2): it sent no
		// AddPartitionsToTxn, the leader adds the partition, whatever the
		// verification setting (Kafka's ADD_PARTITION operation).
		addPartition := version >= 12
		if addPartition || b.brokerConfig().TransactionPartitionVerificationEnable {
			guard = p.Log.StartTxnVerification(batch.ProducerID())
			tp := []coordinator.TopicPartition{{Topic: p.TP.Topic, Partition: p.TP.Partition}}
			var code int16
			if addPartition {
				code = b.addTxnPartitions(*txnID, batch.ProducerID(), batch.ProducerEpoch(), tp)[0]
				if code == kerr.ConcurrentTransactions.Code {
					// Still ending the previous transaction after the retries: the
					// client retries it, as Kafka answers it to ADD_PARTITION produces.
					return code, "", -1
				}
			} else {
				code = b.verifyTxn(*txnID, batch.ProducerID(), batch.ProducerEpoch(), tp)[0]
			}
			if code = verifyError(code, version <= 10); code != 0 {
				return code, "", -1
			}
		}
	}
	info, err := p.AppendRecordsToLeaderVerified(batch, acks, tc.MinInsyncReplicas, now, guard)
	var dup *storage.DuplicateError
	switch {
	case errors.As(err, &dup):
		sp.BaseOffset = dup.FirstOffset
		sp.LogStartOffset = p.Log.LogStartOffset()
		return 0, "", dup.LastOffset
	case err != nil:
		return errorCode(err), "", -1
	}
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	b.countProduced(len(records), info.FirstOffset, info.LastOffset)
	b.rm.Purgatory.CheckAndComplete(p.TP)
	return 0, "", info.LastOffset
}

// delayProduce answers r once every partition's HW reaches its required offset, as
// Kafka's DelayedProduce.
func (c *conn) delayProduce(r *request, resp *kmsg.ProduceResponse, waits []pendingAck, timeout time.Duration) {
	keys := make([]storage.TopicPartition, len(waits))
	for i, w := range waits {
		keys[i] = w.p.TP
	}
	// Each wait starts as REQUEST_TIMED_OUT (what a timeout answers) and is cleared,
	// or set to the partition's error, once it is done, as Kafka's DelayedProduce.
	pending := make([]bool, len(waits))
	for i := range waits {
		pending[i] = true
	}
	check := func() bool {
		all := true
		for i, w := range waits {
			if !pending[i] {
				continue
			}
			done, err := w.p.EnoughReplicas(w.requiredOffset)
			if !done {
				all = false
				continue
			}
			pending[i] = false
			w.out.ErrorCode = errorCode(err)
		}
		return all
	}
	d := c.newDelayed(r, check, func(expired bool) {
		if expired {
			check()
			for i, w := range waits {
				if pending[i] {
					w.out.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		r.resp.finish(resp)
	})
	c.b.rm.Purgatory.TryCompleteElseWatch(d, keys, timeout)
}

// verifyError maps a failed verification to what a producer is told, as Kafka's
// AddPartitionsToTxnManager and ReplicaManager:
// coordinator trouble is retriable (NOT_ENOUGH_REPLICAS), a fenced epoch is
// INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE for clients that
// predate it (oldClient).
func verifyError(code int16, oldClient bool) int16 {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if oldClient {
			return kerr.InvalidTxnState.Code
		}
	}
	return code
}
