package coordinator

// Records of KIP-848 consumer groups in __consumer_offsets, in Kafka 4.0's exact byte
// format (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json).
// Part of the on-disk format; do not change.
//
// A key is an int16 record type (the schema's apiKey) followed by the key's fields in
// the non-flexible encoding (int16-length strings). A value is an int16 version (0
// for every type here) followed by its fields in the flexible encoding: compact
// strings and arrays (uvarint length + 1, 0 for null), 16-byte uuids, and a tagged
// field section at the end (we write none and skip the ones we read).
//
//	type 3  ConsumerGroupMetadata               key (group)          value Epoch int32
//	type 4  ConsumerGroupPartitionMetadata      key (group)          value Topics [TopicId, TopicName, NumPartitions, PartitionMetadata []]
//	type 5  ConsumerGroupMemberMetadata         key (group, member)  value InstanceId?, RackId?, ClientId, ClientHost,
//	                                                                       SubscribedTopicNames [], SubscribedTopicRegex?,
//	                                                                       RebalanceTimeoutMs, ServerAssignor?
//	type 6  ConsumerGroupTargetAssignmentMetadata key (group)        value AssignmentEpoch int32
//	type 7  ConsumerGroupTargetAssignmentMember key (group, member)  value TopicPartitions [TopicId, Partitions []int32]
//	type 8  ConsumerGroupCurrentMemberAssignment key (group, member) value MemberEpoch, PreviousMemberEpoch, State int8,
//	                                                                       AssignedPartitions [], PartitionsPendingRevocation []
//	type 16 ConsumerGroupRegularExpression      key (group, regex)   value Topics []string, Version int64, Timestamp int64
//
// Tombstones (null values) delete; a group is deleted by tombstoning every member's
// three records, then the target assignment metadata, partition metadata and group
// epoch, in that order (Kafka's ConsumerGroup.createGroupTombstoneRecords).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// Consumer group record types (part of the on-disk format; do not change).
const (
	cgMetadataType                 int16 = 3
	cgPartitionMetadataType        int16 = 4
	cgMemberMetadataType           int16 = 5
	cgTargetAssignmentMetadataType int16 = 6
	cgTargetAssignmentMemberType   int16 = 7
	cgCurrentMemberAssignmentType  int16 = 8
	cgRegularExpressionType        int16 = 16
)

// TopicPartitions is a set of partitions keyed by topic id, partitions sorted.
type TopicPartitions map[[16]byte][]int32

// TopicMetadata is one subscribed topic as ConsumerGroupPartitionMetadataValue stores it.
type TopicMetadata struct {
	ID            [16]byte
	Name          string
	NumPartitions int32
}

// cgRecord is one consumer-group record in typed form: the state machine produces
// these, applies them, and encodes them; loading decodes and applies them. Exactly
// one value field matches Type; all are nil/zero for a tombstone (Tombstone true).
type cgRecord struct {
	Type      int16
	Group     string
	Member    string // types 5, 7, 8
	Tombstone bool

	Epoch        int32                    // types 3 and 6
	Subscription map[string]TopicMetadata // type 4, by topic name
	Member5      *memberMetadata          // type 5
	Target       TopicPartitions          // type 7
	Current      *currentAssignment       // type 8
	Regex        string                   // type 16's key
	Resolved     *resolvedRegex           // type 16
}

// resolvedRegex is ConsumerGroupRegularExpressionValue: the topics a subscription
// regex matched. Version is Kafka's metadata image offset of the resolution; we have
// none and write 0, which makes a Kafka coordinator resolve it again.
type resolvedRegex struct {
	Topics    []string
	Version   int64
	Timestamp int64
}

// memberMetadata is ConsumerGroupMemberMetadataValue.
type memberMetadata struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	RebalanceTimeoutMs   int32
	ServerAssignor       *string
}

// currentAssignment is ConsumerGroupCurrentMemberAssignmentValue.
type currentAssignment struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               MemberState
	Assigned            TopicPartitions
	PendingRevocation   TopicPartitions
}

