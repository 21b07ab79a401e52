package server

// ConsumerGroupHeartbeat: v0-1.
//
// KIP-848 consumer group membership (coordinator.ConsumerGroup): one request both
// keeps a member's session alive and carries its subscription and owned partitions;
// the coordinator computes the assignment server-side (group.consumer.assignors:
// uniform, range) and answers with the member's epoch and, when it changed, its
// assigned partitions. Member epoch 0 joins (v0: the coordinator names the member;
// v1: the client does), -1 leaves, -2 leaves a static member's place open until its
// session times out. Subscriptions are topic names or (v1) a regular expression
// matched against whole topic names. Errors, with Kafka's messages: INVALID_REQUEST,
// UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_ID_NOT_FOUND,
// UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
// GROUP_MAX_SIZE_REACHED, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE. Answered once the group's records are written to
// __consumer_offsets. While group.version is 0 every heartbeat is UNSUPPORTED_VERSION
// (the consumer protocol is off), as Kafka.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/coordinator"
)

func handleConsumerGroupHeartbeat(c *conn, r *request) error {
	req := r.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	if c.b.ctl.Image().FeatureLevel(controller.FeatureGroup) < 1 {
		// group.version 0: the consumer protocol is off, as Kafka's
		// KafkaApis.isConsumerGroupProtocolEnabled.
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
		r.resp.finish(resp)
		return nil
	}
	if !c.mayReadGroup(req.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		r.resp.finish(resp)
		return nil
	}
	resp := c.b.groups.ConsumerGroupHeartbeat(req, r.hdr.ClientID, c.clientHost())
	resp.SetVersion(req.Version)
	r.resp.finish(resp)
	return nil
}

// consumerGroupConfig is the group.consumer.* part of the coordinator's config.
func consumerGroupConfig(b *config.Broker) coordinator.ConsumerGroupConfig {
	c := coordinator.DefaultConsumerGroupConfig()
	c.SessionTimeout = time.Duration(b.ConsumerGroupSessionTimeoutMs) * time.Millisecond
	c.HeartbeatInterval = time.Duration(b.ConsumerGroupHeartbeatIntervalMs) * time.Millisecond
	c.MaxSize = int(b.ConsumerGroupMaxSize)
	c.Assignors = nil
	for _, a := range b.ConsumerGroupAssignors {
		c.Assignors = append(c.Assignors, config.ConsumerGroupAssignorName(a))
	}
	return c
}

// TopicNames lists every topic, for regex subscriptions (coordinator.TopicLister).
func (m groupMetadata) TopicNames() []string {
	img := m.b.ctl.Image()
	names := make([]string, 0, len(img.Topics))
	for n := range img.Topics {
		names = append(names, n)
	}
	return names
}
