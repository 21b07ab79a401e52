package coordinator

// Records of KIP-932 share groups in __consumer_offsets, in Kafka 4.4's exact byte
// format (group-coordinator/src/main/resources/common/message/ShareGroup*.json),
// encoded as the consumer groups' are (consumer_group_records.go). Part of the
// on-disk format; do not change.
//
//	type 10 ShareGroupMemberMetadata            key (group, member)  value RackId?, ClientId, ClientHost, SubscribedTopicNames []
//	type 11 ShareGroupMetadata                  key (group)          value Epoch int32, MetadataHash int64
//	type 12 ShareGroupTargetAssignmentMetadata  key (group)          value AssignmentEpoch int32 (tag 0 AssignmentTimestamp)
//	type 13 ShareGroupTargetAssignmentMember    key (group, member)  value TopicPartitions [TopicId, Partitions []int32]
//	type 14 ShareGroupCurrentMemberAssignment   key (group, member)  value MemberEpoch, PreviousMemberEpoch, State int8,
//	                                                                        AssignedPartitions [TopicId, Partitions []]
//
// Type 15 (ShareGroupStatePartitionMetadata, the partitions whose share state the
// group coordinator initialized) is not written: here the share-partition leader
// initializes the state (DESIGN.md); a type 15 record Kafka wrote is skipped on load.
// The coordinator writes, after every heartbeat or fencing that changed the group,
// the records of what changed; a member leaving tombstones its three records, the
// group emptying tombstones the group's (Kafka keeps an empty share group; here it is
// dropped as in memory).

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Share group record types (part of the on-disk format; do not change).
const (
	shgMemberMetadataType           int16 = 10
	shgMetadataType                 int16 = 11
	shgTargetAssignmentMetadataType int16 = 12
	shgTargetAssignmentMemberType   int16 = 13
	shgCurrentMemberAssignmentType  int16 = 14
)

// shgRecord is one share-group record in typed form; all value fields are zero for a
// tombstone.
type shgRecord struct {
	Type      int16
	Group     string
	Member    string // types 10, 13, 14
	Tombstone bool

	Epoch      int32 // types 11, 12; type 14's MemberEpoch
	PrevEpoch  int32 // type 14
	RackID     *string
	ClientID   string
	ClientHost string
	Subscribed []string        // type 10
	Partitions TopicPartitions // types 13, 14
}

func shgHasMember(typ int16) bool {
	return typ == shgMemberMetadataType || typ == shgTargetAssignmentMemberType || typ == shgCurrentMemberAssignmentType
}

func (r shgRecord) encode() Record {
	k := binary.BigEndian.AppendUint16(nil, uint16(r.Type))
	k = appendString(k, r.Group)
	if shgHasMember(r.Type) {
		k = appendString(k, r.Member)
	}
	if r.Tombstone {
		return Record{Key: k}
	}
	v := binary.BigEndian.AppendUint16(nil, 0)
	switch r.Type {
	case shgMemberMetadataType:
		v = appendCompactNullableString(v, r.RackID)
		v = appendCompactString(v, r.ClientID)
		v = appendCompactString(v, r.ClientHost)
		v = appendUvarint(v, len(r.Subscribed)+1)
		for _, t := range r.Subscribed {
			v = appendCompactString(v, t)
		}
	case shgMetadataType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
		v = binary.BigEndian.AppendUint64(v, 0) // MetadataHash: none computed, as a Kafka coordinator that must recompute
	case shgTargetAssignmentMetadataType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
	case shgTargetAssignmentMemberType:
		v = appendTopicPartitions(v, r.Partitions)
	case shgCurrentMemberAssignmentType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
		v = binary.BigEndian.AppendUint32(v, uint32(r.PrevEpoch))
		v = append(v, 0) // State: STABLE (share members have nothing to revoke)
		v = appendTopicPartitions(v, r.Partitions)
	}
	v = append(v, 0) // tagged fields
	return Record{Key: k, Value: v}
}

// decodeShareGroupRecord decodes a record of type 10-14.
func decodeShareGroupRecord(typ int16, key, value []byte) (*shgRecord, error) {
	rd := &reader{b: key[2:]}
	r := &shgRecord{Type: typ, Group: rd.str()}
	if shgHasMember(typ) {
		r.Member = rd.str()
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%w: share group record key type %d", ErrCorruptRecord, typ)
	}
	if value == nil {
		r.Tombstone = true
		return r, nil
	}
	rd = &reader{b: value}
	rd.i16() // version 0; later additions are tagged fields
	switch typ {
	case shgMemberMetadataType:
		r.RackID = rd.cnstr()
		r.ClientID = rd.cstr()
		r.ClientHost = rd.cstr()
		r.Subscribed = []string{}
		for n := rd.arrayLen(); n > 0 && rd.err == nil; n-- {
			r.Subscribed = append(r.Subscribed, rd.cstr())
		}
	case shgMetadataType:
		r.Epoch = rd.i32()
		rd.i64()
	case shgTargetAssignmentMetadataType:
		r.Epoch = rd.i32()
	case shgTargetAssignmentMemberType:
		r.Partitions = rd.topicPartitions()
	case shgCurrentMemberAssignmentType:
		r.Epoch = rd.i32()
		r.PrevEpoch = rd.i32()
		rd.i8()
		r.Partitions = rd.topicPartitions()
	}
	rd.tags()
	if rd.err != nil {
		return nil, fmt.Errorf("%w: share group record type %d: %v", ErrCorruptRecord, typ, rd.err)
	}
	return r, nil
}

