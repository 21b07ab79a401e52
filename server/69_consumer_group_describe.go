package server

// ConsumerGroupDescribe: v0-1.
//
// State (Empty, Assigning, Reconciling, Stable), group and assignment epochs, the
// assignor in use and every member with its subscription, current and target
// assignment (v1: member type 1, consumer protocol). GROUP_ID_NOT_FOUND for unknown
// groups and for classic ones, INVALID_GROUP_ID for "". Authorized operations are not
// computed (no ACLs yet).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleConsumerGroupDescribe(c *conn, r *request) error {
	req := r.req.(*kmsg.ConsumerGroupDescribeRequest)
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.SetVersion(req.Version)
	resp.Groups = c.b.groups.ConsumerGroupDescribe(req.Groups)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.Group; !c.authorize(acl.OpDescribe, acl.ResourceGroup, name) {
			*g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode, g.AuthorizedOperations = name, kerr.GroupAuthorizationFailed.Code, authorizedOpsOmitted
		} else if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, name)
		}
	}
	r.resp.finish(resp)
	return nil
}
