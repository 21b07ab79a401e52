package server

// LeaveGroup: v0-5.
//
// Removes members and rebalances the rest. v0-2 name one member id and answer with
// its error at the top level; v3+ batch members, each by member id or by
// group.instance.id (FENCED_INSTANCE_ID when both are given and disagree), each with
// its own error code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
)

func handleLeaveGroup(c *conn, r *request) error {
	req := r.req.(*kmsg.LeaveGroupRequest)
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(req.Version)
	if !c.mayReadGroup(req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		r.resp.finish(resp)
		return nil
	}
	var members []coordinator.LeaveMember
	if req.Version < 3 {
		members = []coordinator.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, coordinator.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	code, codes := c.b.groups.LeaveGroup(req.Group, members)
	resp.ErrorCode = code
	if req.Version < 3 {
		if code == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
	} else if code == 0 {
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, codes[i]
			resp.Members = append(resp.Members, rm)
		}
	}
	r.resp.finish(resp)
	return nil
}
