// Package config holds gokafkad's broker and topic configuration: the
// definitions of every key gokafkad honours (Kafka 4.0's names, types,
// defaults, valid ranges, importance, and whether IncrementalAlterConfigs
// may change them), the parser for server.properties and --override flags,
// the start-up cross-checks Kafka's KafkaConfig performs for a KRaft node,
// and the resolution of a topic's effective configuration from its
// overrides and the broker's defaults, with the sources DescribeConfigs
// reports.
//
// A broker key's value comes from the first of these that sets it:
//
//  1. a per-broker dynamic value (IncrementalAlterConfigs on resource
//     "<node id>"; only keys whose Def.Dynamic is not ReadOnly),
//  2. a cluster-default dynamic value (resource ""; ClusterWide keys),
//  3. the static properties (server.properties, then --override),
//  4. gokafkad's single-node defaults (DevDefaults), which stand in for
//     Kafka's shipped config/server.properties and are reported as
//     STATIC_BROKER_CONFIG,
//  5. Kafka's default (DEFAULT_CONFIG), possibly null.
//
// Keys with secondary forms (log.retention.ms > .minutes > .hours,
// log.roll.ms > .hours, log.flush.interval.ms > log.flush.scheduler.interval.ms,
// node.id and broker.id) combine as Kafka combines them.
//
// A topic config's value is the topic's own override, else the value of
// the broker key it inherits from (Def.Synonyms), converted to the topic's
// units.
//
// The package is pure: no network, no logging, no global state beyond the
// definition tables. The only file it reads is one whose path it is given.
package config
