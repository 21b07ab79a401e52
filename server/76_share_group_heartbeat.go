package server

// ShareGroupHeartbeat: v1.
//
// KIP-932 share group membership (coordinator.ShareGroup): member epoch 0 joins
// with the member id the client chose, -1 leaves, any other epoch must be the
// member's current one. The simple share assignor gives every member every
// partition of the topics it subscribes to; the answer carries the member's epoch
// and, when it changed, its assignment. Errors, with Kafka's messages:
// INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
// GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED (READ on the group),
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
// Served only with Hooks.ShareGroups (share_apis.go).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/coordinator"
)

func handleShareGroupHeartbeat(c *conn, r *request) error {
	req := r.req.(*kmsg.ShareGroupHeartbeatRequest)
	var resp *kmsg.ShareGroupHeartbeatResponse
	if !c.mayReadGroup(req.GroupID) {
		resp = kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	} else {
		resp = c.b.groups.ShareGroupHeartbeat(req, r.hdr.ClientID, c.clientHost())
	}
	resp.SetVersion(req.Version)
	r.resp.finish(resp)
	return nil
}

// shareGroupConfig is the group.share.* membership part of the coordinator's config.
func shareGroupConfig(b *config.Broker) coordinator.ShareGroupConfig {
	return coordinator.ShareGroupConfig{
		SessionTimeout:    time.Duration(b.ShareGroupSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval: time.Duration(b.ShareGroupHeartbeatIntervalMs) * time.Millisecond,
		MaxSize:           int(b.ShareGroupMaxSize),
	}
}
