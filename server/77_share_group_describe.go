package server

// ShareGroupDescribe: v1.
//
// State (Empty, Stable), group and assignment epochs, the assignor (simple) and
// every member with its subscription and assignment. GROUP_ID_NOT_FOUND for unknown
// groups and for classic or consumer ones, INVALID_GROUP_ID for "",
// GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group.
// Served only with Hooks.ShareGroups (share_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleShareGroupDescribe(c *conn, r *request) error {
	req := r.req.(*kmsg.ShareGroupDescribeRequest)
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.SetVersion(req.Version)
	resp.Groups = c.b.groups.ShareGroupDescribe(req.GroupIDs)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.GroupID; !c.authorize(acl.OpDescribe, acl.ResourceGroup, name) {
			*g = kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode, g.AuthorizedOperations = name, kerr.GroupAuthorizationFailed.Code, authorizedOpsOmitted
		} else if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, name)
		}
	}
	r.resp.finish(resp)
	return nil
}