// shareGroupImage is what of a share group its records hold, to diff two states.
type shareGroupImage struct {
	epoch, assignmentEpoch int32
	members                map[string]ShareMember
	target                 map[string]TopicPartitions
}

func (g *ShareGroup) image() shareGroupImage {
	im := shareGroupImage{epoch: g.Epoch, assignmentEpoch: g.AssignmentEpoch,
		members: make(map[string]ShareMember, len(g.Members)), target: maps.Clone(g.Target)}
	for id, m := range g.Members {
		im.members[id] = *m
	}
	return im
}

// shareGroupRecords are the records that take a share group from before to after
// (after.members empty and dropped: the group's tombstones too).
func shareGroupRecords(group string, before, after shareGroupImage, dropped bool) []Record {
	var out []Record
	add := func(r shgRecord) { r.Group = group; out = append(out, r.encode()) }
	ids := slices.Sorted(maps.Keys(after.members))
	for _, id := range ids {
		m, old := after.members[id], before.members[id]
		_, existed := before.members[id]
		if !existed || !slices.Equal(m.Subscribed, old.Subscribed) || m.ClientID != old.ClientID ||
			m.ClientHost != old.ClientHost || !sameStringPtr(m.RackID, old.RackID) {
			add(shgRecord{Type: shgMemberMetadataType, Member: id, RackID: m.RackID, ClientID: m.ClientID,
				ClientHost: m.ClientHost, Subscribed: m.Subscribed})
		}
	}
	if after.epoch != before.epoch {
		add(shgRecord{Type: shgMetadataType, Epoch: after.epoch})
	}
	for _, id := range ids {
		if t, ok := before.target[id]; !ok || !sameTopicPartitions(t, after.target[id]) {
			add(shgRecord{Type: shgTargetAssignmentMemberType, Member: id, Partitions: after.target[id]})
		}
	}
	if after.assignmentEpoch != before.assignmentEpoch {
		add(shgRecord{Type: shgTargetAssignmentMetadataType, Epoch: after.assignmentEpoch})
	}
	for _, id := range ids {
		m, old := after.members[id], before.members[id]
		if _, existed := before.members[id]; !existed || m.MemberEpoch != old.MemberEpoch || !sameTopicPartitions(m.Assigned, old.Assigned) {
			add(shgRecord{Type: shgCurrentMemberAssignmentType, Member: id, Epoch: m.MemberEpoch, PrevEpoch: old.MemberEpoch, Partitions: m.Assigned})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(before.members)) {
		if _, ok := after.members[id]; !ok {
			for _, typ := range []int16{shgCurrentMemberAssignmentType, shgTargetAssignmentMemberType, shgMemberMetadataType} {
				add(shgRecord{Type: typ, Member: id, Tombstone: true})
			}
		}
	}
	if dropped {
		add(shgRecord{Type: shgTargetAssignmentMetadataType, Tombstone: true})
		add(shgRecord{Type: shgMetadataType, Tombstone: true})
	}
	return out
}

func sameStringPtr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func sameTopicPartitions(a, b TopicPartitions) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// replayShareGroupRecord applies one record to groups (load), creating the group at
// its first record; a group whose metadata is tombstoned is dropped.
func replayShareGroupRecord(groups map[string]*ShareGroup, r *shgRecord, cfg *ShareGroupConfig) {
	g := groups[r.Group]
	if g == nil {
		if r.Tombstone {
			return
		}
		g = NewShareGroup(r.Group, cfg)
		groups[r.Group] = g
	}
	member := func() *ShareMember {
		m := g.Members[r.Member]
		if m == nil {
			m = &ShareMember{ID: r.Member}
			g.Members[r.Member] = m
		}
		return m
	}
	switch {
	case r.Type == shgMetadataType && r.Tombstone:
		delete(groups, r.Group)
	case r.Type == shgMetadataType:
		g.Epoch = r.Epoch
	case r.Type == shgTargetAssignmentMetadataType && !r.Tombstone:
		g.AssignmentEpoch = r.Epoch
	case r.Type == shgMemberMetadataType && r.Tombstone:
		delete(g.Members, r.Member)
	case r.Type == shgMemberMetadataType:
		m := member()
		m.RackID, m.ClientID, m.ClientHost, m.Subscribed = r.RackID, r.ClientID, r.ClientHost, r.Subscribed
	case r.Type == shgTargetAssignmentMemberType && r.Tombstone:
		delete(g.Target, r.Member)
	case r.Type == shgTargetAssignmentMemberType:
		g.Target[r.Member] = r.Partitions
	case r.Type == shgCurrentMemberAssignmentType && !r.Tombstone:
		if m := g.Members[r.Member]; m != nil {
			m.MemberEpoch, m.Assigned = r.Epoch, r.Partitions
		}
	}
}
