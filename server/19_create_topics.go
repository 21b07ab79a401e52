package server

// CreateTopics: v2-7.
//
// Carried out by the controller (validation, placement, records); see
// controller.CreateTopics for the per-topic rules and error codes. v5+ answers with the
// topic's partition count, replication factor and configs, v7 with its topic id.
//
// The configs of a created topic are every topic config with its value and source, as
// Kafka's controller fills them; a failed topic gets an empty list, never null: Kafka's
// Admin client (KafkaAdminClient.createTopics, through 4.4) reads the list of every
// successful topic without a null check, so kafka-topics --create failed with a
// NullPointerException against a null one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
)

func handleCreateTopics(c *conn, r *request) error {
	mq := c.mutationQuota(r, 6)
	req, throttled := mq.admitCreateTopics(r.req.(*kmsg.CreateTopicsRequest), c.b.cfg.NumPartitions)
	var resp *kmsg.CreateTopicsResponse
	if c.b.authz != nil {
		s := c.splitCreateTopics(req)
		if s.req != nil {
			resp = c.b.ctl.CreateTopics(s.req.(*kmsg.CreateTopicsRequest))
		} else {
			resp = emptyResponse(req).(*kmsg.CreateTopicsResponse)
		}
		resp = s.merge(resp).(*kmsg.CreateTopicsResponse)
	} else {
		resp = c.b.ctl.CreateTopics(req)
	}
	mq.finishCreateTopics(r, resp, throttled)
	requested := make(map[string]*kmsg.CreateTopicsRequestTopic, len(req.Topics))
	for i := range req.Topics {
		requested[req.Topics[i].Topic] = &req.Topics[i]
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		t.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		if t.ErrorCode != 0 {
			continue
		}
		if rt := requested[t.Topic]; rt != nil && req.Version >= 5 {
			if !c.authorize(acl.OpDescribeConfigs, acl.ResourceTopic, t.Topic) {
				// As Kafka: created, but its configs are not shown.
				t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			} else {
				t.Configs = c.b.createdTopicConfigs(rt.Configs)
			}
		}
		if !req.ValidateOnly {
			c.log.Info().Str("topic", t.Topic).Int32("partitions", t.NumPartitions).
				Int16("replication_factor", t.ReplicationFactor).Msg("created topic")
		}
	}
	r.resp.finish(resp)
	return nil
}

// createdTopicConfigs describes the configs of a topic created with the given
// overrides, for the CreateTopics response.
func (b *Broker) createdTopicConfigs(in []kmsg.CreateTopicsRequestTopicConfig) []kmsg.CreateTopicsResponseTopicConfig {
	overrides := make(map[string]string, len(in))
	for _, c := range in {
		if c.Value != nil {
			overrides[c.Name] = *c.Value
		}
	}
	var described []kmsg.DescribeConfigsResponseResourceConfig
	if b.cfg.Configs == nil {
		described = describeOverrides(overrides, kmsg.ConfigSourceDynamicTopicConfig, false)
	} else {
		described = b.describeTopicConfigs(b.ctl.Image(), overrides, false, false)
	}
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(described))
	for _, d := range described {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = d.Name, d.Value, d.ReadOnly, int8(d.Source), d.IsSensitive
		out = append(out, c)
	}
	return out
}
