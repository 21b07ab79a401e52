package server

// AddOffsetsToTxn: v0-4.
//
// Adds the group's __consumer_offsets partition to the producer's transaction, so a
// TxnOffsetCommit may follow. Errors as AddPartitionsToTxn (the group id itself is
// checked by TxnOffsetCommit, as Kafka).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleAddOffsetsToTxn(c *conn, r *request) error {
	req := r.req.(*kmsg.AddOffsetsToTxnRequest)
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.SetVersion(req.Version)
	switch {
	case !c.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.authorize(acl.OpRead, acl.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	}
	if resp.ErrorCode != 0 {
		r.resp.finish(resp)
		return nil
	}
	go func() { // the coordinator's write waits for the HW: not on the read loop
		resp.ErrorCode = c.b.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 2 {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
		}
		r.resp.finish(resp)
	}()
	return nil
}
