package server

// ElectLeaders: v0-2.
//
// kafka-leader-election and Admin.electLeaders: carried out by the active controller
// (controller.ElectLeaders: PREFERRED and UNCLEAN elections with Kafka's per-partition
// codes; a null topic list means every partition). Authorized as Kafka's KafkaApis /
// ControllerApis: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top
// level (v1+) and on every partition named (brokerAuthz, before this handler).
//
// Forwarding always goes out at v2 (the answer is re-versioned to the client's), so
// the controller's top-level NOT_CONTROLLER is seen even for a v0 request with a
// null topic list, whose v0 answer has nowhere to carry it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleElectLeaders(c *conn, r *request) error {
	req := r.req.(*kmsg.ElectLeadersRequest)
	r.resp.finish(c.b.ctl.ElectLeaders(req))
	return nil
}

// ElectLeaders forwards an ElectLeaders request to the active controller.
func (m *brokerMeta) ElectLeaders(req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	fwd := *req
	fwd.Version = 2
	if req.Version == 0 {
		fwd.ElectionType = controller.ElectionPreferred // v0 has no election type
	}
	resp, err := m.forward(&fwd)
	if err != nil {
		return controller.ElectLeadersError(req, kerr.RequestTimedOut.Code, nil)
	}
	out := resp.(*kmsg.ElectLeadersResponse)
	out.SetVersion(req.Version)
	return out
}
