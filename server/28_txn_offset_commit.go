package server

// TxnOffsetCommit: v0-6.
//
// Offsets committed inside a transaction: the group coordinator writes them to
// __consumer_offsets in a transactional batch and holds them pending until the
// transaction's marker commits (or drops) them. First the transaction coordinator
// must confirm that the group's __consumer_offsets partition is in the producer's
// transaction (AddOffsetsToTxn came first; TRANSACTION_ABORTABLE otherwise,
// INVALID_TXN_STATE before v4, with the producer errors mapped as for produce), as
// KIP-890 part 1 verifies. From v5 (a transaction version 2 client, KIP-890 part 2)
// the client sends no AddOffsetsToTxn: the partition is added to the transaction here
// instead (Kafka's ADD_PARTITION operation). Group errors as OffsetCommit
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; commits during a
// rebalance are accepted). v6 (KIP-1319) names topics by ID (UNKNOWN_TOPIC_ID for one
// this broker does not know) and answers GROUP_ID_NOT_FOUND for a generation given to
// a group that does not exist and STALE_MEMBER_EPOCH for a consumer-protocol member's
// old epoch, where older versions say ILLEGAL_GENERATION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
)

func handleTxnOffsetCommit(c *conn, r *request) error {
	req := r.req.(*kmsg.TxnOffsetCommitRequest)
	if req.Version < 3 {
		req.Generation, req.MemberID, req.InstanceID = -1, "", nil
	}
	b := c.b
	var refused []kmsg.TxnOffsetCommitResponseTopic
	if req.Version >= 6 {
		// Topic IDs (KIP-1319): resolved here; an unknown one is UNKNOWN_TOPIC_ID.
		img := b.ctl.Image()
		kept := req.Topics[:0:0]
		for _, t := range req.Topics {
			if t.Topic = topicNameOf(img, "", t.TopicID); t.Topic != "" {
				kept = append(kept, t)
				continue
			}
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
		}
		req.Topics = kept
	}
	if b.authz != nil {
		denied, done := c.txnOffsetCommitAuthz(req)
		refused = append(refused, denied...)
		if done {
			resp := kmsg.NewPtrTxnOffsetCommitResponse()
			resp.SetVersion(req.Version)
			resp.Topics = refused
			r.resp.finish(resp)
			return nil
		}
	}
	if len(req.Topics) == 0 && len(refused) > 0 {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.SetVersion(req.Version)
		resp.Topics = refused
		r.resp.finish(resp)
		return nil
	}
	go func() { // writes wait for the HW: not on the read loop
		resp := b.groups.TxnOffsetCommit(req, func(partition int32) int16 {
			tp := coordinator.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: partition}
			parts := []coordinator.TopicPartition{tp}
			var code int16
			if req.Version >= 5 {
				code = b.addTxnPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)[0]
			} else {
				code = b.verifyTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)[0]
			}
			switch {
			case code == kerr.ProducerFenced.Code:
				return kerr.InvalidProducerEpoch.Code
			case code == kerr.TransactionAbortable.Code && req.Version <= 3:
				return kerr.InvalidTxnState.Code
			}
			return code
		})
		resp.SetVersion(req.Version)
		resp.Topics = append(resp.Topics, refused...)
		r.resp.finish(resp)
	}()
	return nil
}
