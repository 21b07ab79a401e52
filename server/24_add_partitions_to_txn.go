package server

// AddPartitionsToTxn: v0-5.
//
// v0-3 (producers): add the partitions to the producer's transaction, which becomes
// Ongoing. A partition of an unknown topic is UNKNOWN_TOPIC_OR_PARTITION and then
// every other partition OPERATION_NOT_ATTEMPTED, nothing added, as Kafka's KafkaApis.
// Coordinator errors (NOT_COORDINATOR, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED —
// INVALID_PRODUCER_EPOCH before v2 —, CONCURRENT_TRANSACTIONS) apply to every
// partition. v4+ (brokers) batch several transactions; verify_only asks whether each
// partition is already in the transaction (KIP-890 part 1: TRANSACTION_ABORTABLE when
// not) without adding it; without it the partitions are added for a produce or
// TxnOffsetCommit of a transaction version 2 client (KIP-890 part 2), and the
// transaction runs at version 2 from then on.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
)

type txnTopic struct {
	topic      string
	partitions []int32
}

func handleAddPartitionsToTxn(c *conn, r *request) error {
	if c.b.authz != nil {
		if resp := c.addPartitionsToTxnAuthz(r.req.(*kmsg.AddPartitionsToTxnRequest)); resp != nil {
			r.resp.finish(resp)
			return nil
		}
	}
	go addPartitionsToTxn(c, r) // the coordinator's write waits for the HW: not on the read loop
	return nil
}

func addPartitionsToTxn(c *conn, r *request) {
	req := r.req.(*kmsg.AddPartitionsToTxnRequest)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.SetVersion(req.Version)
	if req.Version < 4 {
		topics := make([]txnTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := c.b.addPartitionsToTxnCodes(req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics, req.Version)
		for i, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.resp.finish(resp)
		return
	}
	for _, tx := range req.Transactions {
		topics := make([]txnTopic, len(tx.Topics))
		for i, t := range tx.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := c.b.addPartitionsToTxnCodes(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics, req.Version)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	r.resp.finish(resp)
}

// addPartitionsToTxnCodes answers one transaction's partitions (codes in request order).
func (b *Broker) addPartitionsToTxnCodes(id string, pid int64, epoch int16, verifyOnly bool, topics []txnTopic, version int16) [][]int16 {
	codes := make([][]int16, len(topics))
	var parts []coordinator.TopicPartition
	img := b.ctl.Image()
	bad := false
	for i, t := range topics {
		codes[i] = make([]int16, len(t.partitions))
		ti := img.Topics[t.topic]
		for j, p := range t.partitions {
			if ti == nil || p < 0 || int(p) >= len(ti.Partitions) {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				bad = true
				continue
			}
			parts = append(parts, coordinator.TopicPartition{Topic: t.topic, Partition: p})
		}
	}
	fill := func(code int16, onlyZero bool) [][]int16 {
		for i := range codes {
			for j := range codes[i] {
				if !onlyZero || codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
		return codes
	}
	if bad {
		return fill(kerr.OperationNotAttempted.Code, true)
	}
	if verifyOnly {
		v := b.txns.VerifyPartitions(id, pid, epoch, parts)
		k := 0
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = v[k]
				k++
			}
		}
		return codes
	}
	tv := int16(0) // transactionVersionForAddPartitionsToTxn: v4+ come from brokers adding for KIP-890 part 2 clients
	if version >= 4 {
		tv = 2
	}
	code := b.txns.AddPartitions(id, pid, epoch, parts, tv)
	if code == kerr.ProducerFenced.Code && version < 2 {
		code = kerr.InvalidProducerEpoch.Code
	}
	return fill(code, false)
}