// encode turns the record into key and value bytes.
func (r cgRecord) encode() Record {
	k := binary.BigEndian.AppendUint16(nil, uint16(r.Type))
	k = appendString(k, r.Group)
	switch r.Type {
	case cgMemberMetadataType, cgTargetAssignmentMemberType, cgCurrentMemberAssignmentType:
		k = appendString(k, r.Member)
	case cgRegularExpressionType:
		k = appendString(k, r.Regex)
	}
	if r.Tombstone {
		return Record{Key: k}
	}
	v := binary.BigEndian.AppendUint16(nil, 0) // value version 0
	switch r.Type {
	case cgMetadataType, cgTargetAssignmentMetadataType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
	case cgPartitionMetadataType:
		names := make([]string, 0, len(r.Subscription))
		for n := range r.Subscription {
			names = append(names, n)
		}
		sort.Strings(names)
		v = appendUvarint(v, len(names)+1)
		for _, n := range names {
			t := r.Subscription[n]
			v = append(v, t.ID[:]...)
			v = appendCompactString(v, t.Name)
			v = binary.BigEndian.AppendUint32(v, uint32(t.NumPartitions))
			v = appendUvarint(v, 1) // PartitionMetadata: empty (no racks), as Kafka 4.0 writes
			v = append(v, 0)        // tagged fields
		}
	case cgMemberMetadataType:
		m := r.Member5
		v = appendCompactNullableString(v, m.InstanceID)
		v = appendCompactNullableString(v, m.RackID)
		v = appendCompactString(v, m.ClientID)
		v = appendCompactString(v, m.ClientHost)
		v = appendCompactStrings(v, m.SubscribedTopicNames)
		v = appendCompactNullableString(v, m.SubscribedTopicRegex)
		v = binary.BigEndian.AppendUint32(v, uint32(m.RebalanceTimeoutMs))
		v = appendCompactNullableString(v, m.ServerAssignor)
	case cgTargetAssignmentMemberType:
		v = appendTopicPartitions(v, r.Target)
	case cgRegularExpressionType:
		v = appendCompactStrings(v, r.Resolved.Topics)
		v = binary.BigEndian.AppendUint64(v, uint64(r.Resolved.Version))
		v = binary.BigEndian.AppendUint64(v, uint64(r.Resolved.Timestamp))
	case cgCurrentMemberAssignmentType:
		c := r.Current
		v = binary.BigEndian.AppendUint32(v, uint32(c.MemberEpoch))
		v = binary.BigEndian.AppendUint32(v, uint32(c.PreviousMemberEpoch))
		v = append(v, byte(c.State))
		v = appendTopicPartitions(v, c.Assigned)
		v = appendTopicPartitions(v, c.PendingRevocation)
	}
	v = append(v, 0) // tagged fields
	return Record{Key: k, Value: v}
}

