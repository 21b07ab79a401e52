package server

// DeleteGroups: v0-3.
//
// Deletes Empty groups: tombstones for every committed offset and for the group's
// metadata are written to __consumer_offsets before the answer. GROUP_ID_NOT_FOUND
// for an unknown group, NON_EMPTY_GROUP for one with members, INVALID_GROUP_ID for "".

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteGroups(c *conn, r *request) error {
	req := r.req.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.SetVersion(req.Version)
	resp.Groups = c.b.groups.DeleteGroups(req.Groups)
	r.resp.finish(resp)
	return nil
}
