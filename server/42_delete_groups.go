package server

// DeleteGroups: v0-3.
//
// Deletes Empty groups: tombstones for every committed offset and for the group's
// metadata are written to __consumer_offsets before the answer. GROUP_ID_NOT_FOUND
// for an unknown group, NON_EMPTY_GROUP for one with members, INVALID_GROUP_ID for "".

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleDeleteGroups(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.SetVersion(req.Version)
	groups := req.Groups
	var refused []kmsg.DeleteGroupsResponseGroup
	if c.b.authz != nil {
		groups = nil
		for _, g := range req.Groups {
			if c.authorize(acl.OpDelete, acl.ResourceGroup, g) {
				groups = append(groups, g)
				continue
			}
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			refused = append(refused, rg)
		}
	}
	if len(groups) > 0 {
		resp.Groups = c.b.groups.DeleteGroups(groups)
	}
	resp.Groups = append(resp.Groups, refused...)
	r.resp.finish(resp)
	return nil
}
