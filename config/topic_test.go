package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidateTopicConfig(t *testing.T) {
	good := [][2]string{
		{"retention.ms", "-1"},
		{"retention.ms", "86400000"},
		{"retention.bytes", "-1"},
		{"segment.bytes", "1048576"},
		{"segment.ms", "1"},
		{"cleanup.policy", "compact,delete"},
		{"cleanup.policy", "compact"},
		{"min.insync.replicas", "2"},
		{"max.message.bytes", "0"},
		{"message.timestamp.type", "LogAppendTime"},
		{"compression.type", "lz4"},
		{"compression.zstd.level", "-5"},
		{"min.cleanable.dirty.ratio", "0.01"},
		{"unclean.leader.election.enable", "true"},
		{"preallocate", "false"},
		{"remote.storage.enable", "false"},
		{"leader.replication.throttled.replicas", "*"},
		{"follower.replication.throttled.replicas", "0:1,1:2"},
		{"local.retention.ms", "-2"},
	}
	for _, g := range good {
		if err := ValidateTopicConfig(g[0], g[1]); err != nil {
			t.Errorf("%s=%s: %v", g[0], g[1], err)
		}
	}
	bad := []struct{ k, v, msg string }{
		{"retention.ms", "-2", "at least -1"},
		{"retention.ms", "forever", "not a long"},
		{"segment.bytes", "100", "at least 1048576"},
		{"segment.ms", "0", "at least 1"},
		{"cleanup.policy", "delete,forever", "not one of"},
		{"min.insync.replicas", "0", "at least 1"},
		{"message.timestamp.type", "create", "one of"},
		{"compression.type", "none", "one of"},
		{"compression.lz4.level", "18", "between 1 and 17"},
		{"min.cleanable.dirty.ratio", "2", "between 0 and 1"},
		{"unclean.leader.election.enable", "1", "true or false"},
		{"remote.storage.enable", "true", "tiered storage"},
		{"preallocate", "true", "preallocating"},
		{"leader.replication.throttled.replicas", "0-1", "partitionId:brokerId"},
		{"max.message.bytes", "2147483648", "out of range"},
	}
	for _, b := range bad {
		err := ValidateTopicConfig(b.k, b.v)
		if err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), b.msg) || !strings.Contains(err.Error(), b.k) {
			t.Errorf("%s=%s: got %v, want ErrInvalidValue with %q", b.k, b.v, err, b.msg)
		}
	}
	for _, name := range []string{"no.such.config", "message.format.version", "log.retention.ms"} {
		err := ValidateTopicConfig(name, "1")
		if !errors.Is(err, ErrUnknownConfig) || !IsInvalid(err) {
			t.Errorf("%s: got %v, want ErrUnknownConfig", name, err)
		}
	}
	err := ValidateTopicConfigs(nil, map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
	if !errors.Is(err, ErrInvalidValue) {
		t.Errorf("compaction lag conflict: %v", err)
	}
	if err := ValidateTopicConfigs(Default(), map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}); err != nil {
		t.Errorf("valid overrides: %v", err)
	}
}

