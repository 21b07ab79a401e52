package config

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// topicDefs are the topic configs of Kafka 4.0's LogConfig (what
// `kafka-configs --describe --all` lists for a topic), with the broker
// keys each inherits its default from (ServerTopicConfigSynonyms), in
// precedence order. Kafka 4.0 removed message.format.version and
// message.timestamp.difference.max.ms; they are unknown here too.
// message.downconversion.enable is a deprecated no-op in 4.x and is kept.
var topicDefs = []Def{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", Importance: Medium, Valid: oneOf("compact", "delete"), Synonyms: []string{"log.cleanup.policy"},
		Doc: "What happens to old segments: delete them (retention), compact them (keep each key's latest record), or both."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Importance: Medium, Valid: gzipLevel, Synonyms: []string{"compression.gzip.level"},
		Doc: "gzip level when compression.type is gzip; -1 is level 6, as java.util.zip."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Importance: Medium, Valid: lz4Level, Synonyms: []string{"compression.lz4.level"},
		Doc: "lz4 level when compression.type is lz4: 9 the fast compressor, as Kafka; others high compression (pierrec/lz4's levels 1-8, 10-17 its strongest)."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Importance: Medium, Valid: oneOf(compressionTypes...), Synonyms: []string{"compression.type"},
		Doc: "Codec batches are stored with: gzip, snappy, lz4, zstd or uncompressed, the leader recompressing a batch sent otherwise; producer keeps the producer's."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Importance: Medium, Valid: zstdLevel, Synonyms: []string{"compression.zstd.level"},
		Doc: "zstd level when compression.type is zstd, on klauspost/compress's four speeds: below 3, 3-5, 6-9, 10 and up."},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.cleaner.delete.retention.ms"},
		Doc: "How long tombstones stay in a compacted log, bounding how long a reader from offset 0 may take to see them."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.segment.delete.delay.ms"},
		Doc: "How long a deleted segment's files linger before removal."},
	{Name: "flush.messages", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(1), Synonyms: []string{"log.flush.interval.messages"},
		Doc: "Records appended between two forced fsyncs; the default leaves durability to replication."},
	{Name: "flush.ms", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		Doc: "Longest time appended data stays unsynced; the default leaves durability to replication."},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Importance: Medium, Valid: custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", validThrottledReplicas),
		Doc: "Replicas whose fetching as out-of-sync followers is throttled to follower.replication.throttled.rate, as partition:broker pairs or *."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.index.interval.bytes"},
		Doc: "Bytes appended between two offset index entries."},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Importance: Medium, Valid: custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", validThrottledReplicas),
		Doc: "Replicas whose serving as leaders to out-of-sync followers is throttled to leader.replication.throttled.rate, as partition:broker pairs or *."},
	{Name: "local.retention.bytes", Type: TypeLong, Default: "-2", Importance: Medium, Valid: atLeast(-2), Synonyms: []string{"log.local.retention.bytes"},
		Doc: "Tiered storage: size kept locally; -2 means retention.bytes (gokafkad has no tiered storage)."},
	{Name: "local.retention.ms", Type: TypeLong, Default: "-2", Importance: Medium, Valid: atLeast(-2), Synonyms: []string{"log.local.retention.ms"},
		Doc: "Tiered storage: time kept locally; -2 means retention.ms (gokafkad has no tiered storage)."},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(1), Synonyms: []string{"log.cleaner.max.compaction.lag.ms"},
		Doc: "Oldest an uncompacted record may get before the log is compacted regardless of its dirty ratio."},
	{Name: "max.message.bytes", Type: TypeInt, Default: defaultMaxMessageBytes, Importance: Medium, Valid: atLeast(0), Synonyms: []string{"message.max.bytes"},
		Doc: "Largest record batch the topic accepts, after compression."},
	{Name: "message.downconversion.enable", Type: TypeBoolean, Default: "true", Importance: Low, Synonyms: []string{"log.message.downconversion.enable"}, Ignored: true,
		Doc: "Deprecated no-op since Kafka 4.0 (there is no down-conversion); accepted and reported."},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.message.timestamp.after.max.ms"},
		Doc: "With CreateTime, how far in the future a record's timestamp may be before its batch is rejected."},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.message.timestamp.before.max.ms"},
		Doc: "With CreateTime, how far in the past a record's timestamp may be before its batch is rejected."},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", Importance: Medium, Valid: oneOf("CreateTime", "LogAppendTime"), Synonyms: []string{"log.message.timestamp.type"},
		Doc: "Whether record timestamps are the producer's (CreateTime) or the broker's append time (LogAppendTime)."},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", Importance: Medium, Valid: between(0, 1), Synonyms: []string{"log.cleaner.min.cleanable.ratio"},
		Doc: "Share of the log that must be uncompacted before the compactor cleans it."},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.cleaner.min.compaction.lag.ms"},
		Doc: "Youngest a record may be and still be compacted away."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Importance: Medium, Valid: atLeast(1), Synonyms: []string{"min.insync.replicas"},
		Doc: "Fewest in-sync replicas an acks=all produce needs; fewer gets NOT_ENOUGH_REPLICAS."},
	{Name: "preallocate", Type: TypeBoolean, Default: "false", Importance: Medium, Valid: custom("false (gokafkad does not preallocate segments)", validPreallocate), Synonyms: []string{"log.preallocate"},
		Doc: "Whether new segment files are preallocated on disk; gokafkad grows segments as it writes them, so only false is accepted."},
	{Name: "remote.log.copy.disable", Type: TypeBoolean, Default: "false", Importance: Medium,
		Doc: "Tiered storage: stop uploading while keeping remote data readable (gokafkad has no tiered storage)."},
	{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: "false", Importance: Medium,
		Doc: "Tiered storage: delete remote data when remote storage is turned off (gokafkad has no tiered storage)."},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false", Importance: Medium, Valid: custom("false (tiered storage is disabled in the broker)", validRemoteStorage),
		Doc: "Tiered storage for the topic; gokafkad's brokers have it disabled, so only false is accepted."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1", Importance: Medium, Synonyms: []string{"log.retention.bytes"},
		Doc: "Largest size a partition may reach before its oldest segments are deleted; -1 means no limit."},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", Importance: Medium, Valid: atLeast(-1), Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		Doc: "How long a segment is kept before deletion; -1 means forever."},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", Importance: Medium, Valid: atLeast(1048576), Synonyms: []string{"log.segment.bytes"},
		Doc: "Size at which a segment is rolled; retention and compaction work a whole segment at a time."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", Importance: Medium, Valid: atLeast(4), Synonyms: []string{"log.index.size.max.bytes"},
		Doc: "Preallocated size of each segment's offset and time index."},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", Importance: Medium, Valid: atLeast(0), Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		Doc: "Largest random amount subtracted from segment.ms so that partitions do not all roll at once."},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", Importance: Medium, Valid: atLeast(1), Synonyms: []string{"log.roll.ms", "log.roll.hours"},
		Doc: "Age at which a segment is rolled even if not full, so retention and compaction can act on it."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Importance: Medium, Synonyms: []string{"unclean.leader.election.enable"},
		Doc: "Whether a replica outside the ISR may become leader as a last resort, losing data."},
}

