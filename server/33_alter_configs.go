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
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/acl"
	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

func handleAlterConfigs(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterConfigsRequest)
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(req.Version)
	items := make([]alterConfigsItem, len(req.Resources))
	for i, rr := range req.Resources {
		items[i] = alterConfigsItem{typ: rr.ResourceType, name: rr.ResourceName, replace: true}
		for _, cfg := range rr.Configs {
			items[i].ops = append(items[i].ops, alterConfigOp{name: cfg.Name, op: controller.OpSet, value: cfg.Value})
		}
	}
	resp.Resources = alterConfigs(c, items, req.ValidateOnly, "replaced configs", func(kept []int) []kmsg.AlterConfigsResponseResource {
		fwd := kmsg.NewPtrAlterConfigsRequest()
		fwd.SetVersion(req.Version)
		fwd.ValidateOnly = req.ValidateOnly
		for _, i := range kept {
			fwd.Resources = append(fwd.Resources, req.Resources[i])
		}
		return c.b.ctl.LegacyAlterConfigs(fwd).Resources
	})
	r.resp.finish(resp)
	return nil
}

// alterConfigOp is one config of a resource of either alter-configs API (AlterConfigs
// sets every config it names).
type alterConfigOp struct {
	name  string
	op    int8 // controller.OpSet, OpDelete, OpAppend, OpSubtract
	value *string
}

// alterConfigsItem is what the broker checks of one resource of either alter-configs
// API before forwarding it: its type, name and configs; replace is set for
// AlterConfigs, whose configs replace the resource's dynamic configs as a whole.
type alterConfigsItem struct {
	typ     kmsg.ConfigResourceType
	name    string
	ops     []alterConfigOp
	replace bool
}

// alterConfigs is the broker's part of both alter-configs APIs (Kafka's
// ConfigAdminManager.preprocess, then forwarding), over the request's resources as
// items: a resource named twice, refused by the authorizer or failing
// preprocessConfigResource is answered here; forward sends the others (their indexes
// in items) to the controller together and returns its answers in that order, which
// are logged when they change something. The answers of both APIs have the same
// fields (IncrementalAlterConfigs converts them); there is one per item, in order.
func alterConfigs(c *conn, items []alterConfigsItem, validateOnly bool, what string, forward func(kept []int) []kmsg.AlterConfigsResponseResource) []kmsg.AlterConfigsResponseResource {
	dup := duplicateResources(len(items), func(i int) (kmsg.ConfigResourceType, string) { return items[i].typ, items[i].name })
	out := make([]kmsg.AlterConfigsResponseResource, len(items))
	var kept []int
	for i, it := range items {
		var err *controller.APIError
		switch {
		case dup[i]:
			err = &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Each resource must appear at most once."}
		case c.b.authz != nil:
			err = c.configResourceAuthz(acl.OpAlterConfigs, it.typ, it.name)
		}
		if err == nil && !dup[i] {
			err = c.b.preprocessConfigResource(it)
		}
		out[i] = kmsg.NewAlterConfigsResponseResource()
		out[i].ResourceType, out[i].ResourceName = it.typ, it.name
		if err != nil {
			out[i].ErrorCode, out[i].ErrorMessage = err.Code, &err.Message
		} else {
			kept = append(kept, i)
		}
	}
	if len(kept) == 0 {
		return out
	}
	for k, a := range forward(kept) {
		out[kept[k]] = a
		if a.ErrorCode == 0 && !validateOnly {
			c.log.Info().Int8("resource_type", int8(a.ResourceType)).Str("resource", a.ResourceName).Msg(what)
		}
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
// alter-configs resource to the controller (ConfigAdminManager.preprocess): duplicate
// config names, null values (allowed only for IncrementalAlterConfigs' DELETE), the
// resource type, the broker id, and a broker resource's configs (validateBrokerConfigs).
func (b *Broker) preprocessConfigResource(it alterConfigsItem) *controller.APIError {
	seen := map[string]bool{}
	var nulls []string
	for _, o := range it.ops {
		if seen[o.name] {
			return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Error due to duplicate config keys"}
		}
		seen[o.name] = true
		if o.value == nil && o.op != controller.OpDelete {
			nulls = append(nulls, o.name)
		}
	}
	if len(nulls) > 0 {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	switch int8(it.typ) {
	case controller.ResourceTopic:
		return nil
	case controller.ResourceBroker:
		if it.name != "" {
			if err := checkNodeID(it.name, b.cfg.NodeID); err != nil {
				return err
			}
		}
		return b.validateBrokerConfigs(it)
	default:
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unknown resource type %d", it.typ)}
	}
}

// validateBrokerConfigs checks the configs of a broker resource ("" the cluster
// default, else this broker): every SET value must be one this broker can apply at
// that level, as Kafka's DynamicBrokerConfig.validateConfigs (INVALID_REQUEST,
// KAFKA-13609; the keys that cannot be altered at all, or only per broker, are named
// together as Kafka names them); then, for this broker's resource, the TLS stores it
// would load (validateTLSUpdate).
func (b *Broker) validateBrokerConfigs(it alterConfigsItem) *controller.APIError {
	perBroker := it.name != ""
	var readOnly, brokerOnly []string
	for _, o := range it.ops {
		switch o.op {
		case controller.OpSet:
			if b.cfg.Configs == nil {
				continue
			}
			err := b.cfg.Configs.ValidateBroker(o.name, *o.value, perBroker)
			switch {
			case errors.Is(err, config.ErrReadOnly):
				readOnly = append(readOnly, o.name)
			case errors.Is(err, config.ErrPerBrokerOnly):
				brokerOnly = append(brokerOnly, o.name)
			case err != nil:
				return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: err.Error()}
			}
		case controller.OpDelete, controller.OpAppend, controller.OpSubtract:
		default:
			return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unknown operations type %d", o.op)}
		}
	}
	if len(readOnly) > 0 {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Cannot update these configs dynamically: " + scalaSet(readOnly)}
	}
	if len(brokerOnly) > 0 {
		return &controller.APIError{Code: kerr.InvalidRequest.Code, Message: "Cannot update these configs at default cluster level, broker id must be specified: " + scalaSet(brokerOnly)}
	}
	if perBroker {
		return b.validateTLSUpdate(it.ops, it.replace)
	}
	return nil
}

// scalaSet renders names as Kafka's messages print a Scala Set of them.
func scalaSet(names []string) string { return "Set(" + strings.Join(names, ", ") + ")" }
