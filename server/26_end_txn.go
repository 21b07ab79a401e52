package server

// EndTxn: v0-4.
//
// Commits or aborts the producer's transaction: the coordinator writes PrepareCommit
// or PrepareAbort, a marker to every partition of the transaction (which moves their
// LSO and, on __consumer_offsets, applies the transactional offsets), then
// CompleteCommit / CompleteAbort. Repeating a finished end answers NONE; the opposite
// end, or ending with no transaction, INVALID_TXN_STATE; while markers are being
// written, CONCURRENT_TRANSACTIONS. v5 (transaction version 2: an epoch bump at every
// end) is not served.

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
		resp.ErrorCode = c.b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 2 {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
		}
		r.resp.finish(resp)
	}()
	return nil
}
