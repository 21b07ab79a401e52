package server

// StreamsGroupTopologyDescriptionUpdate: v0.
//
// A member pushes its full topology description for a topology description plugin
// to store. gokafkad configures no such plugin, so, as Kafka 4.4 without one, every
// request is UNSUPPORTED_VERSION "The broker has no streams group topology
// description plugin configured." (after GROUP_AUTHORIZATION_FAILED without READ on
// the group), and StreamsGroupHeartbeat v1 never asks for a description.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleStreamsGroupTopologyDescriptionUpdate(c *conn, r *request) error {
	req := r.req.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	resp := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateResponse()
	resp.SetVersion(req.Version)
	if !c.mayReadGroup(req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	} else {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = kmsg.StringPtr("The broker has no streams group topology description plugin configured.")
	}
	r.resp.finish(resp)
	return nil
}
