package server

// FindCoordinator: v0-6.
//
// Key type 0 (group): the coordinator is the leader of partition
// abs(hashCode(group)) % offsets.topic.num.partitions of __consumer_offsets. The
// topic is created through the controller on the first lookup (compacted, with
// offsets.topic.replication.factor replicas), as Kafka's AutoTopicCreationManager
// does; Kafka then answers COORDINATOR_NOT_AVAILABLE and lets the client retry, while
// here the creation is synchronous so the answer names the new leader at once when it
// is known. No leader, or a leader not registered: COORDINATOR_NOT_AVAILABLE. Key type
// 1 (transaction) is COORDINATOR_NOT_AVAILABLE until the transaction coordinator
// exists; any other type is INVALID_REQUEST. v4+ batches keys.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/coordinator"
)

func handleFindCoordinator(c *conn, r *request) error {
	req := r.req.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(req.Version)
	if req.Version < 4 {
		co := c.b.findCoordinator(req.CoordinatorKey, req.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
	} else {
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, c.b.findCoordinator(k, req.CoordinatorType))
		}
	}
	r.resp.finish(resp)
	return nil
}

func (b *Broker) findCoordinator(key string, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key, co.NodeID, co.Port = key, -1, -1
	fail := func(code int16) kmsg.FindCoordinatorResponseCoordinator {
		co.ErrorCode = code
		msg := kerr.TypedErrorForCode(code).Description
		co.ErrorMessage = &msg
		return co
	}
	switch keyType {
	case 0:
	case 1:
		return fail(kerr.CoordinatorNotAvailable.Code)
	default:
		return fail(kerr.InvalidRequest.Code)
	}
	img := b.ctl.Image()
	t := img.Topics[coordinator.OffsetsTopic]
	if t == nil {
		if code := b.createOffsetsTopic(); code != 0 {
			return fail(kerr.CoordinatorNotAvailable.Code)
		}
		img = b.ctl.Image()
		if t = img.Topics[coordinator.OffsetsTopic]; t == nil {
			return fail(kerr.CoordinatorNotAvailable.Code)
		}
	}
	p := b.groups.PartitionFor(key)
	if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	br, ok := img.Brokers[t.Partitions[p].Leader]
	if !ok || br.Fenced {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	co.NodeID, co.Host, co.Port = br.ID, br.Host, br.Port
	none := "NONE" // Kafka sets Errors.NONE.message() on success too
	co.ErrorMessage = &none
	return co
}
