package protocol

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Control records end transactions. A transaction marker is a v2 batch with the control
// and transactional attribute bits set, the producer id and epoch of the transaction,
// base sequence -1, and one uncompressed record whose key and value are Kafka's
// ControlRecordType key and EndTransactionMarker value:
//
//	key:   int16 version (0), int16 type (0 ABORT, 1 COMMIT)
//	value: int16 version (0), int32 coordinatorEpoch
//
// Part of the on-disk and wire format; do not change.
const (
	ControlTypeAbort  int16 = 0
	ControlTypeCommit int16 = 1
)

// ErrBadControlRecord: a control batch whose first record cannot be read.
var ErrBadControlRecord = errors.New("protocol: malformed control record")

// ControlType returns the type of a control batch's record (ControlTypeAbort or
// ControlTypeCommit; other values are future types) from its key, as Kafka's
// ControlRecordType.parse. b must be the whole batch.
func (b Batch) ControlType() (int16, error) {
	key, _, err := b.controlRecord()
	if err != nil || len(key) < 4 {
		return -1, ErrBadControlRecord
	}
	return int16(binary.BigEndian.Uint16(key[2:])), nil
}

// MarkerCoordinatorEpoch returns the coordinator epoch of a transaction marker (a
// control batch of type ABORT or COMMIT) from its EndTransactionMarker value, as
// Kafka's EndTransactionMarker.deserialize. b must be the whole batch.
func (b Batch) MarkerCoordinatorEpoch() (int32, error) {
	_, value, err := b.controlRecord()
	if err != nil || len(value) < 6 {
		return -1, ErrBadControlRecord
	}
	return int32(binary.BigEndian.Uint32(value[2:])), nil
}

// controlRecord returns the key and value of a control batch's first record.
func (b Batch) controlRecord() (key, value []byte, err error) {
	if len(b) <= BatchHeaderSize || !b.IsControl() || b.Compression() != CodecNone {
		return nil, nil, ErrBadControlRecord
	}
	rec := b[BatchHeaderSize:]
	n, k := binary.Varint(rec)
	if k <= 0 || n < 0 || int64(len(rec)-k) < n {
		return nil, nil, ErrBadControlRecord
	}
	rec = rec[k : k+int(n)]
	if len(rec) < 1 {
		return nil, nil, ErrBadControlRecord
	}
	rec = rec[1:] // attributes
	for range 2 { // timestampDelta, offsetDelta
		if _, k = binary.Varint(rec); k <= 0 {
			return nil, nil, ErrBadControlRecord
		}
		rec = rec[k:]
	}
	kl, k := binary.Varint(rec)
	if k <= 0 || kl < 0 || int64(len(rec)-k) < kl {
		return nil, nil, ErrBadControlRecord
	}
	key, rec = rec[k:k+int(kl)], rec[k+int(kl):]
	vl, k := binary.Varint(rec)
	if k <= 0 || vl < 0 || int64(len(rec)-k) < vl {
		// A key without a readable value: the type is still known.
		return key, nil, nil
	}
	return key, rec[k : k+int(vl)], nil
}

// EndTxnMarker builds a transaction marker batch (base offset 0: the log assigns it;
// partition leader epoch -1: the leader stamps it), as Kafka's
// MemoryRecords.withEndTransactionMarker.
func EndTxnMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, tsMs int64) []byte {
	typ := ControlTypeAbort
	if commit {
		typ = ControlTypeCommit
	}
	var body []byte
	body = append(body, 0)              // attributes
	body = binary.AppendVarint(body, 0) // timestampDelta
	body = binary.AppendVarint(body, 0) // offsetDelta
	body = binary.AppendVarint(body, 4)
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint16(body, uint16(typ))
	body = binary.AppendVarint(body, 6)
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint32(body, uint32(coordinatorEpoch))
	body = binary.AppendVarint(body, 0) // headers

	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body)+2)
	binary.BigEndian.PutUint32(b[batchEpochOffset:], 0xffffffff)
	b[batchMagicOffset] = 2
	binary.BigEndian.PutUint16(b[batchAttrOffset:], AttrControl|AttrTransactional)
	binary.BigEndian.PutUint64(b[batchBaseTsOffset:], uint64(tsMs))
	binary.BigEndian.PutUint64(b[batchMaxTsOffset:], uint64(tsMs))
	binary.BigEndian.PutUint64(b[batchPIDOffset:], uint64(producerID))
	binary.BigEndian.PutUint16(b[batchPEpochOffset:], uint16(producerEpoch))
	binary.BigEndian.PutUint32(b[batchBaseSeqOffset:], 0xffffffff)
	binary.BigEndian.PutUint32(b[batchCountOffset:], 1)
	b = binary.AppendVarint(b, int64(len(body)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[BatchLengthOffset:], uint32(len(b)-BatchLogOverhead))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchCRCStartOffset:], castagnoli))
	return b
}
