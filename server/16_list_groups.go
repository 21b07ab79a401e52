package server

// ListGroups: v0-5.
//
// Every group this broker coordinates, with its protocol type, state (v4+, filterable
// by states_filter, case-insensitively) and type (v5+, filterable by types_filter; all
// groups are "classic" until KIP-848 groups exist). COORDINATOR_LOAD_IN_PROGRESS while
// a partition is still loading.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
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
	r.resp.finish(resp)
	return nil
}
