package server

// AlterPartitionReassignments: v0-1.
//
// kafka-reassign-partitions --execute / --cancel and Admin.alterPartitionReassignments:
// carried out by the active controller (controller.AlterPartitionReassignments: Kafka's
// adding / removing replica semantics, cancel with null replicas, per-partition
// UNKNOWN_TOPIC_OR_PARTITION, NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT,
// v1's INVALID_REPLICATION_FACTOR). Authorized as Kafka's ControllerApis: ALTER on the
// cluster, else CLUSTER_AUTHORIZATION_FAILED at the top level and on every partition
// (brokerAuthz, before this handler). Brokers forward it as the client sent it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
)

func handleAlterPartitionReassignments(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterPartitionAssignmentsRequest)
	go func() { r.resp.finish(c.b.ctl.AlterPartitionReassignments(req)) }()
	return nil
}

// AlterPartitionReassignments forwards an AlterPartitionReassignments request to the
// active controller.
func (m *brokerMeta) AlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return controller.AlterPartitionReassignmentsError(req, kerr.RequestTimedOut.Code, nil)
	}
	return resp.(*kmsg.AlterPartitionAssignmentsResponse)
}
