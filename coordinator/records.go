package coordinator

// Records of __consumer_offsets, in Kafka's exact byte format so Kafka's own tools
// (kafka-console-consumer with the offsets formatter, kafka-dump-log
// --offsets-decoder) read them. Part of the on-disk format; do not change.
//
// Every record has a key whose first int16 is its version:
//
//	key version 0, 1   OffsetCommitKey   (group, topic, partition)  value OffsetCommitValue
//	key version 2      GroupMetadataKey  (group)                    value GroupMetadataValue
//	key version 3-8,16 KIP-848 consumer group records (consumer_group_records.go)
//	other versions     share / streams group records (skipped)
//
// A null value is a tombstone: the offset, or the whole group's metadata, is deleted
// (compaction later drops the key). We write what Kafka 4.x writes: OffsetCommitKey v1
// with OffsetCommitValue v3 (v1 when the commit carried an expire timestamp), and
// GroupMetadataKey v2 with GroupMetadataValue v3. The records are uncompressed and go
// into v2 record batches with producer id -1.

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// Record key versions (part of the on-disk format; do not change).
const (
	offsetCommitKeyVersion   int16 = 1
	groupMetadataKeyVersion  int16 = 2
	offsetCommitValueVersion int16 = 3
	// offsetCommitValueVersionExpire carries ExpireTimestamp (commits v2-4 with a retention time).
	offsetCommitValueVersionExpire int16 = 1
	groupMetadataValueVersion      int16 = 3
)

// ErrCorruptRecord is returned for a __consumer_offsets record that cannot be decoded.
var ErrCorruptRecord = errors.New("coordinator: corrupt __consumer_offsets record")

// Record is one key/value pair for __consumer_offsets. Value nil is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// OffsetCommitRecord encodes a committed offset (or its tombstone when om is nil).
func OffsetCommitRecord(group, topic string, partition int32, om *OffsetAndMetadata) Record {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	r := Record{Key: k.AppendTo(nil)}
	if om == nil {
		return r
	}
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	if om.ExpireTimestamp >= 0 {
		v.Version = offsetCommitValueVersionExpire
		v.ExpireTimestamp = om.ExpireTimestamp
	}
	v.Offset = om.Offset
	v.LeaderEpoch = om.LeaderEpoch
	v.Metadata = om.Metadata
	v.CommitTimestamp = om.CommitTimestamp
	r.Value = v.AppendTo(nil)
	return r
}

