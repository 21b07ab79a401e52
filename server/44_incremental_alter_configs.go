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

	"github.com/gokafkad/gokafkad/controller"
)

func handleIncrementalAlterConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(req.Version)
	resp.Resources = alterConfigs(c, req.Resources,
		func(rr kmsg.IncrementalAlterConfigsRequestResource) alterConfigsItem {
			it := alterConfigsItem{typ: rr.ResourceType, name: rr.ResourceName}
			for _, cfg := range rr.Configs {
				it.names = append(it.names, cfg.Name)
				if cfg.Value == nil && int8(cfg.Op) != controller.OpDelete {
					it.nulls = append(it.nulls, cfg.Name)
				}
			}
			it.validateBroker = func(perBroker bool) *controller.APIError {
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
			}
			return it
		},
		func(rs []kmsg.IncrementalAlterConfigsRequestResource) []kmsg.IncrementalAlterConfigsResponseResource {
			fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
			fwd.SetVersion(req.Version)
			fwd.ValidateOnly, fwd.Resources = req.ValidateOnly, rs
			out := c.b.ctl.IncrementalAlterConfigs(fwd).Resources
			for _, o := range out {
				c.logConfigChange(o.ErrorCode, req.ValidateOnly, o.ResourceType, o.ResourceName, "altered configs")
			}
			return out
		},
		func(rr kmsg.IncrementalAlterConfigsRequestResource, err *controller.APIError) kmsg.IncrementalAlterConfigsResponseResource {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
			out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			return out
		})
	r.resp.finish(resp)
	return nil
}
