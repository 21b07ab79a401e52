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
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleIncrementalAlterConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(req.Version)
	items := make([]alterConfigsItem, len(req.Resources))
	for i, rr := range req.Resources {
		items[i] = alterConfigsItem{typ: rr.ResourceType, name: rr.ResourceName}
		for _, cfg := range rr.Configs {
			items[i].ops = append(items[i].ops, alterConfigOp{name: cfg.Name, op: int8(cfg.Op), value: cfg.Value})
		}
	}
	answers := alterConfigs(c, items, req.ValidateOnly, "altered configs", func(kept []int) []kmsg.AlterConfigsResponseResource {
		fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
		fwd.SetVersion(req.Version)
		fwd.ValidateOnly = req.ValidateOnly
		for _, i := range kept {
			fwd.Resources = append(fwd.Resources, req.Resources[i])
		}
		var out []kmsg.AlterConfigsResponseResource
		for _, a := range c.b.ctl.IncrementalAlterConfigs(fwd).Resources {
			out = append(out, kmsg.AlterConfigsResponseResource(a))
		}
		return out
	})
	for _, a := range answers {
		resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource(a))
	}
	r.resp.finish(resp)
	return nil
}
