package config

import (
	"sort"
	"strconv"
)

// Kafka's defaults that several keys share.
const (
	maxLong = "9223372036854775807"
	maxInt  = "2147483647"

	// defaultMaxMessageBytes is 1 MiB plus the 12-byte log overhead
	// (offset + size), as Kafka's LogConfig.DEFAULT_MAX_MESSAGE_BYTES.
	defaultMaxMessageBytes = "1048588"

	// defaultListenerSecurityProtocolMap is Kafka's default for
	// listener.security.protocol.map: each security protocol's own name.
	// defaultQueuedMaxRequestBytes is 256 MiB. Kafka's default is -1 (no limit);
	// gokafkad bounds request memory by default: 256 MiB holds two or more frames
	// of the largest size socket.request.max.bytes allows by default (100 MiB), so
	// one large request never starves the rest, and stays a small part of a
	// broker's memory. Frames are charged as their bytes arrive.
	defaultQueuedMaxRequestBytes = "268435456"

	defaultListenerSecurityProtocolMap = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)

// securityProtocols are Kafka's SecurityProtocol names.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// compressionTypes are Kafka's BrokerCompressionType names, in its order.
var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// Compression level ranges, as Kafka's CompressionType level validators.
var (
	gzipLevel = custom("[1,...,9] or -1", func(v any) string {
		n := v.(int64)
		if n == -1 || (n >= 1 && n <= 9) {
			return ""
		}
		return "must be -1 or between 1 and 9"
	})
	lz4Level  = between(1, 17)
	zstdLevel = between(-131072, 22)
)

