package config

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
}

// BrokerConfigValue describes broker config name as DescribeConfigs on a
// broker resource reports it: the effective value ("" when Kafka would
// report null, e.g. log.retention.ms when unset), where it comes from,
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

// DescribeBrokerConfig is BrokerConfigValue as a ConfigEntry.
func (b *Broker) DescribeBrokerConfig(name string) (ConfigEntry, bool) {
	d, ok := brokerDefIndex[name]
	if !ok {
		return ConfigEntry{}, false
	}
	e := ConfigEntry{
		Name:      name,
		Value:     b.values[name],
		IsNull:    b.isNull[name],
		Source:    b.sources[name],
		ReadOnly:  d.ReadOnly(),
		Sensitive: d.Sensitive,
		Type:      d.Type,
		Doc:       d.Doc,
	}
	return e, true
}

// DescribeBroker describes every broker config, sorted by name.
func (b *Broker) DescribeBroker() []ConfigEntry {
	defs := BrokerDefs()
	out := make([]ConfigEntry, 0, len(defs))
	for _, d := range defs {
		e, _ := b.DescribeBrokerConfig(d.Name)
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
		if v, ok := overrides[d.Name]; ok {
			e.Value, e.Source = v, SourceDynamicTopicConfig
		} else {
			e.Value, e.Source = b.TopicDefault(d.Name)
		}
		out = append(out, e)
	}
	return out
}
