package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs operations, as Kafka's AlterConfigOp.OpType.
const (
	OpSet      int8 = 0
	OpDelete   int8 = 1
	OpAppend   int8 = 2
	OpSubtract int8 = 3
)

// ConfigResource names one config resource: a topic, or a broker ("" = the
// cluster-wide default, else a broker id).
type ConfigResource struct {
	Type int8
	Name string
}

// ResourceConfigs returns the resource's dynamic configs in img (nil when there are none).
// It must not be modified.
func (img *MetadataImage) ResourceConfigs(r ConfigResource) map[string]string {
	switch r.Type {
	case ResourceTopic:
		if t := img.Topics[r.Name]; t != nil {
			return t.Configs
		}
		return nil
	case ResourceBroker:
		return img.Configs["broker:"+r.Name]
	}
	return nil
}

// topicConfigValue is topic t's dynamic value of config name as the controller
// resolves it (Kafka's ConfigurationControlManager.getTopicConfig): the topic's own,
// else this controller node's dynamic broker config, else the cluster-wide dynamic
// default. ok is false when none sets it; the node's static config applies then. name
// is the topic config and its broker synonym alike (min.insync.replicas,
// unclean.leader.election.enable).
func (c *Controller) topicConfigValue(img *MetadataImage, t *TopicImage, name string) (v string, ok bool) {
	for _, m := range []map[string]string{t.Configs, img.Configs["broker:"+strconv.Itoa(int(c.cfg.NodeID))], img.Configs["broker:"]} {
		if v, ok := m[name]; ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// defaultListConfigs are the LIST-typed topic configs and their defaults, used for
// APPEND/SUBTRACT when Config.ListConfigDefault is nil.
var defaultListConfigs = map[string]string{
	"cleanup.policy":                          "delete",
	"leader.replication.throttled.replicas":   "",
	"follower.replication.throttled.replicas": "",
}

// listDefault reports whether name is a LIST config of the resource type, and its
// default value.
func (c *Controller) listDefault(typ int8, name string) (string, bool) {
	if c.cfg.ListConfigDefault != nil {
		return c.cfg.ListConfigDefault(typ, name)
	}
	if typ == ResourceTopic {
		def, ok := defaultListConfigs[name]
		return def, ok
	}
	return "", false
}

// IncrementalAlterConfigs carries out the resources of an IncrementalAlterConfigs
// request as Kafka's ConfigurationControlManager.incrementalAlterConfigs does: per
// resource, SET / DELETE / APPEND / SUBTRACT (the last two only on LIST configs,
// starting from the default when unset) become ConfigRecords, then the resulting
// configs are validated as a whole; all successful resources are committed together
// unless ValidateOnly. Topic records are written only for values that change; broker
// records always (KAFKA-14136: they make brokers reload).
//
// The broker-side checks Kafka's ConfigAdminManager.preprocess makes (duplicate
// keys, null values, broker id, broker config validation) are the caller's.
func (c *Controller) IncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(req.Version)
	res := make([]ConfigResource, len(req.Resources))
	for i, r := range req.Resources {
		res[i] = ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}
	}
	answers := c.alterConfigs(res, req.ValidateOnly, func(img *MetadataImage, i int) ([]Record, *APIError) {
		return c.incrementalAlterResource(img, res[i], req.Resources[i].Configs)
	})
	for _, a := range answers {
		resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource(a))
	}
	return resp
}

// alterConfigs is alterConfigResourcesLocked under the lock, with each resource's
// outcome as the answer both alter-configs APIs give (their response resources have
// the same fields), in request order.
func (c *Controller) alterConfigs(res []ConfigResource, validateOnly bool, alter func(img *MetadataImage, i int) ([]Record, *APIError)) []kmsg.AlterConfigsResponseResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := c.alterConfigResourcesLocked(res, validateOnly, alter)
	out := make([]kmsg.AlterConfigsResponseResource, len(res))
	for i, r := range res {
		out[i] = kmsg.NewAlterConfigsResponseResource()
		out[i].ResourceType, out[i].ResourceName = kmsg.ConfigResourceType(r.Type), r.Name
		if err := errs[i]; err != nil {
			out[i].ErrorCode, out[i].ErrorMessage = err.Code, strp(err.Error())
		}
	}
	return out
}

