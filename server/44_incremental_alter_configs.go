package server

// IncrementalAlterConfigs: v0-1.
//
// SET, DELETE, APPEND and SUBTRACT (the last two on LIST configs only, from the
// default when unset) on topic and broker dynamic configs, as Kafka's broker
// (ConfigAdminManager.preprocess) then controller
// (ConfigurationControlManager.incrementalAlterConfigs): a resource named twice, a
// config named twice, a null value for anything but DELETE, a broker resource naming
// another broker, an unknown operation or an invalid broker config is INVALID_REQUEST;
// topic configs are validated as a whole (INVALID_CONFIG); a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION. Broker loggers, client metrics and group configs are not
// served (INVALID_REQUEST). validate_only changes nothing.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/controller"
)

func handleIncrementalAlterConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(req.Version)

	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	errs := make([]*controller.APIError, len(req.Resources))
	fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
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
			if cfg.Value == nil && int8(cfg.Op) != controller.OpDelete {
				nulls = append(nulls, cfg.Name)
			}
		}
		errs[i] = c.b.preprocessConfigResource(rr.ResourceType, rr.ResourceName, names, nulls, func(perBroker bool) *controller.APIError {
			for _, cfg := range rr.Configs {
				switch int8(cfg.Op) {
				case controller.OpSet:
					if err := c.b.validateBrokerConfig(cfg.Name, *cfg.Value, perBroker); err != nil {
						return err
					}
				case controller.OpDelete, controller.OpAppend, controller.OpSubtract:
				default:
					return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unknown operations type %d", cfg.Op)}
				}
			}
			if perBroker {
				return c.b.validateTLSUpdate(rr.Configs)
			}
			return nil
		})
		if errs[i] == nil {
			fwd.Resources = append(fwd.Resources, rr)
		}
	}
	var answered []kmsg.IncrementalAlterConfigsResponseResource
	if len(fwd.Resources) > 0 {
		answered = c.b.ctl.IncrementalAlterConfigs(fwd).Resources
	}
	for i, rr := range req.Resources {
		var out kmsg.IncrementalAlterConfigsResponseResource
		if errs[i] != nil {
			out = kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
			out.ErrorCode, out.ErrorMessage = errs[i].Code, &errs[i].Message
		} else {
			out, answered = answered[0], answered[1:]
			c.logConfigChange(out.ErrorCode, req.ValidateOnly, rr.ResourceType, rr.ResourceName, "altered configs")
		}
		resp.Resources = append(resp.Resources, out)
	}
	r.resp.finish(resp)
	return nil
}