func TestTopicDefault(t *testing.T) {
	b := Default()
	tests := []struct {
		name, want string
	}{
		{"retention.ms", "604800000"},
		{"segment.ms", "604800000"},
		{"segment.bytes", "1073741824"},
		{"max.message.bytes", "1048588"},
		{"cleanup.policy", "delete"},
		{"min.insync.replicas", "1"},
		{"flush.ms", "9223372036854775807"},
		{"message.timestamp.type", "CreateTime"},
		{"min.cleanable.dirty.ratio", "0.5"},
		{"compression.type", "producer"},
		{"remote.storage.enable", "false"},
	}
	for _, tt := range tests {
		v, src := b.TopicDefault(tt.name)
		if v != tt.want || src != SourceDefaultConfig {
			t.Errorf("%s: got %q %v, want %q DEFAULT_CONFIG", tt.name, v, src, tt.want)
		}
	}
	if _, src := b.TopicDefault("nope"); src != SourceUnknown {
		t.Errorf("unknown: %v", src)
	}

	b = mustParse(t, map[string]string{
		"log.retention.hours": "1",
		"log.segment.bytes":   "2097152",
		"message.max.bytes":   "5000",
		"min.insync.replicas": "2",
		"log.cleanup.policy":  "compact",
		"log.roll.ms":         "1000",
	})
	// Kafka quirk (ConfigHelper.configSynonyms drops entries before the
	// primary key): inherited from log.retention.hours, the source is
	// DEFAULT_CONFIG although the value is the broker's.
	if v, src := b.TopicDefault("retention.ms"); v != "3600000" || src != SourceDefaultConfig {
		t.Errorf("retention.ms from log.retention.hours: %q %v", v, src)
	}
	static := map[string]string{
		"segment.bytes":       "2097152",
		"max.message.bytes":   "5000",
		"min.insync.replicas": "2",
		"cleanup.policy":      "compact",
		"segment.ms":          "1000",
	}
	for name, want := range static {
		v, src := b.TopicDefault(name)
		if v != want || src != SourceStaticBrokerConfig {
			t.Errorf("%s: got %q %v, want %q STATIC_BROKER_CONFIG", name, v, src, want)
		}
	}

	b2 := mustParse(t, map[string]string{"log.retention.ms": "1000", "log.retention.hours": "1"})
	if v, src := b2.TopicDefault("retention.ms"); v != "1000" || src != SourceStaticBrokerConfig {
		t.Errorf("retention.ms from log.retention.ms: %q %v", v, src)
	}

	// Dynamic values win: per-broker over cluster default over static.
	d, err := b.WithDynamic(map[string]string{"log.retention.ms": "5000", "min.insync.replicas": "3"}, map[string]string{"min.insync.replicas": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if v, src := d.TopicDefault("retention.ms"); v != "5000" || src != SourceDynamicDefaultBrokerConfig {
		t.Errorf("retention.ms: %q %v", v, src)
	}
	if v, src := d.TopicDefault("min.insync.replicas"); v != "1" || src != SourceDynamicBrokerConfig {
		t.Errorf("min.insync.replicas: %q %v", v, src)
	}
	if d.LogRetentionMs != 5000 || d.MinInsyncReplicas != 1 {
		t.Errorf("dynamic fields: %d %d", d.LogRetentionMs, d.MinInsyncReplicas)
	}
}

func TestResolveTopic(t *testing.T) {
	b := mustParse(t, map[string]string{"log.retention.minutes": "10", "log.cleanup.policy": "compact"})
	top := ResolveTopic(b, map[string]string{"segment.bytes": "1048576", "cleanup.policy": "delete,compact", "max.message.bytes": "bogus"})
	if top.RetentionMs != 600000 {
		t.Errorf("RetentionMs = %d", top.RetentionMs)
	}
	if top.SegmentBytes != 1048576 || !top.Compact() || !top.Delete() {
		t.Errorf("overrides not applied: %+v", top)
	}
	if top.MaxMessageBytes != 1048588 {
		t.Errorf("invalid override not ignored: %d", top.MaxMessageBytes)
	}
	if top.SegmentMs != 604800000 || top.MinInsyncReplicas != 1 || top.MessageTimestampType != "CreateTime" ||
		top.FlushMessages != 1<<63-1 || top.FileDeleteDelayMs != 60000 || top.DeleteRetentionMs != 86400000 ||
		top.SegmentIndexBytes != 10<<20 || top.IndexIntervalBytes != 4096 || top.CompressionType != "producer" ||
		top.MinCleanableDirtyRatio != 0.5 || top.UncleanLeaderElectionEnable || top.RetentionBytes != -1 {
		t.Errorf("defaults: %+v", top)
	}
	if k := ResolveTopic(nil, nil); k.RetentionMs != 604800000 || !reflect.DeepEqual(k.CleanupPolicy, []string{"delete"}) {
		t.Errorf("nil broker: %+v", k)
	}
}

func TestDescribe(t *testing.T) {
	b := mustParse(t, map[string]string{"num.partitions": "4"})
	tests := []struct {
		name     string
		value    string
		src      ConfigSource
		readOnly bool
	}{
		{"num.partitions", "4", SourceStaticBrokerConfig, true},
		{"node.id", "1", SourceStaticBrokerConfig, true}, // single-node default
		{"log.retention.hours", "168", SourceDefaultConfig, true},
		{"log.retention.ms", "", SourceDefaultConfig, false},
		{"min.insync.replicas", "1", SourceDefaultConfig, false},
		// Kafka updates listeners dynamically; gokafkad binds them at start-up only.
		{"listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", SourceStaticBrokerConfig, true},
		{"no.such", "", SourceUnknown, true},
	}
	for _, tt := range tests {
		v, src, ro, sens := b.BrokerConfigValue(tt.name)
		if v != tt.value || src != tt.src || ro != tt.readOnly || sens {
			t.Errorf("%s: got %q %v ro=%v sens=%v", tt.name, v, src, ro, sens)
		}
	}
	if e, _ := b.DescribeBrokerConfig("log.retention.ms"); !e.IsNull || e.Type != TypeLong {
		t.Errorf("log.retention.ms entry: %+v", e)
	}
	all := b.DescribeBroker()
	if len(all) != len(brokerDefs) {
		t.Errorf("DescribeBroker: %d entries", len(all))
	}
	topic := b.DescribeTopic(map[string]string{"retention.ms": "100"})
	if len(topic) != len(topicDefs) || topic[0].Name != "cleanup.policy" {
		t.Errorf("DescribeTopic: %+v", topic[0])
	}
	for _, e := range topic {
		if e.Name == "retention.ms" && (e.Value != "100" || e.Source != SourceDynamicTopicConfig) {
			t.Errorf("retention.ms: %+v", e)
		}
	}
}

func TestSynonyms(t *testing.T) {
	b := mustParse(t, map[string]string{"log.retention.hours": "2", "log.retention.minutes": "30"})
	b, err := b.WithDynamic(map[string]string{"log.retention.ms": "7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := b.DescribeBrokerConfig("log.retention.ms")
	want := []ConfigSynonym{
		{"log.retention.ms", "7000", SourceDynamicDefaultBrokerConfig},
		{"log.retention.minutes", "30", SourceStaticBrokerConfig},
		{"log.retention.hours", "2", SourceStaticBrokerConfig},
		{"log.retention.hours", "168", SourceDefaultConfig},
	}
	if !reflect.DeepEqual(e.Synonyms, want) || e.Source != SourceDynamicDefaultBrokerConfig || e.Value != "7000" || b.LogRetentionMs != 7000 {
		t.Errorf("log.retention.ms: %+v", e)
	}
	e, _ = b.DescribeBrokerConfig("log.retention.hours")
	if !reflect.DeepEqual(e.Synonyms, want[2:]) || e.Source != SourceStaticBrokerConfig || !e.ReadOnly {
		t.Errorf("log.retention.hours: %+v", e)
	}
	var retention ConfigEntry
	for _, te := range b.DescribeTopic(map[string]string{"retention.ms": "5"}) {
		if te.Name == "retention.ms" {
			retention = te
		}
	}
	if retention.Source != SourceDynamicTopicConfig || len(retention.Synonyms) != 5 || retention.Synonyms[1].Name != "log.retention.ms" {
		t.Errorf("topic retention.ms: %+v", retention)
	}
	defaults := b.DescribeClusterDefaults()
	if len(defaults) != 1 || defaults[0].Name != "log.retention.ms" || defaults[0].Value != "7000" || len(defaults[0].Synonyms) != 1 {
		t.Errorf("DescribeClusterDefaults: %+v", defaults)
	}
}

func TestDynamicValidation(t *testing.T) {
	tests := []struct {
		name, value string
		perBroker   bool
		ok          bool
	}{
		{"log.retention.ms", "1000", false, true},
		{"log.retention.ms", "1000", true, true},
		{"log.retention.hours", "1", false, false}, // only the primary synonym is dynamic
		{"ssl.keystore.location", "/k.jks", true, true},
		{"ssl.keystore.location", "/k.jks", false, false},
		{"node.id", "2", true, false},
		{"num.io.threads", "4", false, true},
		{"message.max.bytes", "x", false, false},
		{"nope", "1", true, false},
		// Dynamic in Kafka, read at start-up only here: refused rather than ignored.
		{"listeners", "PLAINTEXT://:9092", true, false},
		{"advertised.listeners", "PLAINTEXT://h:9092", true, false},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT", true, false},
		{"num.replica.fetchers", "2", false, false},
		{"producer.id.expiration.ms", "1000", false, false},
		{"num.recovery.threads.per.data.dir", "4", false, false},
		{"transaction.partition.verification.enable", "false", false, true},
	}
	for _, tt := range tests {
		err := ValidateDynamicBrokerConfig(tt.name, tt.value, tt.perBroker)
		if (err == nil) != tt.ok {
			t.Errorf("%s=%s perBroker=%v: %v", tt.name, tt.value, tt.perBroker, err)
		}
	}
	if err := ValidateDynamicBrokerConfig("num.replica.fetchers", "2", true); !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrInvalidValue) {
		t.Errorf("read-only key: %v, want ErrReadOnly", err)
	}
	if err := ValidateDynamicBrokerConfig("ssl.keystore.location", "/k", false); !errors.Is(err, ErrPerBrokerOnly) {
		t.Errorf("per-broker key as a cluster default: %v, want ErrPerBrokerOnly", err)
	}
	if _, err := Default().WithDynamic(nil, map[string]string{"node.id": "9"}); err == nil {
		t.Error("WithDynamic accepted a read-only key")
	}
	// Stored values that cannot be applied are left out, the rest applied.
	b, dropped, err := Default().WithApplicableDynamic(map[string]string{"log.retention.ms": "5", "num.replica.fetchers": "3"},
		map[string]string{"listeners": "PLAINTEXT://:1", "min.insync.replicas": "2"})
	if err != nil || len(dropped) != 2 || b.LogRetentionMs != 5 || b.MinInsyncReplicas != 2 || b.NumReplicaFetchers != 1 {
		t.Errorf("WithApplicableDynamic: err %v dropped %v retention %d min ISR %d fetchers %d", err, dropped, b.LogRetentionMs, b.MinInsyncReplicas, b.NumReplicaFetchers)
	}
}

func TestTypeNumbers(t *testing.T) {
	// DescribeConfigs v3+ ConfigType and v1+ ConfigSource numbers.
	if TypeBoolean != 1 || TypeString != 2 || TypeInt != 3 || TypeShort != 4 || TypeLong != 5 ||
		TypeDouble != 6 || TypeList != 7 || TypeClass != 8 || TypePassword != 9 {
		t.Error("type numbers")
	}
	if SourceDynamicTopicConfig != 1 || SourceDynamicBrokerConfig != 2 || SourceDynamicDefaultBrokerConfig != 3 ||
		SourceStaticBrokerConfig != 4 || SourceDefaultConfig != 5 {
		t.Error("source numbers")
	}
	if def, _ := BrokerDef("offsets.topic.replication.factor"); def.Type.String() != "SHORT" || def.Importance.String() != "HIGH" {
		t.Errorf("%v %v", def.Type, def.Importance)
	}
}

func TestInternalTopicConfigs(t *testing.T) {
	b := Default()
	o := b.OffsetsTopicConfigs()
	if o["cleanup.policy"] != "compact" || o["segment.bytes"] != "104857600" || o["compression.type"] != "producer" {
		t.Errorf("offsets: %v", o)
	}
	tx := b.TransactionStateTopicConfigs()
	if tx["min.insync.replicas"] != "1" || tx["compression.type"] != "uncompressed" || tx["unclean.leader.election.enable"] != "false" {
		t.Errorf("transactions: %v", tx)
	}
	for _, m := range []map[string]string{o, tx} {
		if err := ValidateTopicConfigs(b, m); err != nil {
			t.Error(err)
		}
	}
}

// TestTopicInheritsDynamicBrokerConfigs: a topic config the topic does not override
// takes this broker's dynamic value of its broker synonym, else the cluster-wide
// dynamic default, else the static one, and DescribeTopic reports where it came from
// with Kafka's synonyms.
func TestTopicInheritsDynamicBrokerConfigs(t *testing.T) {
	b, err := mustParse(t, map[string]string{"log.segment.bytes": "2097152", "min.insync.replicas": "2"}).WithDynamic(
		map[string]string{"min.insync.replicas": "3", "log.segment.bytes": "3145728", "log.cleanup.policy": "compact"},
		map[string]string{"log.segment.bytes": "4194304", "log.retention.ms": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	tc := ResolveTopic(b, map[string]string{"cleanup.policy": "delete"})
	if tc.MinInsyncReplicas != 3 || tc.SegmentBytes != 4194304 || tc.RetentionMs != 5000 || !slicesEqual(tc.CleanupPolicy, []string{"delete"}) {
		t.Errorf("resolved: min ISR %d, segment.bytes %d, retention.ms %d, cleanup.policy %v", tc.MinInsyncReplicas, tc.SegmentBytes, tc.RetentionMs, tc.CleanupPolicy)
	}
	got := map[string]ConfigEntry{}
	for _, e := range b.DescribeTopic(map[string]string{"cleanup.policy": "delete"}) {
		got[e.Name] = e
	}
	for _, want := range []ConfigEntry{
		{Name: "min.insync.replicas", Value: "3", Source: SourceDynamicDefaultBrokerConfig, Synonyms: []ConfigSynonym{
			{"min.insync.replicas", "3", SourceDynamicDefaultBrokerConfig}, {"min.insync.replicas", "2", SourceStaticBrokerConfig}, {"min.insync.replicas", "1", SourceDefaultConfig}}},
		{Name: "segment.bytes", Value: "4194304", Source: SourceDynamicBrokerConfig, Synonyms: []ConfigSynonym{
			{"log.segment.bytes", "4194304", SourceDynamicBrokerConfig}, {"log.segment.bytes", "3145728", SourceDynamicDefaultBrokerConfig},
			{"log.segment.bytes", "2097152", SourceStaticBrokerConfig}, {"log.segment.bytes", "1073741824", SourceDefaultConfig}}},
		{Name: "retention.ms", Value: "5000", Source: SourceDynamicBrokerConfig, Synonyms: []ConfigSynonym{
			{"log.retention.ms", "5000", SourceDynamicBrokerConfig}, {"log.retention.hours", "168", SourceDefaultConfig}}},
		{Name: "cleanup.policy", Value: "delete", Source: SourceDynamicTopicConfig, Synonyms: []ConfigSynonym{
			{"cleanup.policy", "delete", SourceDynamicTopicConfig}, {"log.cleanup.policy", "compact", SourceDynamicDefaultBrokerConfig}, {"log.cleanup.policy", "delete", SourceDefaultConfig}}},
	} {
		e := got[want.Name]
		if e.Value != want.Value || e.Source != want.Source || !reflect.DeepEqual(e.Synonyms, want.Synonyms) {
			t.Errorf("%s: got %q %v %v, want %q %v %v", want.Name, e.Value, e.Source, e.Synonyms, want.Value, want.Source, want.Synonyms)
		}
	}
}

func slicesEqual(a, b []string) bool { return reflect.DeepEqual(a, b) }
