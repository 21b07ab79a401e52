package server

// OffsetDelete: v0.
//
// Deletes a group's committed offsets (tombstones) for topics no member subscribes
// to: GROUP_SUBSCRIBED_TO_TOPIC per partition otherwise, UNKNOWN_TOPIC_OR_PARTITION
// for a topic that does not exist; GROUP_ID_NOT_FOUND for an unknown group,
// NON_EMPTY_GROUP for an active group that is not a consumer group.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetDelete(c *conn, r *request) error {
	req := r.req.(*kmsg.OffsetDeleteRequest)
	resp := c.b.groups.OffsetDelete(req)
	resp.SetVersion(req.Version)
	r.resp.finish(resp)
	return nil
}
