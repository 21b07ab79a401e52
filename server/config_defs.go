package server

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

// configDefs is the ConfigDescriber backed by the config package's definitions.
type configDefs struct {
	broker *config.Broker // this broker's static config (server.properties + defaults)
}

func (d configDefs) DescribeTopic(overrides, brokerOverrides, clusterOverrides map[string]string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	return toKmsgConfigs(d.layered(clusterOverrides, brokerOverrides).DescribeTopic(overrides), synonyms, docs)
}

func (d configDefs) DescribeBroker(perBroker bool, brokerOverrides, clusterOverrides map[string]string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	b := d.layered(clusterOverrides, brokerOverrides)
	if perBroker {
		return toKmsgConfigs(b.DescribeBroker(), synonyms, docs)
	}
	return toKmsgConfigs(b.DescribeClusterDefaults(), synonyms, docs)
}

// layered is the static config with the dynamic broker configs applied as the broker
// applies them (applyDynamicConfigs: values it cannot apply left out; the static config
// when the rest is invalid).
func (d configDefs) layered(clusterOverrides, brokerOverrides map[string]string) *config.Broker {
	if len(clusterOverrides) == 0 && len(brokerOverrides) == 0 {
		return d.broker
	}
	b, _, err := d.broker.WithApplicableDynamic(clusterOverrides, brokerOverrides)
	if err != nil {
		return d.broker
	}
	return b
}

func (d configDefs) ValidateTopic(name, value string) error {
	return kafkaConfigError(config.ValidateTopicConfig(name, value), "topic")
}

func (d configDefs) ValidateBroker(name, value string, perBroker bool) error {
	err := config.ValidateDynamicBrokerConfig(name, value, perBroker)
	if errors.Is(err, config.ErrReadOnly) || errors.Is(err, config.ErrPerBrokerOnly) {
		return err // the caller names these keys together, as Kafka
	}
	return kafkaConfigError(err, "broker")
}

func (d configDefs) ListConfigDefault(resourceType int8, name string) (string, bool) {
	var def config.Def
	var ok bool
	if resourceType == controller.ResourceTopic {
		def, ok = config.TopicDef(name)
	} else {
		def, ok = config.BrokerDef(name)
	}
	if !ok || def.Type != config.TypeList {
		return "", false
	}
	return def.Default, true
}

// kafkaConfigError rewords a config error the way Kafka's ConfigDef does on the wire.
func kafkaConfigError(err error, kind string) error {
	var ce *config.Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	if ce.Unknown {
		return fmt.Errorf("Unknown %s config name: %s", kind, ce.Key)
	}
	if ce.Key == "" {
		return errors.New(ce.Reason)
	}
	return fmt.Errorf("Invalid value %s for configuration %s: %s", ce.Value, ce.Key, ce.Reason)
}

func toKmsgConfigs(entries []config.ConfigEntry, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = e.Name
		if !e.IsNull && !e.Sensitive {
			v := e.Value
			c.Value = &v
		}
		c.ReadOnly = e.ReadOnly
		c.Source = kmsg.ConfigSource(e.Source)
		c.IsSensitive = e.Sensitive
		c.ConfigType = kmsg.ConfigType(e.Type)
		if docs && e.Doc != "" {
			doc := e.Doc
			c.Documentation = &doc
		}
		if synonyms {
			for _, s := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				v := s.Value
				cs.Name, cs.Value, cs.Source = s.Name, &v, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		out = append(out, c)
	}
	return out
}