// GroupMetadataRecord encodes a classic group's metadata as Kafka's
// GroupMetadataManager.storeGroup does: generation, protocol, leader and every member
// with its subscription and assignment.
func GroupMetadataRecord(g *Group, nowMs int64) Record {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: g.ID}
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.ProtocolType
	v.Generation = g.Generation
	if g.Protocol != "" {
		p := g.Protocol
		v.Protocol = &p
	}
	if g.Leader != "" {
		l := g.Leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = nowMs
	for _, m := range g.sortedMembers() {
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID = m.ID
		mv.InstanceID = m.InstanceID
		mv.ClientID = m.ClientID
		mv.ClientHost = m.ClientHost
		mv.RebalanceTimeoutMillis = m.RebalanceTimeoutMs
		mv.SessionTimeoutMillis = m.SessionTimeoutMs
		mv.Subscription = m.metadataFor(g.Protocol)
		if mv.Subscription == nil {
			mv.Subscription = []byte{}
		}
		mv.Assignment = m.Assignment
		if mv.Assignment == nil {
			mv.Assignment = []byte{}
		}
		v.Members = append(v.Members, mv)
	}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// GroupTombstone deletes a group's metadata.
func GroupTombstone(group string) Record {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return Record{Key: k.AppendTo(nil)}
}

// DecodedRecord is one __consumer_offsets record after decoding. At most one of
// OffsetKey / GroupKey / Consumer is set; a classic value is nil for a tombstone. All
// are nil for record types the coordinator does not read (share and streams groups).
type DecodedRecord struct {
	OffsetKey   *kmsg.OffsetCommitKey
	OffsetValue *kmsg.OffsetCommitValue
	GroupKey    *kmsg.GroupMetadataKey
	GroupValue  *kmsg.GroupMetadataValue
	// Consumer is a KIP-848 consumer group record (consumer_group_records.go).
	Consumer *cgRecord
	// Streams is a KIP-1071 streams group record (streams_group_records.go).
	Streams *sgRecord
	// Share is a KIP-932 share group record (share_group_records.go).
	Share *shgRecord
}

// DecodeRecord decodes one record's key and value.
func DecodeRecord(key, value []byte) (DecodedRecord, error) {
	var d DecodedRecord
	if len(key) < 2 {
		return d, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch ver := int16(binary.BigEndian.Uint16(key)); ver {
	case 0, 1:
		k := new(kmsg.OffsetCommitKey)
		if err := k.ReadFrom(key); err != nil {
			return d, fmt.Errorf("%w: offset commit key: %v", ErrCorruptRecord, err)
		}
		d.OffsetKey = k
		if value != nil {
			v := new(kmsg.OffsetCommitValue)
			if err := v.ReadFrom(value); err != nil {
				return d, fmt.Errorf("%w: offset commit value: %v", ErrCorruptRecord, err)
			}
			if v.Version < 3 {
				v.LeaderEpoch = -1
			}
			d.OffsetValue = v
		}
	case 2:
		k := new(kmsg.GroupMetadataKey)
		if err := k.ReadFrom(key); err != nil {
			return d, fmt.Errorf("%w: group metadata key: %v", ErrCorruptRecord, err)
		}
		d.GroupKey = k
		if value != nil {
			v := new(kmsg.GroupMetadataValue)
			if err := v.ReadFrom(value); err != nil {
				return d, fmt.Errorf("%w: group metadata value: %v", ErrCorruptRecord, err)
			}
			d.GroupValue = v
		}
	case cgMetadataType, cgPartitionMetadataType, cgMemberMetadataType, cgTargetAssignmentMetadataType,
		cgTargetAssignmentMemberType, cgCurrentMemberAssignmentType, cgRegularExpressionType:
		cr, err := decodeConsumerRecord(ver, key, value)
		if err != nil {
			return d, err
		}
		d.Consumer = cr
	case sgMetadataType, sgPartitionMetadataType, sgMemberMetadataType, sgTargetAssignmentMetadataType,
		sgTargetAssignmentMemberType, sgCurrentMemberAssignmentType, sgTopologyType:
		sr, err := decodeStreamsRecord(ver, key, value)
		if err != nil {
			return d, err
		}
		d.Streams = sr
	case shgMemberMetadataType, shgMetadataType, shgTargetAssignmentMetadataType, shgTargetAssignmentMemberType, shgCurrentMemberAssignmentType:
		sr, err := decodeShareGroupRecord(ver, key, value)
		if err != nil {
			return d, err
		}
		d.Share = sr
	default:
		if ver < 0 {
			return d, fmt.Errorf("%w: key version %d", ErrCorruptRecord, ver)
		}
	}
	return d, nil
}

// Record batch framing. The coordinator writes uncompressed magic-v2 batches with no
// producer (id -1), as Kafka's coordinator runtime does for non-transactional writes.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeBatch builds one v2 record batch holding recs, base offset 0 (the log assigns
// the real one), all records stamped with timestamp tsMs.
func EncodeBatch(recs []Record, tsMs int64) []byte {
	return encodeBatch(recs, tsMs, -1, -1)
}

// EncodeTxnBatch is EncodeBatch for a transactional write (TxnOffsetCommit): the
// transactional attribute and the producer's id and epoch, base sequence -1 (as
// Kafka's coordinator writes them; the marker decides whether the records count).
func EncodeTxnBatch(recs []Record, tsMs int64, producerID int64, producerEpoch int16) []byte {
	return encodeBatch(recs, tsMs, producerID, producerEpoch)
}

func encodeBatch(recs []Record, tsMs int64, producerID int64, producerEpoch int16) []byte {
	b := make([]byte, 61, 61+64*len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)           // baseOffset
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partitionLeaderEpoch (-1; the leader stamps it)
	b[16] = 2                                      // magic
	// attributes (21) = 0: uncompressed, CreateTime.
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))   // lastOffsetDelta
	binary.BigEndian.PutUint64(b[27:], uint64(tsMs))          // baseTimestamp
	binary.BigEndian.PutUint64(b[35:], uint64(tsMs))          // maxTimestamp
	binary.BigEndian.PutUint64(b[43:], uint64(producerID))    // producerId
	binary.BigEndian.PutUint16(b[51:], uint16(producerEpoch)) // producerEpoch
	if producerID >= 0 {
		binary.BigEndian.PutUint16(b[21:], 0x10) // attributes: transactional
	}
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)        // baseSequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs))) // recordCount
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestampDelta
		body = binary.AppendVarint(body, int64(i)) // offsetDelta
		body = binary.AppendVarint(body, int64(len(r.Key)))
		body = append(body, r.Key...)
		if r.Value == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.Value)))
			body = append(body, r.Value...)
		}
		body = binary.AppendVarint(body, 0) // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12)) // batchLength
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// BatchRecord is one record read back from a batch, with its absolute offset.
type BatchRecord struct {
	Offset int64
	Key    []byte
	Value  []byte // nil for a tombstone
}

