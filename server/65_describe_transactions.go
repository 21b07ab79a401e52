package server

// DescribeTransactions: v0.
//
// The state of each transactional id this broker coordinates: state name, timeout,
// start timestamp, producer id and epoch, partitions.
// TRANSACTIONAL_ID_NOT_FOUND for an unknown id; NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as the other coordinator
// APIs.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleDescribeTransactions(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeTransactionsRequest)
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.SetVersion(req.Version)
	resp.TransactionStates = c.b.txns.Describe(req.TransactionalIDs)
	if c.b.authz != nil {
		describe := c.topicAuthorizer(acl.OpDescribe)
		for i := range resp.TransactionStates {
			s := &resp.TransactionStates[i]
			if id := s.TransactionalID; !c.authorize(acl.OpDescribe, acl.ResourceTransactionalID, id) {
				*s = kmsg.NewDescribeTransactionsResponseTransactionState()
				s.TransactionalID, s.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
				continue
			}
			kept := s.Topics[:0]
			for _, t := range s.Topics {
				if describe.ok(t.Topic) {
					kept = append(kept, t)
				}
			}
			s.Topics = kept
		}
	}
	r.resp.finish(resp)
	return nil
}
