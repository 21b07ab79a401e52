package server

// StreamsGroupDescribe: v0-1.
//
// State (Empty, NotReady, Assigning, Reconciling, Stable), group and assignment
// epochs, the topology (its epoch; its subtopologies with their topics' partition
// counts once the topics are ready), the assignor ("sticky", v1) and every member
// with its process, endpoint, client tags, current and target assignment.
// GROUP_ID_NOT_FOUND for unknown groups and other kinds of group, INVALID_GROUP_ID
// for "", GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group. v1's topology
// description is NOT_STORED when asked for (no topology description plugin), else
// NOT_REQUESTED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleStreamsGroupDescribe(c *conn, r *request) error {
	req := r.req.(*kmsg.StreamsGroupDescribeRequest)
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	resp.SetVersion(req.Version)
	resp.Groups = c.b.groups.StreamsGroupDescribe(req.Groups, req.IncludeTopologyDescription)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.Group; !c.authorize(acl.OpDescribe, acl.ResourceGroup, name) {
			*g = kmsg.NewStreamsGroupDescribeResponseGroup()
			g.Group, g.ErrorCode, g.AuthorizedOperations = name, kerr.GroupAuthorizationFailed.Code, authorizedOpsOmitted
		} else if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, name)
		}
	}
	r.resp.finish(resp)
	return nil
}
