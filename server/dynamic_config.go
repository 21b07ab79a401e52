package server

// Dynamic broker configs at run time, as Kafka's DynamicBrokerConfig: the dynamic
// configs of the broker resource "" (the cluster-wide default, `kafka-configs
// --entity-default`) and of the one named by this broker's node id
// (`--entity-name <id>`) are layered over server.properties each time a config record
// for either reaches the image. Everything that resolves a topic's effective config
// reads that layered config (brokerConfig), so a topic config's value is, as in Kafka:
// the topic's override, else this broker's dynamic value of its broker synonym, else
// the cluster-wide dynamic default, else server.properties, else Kafka's default —
// for topics created before the change as for those created after, without a restart:
//
//   - produce (max.message.bytes, the timestamp rules, min.insync.replicas for
//     acks=all) through topicConfigFor, whose cache is emptied when the broker config
//     changes;
//   - the logs (retention, roll, flush, index, cleaner settings) and the partitions'
//     min ISR (the high-watermark rule) through the replica manager, which re-applies
//     every hosted partition's config when the broker configs change
//     (ReplicaManager.ApplyImage);
//   - DescribeConfigs, which reports an inherited value with its source
//     (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG) and synonyms.
//
// The controller resolves unclean.leader.election.enable and the ELR's
// min.insync.replicas from the same layers in the image (controller/unclean.go,
// controller/elr.go). Keys gokafkad cannot apply at run time are read-only in
// config/broker_defs.go, so AlterConfigs and IncrementalAlterConfigs refuse them.

import (
	"maps"
	"strconv"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

// dynamicConfig is the broker config built from one image's dynamic broker configs.
type dynamicConfig struct {
	broker *config.Broker
	// perBroker and clusterDefault are the image's maps it was built from (an image
	// never modifies a map; a config record replaces it).
	perBroker, clusterDefault map[string]string
}

// brokerConfig returns this broker's effective config: server.properties with the
// latest image's dynamic broker configs applied (the static config before the first
// image).
func (b *Broker) brokerConfig() *config.Broker {
	if d := b.dyn.Load(); d != nil {
		return d.broker
	}
	return b.cfg.Broker
}

// applyDynamicConfigs rebuilds brokerConfig when img's dynamic configs for this broker
// or the cluster default differ from the ones it was built from, and reports whether
// they did. Called by the metadata publisher before the subsystems see img.
func (b *Broker) applyDynamicConfigs(img *controller.MetadataImage) bool {
	per := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker, Name: strconv.Itoa(int(b.cfg.NodeID))})
	def := img.ResourceConfigs(controller.ConfigResource{Type: controller.ResourceBroker})
	cur := b.dyn.Load()
	if cur != nil && maps.Equal(cur.perBroker, per) && maps.Equal(cur.clusterDefault, def) {
		return false
	}
	if cur == nil && len(per) == 0 && len(def) == 0 {
		b.dyn.Store(&dynamicConfig{broker: b.cfg.Broker})
		return false
	}
	b.dyn.Store(&dynamicConfig{broker: b.layerDynamic(def, per), perBroker: per, clusterDefault: def})
	b.log.Info().Int("cluster_default", len(def)).Int("per_broker", len(per)).Msg("dynamic broker configs applied")
	return true
}

// layerDynamic is the static config with the cluster-wide defaults def and this
// broker's configs per applied. Every stored value passed validation when it was
// written; one this version cannot apply (a key it refuses at that level, say, written
// by an older version) is left out and logged, and a set that does not build as a
// whole leaves the static config in force, logged, rather than stopping the broker.
func (b *Broker) layerDynamic(def, per map[string]string) *config.Broker {
	cfg, dropped, err := b.cfg.Broker.WithApplicableDynamic(def, per)
	for _, e := range dropped {
		b.log.Warn().Err(e).Msg("a stored dynamic broker config cannot be applied by this broker; it is left out")
	}
	if err != nil {
		b.log.Error().Err(err).Msg("dynamic broker configs not applied: together with server.properties they are invalid; the static configuration stays in force")
		return b.cfg.Broker
	}
	return cfg
}
