package protocol

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Record batch (magic v2) header, as Kafka lays it out. Part of the on-disk and wire
// format; do not change.
//
//	offset  size  field
//	0       8     baseOffset
//	8       4     batchLength (bytes after this field)
//	12      4     partitionLeaderEpoch
//	16      1     magic (2)
//	17      4     crc (CRC-32C of everything from attributes to the end)
//	21      2     attributes
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61            records
const (
	BatchHeaderSize     = 61
	BatchLengthOffset   = 8
	BatchLogOverhead    = 12 // baseOffset + batchLength
	batchEpochOffset    = 12
	batchMagicOffset    = 16
	batchCRCOffset      = 17
	batchAttrOffset     = 21
	batchLODOffset      = 23
	batchBaseTsOffset   = 27
	batchMaxTsOffset    = 35
	batchPIDOffset      = 43
	batchPEpochOffset   = 51
	batchBaseSeqOffset  = 53
	batchCountOffset    = 57
	batchCRCStartOffset = 21
)

// Attribute bits of a v2 batch.
const (
	AttrCompressionMask    = 0x07
	AttrTimestampLogAppend = 0x08
	AttrTransactional      = 0x10
	AttrControl            = 0x20
	AttrDeleteHorizon      = 0x40
)

// Compression codecs (attribute bits 0-2).
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

// Errors from batch views.
var (
	ErrShortBatch   = errors.New("protocol: batch shorter than its header")
	ErrBadMagic     = errors.New("protocol: unsupported record batch magic")
	ErrBadCRC       = errors.New("protocol: record batch CRC mismatch")
	ErrBadBatchSize = errors.New("protocol: batch length does not match")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is a view over the bytes of one v2 record batch. It never copies; setters write
// into the underlying bytes.
type Batch []byte

// BatchSize returns the total size of the batch starting at b (12 + batchLength), or -1
// when b is shorter than 12 bytes.
func BatchSize(b []byte) int64 {
	if len(b) < BatchLogOverhead {
		return -1
	}
	return BatchLogOverhead + int64(int32(binary.BigEndian.Uint32(b[BatchLengthOffset:])))
}

// CheckHeader verifies that b holds exactly one complete v2 batch with a sane length.
func (b Batch) CheckHeader() error {
	if len(b) < BatchHeaderSize {
		return ErrShortBatch
	}
	if b.Magic() != 2 {
		return ErrBadMagic
	}
	if BatchSize(b) != int64(len(b)) {
		return ErrBadBatchSize
	}
	return nil
}

// CheckCRC verifies the CRC-32C.
func (b Batch) CheckCRC() error {
	if crc32.Checksum(b[batchCRCStartOffset:], castagnoli) != b.CRC() {
		return ErrBadCRC
	}
	return nil
}

// UpdateCRC recomputes the CRC after a change to a covered field (attributes, timestamps).
func (b Batch) UpdateCRC() {
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchCRCStartOffset:], castagnoli))
}

func (b Batch) BaseOffset() int64  { return int64(binary.BigEndian.Uint64(b)) }
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[BatchLengthOffset:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[batchEpochOffset:]))
}
func (b Batch) Magic() int8            { return int8(b[batchMagicOffset]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[batchCRCOffset:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[batchAttrOffset:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[batchLODOffset:])) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[batchBaseTsOffset:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[batchMaxTsOffset:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[batchPIDOffset:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[batchPEpochOffset:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[batchBaseSeqOffset:])) }
func (b Batch) RecordCount() int32     { return int32(binary.BigEndian.Uint32(b[batchCountOffset:])) }
func (b Batch) LastOffset() int64      { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) Compression() int8      { return int8(b.Attributes() & AttrCompressionMask) }
func (b Batch) IsTransactional() bool  { return b.Attributes()&AttrTransactional != 0 }
func (b Batch) IsControl() bool        { return b.Attributes()&AttrControl != 0 }
func (b Batch) Records() []byte        { return b[BatchHeaderSize:] }

// LastSequence is the sequence of the batch's last record (wrapping as Kafka does).
func (b Batch) LastSequence() int32 {
	seq := b.BaseSequence()
	if seq < 0 {
		return -1
	}
	last := int64(seq) + int64(b.LastOffsetDelta())
	if last > 1<<31-1 {
		last -= 1 << 31
	}
	return int32(last)
}

// SetBaseOffset writes the base offset in place (not covered by the CRC).
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b, uint64(o)) }

// SetPartitionLeaderEpoch writes the leader epoch in place (not covered by the CRC).
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[batchEpochOffset:], uint32(e))
}

// SetLogAppendTime sets the timestamp type to LogAppendTime with maxTimestamp ts and
// recomputes the CRC, as Kafka's LogValidator does for message.timestamp.type=LogAppendTime.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | AttrTimestampLogAppend
	binary.BigEndian.PutUint16(b[batchAttrOffset:], attrs)
	binary.BigEndian.PutUint64(b[batchMaxTsOffset:], uint64(ts))
	b.UpdateCRC()
}