// decodeConsumerRecord decodes a record of type 3-8.
func decodeConsumerRecord(typ int16, key, value []byte) (*cgRecord, error) {
	rd := &reader{b: key[2:]}
	r := &cgRecord{Type: typ, Group: rd.str()}
	switch typ {
	case cgMemberMetadataType, cgTargetAssignmentMemberType, cgCurrentMemberAssignmentType:
		r.Member = rd.str()
	case cgRegularExpressionType:
		r.Regex = rd.str()
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%w: consumer group record key type %d", ErrCorruptRecord, typ)
	}
	if value == nil {
		r.Tombstone = true
		return r, nil
	}
	rd = &reader{b: value}
	// The value version: 0 everywhere in Kafka 4.x, whose later additions are
	// tagged fields, skipped below.
	rd.i16()
	switch typ {
	case cgMetadataType, cgTargetAssignmentMetadataType:
		r.Epoch = rd.i32()
	case cgPartitionMetadataType:
		r.Subscription = map[string]TopicMetadata{}
		for n := rd.arrayLen(); n > 0 && rd.err == nil; n-- {
			var t TopicMetadata
			t.ID = rd.uuid()
			t.Name = rd.cstr()
			t.NumPartitions = rd.i32()
			for p := rd.arrayLen(); p > 0 && rd.err == nil; p-- {
				rd.i32()
				for k := rd.arrayLen(); k > 0 && rd.err == nil; k-- {
					rd.cstr()
				}
				rd.tags()
			}
			rd.tags()
			r.Subscription[t.Name] = t
		}
	case cgMemberMetadataType:
		m := &memberMetadata{}
		m.InstanceID = rd.cnstr()
		m.RackID = rd.cnstr()
		m.ClientID = rd.cstr()
		m.ClientHost = rd.cstr()
		m.SubscribedTopicNames = rd.cstrs()
		m.SubscribedTopicRegex = rd.cnstr()
		m.RebalanceTimeoutMs = rd.i32()
		m.ServerAssignor = rd.cnstr()
		r.Member5 = m
	case cgTargetAssignmentMemberType:
		r.Target = rd.topicPartitions()
	case cgRegularExpressionType:
		rr := &resolvedRegex{Topics: rd.cstrs()}
		rr.Version = rd.i64()
		rr.Timestamp = rd.i64()
		r.Resolved = rr
	case cgCurrentMemberAssignmentType:
		c := &currentAssignment{}
		c.MemberEpoch = rd.i32()
		c.PreviousMemberEpoch = rd.i32()
		c.State = MemberState(rd.i8())
		c.Assigned = rd.topicPartitions()
		c.PendingRevocation = rd.topicPartitions()
		r.Current = c
	}
	rd.tags()
	if rd.err != nil {
		return nil, fmt.Errorf("%w: consumer group record value type %d: %v", ErrCorruptRecord, typ, rd.err)
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendUvarint(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

func appendCompactString(b []byte, s string) []byte {
	b = appendUvarint(b, len(s)+1)
	return append(b, s...)
}

func appendCompactNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendCompactString(b, *s)
}

// appendTopicPartitions writes a []TopicPartitions struct array (topics ordered by id).
func appendTopicPartitions(b []byte, tps TopicPartitions) []byte {
	ids := tps.topicIDs()
	b = appendUvarint(b, len(ids)+1)
	for _, id := range ids {
		b = append(b, id[:]...)
		ps := tps[id]
		b = appendUvarint(b, len(ps)+1)
		for _, p := range ps {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
		b = append(b, 0) // tagged fields
	}
	return b
}

// topicIDs returns the topics in id order.
func (tps TopicPartitions) topicIDs() [][16]byte {
	ids := make([][16]byte, 0, len(tps))
	for id := range tps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

// reader decodes the primitives above; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("short read")
		r.b = nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) i8() int8 {
	if b := r.need(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) i16() int16 {
	if b := r.need(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) i32() int32 {
	if b := r.need(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) i64() int64 {
	if b := r.need(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uuid() (id [16]byte) {
	if b := r.need(16); b != nil {
		copy(id[:], b)
	}
	return id
}

func (r *reader) str() string {
	n := r.i16()
	return string(r.need(int(n)))
}

func (r *reader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<31 {
		r.err = fmt.Errorf("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// arrayLen reads a compact array length; a null array reads as empty.
func (r *reader) arrayLen() int {
	n := r.uvarint() - 1
	if n > len(r.b) { // every element takes at least one byte
		r.err = fmt.Errorf("array length %d past the end", n)
		return 0
	}
	return n
}

func (r *reader) cstr() string {
	n := r.uvarint() - 1
	if n < 0 {
		return ""
	}
	return string(r.need(n))
}

func (r *reader) cnstr() *string {
	n := r.uvarint() - 1
	if n < 0 || r.err != nil {
		return nil
	}
	s := string(r.need(n))
	return &s
}

// tags skips a tagged-field section.
func (r *reader) tags() {
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		r.uvarint()
		r.need(r.uvarint())
	}
}

func (r *reader) topicPartitions() TopicPartitions {
	tps := TopicPartitions{}
	for n := r.arrayLen(); n > 0 && r.err == nil; n-- {
		id := r.uuid()
		var ps []int32
		for k := r.arrayLen(); k > 0 && r.err == nil; k-- {
			ps = append(ps, r.i32())
		}
		r.tags()
		if len(ps) > 0 {
			tps[id] = ps
		}
	}
	return tps
}
