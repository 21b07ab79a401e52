package server

// DescribeCluster: v0-2.
//
// Answers as a KRaft broker does (KafkaApis.handleDescribeCluster): the unfenced
// brokers (v2 include_fenced_brokers: every registered broker, with is_fenced), the
// cluster id, the controller id Metadata reports (the active controller when it is a
// live broker, else this node, which forwards), and endpoint type 1 (brokers). Asking for
// the controllers' endpoint (type 2) is MISMATCHED_ENDPOINT_TYPE, any other type
// UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST for both in v0). The cluster authorized
// operations, when asked for, are 0 without DESCRIBE on the cluster, else the
// principal's (every cluster operation without an authorizer), as Kafka's AuthHelper.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Endpoint types of DescribeCluster v1+ (KIP-919).
const (
	endpointBrokers     = 1
	endpointControllers = 2
)

func handleDescribeCluster(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeClusterRequest)
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.SetVersion(req.Version)
	fail := func(code int16, msg string) {
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		r.resp.finish(resp)
	}
	switch req.EndpointType {
	case endpointBrokers:
	case endpointControllers:
		fail(kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return nil
	default:
		fail(kerr.UnsupportedEndpointType.Code, fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType))
		return nil
	}
	img := c.b.ctl.Image()
	resp.EndpointType = endpointBrokers
	resp.ClusterID = img.ClusterID
	resp.ClusterAuthorizedOperations = authorizedOpsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.clusterAuthorizedOps()
	}
	resp.ControllerID = c.b.metadataControllerID(img)
	for _, br := range img.SortedBrokers() {
		ep, ok := br.Endpoint(c.session.listener) // the request's listener, as Metadata
		if (br.Fenced && !req.IncludeFencedBrokers) || !ok {
			continue
		}
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack, b.IsFenced = br.ID, ep.Host, ep.Port, br.Rack, br.Fenced
		resp.Brokers = append(resp.Brokers, b)
	}
	r.resp.finish(resp)
	return nil
}
