package server

// OffsetCommit: v2-10.
//
// Commits offsets for a group member of the current generation, or — generation -1
// and no member id — for an Empty or unknown ("simple") group. Answered once the
// records are written to __consumer_offsets. Per partition: UNKNOWN_TOPIC_OR_PARTITION
// for a partition that does not exist (UNKNOWN_TOPIC_ID on v10, which names topics by
// id), OFFSET_METADATA_TOO_LARGE past offset.metadata.max.bytes; for the whole request:
// INVALID_GROUP_ID, ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND on v9+ for an unknown
// group), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS,
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS. v2-4's retention time sets the
// offset's expire timestamp. v0-1 were removed in Kafka 4.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetCommit(c *conn, r *request) error {
	req := r.req.(*kmsg.OffsetCommitRequest)
	var refused []kmsg.OffsetCommitResponseTopic
	if c.b.authz != nil {
		var done bool
		if refused, done = c.offsetCommitAuthz(req); done {
			resp := kmsg.NewPtrOffsetCommitResponse()
			resp.SetVersion(req.Version)
			resp.Topics = refused
			r.resp.finish(resp)
			return nil
		}
	}
	resp := c.b.groups.OffsetCommit(req)
	resp.SetVersion(req.Version)
	resp.Topics = append(resp.Topics, refused...)
	r.resp.finish(resp)
	return nil
}
