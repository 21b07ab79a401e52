package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafkad/gokafkad/partition"
	"github.com/gokafkad/gokafkad/storage"
)

// errorCode maps an error from the partition or storage layers to Kafka's code.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, partition.ErrNotLeaderOrFollower):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, partition.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, partition.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, partition.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, storage.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, storage.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, storage.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrStorage), errors.Is(err, storage.ErrLogClosed):
		return kerr.KafkaStorageError.Code
	default:
		return kerr.UnknownServerError.Code
	}
}