// alterConfigResourcesLocked is what IncrementalAlterConfigs and LegacyAlterConfigs
// share: a resource named twice in one request fails with INVALID_REQUEST, as Kafka's;
// every other one goes through alter (i is its index in res), and the records of those
// that succeed are committed together unless validateOnly. It returns each resource's
// error in request order, nil for success; when the commit fails, every resource that
// had succeeded gets the commit's error. Lock should be held.
func (c *Controller) alterConfigResourcesLocked(res []ConfigResource, validateOnly bool, alter func(img *MetadataImage, i int) ([]Record, *APIError)) []*APIError {
	img := c.Image()
	seen := map[ConfigResource]int{}
	for _, r := range res {
		seen[r]++
	}
	errs := make([]*APIError, len(res))
	var recs []Record
	for i, r := range res {
		if seen[r] > 1 {
			errs[i] = &APIError{Code: kerr.InvalidRequest.Code, Message: "Duplicate resource."}
			continue
		}
		newRecs, err := alter(img, i)
		if err == nil && !validateOnly {
			recs = append(recs, newRecs...)
		}
		errs[i] = err
	}
	if err := c.commit(recs); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = &APIError{Code: commitErrorCode(err), Message: err.Error()}
			}
		}
	} else if len(recs) > 0 {
		// unclean.leader.election.enable may have been turned on for partitions that
		// are leaderless now.
		c.maybeElectUncleanLocked()
	}
	return errs
}

func (c *Controller) incrementalAlterResource(img *MetadataImage, res ConfigResource, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]Record, *APIError) {
	if err := validateResourceName(res); err != nil {
		return nil, err
	}
	current := img.ResourceConfigs(res)
	// Later operations on a key see the earlier ones' result, as Kafka's (whose map
	// keeps only the last operation per key; the caller rejects duplicate keys).
	pending := map[string]*string{}
	var order []string
	for _, op := range ops {
		cur, ok := pending[op.Name]
		if !ok {
			if v, ok := current[op.Name]; ok {
				cur = &v
			}
			order = append(order, op.Name)
		}
		var next *string
		switch int8(op.Op) {
		case OpSet:
			next = op.Value
		case OpDelete:
			next = nil
		case OpAppend, OpSubtract:
			def, isList := c.listDefault(res.Type, op.Name)
			if !isList {
				return nil, newAPIError(kerr.InvalidConfig.Code, "Can't %s to key %s because its type is not LIST.", opName(int8(op.Op)), op.Name)
			}
			old := def
			if cur != nil {
				old = *cur
			}
			var parts []string
			for _, p := range strings.Split(old, ",") {
				if p != "" {
					parts = append(parts, p)
				}
			}
			val := ""
			if op.Value != nil {
				val = *op.Value
			}
			for _, v := range strings.Split(val, ",") {
				if int8(op.Op) == OpAppend {
					if !slices.Contains(parts, v) {
						parts = append(parts, v)
					}
				} else if i := slices.Index(parts, v); i >= 0 {
					parts = slices.Delete(parts, i, i+1)
				}
			}
			next = strp(strings.Join(parts, ","))
		default:
			return nil, newAPIError(kerr.InvalidRequest.Code, "Unknown operations type %d", op.Op)
		}
		pending[op.Name] = next
	}
	var recs []Record
	for _, name := range order {
		next := pending[name]
		old, had := current[name]
		unchanged := (next == nil && !had) || (next != nil && had && *next == old)
		if unchanged && res.Type != ResourceBroker {
			continue
		}
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Value: next}})
	}
	if err := c.validateAlteredConfigs(img, res, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// LegacyAlterConfigs carries out the resources of an AlterConfigs request as Kafka's
// ConfigurationControlManager.legacyAlterConfigs does: each resource's dynamic configs
// become exactly the ones given (the others are deleted), validated as a whole;
// successful resources are committed together unless ValidateOnly. Broker-side checks
// are the caller's, as for IncrementalAlterConfigs.
func (c *Controller) LegacyAlterConfigs(req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(req.Version)
	res := make([]ConfigResource, len(req.Resources))
	for i, r := range req.Resources {
		res[i] = ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}
	}
	resp.Resources = c.alterConfigs(res, req.ValidateOnly, func(img *MetadataImage, i int) ([]Record, *APIError) {
		return c.legacyAlterResource(img, res[i], req.Resources[i].Configs)
	})
	return resp
}

