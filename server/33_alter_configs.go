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
	resp.Resources = alterConfigs(c, req.Resources,
		func(rr kmsg.AlterConfigsRequestResource) alterConfigsItem {
			it := alterConfigsItem{typ: rr.ResourceType, name: rr.ResourceName}
			for _, cfg := range rr.Configs {
				it.names = append(it.names, cfg.Name)
				if cfg.Value == nil {
					it.nulls = append(it.nulls, cfg.Name)
				}
			}
			it.validateBroker = func(perBroker bool) *controller.APIError {
				for _, cfg := range rr.Configs {
					if err := c.b.validateBrokerConfig(cfg.Name, *cfg.Value, perBroker); err != nil {
						return err
					}
				}
				if perBroker {
					return c.b.validateLegacyTLSUpdate(rr.Configs)
				}
				return nil
			}
			return it
		},
		func(rs []kmsg.AlterConfigsRequestResource) []kmsg.AlterConfigsResponseResource {
			fwd := kmsg.NewPtrAlterConfigsRequest()
			fwd.SetVersion(req.Version)
			fwd.ValidateOnly, fwd.Resources = req.ValidateOnly, rs
			out := c.b.ctl.LegacyAlterConfigs(fwd).Resources
			for _, o := range out {
				c.logConfigChange(o.ErrorCode, req.ValidateOnly, o.ResourceType, o.ResourceName, "replaced configs")
			}
			return out
		},
		func(rr kmsg.AlterConfigsRequestResource, err *controller.APIError) kmsg.AlterConfigsResponseResource {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
			out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			return out
		})
	r.resp.finish(resp)
	return nil
}

// alterConfigsItem is what the broker checks of one resource of either alter-configs
// API before forwarding it: its type and name, the config names (and those with a
// null value where that is not allowed), and how its broker configs are validated.
type alterConfigsItem struct {
	typ            kmsg.ConfigResourceType
	name           string
	names, nulls   []string
	validateBroker func(perBroker bool) *controller.APIError
}

// alterConfigs is the broker's part of both alter-configs APIs (Kafka's
// ConfigAdminManager.preprocess, then forwarding): a resource named twice, refused by
// the authorizer or failing preprocessConfigResource is answered here with failed;
// the others go to the controller together through forward, whose answers come back in
// request order. The result has one answer per resource, in request order.
func alterConfigs[R, O any](c *conn, rs []R, item func(R) alterConfigsItem, forward func([]R) []O, failed func(R, *controller.APIError) O) []O {
	items := make([]alterConfigsItem, len(rs))
	for i, rr := range rs {
		items[i] = item(rr)
	}
	dup := duplicateResources(len(items), func(i int) (kmsg.ConfigResourceType, string) { return items[i].typ, items[i].name })
	errs := make([]*controller.APIError, len(rs))
	var kept []R
	for i, it := range items {
		switch {
		case dup[i]:
			errs[i] = &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Each resource must appear at most once."}
		case c.b.authz != nil:
			errs[i] = c.configResourceAuthz(acl.OpAlterConfigs, it.typ, it.name)
		}
		if errs[i] == nil && !dup[i] {
			errs[i] = c.b.preprocessConfigResource(it.typ, it.name, it.names, it.nulls, it.validateBroker)
		}
		if errs[i] == nil {
			kept = append(kept, rs[i])
		}
	}
	var answered []O
	if len(kept) > 0 {
		answered = forward(kept)
	}
	out := make([]O, 0, len(rs))
	for i, rr := range rs {
		if errs[i] != nil {
			out = append(out, failed(rr, errs[i]))
			continue
		}
		out, answered = append(out, answered[0]), answered[1:]
	}
	return out
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
