package server

// ListConfigResources: v0-1 (v0 was ListClientMetricsResources, KIP-714; v1 lists
// the resources of the requested types, KIP-1142).
//
// kafka-configs --describe --entity-type client-metrics / groups (without a name),
// kafka-client-metrics --list and Admin.listConfigResources. Answered by the broker
// from its metadata image, as Kafka 4.4's KafkaApis.handleListConfigResources:
// DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED (brokerAuthz);
// v0 knows only client-metrics resources, v1 topics, brokers, broker loggers,
// client metrics and groups, and an empty type list means all of the version's;
// any other type answers UNSUPPORTED_VERSION with no resources. The answer lists,
// whatever the order of the request, groups, client metrics, broker loggers,
// brokers, topics: each type once however often it is named.
//
//   - groups: those with dynamic group configs. gokafkad keeps none (a group config
//     resource is refused by IncrementalAlterConfigs), so none are listed, as Kafka
//     lists none on a cluster without group configs.
//   - client metrics: the client-metrics subscriptions (config resources of type
//     16). gokafkad has no client telemetry (GetTelemetrySubscriptions is not
//     served and a client-metrics config resource is refused), so there are none,
//     as on a Kafka cluster where no subscription was created.
//   - broker loggers and brokers: every registered broker, fenced or not, with an
//     endpoint on the listener the request came in on (KRaftMetadataCache
//     .getBrokerNodes), by id.
//   - topics: every topic, internal ones included, by name.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleListConfigResources(c *conn, r *request) error {
	req := r.req.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := []int8{configResourceClientMetrics}
	if req.Version >= 1 {
		supported = []int8{configResourceTopic, configResourceBroker, configResourceBrokerLogger, configResourceClientMetrics, configResourceGroup}
	}
	types := req.ResourceTypes
	if len(types) == 0 {
		types = supported
	}
	for _, t := range types {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			r.resp.finish(resp)
			return nil
		}
	}
	img := c.b.ctl.Image()
	add := func(typ int8, name string) {
		cr := kmsg.NewListConfigResourcesResponseConfigResource()
		cr.Name, cr.Type = name, typ
		resp.ConfigResources = append(resp.ConfigResources, cr)
	}
	// Groups and client metrics: gokafkad has neither kind of config resource (see
	// above), so their lists are empty.
	for _, typ := range []int8{configResourceBrokerLogger, configResourceBroker} {
		if !slices.Contains(types, typ) {
			continue
		}
		for _, br := range img.SortedBrokers() {
			if _, ok := br.Endpoint(c.session.listener); ok {
				add(typ, strconv.Itoa(int(br.ID)))
			}
		}
	}
	if slices.Contains(types, configResourceTopic) {
		for _, name := range img.SortedTopicNames() {
			add(configResourceTopic, name)
		}
	}
	if resp.ConfigResources == nil {
		resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	}
	r.resp.finish(resp)
	return nil
}
