package server

// ListTransactions: v0-2.
//
// The transactions this broker coordinates, filtered by state names (unknown names are
// echoed in unknown_state_filters and match nothing), producer ids, minimum running
// duration (v1+: Ongoing for longer than it) and a transactional id regular
// expression (v2+; INVALID_REGULAR_EXPRESSION when it does not compile).
// COORDINATOR_LOAD_IN_PROGRESS while a partition is loading.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleListTransactions(c *conn, r *request) error {
	req := r.req.(*kmsg.ListTransactionsRequest)
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.SetVersion(req.Version)
	dur := int64(-1)
	if req.Version >= 1 {
		dur = req.DurationFilterMillis
	}
	var pattern *string
	if req.Version >= 2 {
		pattern = req.TransactionalIDPattern
	}
	resp.ErrorCode, resp.UnknownStateFilters, resp.TransactionStates = c.b.txns.List(req.StateFilters, req.ProducerIDFilters, dur, pattern)
	if c.b.authz != nil {
		kept := resp.TransactionStates[:0]
		for _, s := range resp.TransactionStates {
			if c.authorize(acl.OpDescribe, acl.ResourceTransactionalID, s.TransactionalID) {
				kept = append(kept, s)
			}
		}
		resp.TransactionStates = kept
	}
	r.resp.finish(resp)
	return nil
}