func (c *Controller) legacyAlterResource(img *MetadataImage, res ConfigResource, configs []kmsg.AlterConfigsRequestResourceConfig) ([]Record, *APIError) {
	if err := validateResourceName(res); err != nil {
		return nil, err
	}
	current := img.ResourceConfigs(res)
	given := map[string]bool{}
	var recs []Record
	for _, cfg := range configs {
		if cfg.Value == nil {
			return nil, newAPIError(kerr.InvalidConfig.Code, "Null value not supported for topic configs: %s", cfg.Name)
		}
		given[cfg.Name] = true
		old, had := current[cfg.Name]
		if had && *cfg.Value == old && res.Type != ResourceBroker {
			continue
		}
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: cfg.Name, Value: cfg.Value}})
	}
	var names []string
	for name := range current {
		if !given[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name}})
	}
	if err := c.validateAlteredConfigs(img, res, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// validateResourceName applies Kafka's ControllerConfigurationValidator.validate to
// the resource's type and name.
func validateResourceName(res ConfigResource) *APIError {
	switch res.Type {
	case ResourceTopic:
		if res.Name == "" {
			return newAPIError(kerr.InvalidRequest.Code, "Default topic resources are not allowed.")
		}
		if err := ValidateTopicName(res.Name); err != nil {
			return &APIError{Code: kerr.InvalidTopicException.Code, Message: err.Error()}
		}
	case ResourceBroker:
		if res.Name != "" {
			id, err := strconv.ParseInt(res.Name, 10, 32)
			if err != nil {
				return newAPIError(kerr.InvalidRequest.Code, "Unable to parse broker name as a base 10 number.")
			}
			if id < 0 {
				return newAPIError(kerr.InvalidRequest.Code, "Invalid negative broker ID.")
			}
		}
	default:
		return newAPIError(kerr.InvalidRequest.Code, "Unknown resource type %d", res.Type)
	}
	return nil
}

// validateAlteredConfigs checks the configs the resource would have after recs, then
// that the resource exists, as Kafka's ConfigurationControlManager.validateAlterConfig.
func (c *Controller) validateAlteredConfigs(img *MetadataImage, res ConfigResource, recs []Record) *APIError {
	if res.Type == ResourceTopic {
		all := map[string]*string{}
		for k, v := range img.ResourceConfigs(res) {
			all[k] = &v
		}
		for _, r := range recs {
			if r.Config.Value == nil {
				delete(all, r.Config.Name)
			} else {
				all[r.Config.Name] = r.Config.Value
			}
		}
		names := make([]string, 0, len(all))
		for k := range all {
			names = append(names, k)
		}
		slices.Sort(names)
		if c.cfg.ValidateTopicConfig != nil {
			for _, name := range names {
				if err := c.cfg.ValidateTopicConfig(name, *all[name]); err != nil {
					return &APIError{Code: kerr.InvalidConfig.Code, Message: err.Error()}
				}
			}
		}
		if img.Topics[res.Name] == nil {
			return newAPIError(kerr.UnknownTopicOrPartition.Code, "The topic '%s' does not exist.", res.Name)
		}
		return nil
	}
	if err := elrBrokerConfigError(img, res, recs); err != nil { // elr.go
		return err
	}
	if res.Name != "" {
		id, _ := strconv.ParseInt(res.Name, 10, 32)
		if _, ok := img.Brokers[int32(id)]; !ok && int32(id) != c.cfg.NodeID {
			return newAPIError(kerr.BrokerIDNotRegistered.Code, "No node with id %d found.", id)
		}
	}
	return nil
}

func opName(op int8) string {
	switch op {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return fmt.Sprint(op)
}
