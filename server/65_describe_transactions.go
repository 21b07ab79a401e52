package server

// DescribeTransactions: v0.
//
// The state of each transactional id this broker coordinates: state name, timeout,
// start timestamp, producer id and epoch, partitions.
// TRANSACTIONAL_ID_NOT_FOUND for an unknown id; NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as the other coordinator
// APIs.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDescribeTransactions(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeTransactionsRequest)
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.SetVersion(req.Version)
	resp.TransactionStates = c.b.txns.Describe(req.TransactionalIDs)
	r.resp.finish(resp)
	return nil
}
