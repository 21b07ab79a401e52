package server

// OffsetFetch: v1-10.
//
// Committed offsets of one group (v1-7) or several (v8+); a null topic list (v2+)
// means every committed offset. Unknown groups and partitions answer offset -1 with
// no error; group-level errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// INVALID_GROUP_ID) are top-level on v2-7, per group on v8+, per partition on v1.
// require_stable (v7+): a partition with a transactional commit awaiting its marker
// is UNSTABLE_OFFSET_COMMIT. v10 names topics by id (UNKNOWN_TOPIC_ID for an unknown one).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetFetch(c *conn, r *request) error {
	req := r.req.(*kmsg.OffsetFetchRequest)
	resp := c.b.groups.OffsetFetch(req)
	resp.SetVersion(req.Version)
	if c.b.authz != nil {
		c.filterOffsetFetch(req, resp)
	}
	r.resp.finish(resp)
	return nil
}