// brokerDefs are the broker configs gokafkad honours, with Kafka 4.0's
// names, types, defaults, validators and importance (ServerConfigs,
// ServerLogConfigs, SocketServerConfigs, ReplicationConfigs, KRaftConfigs,
// QuorumConfig, CleanerConfig, GroupCoordinatorConfig, TransactionLogConfig,
// TransactionStateManagerConfig). Dynamic follows Kafka's DynamicBrokerConfig
// where gokafkad applies the key at run time: the log configs that are a topic
// config's primary synonym (the topics' defaults, server/dynamic_config.go), the
// replication throttles, transaction.partition.verification.enable and the
// request thread pools (accepted and unused, as statically) are cluster-wide, the TLS
// stores per-broker. Keys Kafka updates dynamically but gokafkad reads only at
// start-up (listeners, advertised.listeners, listener.security.protocol.map,
// num.replica.fetchers, num.recovery.threads.per.data.dir, producer.id.expiration.ms)
// are read-only, so that
// AlterConfigs refuses them ("Cannot update these configs dynamically") rather
// than store a value nothing applies; everything else is read-only as in Kafka.
var brokerDefs = append([]Def{
	// KRaft, node identity, listeners.
	{Name: "process.roles", Type: TypeList, Default: "", Importance: High, Valid: oneOf("broker", "controller"),
		Doc: "The roles this node plays: broker, controller, or both (combined mode)."},
	{Name: "node.id", Type: TypeInt, Default: "-1", Importance: High,
		Doc: "The node's id, unique in the cluster; a controller's id must be among controller.quorum.voters."},
	{Name: "broker.id", Type: TypeInt, Default: "-1", Importance: High,
		Doc: "Older name of node.id; either may be set, and if both are they must be equal."},
	{Name: "controller.quorum.voters", Type: TypeList, Default: "", Importance: High, Valid: custom("[id@host:port, ...]", validVoters),
		Doc: "The controller quorum as a comma-separated list of id@host:port: a static quorum (kraft.version 0). Exclusive with controller.quorum.bootstrap.servers."},
	{Name: "controller.quorum.bootstrap.servers", Type: TypeList, Default: "", Importance: High, Valid: custom("[host:port, ...]", validBootstrapServers),
		Doc: "Controller endpoints (host:port, comma-separated) to reach a dynamic quorum (KIP-853, kraft.version 1), whose voters change with kafka-metadata-quorum add-controller / remove-controller. A new controller starts as an observer until added, unless gokafkad.controller.quorum.standalone is set."},
	{Name: StandaloneKey, Type: TypeBoolean, Default: "false", Importance: Medium,
		Doc: "gokafkad only, with controller.quorum.bootstrap.servers: a controller with no metadata log on disk starts a new quorum with itself as its only voter (what Kafka's kafka-storage format --standalone writes). Ignored once the metadata log exists."},
	{Name: "controller.listener.names", Type: TypeString, NullDefault: true, Importance: High,
		Doc: "Comma-separated names of the listeners the controller serves; a broker uses the first to reach the controllers."},
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://:9092", Importance: High, Valid: custom("[NAME://host:port, ...]", validListeners),
		Doc: "Comma-separated NAME://host:port addresses to listen on; an empty host binds the default interface, 0.0.0.0 all of them."},
	{Name: "advertised.listeners", Type: TypeString, NullDefault: true, Importance: High, Valid: custom("[NAME://host:port, ...]", validListeners),
		Doc: "Addresses published to clients and other nodes when they differ from listeners; unset means the listeners themselves."},
	{Name: "listener.security.protocol.map", Type: TypeString, Default: defaultListenerSecurityProtocolMap, Importance: Low, Valid: custom("[NAME:PROTOCOL, ...]", validProtocolMap),
		Doc: "Maps each listener name to its security protocol, as NAME:PROTOCOL pairs."},
	{Name: "inter.broker.listener.name", Type: TypeString, NullDefault: true, Importance: Medium,
		Doc: "The listener brokers use to reach each other; unset means the one named after security.inter.broker.protocol."},
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT", Importance: Medium, Valid: oneOf(securityProtocols...),
		Doc: "The security protocol between brokers when inter.broker.listener.name is unset; do not set both."},
	{Name: "broker.rack", Type: TypeString, NullDefault: true, Importance: Medium,
		Doc: "The rack this broker sits in, used for rack-aware replica placement."},
	// gokafkad's own (Kafka has no such key): the status page and Prometheus metrics.
	{Name: HTTPListenerKey, Type: TypeString, Default: "", Importance: Low, Valid: custom("host:port", validHTTPListener),
		Doc: "gokafkad only: host:port of an HTTP listener serving the status page (/), its JSON (/v1/status) and Prometheus metrics (/metrics); empty (the default) serves none. An empty host binds every interface, port 0 a free port (logged)."},
	// gokafkad's own: version pretending (asversion.go).
	{Name: AsVersionKey, Type: TypeString, Default: "", Importance: Low, Valid: custom(asVersionValues(), validAsVersion),
		Doc: "gokafkad only: the Apache Kafka release (major.minor: 2.8, 3.0 to 3.9, 4.0 to 4.4) the client listeners pretend to be: ApiVersions lists, and requests may use, only the keys and versions that release's broker served (from Kafka's message definitions) that gokafkad also serves, and its features; a request at another version is refused as Kafka refuses it. Empty (the default) is gokafkad itself, as Kafka 4.4."},
	{Name: APIMaxVersionsKey, Type: TypeList, Default: "", Importance: Low, Valid: custom("[Key:max, ...]", validAPIMaxVersions),
		Doc: "gokafkad only: per-key caps on the client listeners' versions, applied after gokafkad.as.version: comma-separated Key:max pairs with the API's name (Produce, Fetch, any case) or number, max -1 for the key not to be served at all."},

	// Log directories.
	{Name: "log.dirs", Type: TypeString, NullDefault: true, Importance: High,
		Doc: "Comma-separated directories holding partition data; unset means log.dir."},
	{Name: "log.dir", Type: TypeString, Default: "/tmp/kafka-logs", Importance: High,
		Doc: "The single data directory used when log.dirs is unset."},
	{Name: "cordoned.log.dirs", Type: TypeList, Default: "", Importance: Medium, Valid: custom("[]", validCordonedLogDirs), Dynamic: PerBroker,
		Doc: "Log directories that take no new partitions (KIP-1066); gokafkad cannot cordon a directory, so only the empty list is accepted."},
	{Name: "metadata.log.dir", Type: TypeString, NullDefault: true, Importance: High,
		Doc: "Where the cluster metadata log lives; unset means the first data directory."},
	// gokafkad's own (Kafka keeps every segment's descriptor open).
	{Name: SegmentDescriptorsMaxKey, Type: TypeInt, Default: "0", Importance: Low, Valid: atLeast(0),
		Doc: "gokafkad only: how many segment .log descriptors (active segments' included) the broker keeps open; beyond it the least recently used are closed and reopened on the next append or read, so idle partitions cost no descriptor. 0 (the default) means half the process's open-file limit (ulimit -n), at least 64."},

	// Topic creation.
	{Name: "num.partitions", Type: TypeInt, Default: "1", Importance: Medium, Valid: atLeast(1),
		Doc: "Partitions given to a topic created without a count (auto-created or -1)."},
	{Name: "default.replication.factor", Type: TypeInt, Default: "1", Importance: Medium, Valid: between(1, 32767),
		Doc: "Replication factor given to a topic created without one (auto-created or -1)."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Whether a Metadata request for an unknown topic creates it."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Whether DeleteTopics is allowed."},

	// Requests and sockets.
	{Name: "message.max.bytes", Type: TypeInt, Default: defaultMaxMessageBytes, Importance: High, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Largest record batch the broker accepts, after compression; topics override it with max.message.bytes."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", Importance: High, Valid: atLeast(1),
		Doc: "Largest request frame accepted; a bigger size prefix closes the connection before anything is allocated."},
	{Name: "socket.send.buffer.bytes", Type: TypeInt, Default: "102400", Importance: High,
		Doc: "SO_SNDBUF for client sockets; -1 keeps the OS default."},
	{Name: "socket.receive.buffer.bytes", Type: TypeInt, Default: "102400", Importance: High,
		Doc: "SO_RCVBUF for client sockets; -1 keeps the OS default."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", Importance: Medium,
		Doc: "A connection that sends nothing for this long while none of its requests is in flight is closed, and so is one whose request frame is not complete this long after its first byte, or whose client does not read a response for this long; -1 never closes them."},
	{Name: "queued.max.request.bytes", Type: TypeLong, Default: defaultQueuedMaxRequestBytes, Importance: Medium,
		Doc: "Bytes of request frames the broker holds at once, being read or handled, on all connections; when spent, sockets are not read until bytes are freed. -1 means no limit (Kafka's default; gokafkad's is 256 MiB)."},
	{Name: "queued.max.requests", Type: TypeInt, Default: "500", Importance: High, Valid: atLeast(1),
		Doc: "Requests the broker handles at once on its client listener; a connection with a request read waits for a slot. Followers' fetches, the controller listener and requests parked in the purgatory do not count."},
	{Name: "max.connections", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(0),
		Doc: "Connections the broker accepts at once; further ones wait to be accepted. Also settable per listener as listener.name.<listener>.max.connections. The inter-broker listener is exempt when the broker serves several listeners."},
	{Name: "max.connections.per.ip", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(0),
		Doc: "Connections accepted from one IP address at once; a connection over the limit is closed as soon as it is accepted. May be 0 only when max.connections.per.ip.overrides is set."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "", Importance: Medium, Valid: custom("[host or ip:count, ...]", validIPOverrides),
		Doc: "Per-address exceptions to max.connections.per.ip, as a comma-separated list of host:count or ip:count (host names are resolved at start-up)."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(0),
		Doc: "New connections accepted per second; faster ones are delayed (by at most a second each). Also settable per listener as listener.name.<listener>.max.connection.creation.rate; the inter-broker listener is exempt from the broker-wide rate when the broker serves several listeners."},
	{Name: "fetch.max.bytes", Type: TypeInt, Default: "57671680", Importance: Medium, Valid: atLeast(1024),
		Doc: "Upper bound on the bytes a consumer Fetch response carries, whatever the request asks."},
	{Name: "quota.window.num", Type: TypeInt, Default: "11", Importance: Low, Valid: atLeast(1),
		Doc: "Samples a client quota's rate is measured over (producer_byte_rate, consumer_byte_rate, request_percentage)."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", Importance: Low, Valid: atLeast(1),
		Doc: "Time span of each client quota sample."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", Importance: Medium, Valid: atLeast(0),
		Doc: "How many incremental fetch sessions the broker keeps. When full, a new session evicts one as Kafka does: the least recently used if unused for 2 minutes, else the least valuable evictable one if the new one is worth more (a follower's outranks a consumer's, then more partitions outrank fewer; a consumer's session under 2 minutes old is evictable only by a follower's, a follower's only once over 2 minutes old); failing that the fetch is served without a session."},
	{Name: "num.network.threads", Type: TypeInt, Default: "3", Importance: High, Valid: atLeast(1), Dynamic: ClusterWide, Ignored: true,
		Doc: "Kafka's network thread count; accepted and reported, unused (gokafkad runs two goroutines per connection)."},
	{Name: "num.io.threads", Type: TypeInt, Default: "8", Importance: High, Valid: atLeast(1), Dynamic: ClusterWide, Ignored: true,
		Doc: "Kafka's request handler thread count; accepted and reported, unused (no request thread pool)."},
	{Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "2", Importance: High, Valid: atLeast(1),
		Doc: "How many logs of the log dir are loaded at once at start-up (after a kill -9 each is recovered: CRC scan from its recovery point, torn tail cut, indexes rebuilt)."},

	// Log segments, retention, flushing.
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", Importance: High, Valid: atLeast(1048576), Dynamic: ClusterWide,
		Doc: "Size at which a segment is rolled."},
	{Name: "log.roll.ms", Type: TypeLong, NullDefault: true, Importance: High, Dynamic: ClusterWide,
		Doc: "Age at which a segment is rolled even if not full; unset means log.roll.hours."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Importance: High, Valid: atLeast(1),
		Doc: "Segment roll age in hours, used when log.roll.ms is unset."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, NullDefault: true, Importance: High, Dynamic: ClusterWide,
		Doc: "Largest random amount subtracted from the roll age; unset means log.roll.jitter.hours."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", Importance: High, Valid: atLeast(0),
		Doc: "Roll jitter in hours, used when log.roll.jitter.ms is unset."},
	{Name: "log.retention.ms", Type: TypeLong, NullDefault: true, Importance: High, Dynamic: ClusterWide,
		Doc: "How long segments are kept before deletion; -1 keeps them forever; unset means log.retention.minutes."},
	{Name: "log.retention.minutes", Type: TypeInt, NullDefault: true, Importance: High,
		Doc: "Retention in minutes, used when log.retention.ms is unset; unset means log.retention.hours."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", Importance: High,
		Doc: "Retention in hours, used when neither log.retention.ms nor log.retention.minutes is set."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1", Importance: High, Dynamic: ClusterWide,
		Doc: "Largest size a partition's log may reach before old segments are deleted; -1 means no limit."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", Importance: Medium, Valid: atLeast(1),
		Doc: "How often logs are checked for segments to delete."},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", Importance: High, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "How long a segment marked .deleted stays on disk before it is removed."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", Importance: Medium, Valid: atLeast(4), Dynamic: ClusterWide,
		Doc: "Preallocated size of each segment's offset and time index."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Bytes appended between two offset index entries."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: maxLong, Importance: High, Valid: atLeast(1), Dynamic: ClusterWide,
		Doc: "Records appended to a partition before it is fsynced; the default leaves durability to replication."},
	{Name: "log.flush.interval.ms", Type: TypeLong, NullDefault: true, Importance: High, Dynamic: ClusterWide,
		Doc: "Longest time appended data stays unsynced; unset means log.flush.scheduler.interval.ms."},
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxLong, Importance: High,
		Doc: "How often logs are checked for a time-based flush."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", Importance: High, Valid: atLeast(0),
		Doc: "How often the recovery-point checkpoint file is rewritten."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", Importance: High, Valid: atLeast(0),
		Doc: "How often the log-start-offset checkpoint file is rewritten."},
	{Name: "log.preallocate", Type: TypeBoolean, Default: "false", Importance: Medium, Valid: custom("false (gokafkad does not preallocate segments)", validPreallocate), Dynamic: ClusterWide,
		Doc: "Whether new segment files are preallocated to their full size; gokafkad grows segments as it writes them, so only false is accepted."},
	{Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", Importance: Medium, Valid: oneOf("CreateTime", "LogAppendTime"), Dynamic: ClusterWide,
		Doc: "Whether record timestamps are the producer's (CreateTime) or the broker's append time (LogAppendTime)."},
	{Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "With CreateTime, how far a record's timestamp may lie in the past before the batch is rejected."},
	{Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "With CreateTime, how far a record's timestamp may lie in the future before the batch is rejected."},
	{Name: "log.message.downconversion.enable", Type: TypeBoolean, Default: "true", Importance: Low, Dynamic: ClusterWide, Ignored: true,
		Doc: "Deprecated no-op since Kafka 4.0 (there is no down-conversion); accepted and reported."},
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", Importance: Medium, Valid: oneOf("compact", "delete"), Dynamic: ClusterWide,
		Doc: "What happens to old segments: delete, compact, or both."},
	{Name: "log.cleaner.enable", Type: TypeBoolean, Default: "true", Importance: Medium,
		Doc: "Whether the compactor runs (needed by compacted topics, including the internal ones)."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", Importance: Medium, Valid: atLeast(0),
		Doc: "How long the cleaner sleeps between looks for logs to compact."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "How long tombstones survive in compacted logs."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Youngest a record may be and still be compacted."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(1), Dynamic: ClusterWide,
		Doc: "Oldest an uncompacted record may get before its log is compacted regardless of the dirty ratio."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", Importance: Medium, Valid: between(0, 1), Dynamic: ClusterWide,
		Doc: "Share of a log that must be dirty before it is compacted."},
	{Name: "log.local.retention.ms", Type: TypeLong, Default: "-2", Importance: Medium, Valid: atLeast(-2), Dynamic: ClusterWide,
		Doc: "Tiered storage: local retention time; -2 means log.retention.ms (gokafkad has no tiered storage)."},
	{Name: "log.local.retention.bytes", Type: TypeLong, Default: "-2", Importance: Medium, Valid: atLeast(-2), Dynamic: ClusterWide,
		Doc: "Tiered storage: local retention size; -2 means log.retention.bytes (gokafkad has no tiered storage)."},

	// Durability and compression.
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Importance: High, Valid: atLeast(1), Dynamic: ClusterWide,
		Doc: "Fewest in-sync replicas an acks=all produce needs; fewer gets NOT_ENOUGH_REPLICAS."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Importance: High, Dynamic: ClusterWide,
		Doc: "Whether a replica outside the ISR may become leader as a last resort, losing data."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Importance: High, Valid: oneOf(compressionTypes...), Dynamic: ClusterWide,
		Doc: "Codec topics store batches with (their compression.type default): a codec name or uncompressed, and a batch sent otherwise is recompressed by the leader; producer keeps the producer's."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Importance: Medium, Valid: gzipLevel, Dynamic: ClusterWide,
		Doc: "gzip level when the broker recompresses with gzip; -1 is level 6, as java.util.zip."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Importance: Medium, Valid: lz4Level, Dynamic: ClusterWide,
		Doc: "lz4 level when the broker recompresses with lz4: 9 the fast compressor, as Kafka; others high compression (pierrec/lz4's levels 1-8, 10-17 its strongest)."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Importance: Medium, Valid: zstdLevel, Dynamic: ClusterWide,
		Doc: "zstd level when the broker recompresses with zstd, on klauspost/compress's four speeds: below 3, 3-5, 6-9, 10 and up."},

	// Replication.
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", Importance: High,
		Doc: "A follower not caught up to the leader's end within this long is removed from the ISR."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", Importance: High,
		Doc: "Longest a follower's fetch waits at the leader for data; at most replica.lag.time.max.ms."},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Default: "1", Importance: High,
		Doc: "Bytes a follower's fetch waits for before the leader answers."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", Importance: Medium, Valid: atLeast(0),
		Doc: "Bytes a follower asks for per partition (a larger first batch is still returned)."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", Importance: Medium, Valid: atLeast(0),
		Doc: "Bytes a follower asks for in one whole fetch response."},
	{Name: "replica.fetch.backoff.ms", Type: TypeInt, Default: "1000", Importance: Medium, Valid: atLeast(0),
		Doc: "Pause after a failed follower fetch."},
	{Name: "replica.socket.timeout.ms", Type: TypeInt, Default: "30000", Importance: High,
		Doc: "Network timeout of follower fetches; at least replica.fetch.wait.max.ms."},
	{Name: "num.replica.fetchers", Type: TypeInt, Default: "1", Importance: High,
		Doc: "Fetcher goroutines per source broker."},
	// Replication throttles (Kafka's QuotaConfig, ReplicationQuotaManager), used by
	// kafka-reassign-partitions --throttle.
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Upper bound (bytes/sec) on what this broker as leader sends to out-of-sync followers of the replicas its topics list in leader.replication.throttled.replicas."},
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Upper bound (bytes/sec) on what this broker as an out-of-sync follower fetches for the replicas its topics list in follower.replication.throttled.replicas."},
	{Name: "replication.quota.window.num", Type: TypeInt, Default: "11", Importance: Low, Valid: atLeast(1),
		Doc: "Number of samples the replication throttle rates are measured over."},
	{Name: "replication.quota.window.size.seconds", Type: TypeInt, Default: "1", Importance: Low, Valid: atLeast(1),
		Doc: "Time span of each replication throttle sample."},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: TypeLong, Default: maxLong, Importance: Medium, Valid: atLeast(0), Dynamic: ClusterWide,
		Doc: "Upper bound (bytes/sec) on what moving replicas between this broker's log dirs (AlterReplicaLogDirs) copies, all moves together."},
	{Name: "alter.log.dirs.replication.quota.window.num", Type: TypeInt, Default: "11", Importance: Low, Valid: atLeast(1),
		Doc: "Number of samples the log dir move rate is measured over."},
	{Name: "alter.log.dirs.replication.quota.window.size.seconds", Type: TypeInt, Default: "1", Importance: Low, Valid: atLeast(1),
		Doc: "Time span of each log dir move rate sample."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000", Importance: High,
		Doc: "How often high watermarks are written to replication-offset-checkpoint."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Whether the controller moves leadership back to preferred replicas."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", Importance: High, Valid: atLeast(1),
		Doc: "How often the controller checks leader balance."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", Importance: High,
		Doc: "Share of non-preferred leaders on a broker that triggers a rebalance."},

	// Broker lifecycle (KRaft).
	{Name: "broker.heartbeat.interval.ms", Type: TypeInt, Default: "2000", Importance: Medium,
		Doc: "How often a broker heartbeats to the controller."},
	{Name: "broker.session.timeout.ms", Type: TypeInt, Default: "9000", Importance: Medium,
		Doc: "A broker without a heartbeat for this long is fenced by the controller."},
	{Name: "initial.broker.registration.timeout.ms", Type: TypeInt, Default: "60000", Importance: Medium,
		Doc: "How long a starting broker waits for its registration to be accepted."},

	// Group coordinator.
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", Importance: High, Valid: atLeast(1),
		Doc: "Partitions of __consumer_offsets; fixed once the topic exists."},
	{Name: "offsets.topic.replication.factor", Type: TypeShort, Default: "3", Importance: High, Valid: atLeast(1),
		Doc: "Replication factor of __consumer_offsets; its creation fails until that many brokers are up."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", Importance: High, Valid: atLeast(1),
		Doc: "Segment size of __consumer_offsets."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Importance: High, Valid: atLeast(1),
		Doc: "How long committed offsets of an empty group are kept."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", Importance: High, Valid: atLeast(1),
		Doc: "How often expired offsets are looked for."},
	{Name: "offsets.commit.timeout.ms", Type: TypeInt, Default: "5000", Importance: High, Valid: atLeast(1),
		Doc: "How long an offset commit waits for __consumer_offsets replication."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", Importance: High,
		Doc: "Largest metadata string stored with a committed offset."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", Importance: Medium,
		Doc: "How long the first rebalance of an empty classic group waits for more members."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", Importance: Medium,
		Doc: "Smallest session timeout a classic group member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", Importance: Medium,
		Doc: "Largest session timeout a classic group member may ask for."},
	{Name: "group.max.size", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(1),
		Doc: "Most members a classic group may have."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "How long a consumer group (KIP-848) member may go without a heartbeat before it is fenced."},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.consumer.session.timeout.ms."},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Default: "60000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.consumer.session.timeout.ms."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "How often consumer group members are told to heartbeat."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.consumer.heartbeat.interval.ms."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.consumer.heartbeat.interval.ms."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(1),
		Doc: "Most members a consumer group may have."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", Importance: Medium, Valid: custom("[uniform, range]", validAssignors),
		Doc: "The server-side assignors, builtin names (uniform, range) or their Kafka class names; the first is used when a member names none."},

	// Streams groups (KIP-1071), as Kafka's GroupCoordinatorConfig.
	{Name: "group.streams.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "How long a streams group member may go without a heartbeat before it is fenced."},
	{Name: "group.streams.min.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.streams.session.timeout.ms."},
	{Name: "group.streams.max.session.timeout.ms", Type: TypeInt, Default: "60000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.streams.session.timeout.ms."},
	{Name: "group.streams.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "How often streams group members are told to heartbeat."},
	{Name: "group.streams.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.streams.heartbeat.interval.ms."},
	{Name: "group.streams.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.streams.heartbeat.interval.ms."},
	{Name: "group.streams.max.size", Type: TypeInt, Default: maxInt, Importance: Medium, Valid: atLeast(1),
		Doc: "Most members a streams group may have."},
	{Name: "group.streams.num.standby.replicas", Type: TypeInt, Default: "0", Importance: Medium, Valid: atLeast(0),
		Doc: "How many standby copies of each task the streams task assignor places (on other processes than the active)."},
	{Name: "group.streams.max.standby.replicas", Type: TypeInt, Default: "2", Importance: Medium, Valid: atLeast(0),
		Doc: "Upper bound of group.streams.num.standby.replicas."},

	// Share groups (KIP-932), as Kafka's ShareGroupConfig and GroupCoordinatorConfig.
	{Name: "group.share.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "How long a share group member may go without a heartbeat before it is fenced."},
	{Name: "group.share.min.session.timeout.ms", Type: TypeInt, Default: "45000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.share.session.timeout.ms."},
	{Name: "group.share.max.session.timeout.ms", Type: TypeInt, Default: "60000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.share.session.timeout.ms."},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "How often share group members are told to heartbeat."},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Importance: Medium, Valid: atLeast(1),
		Doc: "Lower bound of group.share.heartbeat.interval.ms."},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", Importance: Medium, Valid: atLeast(1),
		Doc: "Upper bound of group.share.heartbeat.interval.ms."},
	{Name: "group.share.max.size", Type: TypeInt, Default: "200", Importance: Medium, Valid: between(1, 1000),
		Doc: "Most members a share group may have."},
	{Name: "group.share.record.lock.duration.ms", Type: TypeInt, Default: "30000", Importance: Medium, Valid: between(1000, 3600000),
		Doc: "How long a record a share consumer acquired stays locked to it before it is released."},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Default: "15000", Importance: Medium, Valid: between(1000, 30000),
		Doc: "Lower bound of a share group's share.record.lock.duration.ms."},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Default: "60000", Importance: Medium, Valid: between(30000, 3600000),
		Doc: "Upper bound of a share group's share.record.lock.duration.ms."},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", Importance: Medium, Valid: between(2, 10),
		Doc: "How often a record is delivered to a share group before it is archived instead of delivered again."},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", Importance: Medium, Valid: between(100, 10000),
		Doc: "Most records of one share partition in flight (acquired, or released and not yet acquired again) at once."},
	{Name: "group.share.max.share.sessions", Type: TypeInt, Default: "2000", Importance: Medium, Valid: atLeast(1),
		Doc: "Most share sessions (ShareFetch) a broker keeps."},
	{Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Default: "50", Importance: High, Valid: atLeast(1),
		Doc: "Partitions of __share_group_state, where the share coordinator keeps share-partition state; fixed once the topic exists."},
	{Name: "share.coordinator.state.topic.replication.factor", Type: TypeShort, Default: "3", Importance: High, Valid: atLeast(1),
		Doc: "Replication factor of __share_group_state; its creation fails until that many brokers are up."},
	{Name: "share.coordinator.state.topic.min.isr", Type: TypeShort, Default: "2", Importance: High, Valid: atLeast(1),
		Doc: "min.insync.replicas of __share_group_state."},
	{Name: "share.coordinator.state.topic.segment.bytes", Type: TypeInt, Default: "104857600", Importance: High, Valid: atLeast(1),
		Doc: "Segment size of __share_group_state."},

	// Transactions and idempotence.
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", Importance: High, Valid: atLeast(1),
		Doc: "Partitions of __transaction_state; fixed once the topic exists."},
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", Importance: High, Valid: atLeast(1),
		Doc: "Replication factor of __transaction_state; its creation fails until that many brokers are up."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", Importance: High, Valid: atLeast(1),
		Doc: "min.insync.replicas of __transaction_state."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", Importance: High, Valid: atLeast(1),
		Doc: "Segment size of __transaction_state."},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", Importance: High, Valid: atLeast(1),
		Doc: "A transactional id with no transaction activity for this long is forgotten."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", Importance: High, Valid: atLeast(1),
		Doc: "Largest transaction timeout a producer may ask for."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", Importance: Low, Valid: atLeast(1),
		Doc: "How often timed-out transactions are looked for and aborted."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", Importance: Low, Valid: atLeast(1),
		Doc: "How often expired transactional ids are looked for."},
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true", Importance: Low, Dynamic: ClusterWide,
		Doc: "Whether a transactional produce is checked against the coordinator's partition set first."},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Importance: Low, Valid: atLeast(1),
		Doc: "A producer id with no writes to a partition for this long is dropped from its producer state."},
	{Name: "producer.id.expiration.check.interval.ms", Type: TypeInt, Default: "600000", Importance: Low, Valid: atLeast(1),
		Doc: "How often expired producer ids are looked for."},

	// Authorization (Kafka's StandardAuthorizer and its two keys).
	{Name: "authorizer.class.name", Type: TypeString, Default: "", Importance: Low, Valid: oneOf("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		Doc: "Empty: no authorization. org.apache.kafka.metadata.authorizer.StandardAuthorizer: ACLs kept in the metadata log are enforced on every request; no other authorizer exists."},
	{Name: "super.users", Type: TypeString, Default: "", Importance: Medium,
		Doc: "Semicolon-separated principals (User:name) allowed everything whatever the ACLs say; list the brokers' own principals here or grant them ClusterAction."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", Importance: Medium,
		Doc: "Whether a resource that has no ACL at all is open to everyone (Kafka's default false: denied)."},

	// Delegation tokens (KIP-48; Kafka's DelegationTokenManagerConfigs).
	{Name: "delegation.token.secret.key", Type: TypePassword, NullDefault: true, Importance: Medium, Sensitive: true,
		Doc: "Key of the HMAC-SHA512 that makes a delegation token's password from its id; the same on every node. Unset: delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED)."},
	{Name: "delegation.token.max.lifetime.ms", Type: TypeLong, Default: "604800000", Importance: Medium, Valid: atLeast(1),
		Doc: "Longest a token may live, renewals included; a creation may ask for less."},
	{Name: "delegation.token.expiry.time.ms", Type: TypeLong, Default: "86400000", Importance: Medium, Valid: atLeast(1),
		Doc: "How long a token lives after its creation or a renewal unless renewed; a renewal may ask for less."},
	{Name: "delegation.token.expiry.check.interval.ms", Type: TypeLong, Default: "3600000", Importance: Low, Valid: atLeast(1),
		Doc: "How often the active controller removes expired tokens from the metadata log."},
}, append(sslDefs, saslDefs...)...)

var brokerDefIndex = indexDefs(brokerDefs)

func indexDefs(defs []Def) map[string]*Def {
	m := make(map[string]*Def, len(defs))
	for i := range defs {
		if _, dup := m[defs[i].Name]; dup {
			panic("config: duplicate definition " + defs[i].Name)
		}
		m[defs[i].Name] = &defs[i]
	}
	return m
}

// BrokerDef returns the definition of broker config name.
func BrokerDef(name string) (Def, bool) {
	d, ok := brokerDefIndex[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// BrokerDefs returns every broker config definition sorted by name, as
// DescribeConfigs lists them.
func BrokerDefs() []Def { return sortedDefs(brokerDefs) }

func sortedDefs(defs []Def) []Def {
	out := append([]Def(nil), defs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
