package server

// SyncGroup: v0-5.
//
// The leader sends the assignment; it is written to __consumer_offsets with the
// group's metadata and only then is every member answered with its part. Followers'
// requests wait in the group until then. REBALANCE_IN_PROGRESS during a join phase,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL
// (v5+ protocol type / name that do not match the group's).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSyncGroup(c *conn, r *request) error {
	req := r.req.(*kmsg.SyncGroupRequest)
	if !c.mayReadGroup(req.Group) {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		r.resp.finish(resp)
		return nil
	}
	c.b.groups.SyncGroup(req, func(m kmsg.Response) {
		m.SetVersion(req.Version)
		r.resp.finish(m)
	})
	return nil
}