// DecodeBatches walks the v2 batches in buf (whole batches; a trailing partial batch is
// ignored) and calls fn for every record of every data batch. Control batches are
// skipped. Compressed batches are an error: the coordinator never writes them.
func DecodeBatches(buf []byte, fn func(BatchRecord) error) error {
	return DecodeTxnBatches(buf, func(_ BatchInfo, r BatchRecord) error { return fn(r) }, nil)
}

// BatchInfo is what a record's batch says about transactions.
type BatchInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
}

// DecodeTxnBatches is DecodeBatches that also hands fn each record's batch, and calls
// onMarker (when not nil) for each transaction marker with its control type
// (protocol.ControlTypeCommit / ControlTypeAbort).
func DecodeTxnBatches(buf []byte, fn func(BatchInfo, BatchRecord) error, onMarker func(BatchInfo, int16) error) error {
	for len(buf) >= 12 {
		size := 12 + int64(int32(binary.BigEndian.Uint32(buf[8:])))
		if size < 61 {
			return fmt.Errorf("%w: batch length %d", ErrCorruptRecord, size)
		}
		if int64(len(buf)) < size {
			return nil
		}
		batch := buf[:size]
		buf = buf[size:]
		if batch[16] != 2 {
			return fmt.Errorf("%w: batch magic %d", ErrCorruptRecord, batch[16])
		}
		if crc32.Checksum(batch[21:], castagnoli) != binary.BigEndian.Uint32(batch[17:]) {
			return fmt.Errorf("%w: batch CRC", ErrCorruptRecord)
		}
		attrs := binary.BigEndian.Uint16(batch[21:])
		info := BatchInfo{ProducerID: int64(binary.BigEndian.Uint64(batch[43:])),
			ProducerEpoch: int16(binary.BigEndian.Uint16(batch[51:])), Transactional: attrs&0x10 != 0}
		if attrs&0x20 != 0 { // control batch (transaction markers)
			if onMarker != nil {
				typ, err := protocol.Batch(batch).ControlType()
				if err != nil {
					return fmt.Errorf("%w: control batch: %v", ErrCorruptRecord, err)
				}
				if err := onMarker(info, typ); err != nil {
					return err
				}
			}
			continue
		}
		if attrs&0x07 != 0 {
			return fmt.Errorf("%w: compressed batch (codec %d)", ErrCorruptRecord, attrs&0x07)
		}
		base := int64(binary.BigEndian.Uint64(batch))
		count := int32(binary.BigEndian.Uint32(batch[57:]))
		recs := batch[61:]
		for i := int32(0); i < count; i++ {
			n, k := binary.Varint(recs)
			if k <= 0 || n < 0 || int64(len(recs)-k) < n {
				return fmt.Errorf("%w: record length", ErrCorruptRecord)
			}
			rec := recs[k : k+int(n)]
			recs = recs[k+int(n):]
			r, err := decodeRecordBody(rec)
			if err != nil {
				return err
			}
			r.Offset = base + r.Offset
			if err := fn(info, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeRecordBody(rec []byte) (BatchRecord, error) {
	var r BatchRecord
	bad := fmt.Errorf("%w: record body", ErrCorruptRecord)
	if len(rec) < 1 {
		return r, bad
	}
	rec = rec[1:] // attributes
	next := func() (int64, bool) {
		v, k := binary.Varint(rec)
		if k <= 0 {
			return 0, false
		}
		rec = rec[k:]
		return v, true
	}
	if _, ok := next(); !ok { // timestampDelta
		return r, bad
	}
	od, ok := next()
	if !ok {
		return r, bad
	}
	r.Offset = od
	kl, ok := next()
	if !ok || kl > int64(len(rec)) {
		return r, bad
	}
	if kl >= 0 {
		r.Key = rec[:kl]
		rec = rec[kl:]
	}
	vl, ok := next()
	if !ok || vl > int64(len(rec)) {
		return r, bad
	}
	if vl >= 0 {
		r.Value = rec[:vl]
	}
	return r, nil
}

// PartitionFor is the __consumer_offsets partition of a group: abs(hashCode(groupID))
// % n with Java's String.hashCode (over UTF-16 code units) and Kafka's Utils.abs
// (n & 0x7fffffff), as Kafka's GroupCoordinatorService.partitionFor.
func PartitionFor(groupID string, n int32) int32 {
	return (javaStringHash(groupID) & 0x7fffffff) % n
}

// javaStringHash is Java's String.hashCode of s (over its UTF-16 code units).
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// topicIDString is Kafka's Uuid.toString: URL-safe base64 without padding.
func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
