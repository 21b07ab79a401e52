package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigDescriber knows the topic and broker config definitions: DescribeConfigs takes
// its entries from it, and AlterConfigs / IncrementalAlterConfigs its validation. The
// config package implements it; Config.Configs may be nil, and then DescribeConfigs
// lists only a resource's dynamic configs and nothing is validated beyond what
// Config.ValidateTopicConfig checks.
type ConfigDescriber interface {
	// DescribeTopic describes every topic config for a topic whose dynamic configs are
	// overrides, on a broker whose own dynamic configs are brokerOverrides under the
	// cluster-wide dynamic defaults clusterOverrides: value (nil when sensitive), source
	// (dynamic topic config, dynamic broker config, dynamic default broker config,
	// static broker config, default), read-only, sensitivity, type, and, when asked
	// for, synonyms (as Kafka's ConfigHelper.createTopicConfigEntry) and documentation.
	DescribeTopic(overrides, brokerOverrides, clusterOverrides map[string]string, includeSynonyms, includeDocs bool) []kmsg.DescribeConfigsResponseResourceConfig
	// DescribeBroker describes this broker's configs (perBroker: resolved from its own
	// dynamic configs brokerOverrides, the cluster-wide dynamic defaults
	// clusterOverrides, server.properties and the defaults), or, when perBroker is
	// false, just the cluster-wide dynamic defaults, as Kafka's ConfigHelper does for
	// the broker resource named "".
	DescribeBroker(perBroker bool, brokerOverrides, clusterOverrides map[string]string, includeSynonyms, includeDocs bool) []kmsg.DescribeConfigsResponseResourceConfig
	// ValidateTopic checks one topic config (INVALID_CONFIG with the error's text).
	ValidateTopic(name, value string) error
	// ValidateBroker checks one dynamic broker config, per broker or cluster-wide
	// (INVALID_REQUEST with the error's text, as Kafka answers for broker configs). A
	// key that cannot be altered at run time, or only for one broker, gives an error
	// wrapping config.ErrReadOnly or config.ErrPerBrokerOnly, which the caller words as
	// Kafka does for all such keys of a resource together.
	ValidateBroker(name, value string, perBroker bool) error
	// ListConfigDefault reports whether a config of the resource type
	// (controller.ResourceTopic / ResourceBroker) is LIST-typed, and its default; only
	// those take IncrementalAlterConfigs APPEND and SUBTRACT.
	ListConfigDefault(resourceType int8, name string) (def string, isList bool)
}

// describeOverrides lists just the dynamic configs given, with source, for when there
// is no ConfigDescriber.
func describeOverrides(overrides map[string]string, source kmsg.ConfigSource, includeSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(names))
	for _, n := range names {
		v := overrides[n]
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value, e.Source = n, &v, source
		if includeSynonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = n, &v, source
			e.ConfigSynonyms = append(e.ConfigSynonyms, s)
		}
		out = append(out, e)
	}
	return out
}