var topicDefIndex = indexDefs(topicDefs)

// TopicDef returns the definition of topic config name.
func TopicDef(name string) (Def, bool) {
	d, ok := topicDefIndex[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// TopicDefs returns every topic config definition sorted by name.
func TopicDefs() []Def { return sortedDefs(topicDefs) }

func validThrottledReplicas(v any) string {
	l := v.([]string)
	if len(l) == 1 && l[0] == "*" {
		return ""
	}
	for _, e := range l {
		p, b, ok := strings.Cut(e, ":")
		if !ok || !isDigits(strings.TrimSpace(p)) || !isDigits(strings.TrimSpace(b)) {
			return "must be * or a list of partitionId:brokerId"
		}
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func validRemoteStorage(v any) string {
	if v.(bool) {
		return "tiered storage functionality is disabled in the broker"
	}
	return ""
}

// validPreallocate accepts only false: Kafka's preallocation (a segment file created
// at segment.bytes and trimmed when it rolls) is not built, and a true that changed
// nothing on disk would be a setting silently ignored.
func validPreallocate(v any) string {
	if v.(bool) {
		return "preallocating segment files is not supported by gokafkad"
	}
	return ""
}

// ValidateTopicConfig checks one topic config: an unknown name wraps
// ErrUnknownConfig, a bad value ErrInvalidValue; both are INVALID_CONFIG.
func ValidateTopicConfig(name, value string) error {
	d, ok := topicDefIndex[name]
	if !ok {
		return &Error{Key: name, Value: value, Unknown: true}
	}
	_, err := d.parseValue(value)
	return err
}

// ValidateTopicConfigs checks a topic's whole set of overrides: each one,
// then the combinations Kafka's LogConfig.validateValues rejects
// (min.compaction.lag.ms above max.compaction.lag.ms). b supplies the
// defaults of keys not overridden; it may be nil for Kafka's defaults.
func ValidateTopicConfigs(b *Broker, overrides map[string]string) error {
	for k, v := range overrides {
		if err := ValidateTopicConfig(k, v); err != nil {
			return err
		}
	}
	t := ResolveTopic(b, overrides)
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		return &Error{Key: "min.compaction.lag.ms", Value: strconv.FormatInt(t.MinCompactionLagMs, 10),
			Reason: fmt.Sprintf("conflicts with max.compaction.lag.ms (%d): min must not exceed max", t.MaxCompactionLagMs)}
	}
	return nil
}

// Topic is a topic's effective log configuration: its overrides over the
// broker's defaults.
type Topic struct {
	CleanupPolicy                []string // "delete" and/or "compact"
	CompressionType              string
	CompressionGzipLevel         int32
	CompressionLz4Level          int32
	CompressionZstdLevel         int32
	DeleteRetentionMs            int64
	FileDeleteDelayMs            int64
	FlushMessages                int64
	FlushMs                      int64
	IndexIntervalBytes           int64
	MaxCompactionLagMs           int64
	MaxMessageBytes              int32
	MessageTimestampAfterMaxMs   int64
	MessageTimestampBeforeMaxMs  int64
	MessageTimestampType         string // CreateTime or LogAppendTime
	MinCleanableDirtyRatio       float64
	MinCompactionLagMs           int64
	MinInsyncReplicas            int32
	Preallocate                  bool
	RetentionBytes               int64
	RetentionMs                  int64 // -1: forever
	SegmentBytes                 int64
	SegmentIndexBytes            int64
	SegmentJitterMs              int64
	SegmentMs                    int64
	UncleanLeaderElectionEnable  bool
	LocalRetentionMs             int64
	LocalRetentionBytes          int64
	RemoteStorageEnable          bool
	LeaderReplicationThrottled   []string
	FollowerReplicationThrottled []string

	// Overrides are the topic's own (dynamic topic) configs.
	Overrides map[string]string
}

// Compact reports whether cleanup.policy includes compact.
func (t *Topic) Compact() bool { return contains(t.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (t *Topic) Delete() bool { return contains(t.CleanupPolicy, "delete") }

// ResolveTopic returns the topic's effective configuration: each override
// that parses, else the broker default (b.TopicDefault). Overrides are
// expected to have passed ValidateTopicConfigs; one that does not parse
// is ignored. A nil b means Kafka's defaults.
func ResolveTopic(b *Broker, overrides map[string]string) Topic {
	vals := map[string]any{}
	for i := range topicDefs {
		d := &topicDefs[i]
		if raw, ok := overrides[d.Name]; ok {
			if v, err := d.parseValue(raw); err == nil {
				vals[d.Name] = v
				continue
			}
		}
		raw, _ := b.TopicDefault(d.Name)
		v, err := d.parseValue(raw)
		if err != nil { // a broker value outside the topic range; fall back
			v, _ = d.parseValue(d.Default)
		}
		vals[d.Name] = v
	}
	i64 := func(k string) int64 { return vals[k].(int64) }
	i32 := func(k string) int32 { return int32(vals[k].(int64)) }
	return Topic{
		CleanupPolicy:                vals["cleanup.policy"].([]string),
		CompressionType:              vals["compression.type"].(string),
		CompressionGzipLevel:         i32("compression.gzip.level"),
		CompressionLz4Level:          i32("compression.lz4.level"),
		CompressionZstdLevel:         i32("compression.zstd.level"),
		DeleteRetentionMs:            i64("delete.retention.ms"),
		FileDeleteDelayMs:            i64("file.delete.delay.ms"),
		FlushMessages:                i64("flush.messages"),
		FlushMs:                      i64("flush.ms"),
		IndexIntervalBytes:           i64("index.interval.bytes"),
		MaxCompactionLagMs:           i64("max.compaction.lag.ms"),
		MaxMessageBytes:              i32("max.message.bytes"),
		MessageTimestampAfterMaxMs:   i64("message.timestamp.after.max.ms"),
		MessageTimestampBeforeMaxMs:  i64("message.timestamp.before.max.ms"),
		MessageTimestampType:         vals["message.timestamp.type"].(string),
		MinCleanableDirtyRatio:       vals["min.cleanable.dirty.ratio"].(float64),
		MinCompactionLagMs:           i64("min.compaction.lag.ms"),
		MinInsyncReplicas:            i32("min.insync.replicas"),
		Preallocate:                  vals["preallocate"].(bool),
		RetentionBytes:               i64("retention.bytes"),
		RetentionMs:                  i64("retention.ms"),
		SegmentBytes:                 i64("segment.bytes"),
		SegmentIndexBytes:            i64("segment.index.bytes"),
		SegmentJitterMs:              i64("segment.jitter.ms"),
		SegmentMs:                    i64("segment.ms"),
		UncleanLeaderElectionEnable:  vals["unclean.leader.election.enable"].(bool),
		LocalRetentionMs:             i64("local.retention.ms"),
		LocalRetentionBytes:          i64("local.retention.bytes"),
		RemoteStorageEnable:          vals["remote.storage.enable"].(bool),
		LeaderReplicationThrottled:   vals["leader.replication.throttled.replicas"].([]string),
		FollowerReplicationThrottled: vals["follower.replication.throttled.replicas"].([]string),
		Overrides:                    maps.Clone(overrides),
	}
}

// TopicDefault is the value topic config name takes when the topic does
// not override it, and the source DescribeConfigs reports for it: that of
// the first synonym of its primary broker key (Kafka's
// ConfigHelper.createTopicConfigEntry), i.e. DYNAMIC_BROKER_CONFIG,
// DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG or DEFAULT_CONFIG.
// As in Kafka, a value inherited from a secondary key (log.retention.hours,
// log.roll.hours) while the primary (log.retention.ms, log.roll.ms) is
// unset everywhere is reported as DEFAULT_CONFIG. A nil b means Kafka's
// defaults. An unknown name gives ("", SourceUnknown).
func (b *Broker) TopicDefault(name string) (string, ConfigSource) {
	d, ok := topicDefIndex[name]
	if !ok {
		return "", SourceUnknown
	}
	if b == nil || len(d.Synonyms) == 0 {
		return d.Default, SourceDefaultConfig
	}
	src := SourceDefaultConfig
	if syn := b.configSynonyms(d.Synonyms[0], brokerSynonymNames(d.Synonyms[0])); len(syn) > 0 {
		src = syn[0].Source
	}
	return b.topicValue(name), src
}

// topicValue renders the broker's effective value for a topic config, in
// the topic's units (as Kafka's KafkaConfig.extractLogConfigMap).
func (b *Broker) topicValue(name string) string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch name {
	case "retention.ms":
		return i(b.LogRetentionMs)
	case "segment.ms":
		return i(b.LogRollMs)
	case "segment.jitter.ms":
		return i(b.LogRollJitterMs)
	case "flush.ms":
		return i(b.LogFlushIntervalMs)
	case "cleanup.policy":
		return strings.Join(b.LogCleanupPolicy, ",")
	case "min.cleanable.dirty.ratio":
		return strconv.FormatFloat(b.LogCleanerMinCleanableRatio, 'f', -1, 64)
	}
	d := topicDefIndex[name]
	return b.values[d.Synonyms[0]]
}

// OffsetsTopicConfigs are the topic configs __consumer_offsets is created
// with (Kafka's GroupCoordinator.offsetsTopicConfigs).
func (b *Broker) OffsetsTopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.FormatInt(int64(b.OffsetsTopicSegmentBytes), 10),
		"compression.type": "producer",
	}
}

// TransactionStateTopicConfigs are the topic configs __transaction_state
// is created with (Kafka's TransactionStateManager.transactionTopicConfigs):
// compacted, uncompressed, no unclean election, its own min ISR.
func (b *Broker) TransactionStateTopicConfigs() map[string]string {
	return map[string]string{
		"unclean.leader.election.enable": "false",
		"compression.type":               "uncompressed",
		"cleanup.policy":                 "compact",
		"min.insync.replicas":            strconv.FormatInt(int64(b.TransactionStateLogMinISR), 10),
		"segment.bytes":                  strconv.FormatInt(int64(b.TransactionStateLogSegmentBytes), 10),
	}
}
