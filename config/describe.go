package config

import "sort"

// ConfigEntry is one row of a DescribeConfigs answer.
type ConfigEntry struct {
	Name string
	// Value is the effective value as text; meaningless when IsNull.
	Value     string
	IsNull    bool
	Source    ConfigSource
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string
	// Synonyms are the places a value was found, highest precedence first,
	// as DescribeConfigs returns them when IncludeSynonyms is set.
	Synonyms []ConfigSynonym
}

// ConfigSynonym is one DescribeConfigs synonym.
type ConfigSynonym struct {
	Name   string
	Value  string
	Source ConfigSource
}

// BrokerConfigValue describes broker config name as DescribeConfigs on
// this broker's resource reports it: the effective value ("" where Kafka
// reports null, e.g. log.retention.ms when unset), where it comes from,
// whether it is read-only (cannot be altered at run time) and whether it
// is sensitive. An unknown name gives ("", SourceUnknown, true, false).
func (b *Broker) BrokerConfigValue(name string) (value string, source ConfigSource, readOnly, sensitive bool) {
	e, ok := b.DescribeBrokerConfig(name)
	if !ok {
		return "", SourceUnknown, true, false
	}
	if e.Sensitive {
		return "", e.Source, e.ReadOnly, true
	}
	return e.Value, e.Source, e.ReadOnly, e.Sensitive
}

// DescribeBrokerConfig is BrokerConfigValue as a ConfigEntry. The source
// is the first synonym's, as Kafka's ConfigHelper.createBrokerConfigEntry.
func (b *Broker) DescribeBrokerConfig(name string) (ConfigEntry, bool) {
	d, ok := brokerDefIndex[name]
	if !ok {
		return ConfigEntry{}, false
	}
	e := ConfigEntry{
		Name:      name,
		Value:     b.values[name],
		IsNull:    b.isNull[name],
		Source:    SourceDefaultConfig,
		ReadOnly:  d.ReadOnly(),
		Sensitive: d.Sensitive,
		Type:      d.Type,
		Doc:       d.Doc,
		Synonyms:  b.configSynonyms(name, brokerSynonymNames(name)),
	}
	if len(e.Synonyms) > 0 {
		e.Source = e.Synonyms[0].Source
	}
	return e, true
}

// DescribeBroker describes every broker config for this broker's own
// resource (name = node id), sorted by name.
func (b *Broker) DescribeBroker() []ConfigEntry {
	defs := BrokerDefs()
	out := make([]ConfigEntry, 0, len(defs))
	for _, d := range defs {
		e, _ := b.DescribeBrokerConfig(d.Name)
		out = append(out, e)
	}
	out = append(out, b.describeListenerOverrides()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DescribeClusterDefaults describes the broker resource with the empty
// name (the cluster-wide dynamic defaults): as Kafka, only the keys set
// there, with only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms. Sorted by name.
func (b *Broker) DescribeClusterDefaults() []ConfigEntry {
	var out []ConfigEntry
	for _, d := range BrokerDefs() {
		v, ok := b.dynDefault[d.Name]
		if !ok {
			continue
		}
		e, _ := b.DescribeBrokerConfig(d.Name)
		e.Value, e.IsNull = v, false
		var syn []ConfigSynonym
		for _, s := range e.Synonyms {
			if s.Source == SourceDynamicDefaultBrokerConfig {
				syn = append(syn, s)
			}
		}
		e.Synonyms, e.Source = syn, SourceDefaultConfig
		if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		out = append(out, e)
	}
	return out
}

// DescribeTopic describes every topic config of a topic with the given
// overrides, sorted by name: an override is DYNAMIC_TOPIC_CONFIG, any
// other value is the broker's (TopicDefault). Topic configs are never
// read-only.
func (b *Broker) DescribeTopic(overrides map[string]string) []ConfigEntry {
	defs := TopicDefs()
	out := make([]ConfigEntry, 0, len(defs))
	for _, d := range defs {
		e := ConfigEntry{Name: d.Name, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive}
		e.Value, e.Source = b.TopicDefault(d.Name)
		if b != nil && len(d.Synonyms) > 0 {
			e.Synonyms = b.configSynonyms(d.Synonyms[0], brokerSynonymNames(d.Synonyms[0]))
		}
		if v, ok := overrides[d.Name]; ok {
			e.Value, e.Source = v, SourceDynamicTopicConfig
			e.Synonyms = append([]ConfigSynonym{{Name: d.Name, Value: v, Source: SourceDynamicTopicConfig}}, e.Synonyms...)
		}
		out = append(out, e)
	}
	return out
}

// brokerSynonymNames lists the broker keys that set the same value, in
// precedence order (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonymNames(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// configSynonyms lists where each of names is set, layer by layer
// (per-broker dynamic, cluster-default dynamic, static, Kafka default),
// then drops the entries before the first one for name itself, exactly as
// Kafka's ConfigHelper.configSynonyms. A consequence Kafka has too: a
// topic's retention.ms inherited from a static log.retention.hours is
// reported as DEFAULT_CONFIG, since no log.retention.ms entry exists.
func (b *Broker) configSynonyms(name string, names []string) []ConfigSynonym {
	var out []ConfigSynonym
	add := func(src ConfigSource, get func(string) (string, bool)) {
		for _, n := range names {
			if v, ok := get(n); ok {
				out = append(out, ConfigSynonym{Name: n, Value: v, Source: src})
			}
		}
	}
	add(SourceDynamicBrokerConfig, func(n string) (string, bool) { v, ok := b.dynBroker[n]; return v, ok })
	add(SourceDynamicDefaultBrokerConfig, func(n string) (string, bool) { v, ok := b.dynDefault[n]; return v, ok })
	add(SourceStaticBrokerConfig, b.staticValue)
	add(SourceDefaultConfig, func(n string) (string, bool) {
		d := brokerDefIndex[n]
		if d == nil || d.NullDefault {
			return "", false
		}
		return d.Default, true
	})
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	return out
}
