package server

// TxnOffsetCommit: v0-4.
//
// Offsets committed inside a transaction: the group coordinator writes them to
// __consumer_offsets in a transactional batch and holds them pending until the
// transaction's marker commits (or drops) them. First the transaction coordinator
// must confirm that the group's __consumer_offsets partition is in the producer's
// transaction (AddOffsetsToTxn came first; TRANSACTION_ABORTABLE otherwise,
// INVALID_TXN_STATE before v4, with the producer errors mapped as for produce), as
// KIP-890 part 1 verifies. Group errors as OffsetCommit
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; commits during a
// rebalance are accepted). v5 (transaction version 2: implicit AddOffsetsToTxn) is not
// served.

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
	if b.authz != nil {
		var done bool
		if refused, done = c.txnOffsetCommitAuthz(req); done {
			resp := kmsg.NewPtrTxnOffsetCommitResponse()
			resp.SetVersion(req.Version)
			resp.Topics = refused
			r.resp.finish(resp)
			return nil
		}
	}
	go func() { // writes wait for the HW: not on the read loop
		resp := b.groups.TxnOffsetCommit(req, func(partition int32) int16 {
			tp := coordinator.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: partition}
			code := b.verifyTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []coordinator.TopicPartition{tp})[0]
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
