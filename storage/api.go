package storage

// This file is the contract between storage/ and its callers (partition/, server/).
// Signatures here are what the rest of the broker programs against.

import (
	"errors"
	"os"
)

// Sentinel errors. Callers map them to Kafka error codes at the protocol edge.
var (
	ErrOffsetOutOfRange     = errors.New("storage: offset out of range")
	ErrCorruptBatch         = errors.New("storage: corrupt batch")
	ErrOutOfOrderSequence   = errors.New("storage: out of order sequence number")
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	ErrDuplicateSequence    = errors.New("storage: duplicate sequence number") // only returned wrapped in a *DuplicateError
	ErrLogClosed            = errors.New("storage: log closed")
	ErrStorage              = errors.New("storage: I/O error") // sticky: the log refuses writes after one
	ErrInvalidOffset        = errors.New("storage: invalid offset")
	// ErrInvalidTxnState: a non-transactional write from a producer with an ongoing
	// transaction (Kafka: INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("storage: invalid transaction state")
	// ErrTransactionCoordinatorFenced: a marker from an older coordinator epoch
	// (Kafka: TRANSACTION_COORDINATOR_FENCED).
	ErrTransactionCoordinatorFenced = errors.New("storage: transaction coordinator fenced")
)

// LogConfig is the resolved (broker default + topic override) configuration of one log.
// Field names follow Kafka's topic-level config keys.
type LogConfig struct {
	SegmentBytes       int64 // segment.bytes (default 1073741824)
	SegmentMs          int64 // segment.ms (default 604800000)
	SegmentIndexBytes  int64 // segment.index.bytes (default 10485760)
	IndexIntervalBytes int64 // index.interval.bytes (default 4096)
	RetentionMs        int64 // retention.ms (default 604800000; -1 = forever)
	RetentionBytes     int64 // retention.bytes (default -1 = no limit)
	FileDeleteDelayMs  int64 // file.delete.delay.ms (default 60000)
	FlushMessages      int64 // flush.messages (default Long.MaxValue = never)
	FlushMs            int64 // flush.ms (default Long.MaxValue = never)
	// MessageTimestampLogAppendTime: message.timestamp.type=LogAppendTime; the leader
	// overwrites MaxTimestamp and sets the timestamp-type attribute bit.
	MessageTimestampLogAppendTime bool
	// Compact and Delete are cleanup.policy (default delete): Delete applies
	// retention.ms / retention.bytes, Compact runs the cleaner (cleaner.go).
	Compact bool
	Delete  bool
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5).
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms (default 0).
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms (default Long.MaxValue).
	MaxCompactionLagMs int64
	// DeleteRetentionMs is delete.retention.ms (default 86400000): how long tombstones
	// and transaction markers survive after their first cleaning.
	DeleteRetentionMs int64
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	const never = int64(^uint64(0) >> 1)
	return LogConfig{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		SegmentIndexBytes:  10 << 20,
		IndexIntervalBytes: 4096,
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		FileDeleteDelayMs:  60000,
		FlushMessages:      never,
		FlushMs:            never,

		Delete:                 true,
		MinCleanableDirtyRatio: 0.5,
		MaxCompactionLagMs:     never,
		DeleteRetentionMs:      86400000,
	}
}

// AppendInfo describes a completed append.
type AppendInfo struct {
	FirstOffset    int64
	LastOffset     int64
	MaxTimestamp   int64 // -1 when no record had a timestamp
	LogAppendTime  int64 // -1 unless LogAppendTime is used
	LogStartOffset int64
	RecordCount    int32
}

// DuplicateError is returned by AppendAsLeader when an idempotent producer resends a
// batch that is already in the log (one of the last 5 batches of that producer); the
// broker answers with the original offsets and no error, as Kafka does.
type DuplicateError struct {
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64
}

// Error implements error.
func (e *DuplicateError) Error() string { return ErrDuplicateSequence.Error() }

// Unwrap makes errors.Is(err, ErrDuplicateSequence) hold.
func (e *DuplicateError) Unwrap() error { return ErrDuplicateSequence }

// FileSlice is a byte range of a segment file: what a fetch sends with sendfile.
// The file stays open (not closed by retention or truncation) until at least
// file.delete.delay.ms after the segment is removed, so a slice handed out may be sent
// after the call that produced it returns.
type FileSlice struct {
	File *os.File
	Pos  int64
	Len  int64
}

// ReadResult is what Read returns: whole record batches (never a partial batch unless
// maxBytes cut one and minOneMessage was false, in which case Len may be 0).
type ReadResult struct {
	Slice FileSlice
	// FirstOffset is the base offset of the first batch in Slice (may be < the offset
	// asked for, as in Kafka: the batch containing it is returned whole).
	FirstOffset int64
	// NextOffset bounds the offsets in Slice from above (every offset in it is below
	// NextOffset): the upper bound of a read_committed fetch's aborted-transaction
	// lookup, as Kafka's FetchDataInfo + fetchUpperBoundOffset.
	NextOffset int64
}

// EpochEntry is one line of leader-epoch-checkpoint: the first offset written under Epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// TimestampOffset answers ListOffsets by timestamp.
type TimestampOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}
