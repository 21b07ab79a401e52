package storage

// STUB: replaced by the real implementation. Signatures are the contract.

import (
	"errors"
	"time"

	"github.com/rs/zerolog"
)

var errUnimplemented = errors.New("storage: unimplemented")

// Log is Kafka's UnifiedLog for one partition directory.
type Log struct{}

// LogManager owns one log dir (log.dirs; one dir for now): meta.properties, the
// per-dir checkpoint files, every partition Log under it, and the background work
// (retention, segment deletion after file.delete.delay.ms, checkpoint flushes).
type LogManager struct{}

// LogManagerConfig configures a LogManager.
type LogManagerConfig struct {
	Dir       string
	NodeID    int32
	ClusterID string
	// RetentionCheckInterval is log.retention.check.interval.ms (default 300000).
	RetentionCheckInterval time.Duration
	// FlushCheckpointInterval is how often recovery-point / log-start-offset
	// checkpoints are written (Kafka: log.flush.offset.checkpoint.interval.ms 60000,
	// log.flush.start.offset.checkpoint.interval.ms 60000).
	FlushCheckpointInterval time.Duration
	Logger                  zerolog.Logger
	Now                     func() time.Time
}

// OpenLogManager reads meta.properties (creating it if missing), the checkpoints, and
// opens every "<topic>-<partition>" directory under Dir, recovering each log (CRC scan
// from the recovery point after an unclean shutdown, torn tail cut, indexes rebuilt).
// cfgFor gives the LogConfig for a topic.
func OpenLogManager(cfg LogManagerConfig, cfgFor func(topic string) LogConfig) (*LogManager, error) {
	return nil, errUnimplemented
}

// Logs returns every open log keyed by "topic-partition" directory name.
func (m *LogManager) Logs() map[TopicPartition]*Log { return nil }

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// GetOrCreateLog returns the log for tp, creating its directory (and
// partition.metadata with topicID) when it does not exist.
func (m *LogManager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	return nil, errUnimplemented
}

// Log returns the open log for tp, or nil.
func (m *LogManager) Log(tp TopicPartition) *Log { return nil }

// DeleteLog closes tp's log and removes its directory (Kafka renames it to
// "<topic>-<partition>.<uuid>-delete" and deletes it asynchronously).
func (m *LogManager) DeleteLog(tp TopicPartition) error { return errUnimplemented }

// Checkpoint writes every per-dir checkpoint file now (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint).
func (m *LogManager) Checkpoint() error { return errUnimplemented }

// Close flushes and closes every log, writes the checkpoints and the clean-shutdown marker.
func (m *LogManager) Close() error { return errUnimplemented }

// AppendAsLeader appends exactly one validated v2 record batch (CRC already checked by
// the caller): it assigns offsets from the LEO by writing the base offset into the batch
// header in place, stamps partitionLeaderEpoch, applies LogAppendTime if configured
// (rewriting maxTimestamp and the attribute, then the CRC), checks idempotent/producer
// state (DuplicateError, ErrOutOfOrderSequence, ErrInvalidProducerEpoch), writes it,
// updates the indexes and the leader-epoch cache (assigning leaderEpoch at this offset
// if it is new), and rolls the segment first when needed. batch may be modified.
func (l *Log) AppendAsLeader(batch []byte, leaderEpoch int32, now time.Time) (AppendInfo, error) {
	return AppendInfo{}, errUnimplemented
}

// AppendAsFollower appends record batches as received from a leader (offsets and
// epochs kept), updating the epoch cache from each batch's partitionLeaderEpoch.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	return AppendInfo{}, errUnimplemented
}

// Read returns whole batches starting at the batch containing startOffset, stopping
// before maxOffset (exclusive: the HW for consumers, the LEO for followers) and within
// maxBytes (at least one batch when minOneMessage). ErrOffsetOutOfRange when startOffset
// < LogStartOffset or > LEO. startOffset == maxOffset gives an empty result.
func (l *Log) Read(startOffset int64, maxBytes int32, maxOffset int64, minOneMessage bool) (ReadResult, error) {
	return ReadResult{}, errUnimplemented
}

// LogEndOffset is the LEO: the offset the next batch gets.
func (l *Log) LogEndOffset() int64 { return 0 }

// LogStartOffset is the first offset still readable.
func (l *Log) LogStartOffset() int64 { return 0 }

// HighWatermark as last set (recovered from replication-offset-checkpoint on open).
func (l *Log) HighWatermark() int64 { return 0 }

// SetHighWatermark stores the HW (clamped to [LogStartOffset, LEO]); the LogManager
// checkpoints it.
func (l *Log) SetHighWatermark(hw int64) {}

// MaybeIncrementLogStartOffset moves the log start offset forward (DeleteRecords);
// whole segments below it are deleted. Returns the new log start offset.
func (l *Log) MaybeIncrementLogStartOffset(offset int64) (int64, error) { return 0, errUnimplemented }

// TruncateTo cuts the log so that LEO == offset (no-op if offset >= LEO); also cuts
// the epoch cache (entries with StartOffset >= offset removed) and producer state.
func (l *Log) TruncateTo(offset int64) error { return errUnimplemented }

// TruncateFullyAndStartAt empties the log and starts it at offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error { return errUnimplemented }

// LatestEpoch is the last epoch in the leader-epoch cache (-1 when empty).
func (l *Log) LatestEpoch() int32 { return -1 }

// AssignEpochStartOffset records that epoch starts at offset (leader-epoch-checkpoint),
// as Kafka's LeaderEpochFileCache.assign.
func (l *Log) AssignEpochStartOffset(epoch int32, offset int64) error { return errUnimplemented }

// EndOffsetForEpoch is Kafka's LeaderEpochFileCache.endOffsetFor: the largest epoch <=
// epoch and the start offset of the next larger epoch (LEO when it is the latest);
// (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) { return -1, -1 }

// EpochEntries returns the leader-epoch cache.
func (l *Log) EpochEntries() []EpochEntry { return nil }

// FetchOffsetByTimestamp answers ListOffsets for ts >= 0: the first offset whose
// timestamp >= ts, with that timestamp and its batch's leader epoch; ok false when none.
// ts == -3 (MAX_TIMESTAMP) gives the record with the largest timestamp.
func (l *Log) FetchOffsetByTimestamp(ts int64) (TimestampOffset, bool, error) {
	return TimestampOffset{}, false, errUnimplemented
}

// EpochForOffset returns the leader epoch of the batch holding offset (-1 when unknown).
func (l *Log) EpochForOffset(offset int64) int32 { return -1 }

// Size is the total bytes of all segments.
func (l *Log) Size() int64 { return 0 }

// SetConfig changes the log's config at run time (AlterConfigs).
func (l *Log) SetConfig(cfg LogConfig) {}

// Dir is the partition directory.
func (l *Log) Dir() string { return "" }

// TopicID as stored in partition.metadata.
func (l *Log) TopicID() [16]byte { return [16]byte{} }
