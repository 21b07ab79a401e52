package server

// OffsetDelete: v0.
//
// Deletes a group's committed offsets (tombstones) for topics no member subscribes
// to: GROUP_SUBSCRIBED_TO_TOPIC per partition otherwise, UNKNOWN_TOPIC_OR_PARTITION
// for a topic that does not exist; GROUP_ID_NOT_FOUND for an unknown group,
// NON_EMPTY_GROUP for an active group that is not a consumer group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetDelete(c *conn, r *request) error {
	req := r.req.(*kmsg.OffsetDeleteRequest)
	var refused []kmsg.OffsetDeleteResponseTopic
	if c.b.authz != nil {
		var denied bool
		if refused, denied = c.offsetDeleteAuthz(req); denied {
			resp := kmsg.NewPtrOffsetDeleteResponse()
			resp.SetVersion(req.Version)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			r.resp.finish(resp)
			return nil
		}
	}
	resp := c.b.groups.OffsetDelete(req)
	resp.SetVersion(req.Version)
	resp.Topics = append(resp.Topics, refused...)
	r.resp.finish(resp)
	return nil
}
