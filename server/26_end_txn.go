package server

// EndTxn: v0-5.
//
// Commits or aborts the producer's transaction: the coordinator writes PrepareCommit
// or PrepareAbort, a marker to every partition of the transaction (which moves their
// LSO and, on __consumer_offsets, applies the transactional offsets), then
// CompleteCommit / CompleteAbort. Repeating a finished end answers NONE; the opposite
// end, or ending with no transaction, INVALID_TXN_STATE; while markers are being
// written, CONCURRENT_TRANSACTIONS. v5 is transaction version 2 (KIP-890 part 2,
// whatever the cluster's finalized level, as Kafka's transactionVersionForEndTxn):
// every end bumps the producer epoch, and the answer carries the producer id and epoch
// to go on with (a new producer id at epoch 0 once the epoch is exhausted); an abort
// with no transaction open is accepted. The Java client and franz-go send v5 only
// when the finalized transaction.version is 2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleEndTxn(c *conn, r *request) error {
	req := r.req.(*kmsg.EndTxnRequest)
	resp := kmsg.NewPtrEndTxnResponse()
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !c.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		r.resp.finish(resp)
		return nil
	}
	// The coordinator may wait for markers: not on the connection's read loop.
	go func() {
		tv := int16(0)
		if req.Version >= 5 {
			tv = 2
		}
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = c.b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
		if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 2 {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
		}
		r.resp.finish(resp)
	}()
	return nil
}
