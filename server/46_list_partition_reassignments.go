package server

// ListPartitionReassignments: v0.
//
// kafka-reassign-partitions --verify, kafka-topics --describe (its "Adding Replicas" /
// "Removing Replicas") and Admin.listPartitionReassignments: answered by the active
// controller from its image (controller.ListPartitionReassignments: the reassigning
// partitions, all of them for a null topic list, unknown ones left out). DESCRIBE on
// the cluster, else CLUSTER_AUTHORIZATION_FAILED (brokerAuthz). Brokers forward it, as
// Kafka's do, so the answer never lags the controller.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleListPartitionReassignments(c *conn, r *request) error {
	req := r.req.(*kmsg.ListPartitionReassignmentsRequest)
	go func() { r.resp.finish(c.b.ctl.ListPartitionReassignments(req)) }()
	return nil
}

// ListPartitionReassignments forwards a ListPartitionReassignments request to the
// active controller.
func (m *brokerMeta) ListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return controller.ListPartitionReassignmentsError(req, kerr.RequestTimedOut.Code, nil)
	}
	return resp.(*kmsg.ListPartitionReassignmentsResponse)
}
