package server

// AlterConfigs: v0-2.
//
// The legacy API: each resource's dynamic configs become exactly the ones given (the
// others are deleted). As Kafka's broker (ConfigAdminManager.preprocess) then
// controller (ConfigurationControlManager.legacyAlterConfigs): a resource named twice,
// a config named twice or given a null value, a broker resource naming another broker,
// an invalid broker config, or a resource type other than topic and broker is
// INVALID_REQUEST; topic configs are validated as a whole (INVALID_CONFIG); a missing
// topic is UNKNOWN_TOPIC_OR_PARTITION. validate_only changes nothing.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

func handleAlterConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterConfigsRequest)
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(req.Version)

	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	errs := make([]*controller.APIError, len(req.Resources))
	fwd := kmsg.NewPtrAlterConfigsRequest()
	fwd.SetVersion(req.Version)
	fwd.ValidateOnly = req.ValidateOnly
	for i, rr := range req.Resources {
		if dup[i] {
			errs[i] = &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Each resource must appear at most once."}
			continue
		}
		if c.b.authz != nil {
			if errs[i] = c.configResourceAuthz(acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName); errs[i] != nil {
				continue
			}
		}
		var names, nulls []string
		for _, cfg := range rr.Configs {
			names = append(names, cfg.Name)
			if cfg.Value == nil {
				nulls = append(nulls, cfg.Name)
			}
		}
		errs[i] = c.b.preprocessConfigResource(rr.ResourceType, rr.ResourceName, names, nulls, func(perBroker bool) *controller.APIError {
			for _, cfg := range rr.Configs {
				if err := c.b.validateBrokerConfig(cfg.Name, *cfg.Value, perBroker); err != nil {
					return err
				}
			}
			if perBroker {
				return c.b.validateLegacyTLSUpdate(rr.Configs)
			}
			return nil
		})
		if errs[i] == nil {
			fwd.Resources = append(fwd.Resources, rr)
		}
	}
	var answered []kmsg.AlterConfigsResponseResource
	if len(fwd.Resources) > 0 {
		answered = c.b.ctl.LegacyAlterConfigs(fwd).Resources
	}
	for i, rr := range req.Resources {
		var out kmsg.AlterConfigsResponseResource
		if errs[i] != nil {
			out = kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
			out.ErrorCode, out.ErrorMessage = errs[i].Code, &errs[i].Message
		} else {
			out, answered = answered[0], answered[1:]
			c.logConfigChange(out.ErrorCode, req.ValidateOnly, rr.ResourceType, rr.ResourceName, "replaced configs")
		}
		resp.Resources = append(resp.Resources, out)
	}
	r.resp.finish(resp)
	return nil
}

// duplicateResources marks the resources named more than once.
func duplicateResources(n int, at func(int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		t    kmsg.ConfigResourceType
		name string
	}
	count := map[key]int{}
	for i := range n {
		t, name := at(i)
		count[key{t, name}]++
	}
	out := make([]bool, n)
	for i := range n {
		t, name := at(i)
		out[i] = count[key{t, name}] > 1
	}
	return out
}

// preprocessConfigResource makes the checks Kafka's broker makes before forwarding an
// alter-configs resource to the controller (ConfigAdminManager.preprocess).
func (b *Broker) preprocessConfigResource(typ kmsg.ConfigResourceType, name string, names, nulls []string, validateBroker func(perBroker bool) *controller.APIError) *controller.APIError {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Error due to duplicate config keys"}
		}
		seen[n] = true
	}
	if len(nulls) > 0 {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	switch int8(typ) {
	case controller.ResourceTopic:
		return nil
	case controller.ResourceBroker:
		if name != "" {
			if err := checkNodeID(name, b.cfg.NodeID); err != nil {
				return err
			}
		}
		return validateBroker(name != "")
	default:
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unknown resource type %d", typ)}
	}
}

// validateBrokerConfig checks one dynamic broker config; Kafka answers a broker config
// it cannot apply with INVALID_REQUEST (KAFKA-13609).
func (b *Broker) validateBrokerConfig(name, value string, perBroker bool) *controller.APIError {
	if b.cfg.Configs == nil {
		return nil
	}
	if err := b.cfg.Configs.ValidateBroker(name, value, perBroker); err != nil {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: err.Error()}
	}
	return nil
}

func (c *conn) logConfigChange(code int16, validateOnly bool, typ kmsg.ConfigResourceType, name, what string) {
	if code != 0 || validateOnly {
		return
	}
	c.log.Info().Int8("resource_type", int8(typ)).Str("resource", name).Msg(what)
}
