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
// 1 (transaction): the same with partition abs(hashCode(id)) %
// transaction.state.log.num.partitions of __transaction_state (an empty id is
// INVALID_REQUEST, as Kafka); any other type is INVALID_REQUEST. v4+ batches keys.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/coordinator"
)

func handleFindCoordinator(c *conn, r *request) error {
	req := r.req.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(req.Version)
	find := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		// DESCRIBE on the group or transactional id, as Kafka's
		// handleFindCoordinatorRequest.
		rt := acl.ResourceGroup
		code := kerr.GroupAuthorizationFailed.Code
		if req.CoordinatorType == 1 {
			rt, code = acl.ResourceTransactionalID, kerr.TransactionalIDAuthorizationFailed.Code
		}
		if (req.CoordinatorType == 0 || req.CoordinatorType == 1) && !c.authorize(acl.OpDescribe, rt, key) {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.ErrorCode, co.NodeID, co.Port = key, code, -1, -1
			return co
		}
		return c.b.findCoordinator(key, req.CoordinatorType, c.session.listener)
	}
	if req.Version < 4 {
		co := find(req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
	} else {
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, find(k))
		}
	}
	r.resp.finish(resp)
	return nil
}

// findCoordinator locates the coordinator of key, answered with its endpoint on
// listener (COORDINATOR_NOT_AVAILABLE when it has none, as Kafka).
func (b *Broker) findCoordinator(key string, keyType int8, listener string) kmsg.FindCoordinatorResponseCoordinator {
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key, co.NodeID, co.Port = key, -1, -1
	fail := func(code int16) kmsg.FindCoordinatorResponseCoordinator {
		co.ErrorCode = code
		msg := kerr.TypedErrorForCode(code).Description
		co.ErrorMessage = &msg
		return co
	}
	topic, create := coordinator.OffsetsTopic, b.createOffsetsTopic
	var p int32
	switch keyType {
	case 0:
		p = b.groups.PartitionFor(key)
	case 1:
		if key == "" {
			return fail(kerr.InvalidRequest.Code)
		}
		topic, create = coordinator.TransactionStateTopic, b.createTxnStateTopic
		p = b.txns.PartitionFor(key)
	default:
		return fail(kerr.InvalidRequest.Code)
	}
	img := b.ctl.Image()
	t := img.Topics[topic]
	if t == nil {
		if code := create(); code != 0 {
			return fail(kerr.CoordinatorNotAvailable.Code)
		}
		img = b.ctl.Image()
		if t = img.Topics[topic]; t == nil {
			return fail(kerr.CoordinatorNotAvailable.Code)
		}
	}
	if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	br, ok := img.Brokers[t.Partitions[p].Leader]
	if !ok || br.Fenced {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	ep, ok := br.Endpoint(listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	co.NodeID, co.Host, co.Port = br.ID, ep.Host, ep.Port
	none := "NONE" // Kafka sets Errors.NONE.message() on success too
	co.ErrorMessage = &none
	return co
}
