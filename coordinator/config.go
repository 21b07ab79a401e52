// Package coordinator is the group coordinator: the classic consumer-group protocol
// (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), the KIP-848 consumer protocol
// (ConsumerGroupHeartbeat, consumer_group*.go) and committed offsets, kept in the
// compacted internal topic __consumer_offsets and nowhere else; and the transaction
// coordinator (txn.go), kept in __transaction_state, with the transactional offset
// commits it completes in the group coordinator (txn_offsets.go).
//
// The package has three layers:
//
//   - records.go: the __consumer_offsets record formats (Kafka's bytes exactly) and the
//     batch framing;
//   - group.go: the pure classic-group state machine, as Kafka's ClassicGroup plus the
//     classic parts of GroupMetadataManager. Time is passed in; every method returns
//     Effects (responses to send, records to write) and does no I/O;
//   - coordinator.go, offsets.go: the GroupCoordinator, which owns one shard of groups
//     per __consumer_offsets partition this broker leads, writes the records through
//     a PartitionLog before answering, loads a shard by replaying its partition when
//     the broker becomes leader, and runs the timers (session, rebalance, sync,
//     initial delay, offsets retention).
package coordinator

import "time"

// OffsetsTopic is Kafka's internal offsets topic.
const OffsetsTopic = "__consumer_offsets"

// Config holds Kafka's group-coordinator settings (same names, Go units).
type Config struct {
	// OffsetsTopicNumPartitions is offsets.topic.num.partitions (50).
	OffsetsTopicNumPartitions int32
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor (3 in Kafka;
	// 1 on the single-node default config).
	OffsetsTopicReplicationFactor int16
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes (104857600).
	OffsetsTopicSegmentBytes int64
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms (3000; the
	// single-node default config sets 0 as Kafka's config/server.properties does).
	GroupInitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout / GroupMaxSessionTimeout are group.min.session.timeout.ms
	// (6000) and group.max.session.timeout.ms (1800000).
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupMaxSize is group.max.size (unbounded by default: 0 here).
	GroupMaxSize int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes (10080 = 7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms (600000).
	OffsetsRetentionCheckInterval time.Duration
	// NewMemberJoinTimeout bounds how long a new member's JoinGroup may wait in a
	// rebalance (Kafka's internal 5 minutes, group.classic.new.member.join.timeout).
	NewMemberJoinTimeout time.Duration
	// Consumer holds the group.consumer.* settings of KIP-848 consumer groups.
	Consumer ConsumerGroupConfig
	// Share holds the group.share.* membership settings of KIP-932 share groups.
	Share ShareGroupConfig
	// Streams holds the group.streams.* settings of KIP-1071 streams groups.
	Streams StreamsGroupConfig
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		OffsetsTopicNumPartitions:     50,
		OffsetsTopicReplicationFactor: 3,
		OffsetsTopicSegmentBytes:      104857600,
		GroupInitialRebalanceDelay:    3 * time.Second,
		GroupMinSessionTimeout:        6 * time.Second,
		GroupMaxSessionTimeout:        30 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		OffsetsRetention:              10080 * time.Minute,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		NewMemberJoinTimeout:          5 * time.Minute,
		Consumer:                      DefaultConsumerGroupConfig(),
		Share:                         DefaultShareGroupConfig(),
		Streams:                       DefaultStreamsGroupConfig(),
	}
}
