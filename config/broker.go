package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Broker is one node's effective configuration: typed fields for every
// key in BrokerDefs, plus the explicitly set values.
//
// A Broker is immutable once built; dynamic changes make a new one
// (WithDynamic).
type Broker struct {
	// KRaft and identity.
	ProcessRoles           []string // "broker" and/or "controller"
	NodeID                 int32
	ControllerQuorumVoters []Voter
	// ControllerQuorumBootstrapServers is controller.quorum.bootstrap.servers (a
	// dynamic quorum when set); ControllerQuorumStandalone is StandaloneKey.
	ControllerQuorumBootstrapServers []string
	ControllerQuorumStandalone       bool
	ControllerListenerNames          []string
	BrokerRack                       string
	// HTTPListener is gokafkad.http.listener: where the status page and metrics are
	// served ("" = nowhere).
	HTTPListener string
	// AsVersion is gokafkad.as.version ("" = none) and APIMaxVersions
	// gokafkad.api.max.versions (nil = none), by key: version pretending.
	AsVersion      string
	APIMaxVersions map[int16]int16
	// SegmentDescriptorsMax is gokafkad.log.segment.descriptors.max (0: half the
	// open-file limit).
	SegmentDescriptorsMax int32

	// Listeners, with SecurityProtocol resolved through
	// ListenerSecurityProtocolMap. AdvertisedListeners is the advertised
	// value, or Listeners when advertised.listeners is unset.
	Listeners                   []Listener
	AdvertisedListeners         []Listener
	ListenerSecurityProtocolMap map[string]string // name → protocol, effective (controller names added as Kafka does)
	// InterBrokerListenerName is inter.broker.listener.name, or the name
	// of security.inter.broker.protocol when unset (Kafka's rule).
	InterBrokerListenerName     string
	SecurityInterBrokerProtocol string

	// LogDirs is log.dirs, or log.dir when unset; never empty.
	LogDirs        []string
	MetadataLogDir string // metadata.log.dir, or LogDirs[0] when unset

	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopicsEnable   bool
	DeleteTopicEnable        bool

	MessageMaxBytes                      int32
	SocketRequestMaxBytes                int32
	SocketSendBufferBytes                int32
	SocketReceiveBufferBytes             int32
	ConnectionsMaxIdleMs                 int64
	FetchMaxBytes                        int32
	QuotaWindowNum                       int32 // quota.window.num
	QuotaWindowSizeSeconds               int32 // quota.window.size.seconds
	MaxIncrementalFetchSessionCacheSlots int32
	NumNetworkThreads                    int32 // ignored
	NumIOThreads                         int32 // ignored
	NumRecoveryThreadsPerDataDir         int32

	// Connection and request limits (config/limits.go).
	QueuedMaxRequestBytes int64 // <= 0: no limit
	QueuedMaxRequests     int32
	MaxConnections        int32
	MaxConnectionsPerIP   int32
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides, by host
	// or address as written.
	MaxConnectionsPerIPOverrides map[string]int32
	MaxConnectionCreationRate    int32
	// ListenerMaxConnections and ListenerMaxConnectionCreationRate are the
	// listener.name.<listener>.max.connections and
	// .max.connection.creation.rate keys, by upper-case listener name.
	ListenerMaxConnections            map[string]int32
	ListenerMaxConnectionCreationRate map[string]int32

	LogSegmentBytes int64
	// LogRollMs is log.roll.ms, or log.roll.hours × 3,600,000.
	LogRollMs       int64
	LogRollJitterMs int64 // log.roll.jitter.ms, or log.roll.jitter.hours × 3,600,000
	// LogRetentionMs is log.retention.ms, else log.retention.minutes ×
	// 60,000, else log.retention.hours × 3,600,000; any negative result is
	// -1 (keep forever), as Kafka's KafkaConfig.logRetentionTimeMillis.
	LogRetentionMs              int64
	LogRetentionBytes           int64
	LogRetentionCheckIntervalMs int64
	LogSegmentDeleteDelayMs     int64
	LogIndexSizeMaxBytes        int64
	LogIndexIntervalBytes       int64
	LogFlushIntervalMessages    int64
	// LogFlushIntervalMs is log.flush.interval.ms, or
	// log.flush.scheduler.interval.ms when unset.
	LogFlushIntervalMs                      int64
	LogFlushSchedulerIntervalMs             int64
	LogFlushOffsetCheckpointIntervalMs      int64
	LogFlushStartOffsetCheckpointIntervalMs int64
	LogMessageTimestampType                 string // CreateTime or LogAppendTime
	LogMessageTimestampBeforeMaxMs          int64
	LogMessageTimestampAfterMaxMs           int64
	LogCleanupPolicy                        []string // "delete" and/or "compact"
	LogCleanerEnable                        bool
	LogCleanerBackoffMs                     int64
	LogCleanerDeleteRetentionMs             int64
	LogCleanerMinCompactionLagMs            int64
	LogCleanerMaxCompactionLagMs            int64
	LogCleanerMinCleanableRatio             float64
	LogLocalRetentionMs                     int64
	LogLocalRetentionBytes                  int64

	MinInsyncReplicas           int32
	UncleanLeaderElectionEnable bool
	CompressionType             string
	CompressionGzipLevel        int32
	CompressionLz4Level         int32
	CompressionZstdLevel        int32

	ReplicaLagTimeMaxMs               int64
	ReplicaFetchWaitMaxMs             int32
	ReplicaFetchMinBytes              int32
	ReplicaFetchMaxBytes              int32
	ReplicaFetchResponseMaxBytes      int32
	ReplicaFetchBackoffMs             int32
	ReplicaSocketTimeoutMs            int32
	NumReplicaFetchers                int32
	LeaderReplicationThrottledRate    int64
	FollowerReplicationThrottledRate  int64
	ReplicationQuotaWindowNum         int32
	ReplicationQuotaWindowSizeSeconds int32
	// ReplicaAlterLogDirsIoMaxBytesPerSecond bounds the log dir moves' copying
	// (Kafka's alter-log-dirs ReplicationQuotaManager), measured over
	// AlterLogDirsReplicationQuotaWindowNum samples of ...WindowSizeSeconds.
	ReplicaAlterLogDirsIoMaxBytesPerSecond        int64
	AlterLogDirsReplicationQuotaWindowNum         int32
	AlterLogDirsReplicationQuotaWindowSizeSeconds int32
	ReplicaHighWatermarkCheckpointIntervalMs      int64
	AutoLeaderRebalanceEnable                     bool
	LeaderImbalanceCheckIntervalSeconds           int64
	LeaderImbalancePerBrokerPercentage            int32

	BrokerHeartbeatIntervalMs          int32
	BrokerSessionTimeoutMs             int32
	InitialBrokerRegistrationTimeoutMs int32

	OffsetsTopicNumPartitions       int32
	OffsetsTopicReplicationFactor   int16
	OffsetsTopicSegmentBytes        int32
	OffsetsRetentionMinutes         int32
	OffsetsRetentionCheckIntervalMs int64
	OffsetsCommitTimeoutMs          int32
	OffsetMetadataMaxBytes          int32
	GroupInitialRebalanceDelayMs    int32
	GroupMinSessionTimeoutMs        int32
	GroupMaxSessionTimeoutMs        int32
	GroupMaxSize                    int32

	ConsumerGroupSessionTimeoutMs       int32
	ConsumerGroupMinSessionTimeoutMs    int32
	ConsumerGroupMaxSessionTimeoutMs    int32
	ConsumerGroupHeartbeatIntervalMs    int32
	ConsumerGroupMinHeartbeatIntervalMs int32
	ConsumerGroupMaxHeartbeatIntervalMs int32
	ConsumerGroupMaxSize                int32
	ConsumerGroupAssignors              []string

	StreamsGroupSessionTimeoutMs       int32
	StreamsGroupMinSessionTimeoutMs    int32
	StreamsGroupMaxSessionTimeoutMs    int32
	StreamsGroupHeartbeatIntervalMs    int32
	StreamsGroupMinHeartbeatIntervalMs int32
	StreamsGroupMaxHeartbeatIntervalMs int32
	StreamsGroupMaxSize                int32
	StreamsGroupNumStandbyReplicas     int32
	StreamsGroupMaxStandbyReplicas     int32

	ShareGroupSessionTimeoutMs        int32
	ShareGroupMinSessionTimeoutMs     int32
	ShareGroupMaxSessionTimeoutMs     int32
	ShareGroupHeartbeatIntervalMs     int32
	ShareGroupMinHeartbeatIntervalMs  int32
	ShareGroupMaxHeartbeatIntervalMs  int32
	ShareGroupMaxSize                 int32
	ShareGroupRecordLockDurationMs    int32
	ShareGroupMinRecordLockDurationMs int32
	ShareGroupMaxRecordLockDurationMs int32
	ShareGroupDeliveryCountLimit      int32
	ShareGroupPartitionMaxRecordLocks int32
	ShareGroupMaxShareSessions        int32

	ShareStateTopicNumPartitions     int32
	ShareStateTopicReplicationFactor int16
	ShareStateTopicMinISR            int16
	ShareStateTopicSegmentBytes      int32

	TransactionStateLogNumPartitions                   int32
	TransactionStateLogReplicationFactor               int16
	TransactionStateLogMinISR                          int32
	TransactionStateLogSegmentBytes                    int32
	TransactionalIDExpirationMs                        int32
	TransactionMaxTimeoutMs                            int32
	TransactionAbortTimedOutTransactionCleanupInterval int32 // ms
	TransactionRemoveExpiredTransactionCleanupInterval int32 // ms
	TransactionPartitionVerificationEnable             bool
	ProducerIDExpirationMs                             int32
	ProducerIDExpirationCheckIntervalMs                int32

	// Authorization: AuthorizerClassName is "" (off) or Kafka's StandardAuthorizer;
	// SuperUsers is super.users split on ';'.
	AuthorizerClassName       string
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool

	// Delegation tokens: DelegationTokenSecretKey is "" when tokens are disabled.
	DelegationTokenSecretKey             string
	DelegationTokenMaxLifetimeMs         int64
	DelegationTokenExpiryTimeMs          int64
	DelegationTokenExpiryCheckIntervalMs int64

	// Raw holds every key set explicitly in the static configuration
	// (server.properties and --override), unknown keys included, as given.
	Raw map[string]string

	// dynDefault and dynBroker are the dynamic cluster-default and
	// per-broker values (IncrementalAlterConfigs), validated.
	dynDefault map[string]string
	dynBroker  map[string]string
	// values holds every known key's effective value (as text) and
	// sources where it came from; "" with a null source entry means null.
	values  map[string]string
	isNull  map[string]bool
	sources map[string]ConfigSource
}

