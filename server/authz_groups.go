package server

// Authorization of the group and offset APIs, as KafkaApis: each helper runs only with
// an authorizer (callers test c.b.authz first, or use c.authorize, which is true
// without one).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

// topicNameOf is the name a request's topic stands for: its name, or (topic ids)
// the name of the topic with that id ("" when unknown: the handler answers
// UNKNOWN_TOPIC_ID).
func topicNameOf(img *controller.MetadataImage, name string, id [16]byte) string {
	if id == ([16]byte{}) {
		return name
	}
	if t := img.TopicsByID[controller.TopicID(id)]; t != nil {
		return t.Name
	}
	return ""
}

// mayReadGroup is READ on the group: what JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit and ConsumerGroupHeartbeat need.
func (c *conn) mayReadGroup(group string) bool {
	return c.authorize(acl.OpRead, acl.ResourceGroup, group)
}

func joinGroupRefusal(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
	if req.Version < 7 {
		empty := ""
		resp.Protocol = &empty
	}
	return resp
}

// offsetCommitAuthz refuses an unauthorized group (every partition
// GROUP_AUTHORIZATION_FAILED, done true) or splits off the topics without READ
// (TOPIC_AUTHORIZATION_FAILED), leaving req with the authorized ones.
func (c *conn) offsetCommitAuthz(req *kmsg.OffsetCommitRequest) (refused []kmsg.OffsetCommitResponseTopic, done bool) {
	refuse := func(t *kmsg.OffsetCommitRequestTopic, code int16) {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
	}
	if !c.mayReadGroup(req.Group) {
		for i := range req.Topics {
			refuse(&req.Topics[i], kerr.GroupAuthorizationFailed.Code)
		}
		return refused, true
	}
	req.Topics = keepReadableTopics(c, req.Topics, func(t *kmsg.OffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID }, refuse)
	return refused, len(req.Topics) == 0
}

// txnOffsetCommitAuthz is offsetCommitAuthz for TxnOffsetCommit: WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group, READ
// on each topic.
func (c *conn) txnOffsetCommitAuthz(req *kmsg.TxnOffsetCommitRequest) (refused []kmsg.TxnOffsetCommitResponseTopic, done bool) {
	refuse := func(t *kmsg.TxnOffsetCommitRequestTopic, code int16) {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
	}
	var code int16
	switch {
	case !c.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.mayReadGroup(req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code != 0 {
		for i := range req.Topics {
			refuse(&req.Topics[i], code)
		}
		return refused, true
	}
	req.Topics = keepReadableTopics(c, req.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID }, refuse)
	return refused, len(req.Topics) == 0
}

// keepReadableTopics keeps the topics the principal may READ (a topic unknown by id is
// kept: the handler answers it) and refuses the others with TOPIC_AUTHORIZATION_FAILED.
func keepReadableTopics[T any](c *conn, topics []T, id func(*T) (string, [16]byte), refuse func(*T, int16)) []T {
	img := c.b.ctl.Image()
	read := c.topicAuthorizer(acl.OpRead)
	kept := topics[:0:0]
	for i := range topics {
		t := &topics[i]
		name, tid := id(t)
		if name := topicNameOf(img, name, tid); name != "" && !read.ok(name) {
			refuse(t, kerr.TopicAuthorizationFailed.Code)
			continue
		}
		kept = append(kept, *t)
	}
	return kept
}

// offsetDeleteAuthz: DELETE on the group (GROUP_AUTHORIZATION_FAILED for the whole
// request), READ on each topic.
func (c *conn) offsetDeleteAuthz(req *kmsg.OffsetDeleteRequest) (refused []kmsg.OffsetDeleteResponseTopic, groupDenied bool) {
	if !c.authorize(acl.OpDelete, acl.ResourceGroup, req.Group) {
		return nil, true
	}
	read := c.topicAuthorizer(acl.OpRead)
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		if !read.ok(t.Topic) {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			continue
		}
		kept = append(kept, t)
	}
	req.Topics = kept
	return refused, false
}

// filterOffsetFetch applies DESCRIBE on each group and topic to an OffsetFetch
// answer, as Kafka's handleOffsetFetchRequest: a group without DESCRIBE gets
// GROUP_AUTHORIZATION_FAILED and no topics; a topic without DESCRIBE is dropped from
// an all-topics answer and TOPIC_AUTHORIZATION_FAILED when it was asked for.
func (c *conn) filterOffsetFetch(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	describe := c.topicAuthorizer(acl.OpDescribe)
	img := c.b.ctl.Image()
	if req.Version < 8 {
		if !c.authorize(acl.OpDescribe, acl.ResourceGroup, req.Group) {
			resp.Topics, resp.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
			return
		}
		all := req.Topics == nil
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if !describe.ok(t.Topic) {
				if all {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		resp.Topics = kept
		return
	}
	asked := map[string]bool{}
	for _, g := range req.Groups {
		asked[g.Group] = g.Topics == nil
	}
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if !c.authorize(acl.OpDescribe, acl.ResourceGroup, g.Group) {
			g.Topics, g.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
			continue
		}
		all := asked[g.Group]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if name := topicNameOf(img, t.Topic, t.TopicID); name != "" && !describe.ok(name) {
				if all {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		g.Topics = kept
	}
}

// describedGroupsAuthz refuses the groups without DESCRIBE (GROUP_AUTHORIZATION_FAILED,
// as Kafka's handleDescribeGroupsRequest) and fills authorized operations when asked.
func (c *conn) describedGroupsAuthz(groups []kmsg.DescribeGroupsResponseGroup, includeOps bool) {
	for i := range groups {
		g := &groups[i]
		if name := g.Group; !c.authorize(acl.OpDescribe, acl.ResourceGroup, name) {
			*g = kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			g.AuthorizedOperations = authorizedOpsOmitted
			continue
		}
		if includeOps && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, g.Group)
		}
	}
}

// initProducerIDAuthz is KafkaApis.handleInitProducerIdRequest's check: WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer
// (no id) needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED). 0 when allowed.
func (c *conn) initProducerIDAuthz(req *kmsg.InitProducerIDRequest) int16 {
	z := c.b.authz
	if z == nil {
		return 0
	}
	if req.TransactionalID != nil {
		if !c.authorize(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if c.authorizeCluster(acl.OpIdempotentWrite) ||
		z.get().AuthorizeByResourceType(c.session.principal, c.session.host, acl.OpWrite, acl.ResourceTopic) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// addPartitionsToTxnAuthz is KafkaApis.handleAddPartitionsToTxnRequest's check, or
// nil when the request may go on: v4+ (sent by brokers) needs CLUSTER_ACTION
// (CLUSTER_AUTHORIZATION_FAILED); older versions WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each topic
// (TOPIC_AUTHORIZATION_FAILED, the other partitions OPERATION_NOT_ATTEMPTED).
func (c *conn) addPartitionsToTxnAuthz(req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.SetVersion(req.Version)
	if req.Version >= 4 {
		if c.authorizeCluster(acl.OpClusterAction) {
			return nil
		}
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	txnDenied := !c.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID)
	write := c.topicAuthorizer(acl.OpWrite)
	anyDenied := txnDenied
	for _, t := range req.Topics {
		if !txnDenied && !write.ok(t.Topic) {
			anyDenied = true
		}
	}
	if !anyDenied {
		return nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		code := kerr.OperationNotAttempted.Code
		switch {
		case txnDenied:
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case !write.ok(t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
