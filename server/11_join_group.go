package server

// JoinGroup: v0-9.
//
// Classic group membership (coordinator.Group.Join): a new dynamic member on v4+ first
// gets MEMBER_ID_REQUIRED with its id (KIP-394); static members (group.instance.id,
// v5+) replace their previous incarnation, which is fenced (FENCED_INSTANCE_ID). The
// response waits in the group — not in the connection's read loop — until the join
// phase ends: everyone rejoined, the rebalance timeout, or for a new group
// group.initial.rebalance.delay.ms (extended while members keep arriving). Errors:
// INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT (outside group.min/max.session.timeout.ms),
// INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE. v0 has no rebalance timeout:
// the session timeout is used (coordinator.JoinGroup), as Kafka's JoinGroupRequest.
// v0-1 were removed in Kafka 4.0 and served again from 4.0.1 (KAFKA-19444, for
// librdkafka before 2.11), as in Kafka 4.4.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleJoinGroup(c *conn, r *request) error {
	req := r.req.(*kmsg.JoinGroupRequest)
	if !c.mayReadGroup(req.Group) {
		r.resp.finish(joinGroupRefusal(req))
		return nil
	}
	c.b.groups.JoinGroup(req, r.hdr.ClientID, c.clientHost(), func(m kmsg.Response) {
		m.SetVersion(req.Version)
		r.resp.finish(m)
	})
	return nil
}