// devDefaults are what `gokafkad` with no arguments runs: one combined
// node with clients on 127.0.0.1:9092 and the controller on
// 127.0.0.1:9093, data under ./data, internal topics with replication
// factor 1. They stand in for Kafka's shipped config/server.properties, so
// DescribeConfigs reports them as STATIC_BROKER_CONFIG.
var devDefaults = map[string]string{
	"process.roles":                    "broker,controller",
	"node.id":                          "1",
	"listeners":                        "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
	"controller.quorum.voters":         "1@127.0.0.1:9093",
	"controller.listener.names":        "CONTROLLER",
	"log.dirs":                         "./data",
	"offsets.topic.replication.factor": "1",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"group.initial.rebalance.delay.ms":                 "0",
}

// DevDefaults returns a copy of the single-node values that Parse uses
// for keys the configuration leaves unset. (When process.roles is set to
// a single role, the listeners default keeps only that role's listener.)
func DevDefaults() map[string]string { return maps.Clone(devDefaults) }

// Default returns the configuration of `gokafkad` with no arguments.
func Default() *Broker {
	b, _, err := Parse(nil)
	if err != nil {
		panic("config: the built-in defaults do not parse: " + err.Error())
	}
	return b
}

// Parse builds a Broker from static properties (server.properties plus
// overrides). Keys not given take the single-node values of DevDefaults,
// then Kafka's defaults. It returns the keys it does not know, sorted;
// they are kept in Raw and otherwise ignored, as Kafka does. An invalid
// value or a combination Kafka refuses at start-up is an error wrapping
// ErrInvalidValue.
func Parse(props map[string]string) (*Broker, []string, error) {
	var unknown []string
	for k := range props {
		_, known := brokerDefIndex[k]
		if _, ok := listenerSSLDef(k); !ok && !known && !isListenerLimitKey(k) && !isListenerSASLKey(k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	b, err := build(props, nil, nil)
	return b, unknown, err
}

// WithDynamic returns a copy of b with dynamic configs applied: the
// cluster-wide defaults (IncrementalAlterConfigs on the broker resource
// "") and this broker's own values (resource = its node id). Dynamic
// values take precedence over static ones, per-broker over cluster-wide.
// A key that cannot be altered at that level is an error.
func (b *Broker) WithDynamic(clusterDefault, perBroker map[string]string) (*Broker, error) {
	for k, v := range clusterDefault {
		if err := ValidateDynamicBrokerConfig(k, v, false); err != nil {
			return nil, err
		}
	}
	for k, v := range perBroker {
		if err := ValidateDynamicBrokerConfig(k, v, true); err != nil {
			return nil, err
		}
	}
	return build(b.Raw, clusterDefault, perBroker)
}

// WithApplicableDynamic is WithDynamic for values already stored: each value that
// ValidateDynamicBrokerConfig refuses at its level (one written by an older version,
// say) is left out and returned in dropped, sorted by level then name, and the rest
// applied. err is WithDynamic's for the values kept.
func (b *Broker) WithApplicableDynamic(clusterDefault, perBroker map[string]string) (_ *Broker, dropped []error, err error) {
	keep := func(m map[string]string, perBroker bool) map[string]string {
		out := make(map[string]string, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := ValidateDynamicBrokerConfig(k, m[k], perBroker); err != nil {
				dropped = append(dropped, err)
				continue
			}
			out[k] = m[k]
		}
		return out
	}
	def, per := keep(clusterDefault, false), keep(perBroker, true)
	nb, err := b.WithDynamic(def, per)
	return nb, dropped, err
}

// ValidateDynamicBrokerConfig checks that name may be altered at run time
// at the given level (perBroker: for one broker; otherwise the cluster
// default) and that value is valid for it.
func ValidateDynamicBrokerConfig(name, value string, perBroker bool) error {
	if d, ok := listenerSSLDef(name); ok {
		return validateListenerOverride(d, name, value, perBroker)
	}
	d, ok := brokerDefIndex[name]
	if !ok {
		return &Error{Key: name, Unknown: true}
	}
	switch {
	case d.Dynamic == ReadOnly:
		return &Error{Key: name, Value: value, Reason: "cannot be updated dynamically", Level: ErrReadOnly}
	case d.Dynamic == PerBroker && !perBroker:
		return &Error{Key: name, Value: value, Reason: "can only be updated for a specific broker, not as a cluster default", Level: ErrPerBrokerOnly}
	}
	_, err := d.parseValue(value)
	return err
}

// lookup finds name's explicit value, highest precedence first.
func (b *Broker) lookup(name string) (string, ConfigSource, bool) {
	d := brokerDefIndex[name]
	if d != nil && d.Dynamic != ReadOnly {
		if v, ok := b.dynBroker[name]; ok {
			return v, SourceDynamicBrokerConfig, true
		}
		if d.Dynamic == ClusterWide {
			if v, ok := b.dynDefault[name]; ok {
				return v, SourceDynamicDefaultBrokerConfig, true
			}
		}
	}
	if v, ok := b.staticValue(name); ok {
		return v, SourceStaticBrokerConfig, true
	}
	return "", SourceDefaultConfig, false
}

// staticValue is name's static value: given in the properties, taken
// from its synonym (node.id and broker.id stand in for each other, as
// Kafka's KafkaConfig.populateSynonyms), or a single-node default.
func (b *Broker) staticValue(name string) (string, bool) {
	if v, ok := b.Raw[name]; ok {
		return v, true
	}
	switch name {
	case "node.id":
		if v, ok := b.Raw["broker.id"]; ok {
			return v, true
		}
	case "broker.id":
		return b.staticValue("node.id")
	}
	return b.devDefault(name)
}

// devDefault is the single-node value standing in for an unset key.
// log.dirs=./data applies only when log.dir is not given either, so a lone
// log.dir takes effect, controller.quorum.voters only when
// controller.quorum.bootstrap.servers is not given; the listeners follow an explicit process.roles,
// so a broker-only or controller-only node does not inherit the other
// role's listener.
func (b *Broker) devDefault(name string) (string, bool) {
	switch name {
	case "log.dirs":
		if _, ok := b.Raw["log.dir"]; ok {
			return "", false
		}
	case "controller.quorum.voters":
		// A dynamic quorum's node lists no voters.
		if _, ok := b.Raw["controller.quorum.bootstrap.servers"]; ok {
			return "", false
		}
	case "listeners":
		if roles, ok := b.Raw["process.roles"]; ok {
			r := splitList(roles)
			switch {
			case len(r) == 1 && r[0] == "broker":
				return "PLAINTEXT://127.0.0.1:9092", true
			case len(r) == 1 && r[0] == "controller":
				return "CONTROLLER://127.0.0.1:9093", true
			}
		}
	}
	v, ok := devDefaults[name]
	return v, ok
}

func build(static, dynDefault, dynBroker map[string]string) (*Broker, error) {
	// The maps are sized for every definition: growing them was a good part of a
	// build, which every node start and every dynamic config change pays.
	b := &Broker{
		Raw:        maps.Clone(static),
		dynDefault: maps.Clone(dynDefault),
		dynBroker:  maps.Clone(dynBroker),
		values:     make(map[string]string, len(brokerDefs)),
		isNull:     map[string]bool{},
		sources:    make(map[string]ConfigSource, len(brokerDefs)),
	}
	if b.Raw == nil {
		b.Raw = map[string]string{}
	}
	typed := make(map[string]any, len(brokerDefs))
	for i := range brokerDefs {
		d := &brokerDefs[i]
		raw, src, ok := b.lookup(d.Name)
		b.sources[d.Name] = src
		if !ok {
			if d.NullDefault {
				b.isNull[d.Name] = true
				typed[d.Name] = nil
				continue
			}
			if v, trimmed, ok := parsedDefault(i); ok {
				b.values[d.Name] = trimmed
				typed[d.Name] = v
				continue
			}
			raw = d.Default
		}
		v, err := d.parseValue(raw)
		if err != nil {
			return nil, err
		}
		b.values[d.Name] = strings.TrimSpace(raw)
		typed[d.Name] = v
	}
	if err := b.fill(typed); err != nil {
		return nil, err
	}
	if err := b.checkListenerOverrides(); err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// defaults are brokerDefs' defaults parsed once (parsedDefault).
var defaults struct {
	once sync.Once
	vals []defaultValue // by index in brokerDefs
}

type defaultValue struct {
	v       any
	trimmed string
	ok      bool
}

// parsedDefault is brokerDefs[i]'s default as parseValue makes it, and its trimmed
// text; ok is false for lists (a slice, which fill may keep: each build gets its own),
// null defaults, and a default that does not parse (build reports it as before).
// The values are immutable (booleans, numbers, strings), so builds share them.
func parsedDefault(i int) (any, string, bool) {
	defaults.once.Do(func() {
		defaults.vals = make([]defaultValue, len(brokerDefs))
		for i := range brokerDefs {
			d := &brokerDefs[i]
			if d.NullDefault || d.Type == TypeList {
				continue
			}
			if v, err := d.parseValue(d.Default); err == nil {
				defaults.vals[i] = defaultValue{v: v, trimmed: strings.TrimSpace(d.Default), ok: true}
			}
		}
	})
	dv := defaults.vals[i]
	return dv.v, dv.trimmed, dv.ok
}

// fill copies the typed values into the struct fields and derives the
// values that depend on several keys.
func (b *Broker) fill(v map[string]any) error {
	i64 := func(k string) int64 { return v[k].(int64) }
	i32 := func(k string) int32 { return int32(v[k].(int64)) }
	i16 := func(k string) int16 { return int16(v[k].(int64)) }
	bl := func(k string) bool { return v[k].(bool) }
	str := func(k string) string {
		s, _ := v[k].(string)
		return s
	}
	list := func(k string) []string { return v[k].([]string) }
	optLong := func(k string) (int64, bool) {
		x, ok := v[k].(int64)
		return x, ok
	}
	const hour, minute = 3_600_000, 60_000

	b.ProcessRoles = list("process.roles")
	b.NodeID = i32("node.id")
	voters, err := ParseVoters(list("controller.quorum.voters"))
	if err != nil { // already validated
		return invalid("controller.quorum.voters", b.values["controller.quorum.voters"], "%v", err)
	}
	b.ControllerQuorumVoters = voters
	b.ControllerQuorumBootstrapServers, _ = ParseBootstrapServers(list("controller.quorum.bootstrap.servers")) // already validated
	b.ControllerQuorumStandalone = bl(StandaloneKey)
	for _, n := range splitList(str("controller.listener.names")) {
		b.ControllerListenerNames = append(b.ControllerListenerNames, strings.ToUpper(n))
	}
	b.BrokerRack = str("broker.rack")
	b.HTTPListener = str(HTTPListenerKey)
	b.AsVersion = str(AsVersionKey)
	b.APIMaxVersions, _ = ParseAPIMaxVersions(list(APIMaxVersionsKey)) // already validated
	b.SegmentDescriptorsMax = i32(SegmentDescriptorsMaxKey)
	b.SecurityInterBrokerProtocol = str("security.inter.broker.protocol")

	if err := b.fillListeners(str("listeners"), str("advertised.listeners"), !b.isNull["advertised.listeners"], str("listener.security.protocol.map")); err != nil {
		return err
	}

	if b.isNull["log.dirs"] {
		b.LogDirs = splitList(str("log.dir"))
	} else {
		b.LogDirs = splitList(str("log.dirs"))
	}
	b.MetadataLogDir = str("metadata.log.dir")
	if b.MetadataLogDir == "" && len(b.LogDirs) > 0 {
		b.MetadataLogDir = b.LogDirs[0]
	}

	b.NumPartitions = i32("num.partitions")
	b.DefaultReplicationFactor = i16("default.replication.factor")
	b.AutoCreateTopicsEnable = bl("auto.create.topics.enable")
	b.DeleteTopicEnable = bl("delete.topic.enable")

	b.MessageMaxBytes = i32("message.max.bytes")
	b.SocketRequestMaxBytes = i32("socket.request.max.bytes")
	b.SocketSendBufferBytes = i32("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = i32("socket.receive.buffer.bytes")
	b.ConnectionsMaxIdleMs = i64("connections.max.idle.ms")
	if err := b.fillLimits(v); err != nil {
		return err
	}
	b.FetchMaxBytes = i32("fetch.max.bytes")
	b.QuotaWindowNum = i32("quota.window.num")
	b.QuotaWindowSizeSeconds = i32("quota.window.size.seconds")
	b.MaxIncrementalFetchSessionCacheSlots = i32("max.incremental.fetch.session.cache.slots")
	b.NumNetworkThreads = i32("num.network.threads")
	b.NumIOThreads = i32("num.io.threads")
	b.NumRecoveryThreadsPerDataDir = i32("num.recovery.threads.per.data.dir")

	b.LogSegmentBytes = i64("log.segment.bytes")
	if ms, ok := optLong("log.roll.ms"); ok {
		b.LogRollMs = ms
	} else {
		b.LogRollMs = i64("log.roll.hours") * hour
	}
	if ms, ok := optLong("log.roll.jitter.ms"); ok {
		b.LogRollJitterMs = ms
	} else {
		b.LogRollJitterMs = i64("log.roll.jitter.hours") * hour
	}
	if ms, ok := optLong("log.retention.ms"); ok {
		b.LogRetentionMs = ms
	} else if m, ok := optLong("log.retention.minutes"); ok {
		b.LogRetentionMs = m * minute
	} else {
		b.LogRetentionMs = i64("log.retention.hours") * hour
	}
	if b.LogRetentionMs < 0 {
		b.LogRetentionMs = -1
	}
	b.LogRetentionBytes = i64("log.retention.bytes")
	b.LogRetentionCheckIntervalMs = i64("log.retention.check.interval.ms")
	b.LogSegmentDeleteDelayMs = i64("log.segment.delete.delay.ms")
	b.LogIndexSizeMaxBytes = i64("log.index.size.max.bytes")
	b.LogIndexIntervalBytes = i64("log.index.interval.bytes")
	b.LogFlushIntervalMessages = i64("log.flush.interval.messages")
	b.LogFlushSchedulerIntervalMs = i64("log.flush.scheduler.interval.ms")
	if ms, ok := optLong("log.flush.interval.ms"); ok {
		b.LogFlushIntervalMs = ms
	} else {
		b.LogFlushIntervalMs = b.LogFlushSchedulerIntervalMs
	}
	b.LogFlushOffsetCheckpointIntervalMs = i64("log.flush.offset.checkpoint.interval.ms")
	b.LogFlushStartOffsetCheckpointIntervalMs = i64("log.flush.start.offset.checkpoint.interval.ms")
	b.LogMessageTimestampType = str("log.message.timestamp.type")
	b.LogMessageTimestampBeforeMaxMs = i64("log.message.timestamp.before.max.ms")
	b.LogMessageTimestampAfterMaxMs = i64("log.message.timestamp.after.max.ms")
	b.LogCleanupPolicy = list("log.cleanup.policy")
	b.LogCleanerEnable = bl("log.cleaner.enable")
	b.LogCleanerBackoffMs = i64("log.cleaner.backoff.ms")
	b.LogCleanerDeleteRetentionMs = i64("log.cleaner.delete.retention.ms")
	b.LogCleanerMinCompactionLagMs = i64("log.cleaner.min.compaction.lag.ms")
	b.LogCleanerMaxCompactionLagMs = i64("log.cleaner.max.compaction.lag.ms")
	b.LogCleanerMinCleanableRatio = v["log.cleaner.min.cleanable.ratio"].(float64)
	b.LogLocalRetentionMs = i64("log.local.retention.ms")
	b.LogLocalRetentionBytes = i64("log.local.retention.bytes")

	b.MinInsyncReplicas = i32("min.insync.replicas")
	b.UncleanLeaderElectionEnable = bl("unclean.leader.election.enable")
	b.CompressionType = str("compression.type")
	b.CompressionGzipLevel = i32("compression.gzip.level")
	b.CompressionLz4Level = i32("compression.lz4.level")
	b.CompressionZstdLevel = i32("compression.zstd.level")

	b.ReplicaLagTimeMaxMs = i64("replica.lag.time.max.ms")
	b.ReplicaFetchWaitMaxMs = i32("replica.fetch.wait.max.ms")
	b.ReplicaFetchMinBytes = i32("replica.fetch.min.bytes")
	b.ReplicaFetchMaxBytes = i32("replica.fetch.max.bytes")
	b.ReplicaFetchResponseMaxBytes = i32("replica.fetch.response.max.bytes")
	b.ReplicaFetchBackoffMs = i32("replica.fetch.backoff.ms")
	b.ReplicaSocketTimeoutMs = i32("replica.socket.timeout.ms")
	b.NumReplicaFetchers = i32("num.replica.fetchers")
	b.LeaderReplicationThrottledRate = i64("leader.replication.throttled.rate")
	b.FollowerReplicationThrottledRate = i64("follower.replication.throttled.rate")
	b.ReplicationQuotaWindowNum = i32("replication.quota.window.num")
	b.ReplicationQuotaWindowSizeSeconds = i32("replication.quota.window.size.seconds")
	b.ReplicaAlterLogDirsIoMaxBytesPerSecond = i64("replica.alter.log.dirs.io.max.bytes.per.second")
	b.AlterLogDirsReplicationQuotaWindowNum = i32("alter.log.dirs.replication.quota.window.num")
	b.AlterLogDirsReplicationQuotaWindowSizeSeconds = i32("alter.log.dirs.replication.quota.window.size.seconds")
	b.ReplicaHighWatermarkCheckpointIntervalMs = i64("replica.high.watermark.checkpoint.interval.ms")
	b.AutoLeaderRebalanceEnable = bl("auto.leader.rebalance.enable")
	b.LeaderImbalanceCheckIntervalSeconds = i64("leader.imbalance.check.interval.seconds")
	b.LeaderImbalancePerBrokerPercentage = i32("leader.imbalance.per.broker.percentage")

	b.BrokerHeartbeatIntervalMs = i32("broker.heartbeat.interval.ms")
	b.BrokerSessionTimeoutMs = i32("broker.session.timeout.ms")
	b.InitialBrokerRegistrationTimeoutMs = i32("initial.broker.registration.timeout.ms")

	b.OffsetsTopicNumPartitions = i32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = i16("offsets.topic.replication.factor")
	b.OffsetsTopicSegmentBytes = i32("offsets.topic.segment.bytes")
	b.OffsetsRetentionMinutes = i32("offsets.retention.minutes")
	b.OffsetsRetentionCheckIntervalMs = i64("offsets.retention.check.interval.ms")
	b.OffsetsCommitTimeoutMs = i32("offsets.commit.timeout.ms")
	b.OffsetMetadataMaxBytes = i32("offset.metadata.max.bytes")
	b.GroupInitialRebalanceDelayMs = i32("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeoutMs = i32("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeoutMs = i32("group.max.session.timeout.ms")
	b.GroupMaxSize = i32("group.max.size")
	b.ConsumerGroupSessionTimeoutMs = i32("group.consumer.session.timeout.ms")
	b.ConsumerGroupMinSessionTimeoutMs = i32("group.consumer.min.session.timeout.ms")
	b.ConsumerGroupMaxSessionTimeoutMs = i32("group.consumer.max.session.timeout.ms")
	b.ConsumerGroupHeartbeatIntervalMs = i32("group.consumer.heartbeat.interval.ms")
	b.ConsumerGroupMinHeartbeatIntervalMs = i32("group.consumer.min.heartbeat.interval.ms")
	b.ConsumerGroupMaxHeartbeatIntervalMs = i32("group.consumer.max.heartbeat.interval.ms")
	b.ConsumerGroupMaxSize = i32("group.consumer.max.size")
	b.ConsumerGroupAssignors = list("group.consumer.assignors")
	b.StreamsGroupSessionTimeoutMs = i32("group.streams.session.timeout.ms")
	b.StreamsGroupMinSessionTimeoutMs = i32("group.streams.min.session.timeout.ms")
	b.StreamsGroupMaxSessionTimeoutMs = i32("group.streams.max.session.timeout.ms")
	b.StreamsGroupHeartbeatIntervalMs = i32("group.streams.heartbeat.interval.ms")
	b.StreamsGroupMinHeartbeatIntervalMs = i32("group.streams.min.heartbeat.interval.ms")
	b.StreamsGroupMaxHeartbeatIntervalMs = i32("group.streams.max.heartbeat.interval.ms")
	b.StreamsGroupMaxSize = i32("group.streams.max.size")
	b.StreamsGroupNumStandbyReplicas = i32("group.streams.num.standby.replicas")
	b.StreamsGroupMaxStandbyReplicas = i32("group.streams.max.standby.replicas")
	b.ShareGroupSessionTimeoutMs = i32("group.share.session.timeout.ms")
	b.ShareGroupMinSessionTimeoutMs = i32("group.share.min.session.timeout.ms")
	b.ShareGroupMaxSessionTimeoutMs = i32("group.share.max.session.timeout.ms")
	b.ShareGroupHeartbeatIntervalMs = i32("group.share.heartbeat.interval.ms")
	b.ShareGroupMinHeartbeatIntervalMs = i32("group.share.min.heartbeat.interval.ms")
	b.ShareGroupMaxHeartbeatIntervalMs = i32("group.share.max.heartbeat.interval.ms")
	b.ShareGroupMaxSize = i32("group.share.max.size")
	b.ShareGroupRecordLockDurationMs = i32("group.share.record.lock.duration.ms")
	b.ShareGroupMinRecordLockDurationMs = i32("group.share.min.record.lock.duration.ms")
	b.ShareGroupMaxRecordLockDurationMs = i32("group.share.max.record.lock.duration.ms")
	b.ShareGroupDeliveryCountLimit = i32("group.share.delivery.count.limit")
	b.ShareGroupPartitionMaxRecordLocks = i32("group.share.partition.max.record.locks")
	b.ShareGroupMaxShareSessions = i32("group.share.max.share.sessions")
	b.ShareStateTopicNumPartitions = i32("share.coordinator.state.topic.num.partitions")
	b.ShareStateTopicReplicationFactor = i16("share.coordinator.state.topic.replication.factor")
	b.ShareStateTopicMinISR = i16("share.coordinator.state.topic.min.isr")
	b.ShareStateTopicSegmentBytes = i32("share.coordinator.state.topic.segment.bytes")

	b.TransactionStateLogNumPartitions = i32("transaction.state.log.num.partitions")
	b.TransactionStateLogReplicationFactor = i16("transaction.state.log.replication.factor")
	b.TransactionStateLogMinISR = i32("transaction.state.log.min.isr")
	b.TransactionStateLogSegmentBytes = i32("transaction.state.log.segment.bytes")
	b.TransactionalIDExpirationMs = i32("transactional.id.expiration.ms")
	b.TransactionMaxTimeoutMs = i32("transaction.max.timeout.ms")
	b.TransactionAbortTimedOutTransactionCleanupInterval = i32("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredTransactionCleanupInterval = i32("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.TransactionPartitionVerificationEnable = bl("transaction.partition.verification.enable")
	b.ProducerIDExpirationMs = i32("producer.id.expiration.ms")
	b.ProducerIDExpirationCheckIntervalMs = i32("producer.id.expiration.check.interval.ms")

	b.AuthorizerClassName = str("authorizer.class.name")
	for _, u := range strings.Split(str("super.users"), ";") {
		if u = strings.TrimSpace(u); u != "" {
			b.SuperUsers = append(b.SuperUsers, u)
		}
	}
	b.AllowEveryoneIfNoACLFound = bl("allow.everyone.if.no.acl.found")
	b.DelegationTokenSecretKey = str("delegation.token.secret.key")
	b.DelegationTokenMaxLifetimeMs = i64("delegation.token.max.lifetime.ms")
	b.DelegationTokenExpiryTimeMs = i64("delegation.token.expiry.time.ms")
	b.DelegationTokenExpiryCheckIntervalMs = i64("delegation.token.expiry.check.interval.ms")
	return nil
}

// fillListeners resolves listeners, advertised listeners and the
// effective security protocol map, as Kafka's KafkaConfig does: when the
// map is not set explicitly and no SSL/SASL listener is in use, every
// controller listener name maps to PLAINTEXT.
func (b *Broker) fillListeners(listeners, advertised string, hasAdvertised bool, protoMap string) error {
	pm, err := parseProtocolMap(protoMap)
	if err != nil {
		return invalid("listener.security.protocol.map", protoMap, "%v", err)
	}
	ls, err := ParseListeners(listeners)
	if err != nil {
		return invalid("listeners", listeners, "%v", err)
	}
	if _, explicit := b.lookupMapExplicit(); !explicit {
		secure := false
		for _, n := range b.ControllerListenerNames {
			secure = secure || isSslOrSasl(n)
		}
		for _, l := range ls {
			secure = secure || isSslOrSasl(l.Name)
		}
		if !secure {
			for _, n := range b.ControllerListenerNames {
				if _, ok := pm[n]; !ok {
					pm[n] = "PLAINTEXT"
				}
			}
		}
	}
	b.ListenerSecurityProtocolMap = pm
	resolve := func(key, val string, ls []Listener) error {
		for i := range ls {
			p, ok := pm[ls[i].Name]
			if !ok {
				return invalid(key, val, "no security protocol defined for listener %s in listener.security.protocol.map", ls[i].Name)
			}
			ls[i].SecurityProtocol = p
		}
		return nil
	}
	if err := resolve("listeners", listeners, ls); err != nil {
		return err
	}
	if err := checkDistinctPorts(ls); err != nil {
		return invalid("listeners", listeners, "%v", err)
	}
	b.Listeners = ls
	if hasAdvertised {
		als, err := ParseListeners(advertised)
		if err != nil {
			return invalid("advertised.listeners", advertised, "%v", err)
		}
		if err := resolve("advertised.listeners", advertised, als); err != nil {
			return err
		}
		b.AdvertisedListeners = als
	} else {
		b.AdvertisedListeners = slices.Clone(ls)
	}
	if n, ok := b.lookupNonNull("inter.broker.listener.name"); ok {
		if _, set := b.Raw["security.inter.broker.protocol"]; set {
			return invalid("inter.broker.listener.name", n, "only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
		}
		n = strings.ToUpper(strings.TrimSpace(n))
		if _, ok := pm[n]; !ok {
			return invalid("inter.broker.listener.name", n, "listener %s not found in listener.security.protocol.map", n)
		}
		b.InterBrokerListenerName = n
	} else {
		b.InterBrokerListenerName = b.SecurityInterBrokerProtocol
	}
	return nil
}

func isSslOrSasl(name string) bool {
	return name == "SSL" || name == "SASL_SSL" || name == "SASL_PLAINTEXT"
}

func (b *Broker) lookupMapExplicit() (string, bool) {
	v, src, ok := b.lookup("listener.security.protocol.map")
	return v, ok && src != SourceDefaultConfig
}

func (b *Broker) lookupNonNull(name string) (string, bool) {
	v, _, ok := b.lookup(name)
	return v, ok
}

// IsBroker reports whether process.roles contains broker.
func (b *Broker) IsBroker() bool { return slices.Contains(b.ProcessRoles, "broker") }

// IsController reports whether process.roles contains controller.
func (b *Broker) IsController() bool { return slices.Contains(b.ProcessRoles, "controller") }

// ControllerListeners are the entries of Listeners named in
// controller.listener.names (empty on a broker-only node).
func (b *Broker) ControllerListeners() []Listener {
	var out []Listener
	for _, l := range b.Listeners {
		if slices.Contains(b.ControllerListenerNames, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// BrokerListeners are the entries of Listeners that serve clients and
// other brokers (not controller listeners).
func (b *Broker) BrokerListeners() []Listener {
	var out []Listener
	for _, l := range b.Listeners {
		if !slices.Contains(b.ControllerListenerNames, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// AdvertisedBrokerListeners are the advertised listeners that are not
// controller listeners: what this broker registers with the controller.
func (b *Broker) AdvertisedBrokerListeners() []Listener {
	var out []Listener
	for _, l := range b.AdvertisedListeners {
		if !slices.Contains(b.ControllerListenerNames, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// InterBrokerListener is the advertised listener brokers reach this one on.
func (b *Broker) InterBrokerListener() (Listener, bool) {
	for _, l := range b.AdvertisedBrokerListeners() {
		if l.Name == b.InterBrokerListenerName {
			return l, true
		}
	}
	return Listener{}, false
}

// check performs the start-up cross-checks of Kafka's
// KafkaConfig.validateValues that apply to a KRaft node.
func (b *Broker) check() error {
	fail := func(key, format string, args ...any) error {
		return &Error{Key: key, Value: b.values[key], Reason: fmt.Sprintf(format, args...)}
	}
	roles := b.ProcessRoles
	if len(roles) == 0 {
		return fail("process.roles", "must contain broker, controller or both (gokafkad runs in KRaft mode only)")
	}
	for i, r := range roles {
		if slices.Contains(roles[:i], r) {
			return fail("process.roles", "duplicate role %s", r)
		}
	}
	if id, _ := typedBrokerID(b.values["broker.id"]); id != int64(b.NodeID) {
		return fail("broker.id", "node.id (%d) must be set to the same value as broker.id", b.NodeID)
	}
	if b.NodeID < 0 {
		return fail("node.id", "must be set to a non-negative id when process.roles is set")
	}
	dynamicQuorum := len(b.ControllerQuorumBootstrapServers) > 0
	switch {
	case dynamicQuorum && len(b.ControllerQuorumVoters) > 0:
		return fail("controller.quorum.bootstrap.servers", "cannot be set together with controller.quorum.voters in gokafkad: a quorum is either static (controller.quorum.voters) or dynamic (controller.quorum.bootstrap.servers)")
	case len(b.ControllerQuorumVoters) == 0 && !dynamicQuorum:
		return fail("controller.quorum.voters", "must list the controllers as id@host:port (or set controller.quorum.bootstrap.servers)")
	case b.ControllerQuorumStandalone && !dynamicQuorum:
		return fail(StandaloneKey, "needs controller.quorum.bootstrap.servers (a static quorum is controller.quorum.voters)")
	case b.ControllerQuorumStandalone && !b.IsController():
		return fail(StandaloneKey, "needs the controller role")
	}
	// A dynamic quorum's controllers are not listed: any controller may be a voter.
	inVoters := dynamicQuorum && b.IsController() || slices.ContainsFunc(b.ControllerQuorumVoters, func(v Voter) bool { return v.ID == b.NodeID })
	listenerNames := map[string]bool{}
	for _, l := range b.Listeners {
		listenerNames[l.Name] = true
	}
	if b.IsController() {
		if !inVoters {
			return fail("node.id", "a node with the controller role must be among controller.quorum.voters (%s)", b.values["controller.quorum.voters"])
		}
		if len(b.ControllerListeners()) == 0 {
			return fail("controller.listener.names", "must contain at least one listener name appearing in listeners when running the controller role")
		}
		for _, n := range b.ControllerListenerNames {
			if !listenerNames[n] {
				return fail("controller.listener.names", "%s does not appear in listeners; a controller must listen on every controller listener", n)
			}
		}
		if !b.IsBroker() && len(b.ControllerListeners()) != len(b.Listeners) {
			return fail("listeners", "must contain only controller listeners (controller.listener.names) when process.roles=controller")
		}
	} else {
		if inVoters {
			return fail("node.id", "a broker-only node must not be among controller.quorum.voters")
		}
		if len(b.ControllerListenerNames) == 0 {
			return fail("controller.listener.names", "must name the listener used to reach the controllers")
		}
		if len(b.ControllerListeners()) != 0 {
			return fail("controller.listener.names", "must not name a listener appearing in listeners when process.roles=broker")
		}
		for _, n := range b.ControllerListenerNames {
			if _, ok := b.ListenerSecurityProtocolMap[n]; !ok {
				return fail("controller.listener.names", "controller listener %s not found in listener.security.protocol.map", n)
			}
		}
	}
	if b.IsBroker() {
		adv := b.AdvertisedBrokerListeners()
		if len(adv) == 0 {
			return fail("listeners", "there must be at least one broker listener (perhaps all of them appear in controller.listener.names?)")
		}
		if _, ok := b.InterBrokerListener(); !ok {
			var names []string
			for _, l := range adv {
				names = append(names, l.Name)
			}
			return fail("inter.broker.listener.name", "must be a listener name defined in advertised.listeners (%s is not; valid: %s)",
				b.InterBrokerListenerName, strings.Join(names, ","))
		}
		for _, l := range adv {
			if !listenerNames[l.Name] {
				return fail("advertised.listeners", "listener names must be a subset of those in listeners; %s is not", l.Name)
			}
		}
	}
	for _, l := range b.AdvertisedListeners {
		if l.Host == "0.0.0.0" {
			return fail("advertised.listeners", "cannot use the non-routable meta-address 0.0.0.0; use a routable address")
		}
	}
	if len(b.LogDirs) == 0 {
		return fail("log.dirs", "at least one log directory must be given in log.dirs or log.dir")
	}
	if b.LogRollMs < 1 {
		return fail("log.roll.ms", "must be at least 1")
	}
	if b.LogRollJitterMs < 0 {
		return fail("log.roll.jitter.ms", "must be at least 0")
	}
	if b.LogRetentionMs == 0 {
		return fail(b.retentionKey(), "retention must be unlimited (-1) or at least 1 ms")
	}
	if b.ReplicaFetchWaitMaxMs > b.ReplicaSocketTimeoutMs {
		return fail("replica.fetch.wait.max.ms", "must not exceed replica.socket.timeout.ms (%d)", b.ReplicaSocketTimeoutMs)
	}
	if int64(b.ReplicaFetchWaitMaxMs) > b.ReplicaLagTimeMaxMs {
		return fail("replica.fetch.wait.max.ms", "must not exceed replica.lag.time.max.ms (%d), to prevent frequent ISR changes", b.ReplicaLagTimeMaxMs)
	}
	if b.LogCleanerMinCompactionLagMs > b.LogCleanerMaxCompactionLagMs {
		return fail("log.cleaner.min.compaction.lag.ms", "must not exceed log.cleaner.max.compaction.lag.ms (%d)", b.LogCleanerMaxCompactionLagMs)
	}
	if b.GroupMinSessionTimeoutMs > b.GroupMaxSessionTimeoutMs {
		return fail("group.min.session.timeout.ms", "must not exceed group.max.session.timeout.ms (%d)", b.GroupMaxSessionTimeoutMs)
	}
	if err := b.checkLimits(fail); err != nil {
		return err
	}
	if err := b.checkConsumerGroup(fail); err != nil {
		return err
	}
	if err := b.checkStreamsGroup(fail); err != nil {
		return err
	}
	return b.checkShareGroup(fail)
}

func typedBrokerID(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(s), 10, 32)
}

// retentionKey is the key LogRetentionMs was taken from.
func (b *Broker) retentionKey() string {
	for _, k := range []string{"log.retention.ms", "log.retention.minutes"} {
		if _, ok := b.lookupNonNull(k); ok {
			return k
		}
	}
	return "log.retention.hours"
}

// IsInvalid reports whether err is a config error (invalid value or
// unknown key): both are INVALID_CONFIG on the wire.
func IsInvalid(err error) bool {
	return errors.Is(err, ErrInvalidValue) || errors.Is(err, ErrUnknownConfig)
}

// IgnoredSet lists the explicitly set keys (static or dynamic) that
// gokafkad accepts but does not act on, sorted, so the caller can say so
// at start-up.
func (b *Broker) IgnoredSet() []string {
	var out []string
	for _, d := range BrokerDefs() {
		if !d.Ignored {
			continue
		}
		if _, src, ok := b.lookup(d.Name); ok && src != SourceDefaultConfig {
			out = append(out, d.Name)
		}
	}
	return out
}

// checkConsumerGroup is GroupCoordinatorConfig's cross-checks of the
// group.consumer.* keys.
func (b *Broker) checkConsumerGroup(fail func(key, format string, args ...any) error) error {
	return checkGroupTimeouts("group.consumer.", fail,
		b.ConsumerGroupHeartbeatIntervalMs, b.ConsumerGroupMinHeartbeatIntervalMs, b.ConsumerGroupMaxHeartbeatIntervalMs,
		b.ConsumerGroupSessionTimeoutMs, b.ConsumerGroupMinSessionTimeoutMs, b.ConsumerGroupMaxSessionTimeoutMs)
}

// checkStreamsGroup is GroupCoordinatorConfig's cross-checks of the
// group.streams.* keys.
func (b *Broker) checkStreamsGroup(fail func(key, format string, args ...any) error) error {
	if err := checkGroupTimeouts("group.streams.", fail,
		b.StreamsGroupHeartbeatIntervalMs, b.StreamsGroupMinHeartbeatIntervalMs, b.StreamsGroupMaxHeartbeatIntervalMs,
		b.StreamsGroupSessionTimeoutMs, b.StreamsGroupMinSessionTimeoutMs, b.StreamsGroupMaxSessionTimeoutMs); err != nil {
		return err
	}
	if b.StreamsGroupNumStandbyReplicas > b.StreamsGroupMaxStandbyReplicas {
		return fail("group.streams.num.standby.replicas", "must be less than or equal to group.streams.max.standby.replicas (%d)", b.StreamsGroupMaxStandbyReplicas)
	}
	return nil
}

// checkShareGroup checks the group.share.* bounds against each other, as Kafka's
// GroupCoordinatorConfig and ShareGroupConfig.validate.
func (b *Broker) checkShareGroup(fail func(key, format string, args ...any) error) error {
	if err := checkGroupTimeouts("group.share.", fail,
		b.ShareGroupHeartbeatIntervalMs, b.ShareGroupMinHeartbeatIntervalMs, b.ShareGroupMaxHeartbeatIntervalMs,
		b.ShareGroupSessionTimeoutMs, b.ShareGroupMinSessionTimeoutMs, b.ShareGroupMaxSessionTimeoutMs); err != nil {
		return err
	}
	switch {
	case b.ShareGroupRecordLockDurationMs < b.ShareGroupMinRecordLockDurationMs:
		return fail("group.share.record.lock.duration.ms", "must be greater than or equal to group.share.min.record.lock.duration.ms (%d)", b.ShareGroupMinRecordLockDurationMs)
	case b.ShareGroupRecordLockDurationMs > b.ShareGroupMaxRecordLockDurationMs:
		return fail("group.share.record.lock.duration.ms", "must be less than or equal to group.share.max.record.lock.duration.ms (%d)", b.ShareGroupMaxRecordLockDurationMs)
	}
	return nil
}

// checkGroupTimeouts is Kafka's cross-checks of one group type's heartbeat interval
// and session timeout against their bounds and each other (keys under prefix).
func checkGroupTimeouts(prefix string, fail func(key, format string, args ...any) error, hb, minHB, maxHB, session, minSession, maxSession int32) error {
	switch {
	case maxHB < minHB:
		return fail(prefix+"max.heartbeat.interval.ms", "must be greater than or equal to "+prefix+"min.heartbeat.interval.ms (%d)", minHB)
	case hb < minHB:
		return fail(prefix+"heartbeat.interval.ms", "must be greater than or equal to "+prefix+"min.heartbeat.interval.ms (%d)", minHB)
	case hb > maxHB:
		return fail(prefix+"heartbeat.interval.ms", "must be less than or equal to "+prefix+"max.heartbeat.interval.ms (%d)", maxHB)
	case maxSession < minSession:
		return fail(prefix+"max.session.timeout.ms", "must be greater than or equal to "+prefix+"min.session.timeout.ms (%d)", minSession)
	case session < minSession:
		return fail(prefix+"session.timeout.ms", "must be greater than or equal to "+prefix+"min.session.timeout.ms (%d)", minSession)
	case session > maxSession:
		return fail(prefix+"session.timeout.ms", "must be less than or equal to "+prefix+"max.session.timeout.ms (%d)", maxSession)
	case hb >= session:
		return fail(prefix+"heartbeat.interval.ms", "must be less than "+prefix+"session.timeout.ms (%d)", session)
	}
	return nil
}

// consumerGroupAssignors are the builtin server-side assignors by the names
// group.consumer.assignors accepts: short names and Kafka's class names.
var consumerGroupAssignors = map[string]string{
	"uniform": "uniform",
	"range":   "range",
	"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
	"org.apache.kafka.coordinator.group.assignor.RangeAssignor":   "range",
}

// ConsumerGroupAssignorName resolves an entry of group.consumer.assignors to
// its builtin name ("uniform" or "range").
func ConsumerGroupAssignorName(s string) string { return consumerGroupAssignors[s] }

func validAssignors(v any) string {
	names := v.([]string)
	if len(names) == 0 {
		return "must name at least one assignor"
	}
	seen := map[string]bool{}
	for _, n := range names {
		a, ok := consumerGroupAssignors[n]
		if !ok {
			return fmt.Sprintf("%q is not a builtin assignor (uniform, range) and custom assignors are not supported", n)
		}
		if seen[a] {
			return fmt.Sprintf("assignor %s is listed twice", a)
		}
		seen[a] = true
	}
	return ""
}
