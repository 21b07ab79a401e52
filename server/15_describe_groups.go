package server

// DescribeGroups: v0-6.
//
// State, protocol and members of each group; member metadata and assignments only
// when Stable (as Kafka). An unknown group is described as Dead, with
// GROUP_ID_NOT_FOUND from v6. Authorized operations are not computed (no ACLs yet).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeGroups(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(req.Version)
	resp.Groups = c.b.groups.DescribeGroups(req.Groups, req.Version)
	c.describedGroupsAuthz(resp.Groups, req.Version >= 3 && req.IncludeAuthorizedOperations)
	r.resp.finish(resp)
	return nil
}
