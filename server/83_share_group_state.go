package server

// InitializeShareGroupState v0, ReadShareGroupState v0, WriteShareGroupState v0-1,
// DeleteShareGroupState v0, ReadShareGroupStateSummary v0-1.
//
// The share coordinator's RPCs (KIP-932), which a share partition's leader sends to
// the broker leading its state's __share_group_state partition (Kafka's Persister;
// share_coordinator.go) and the group coordinator sends for offsets admin. Each
// partition is answered by the local share coordinator (coordinator/share_state.go):
// NOT_COORDINATOR when this broker does not lead its state partition,
// COORDINATOR_LOAD_IN_PROGRESS while it loads. CLUSTER_ACTION on the cluster, as
// KafkaApis: CLUSTER_AUTHORIZATION_FAILED on every partition otherwise. Served only
// with Hooks.ShareGroups (share_apis.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

// shareStateAPI runs one state RPC on the share coordinator, every partition
// answered CLUSTER_AUTHORIZATION_FAILED for a client without CLUSTER_ACTION.
func shareStateAPI[Req kmsg.Request, Resp kmsg.Response](c *conn, r *request, serve func(Req, int16) Resp) error {
	var deny int16
	if !c.authorizeCluster(acl.OpClusterAction) {
		deny = kerr.ClusterAuthorizationFailed.Code
	}
	r.resp.finish(serve(r.req.(Req), deny))
	return nil
}

func handleInitializeShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Initialize)
}

func handleReadShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Read)
}

func handleWriteShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Write)
}

func handleDeleteShareGroupState(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.Delete)
}

func handleReadShareGroupStateSummary(c *conn, r *request) error {
	return shareStateAPI(c, r, c.b.shareCoord.ReadSummary)
}
