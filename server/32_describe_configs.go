package server

// DescribeConfigs: v1-4.
//
// As Kafka's ConfigHelper.describeConfigs: a topic resource lists every topic config
// with its value and source (INVALID_TOPIC_EXCEPTION for an invalid name,
// UNKNOWN_TOPIC_OR_PARTITION for a missing topic); the broker resource named with this
// broker's id lists its configs, the one named "" the cluster-wide dynamic defaults,
// any other id is INVALID_REQUEST. A non-empty configuration_keys keeps just those
// names. Synonyms (v1+) and documentation (v3+) only when asked for. Other resource
// types (broker loggers, client metrics, groups) are INVALID_REQUEST here. The values
// come from Config.Configs; without one only the dynamic configs are listed.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

func handleDescribeConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.DescribeConfigsRequest)
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(req.Version)
	img := c.b.ctl.Image()
	docs := req.IncludeDocumentation && req.Version >= 3
	for _, rr := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		if c.b.authz != nil {
			if e := c.configResourceAuthz(acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); e != nil {
				out.ErrorCode, out.ErrorMessage = e.Code, &e.Message
				resp.Resources = append(resp.Resources, out)
				continue
			}
		}
		configs, err := c.b.describeConfigs(img, rr, req.IncludeSynonyms, docs)
		if err != nil {
			out.ErrorCode = err.Code
			if err.Message != "" {
				out.ErrorMessage = &err.Message
			}
		} else {
			if len(rr.ConfigNames) > 0 {
				configs = slices.DeleteFunc(configs, func(e kmsg.DescribeConfigsResponseResourceConfig) bool {
					return !slices.Contains(rr.ConfigNames, e.Name)
				})
			}
			if !docs {
				for i := range configs {
					configs[i].Documentation = nil
				}
			}
			out.Configs = configs
		}
		resp.Resources = append(resp.Resources, out)
	}
	r.resp.finish(resp)
	return nil
}

func (b *Broker) describeConfigs(img *controller.MetadataImage, rr kmsg.DescribeConfigsRequestResource, synonyms, docs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, *controller.APIError) {
	switch int8(rr.ResourceType) {
	case controller.ResourceTopic:
		if err := controller.ValidateTopicName(rr.ResourceName); err != nil {
			return nil, &controller.APIError{Code: kerr.InvalidTopicException.Code, Message: err.Error()}
		}
		t := img.Topics[rr.ResourceName]
		if t == nil {
			return nil, &controller.APIError{Code: kerr.UnknownTopicOrPartition.Code}
		}
		if b.cfg.Configs == nil {
			return describeOverrides(t.Configs, kmsg.ConfigSourceDynamicTopicConfig, synonyms), nil
		}
		return b.describeTopicConfigs(img, t.Configs, synonyms, docs), nil
	case controller.ResourceBroker:
		cluster := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker})
		if rr.ResourceName == "" {
			if b.cfg.Configs == nil {
				return describeOverrides(cluster, kmsg.ConfigSourceDynamicDefaultBrokerConfig, synonyms), nil
			}
			return b.cfg.Configs.DescribeBroker(false, nil, cluster, synonyms, docs), nil
		}
		if err := checkNodeID(rr.ResourceName, b.cfg.NodeID); err != nil {
			return nil, err
		}
		own := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker, Name: rr.ResourceName})
		if b.cfg.Configs == nil {
			return describeOverrides(own, kmsg.ConfigSourceDynamicBrokerConfig, synonyms), nil
		}
		return b.cfg.Configs.DescribeBroker(true, own, cluster, synonyms, docs), nil
	default:
		return nil, &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unsupported resource type: %d", rr.ResourceType)}
	}
}

// describeTopicConfigs describes the configs of a topic with the given overrides as
// this broker resolves them from img (its own and the cluster-wide dynamic broker
// configs, server.properties, the defaults). Config.Configs must be set.
func (b *Broker) describeTopicConfigs(img *controller.MetadataImage, overrides map[string]string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	own := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker, Name: strconv.Itoa(int(b.cfg.NodeID))})
	cluster := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker})
	return b.cfg.Configs.DescribeTopic(overrides, own, cluster, synonyms, docs)
}

// checkNodeID checks that a broker resource names this broker, with Kafka's messages.
func checkNodeID(name string, nodeID int32) *controller.APIError {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Node id must be an integer, but it is: %s", name)}
	}
	if int32(id) != nodeID {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unexpected broker id, expected %d, but received %s", nodeID, name)}
	}
	return nil
}
