package server

// Heartbeat: v0-4.
//
// Keeps a classic member's session alive. REBALANCE_IN_PROGRESS tells it to rejoin;
// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and FENCED_INSTANCE_ID that it is out of the
// group; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as for every group request.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleHeartbeat(c *conn, r *request) error {
	req := r.req.(*kmsg.HeartbeatRequest)
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(req.Version)
	if !c.mayReadGroup(req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		r.resp.finish(resp)
		return nil
	}
	resp.ErrorCode = c.b.groups.Heartbeat(req)
	r.resp.finish(resp)
	return nil
}
