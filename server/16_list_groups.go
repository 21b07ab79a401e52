package server

// ListGroups: v0-5.
//
// Every group this broker coordinates, with its protocol type, state (v4+, filterable
// by states_filter, case-insensitively) and type (v5+, filterable by types_filter; all
// groups are "classic" until KIP-848 groups exist). COORDINATOR_LOAD_IN_PROGRESS while
// a partition is still loading.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleListGroups(c *conn, r *request) error {
	req := r.req.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.SetVersion(req.Version)
	var states, types []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	if req.Version >= 5 {
		types = req.TypesFilter
	}
	resp.ErrorCode, resp.Groups = c.b.groups.ListGroups(states, types)
	if c.b.authz != nil && !c.authorizeCluster(acl.OpDescribe) {
		// Without DESCRIBE on the cluster, only the groups the principal may describe.
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if c.authorize(acl.OpDescribe, acl.ResourceGroup, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
	}
	r.resp.finish(resp)
	return nil
}
