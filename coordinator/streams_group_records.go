package coordinator

// Records of KIP-1071 streams groups in __consumer_offsets, in Kafka 4.x's byte format
// (group-coordinator/src/main/resources/common/message/StreamsGroup*.json). Part of
// the on-disk format; do not change.
//
// Keys are as the consumer-group records' (an int16 type, then int16-length strings);
// values an int16 version (0) and flexible fields, tagged fields at the end.
//
//	type 17 StreamsGroupMetadata               key (group)          value Epoch int32, MetadataHash int64,
//	                                                                      tag 0 ValidatedTopologyEpoch int32 (-1)
//	type 19 StreamsGroupMemberMetadata         key (group, member)  value InstanceId?, RackId?, ClientId, ClientHost,
//	                                                                      RebalanceTimeoutMs, TopologyEpoch, ProcessId,
//	                                                                      UserEndpoint? {Host, Port uint16}, ClientTags [Key, Value]
//	type 20 StreamsGroupTargetAssignmentMetadata key (group)        value AssignmentEpoch int32
//	type 21 StreamsGroupTargetAssignmentMember key (group, member)  value ActiveTasks, StandbyTasks, WarmupTasks
//	                                                                      [SubtopologyId, Partitions []int32]
//	type 22 StreamsGroupCurrentMemberAssignment key (group, member) value MemberEpoch, PreviousMemberEpoch, State int8,
//	                                                                      Active, Standby, Warmup, and the three
//	                                                                      PendingRevocation task lists
//	type 23 StreamsGroupTopology               key (group)          value Epoch int32, Subtopologies [SubtopologyId,
//	                                                                      SourceTopics, SourceTopicRegex, StateChangelogTopics,
//	                                                                      RepartitionSinkTopics, RepartitionSourceTopics,
//	                                                                      CopartitionGroups]
//
// Type 18 (StreamsGroupPartitionMetadata) is gone from Kafka 4.x, replaced by the
// metadata hash; it is skipped when read. A group is deleted by tombstoning every
// member's three records, then the target assignment metadata, the topology and the
// group epoch, as Kafka's StreamsGroup.createGroupTombstoneRecords.

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Streams group record types (part of the on-disk format; do not change).
const (
	sgMetadataType                 int16 = 17
	sgPartitionMetadataType        int16 = 18 // Kafka 4.0 only; skipped
	sgMemberMetadataType           int16 = 19
	sgTargetAssignmentMetadataType int16 = 20
	sgTargetAssignmentMemberType   int16 = 21
	sgCurrentMemberAssignmentType  int16 = 22
	sgTopologyType                 int16 = 23
)

// TaskSet is a set of tasks: subtopology id to its partitions, sorted.
type TaskSet map[string][]int32

// StreamsTasks are a member's tasks by role.
type StreamsTasks struct {
	Active, Standby, Warmup TaskSet
}

// streamsTopology is StreamsGroupTopologyValue: the topology the group was
// initialized with.
type streamsTopology struct {
	Epoch         int32
	Subtopologies []streamsSubtopology // in the order the client sent them
}

type streamsSubtopology struct {
	ID                      string
	SourceTopics            []string
	SourceTopicRegex        []string
	StateChangelogTopics    []streamsTopicInfo
	RepartitionSinkTopics   []string
	RepartitionSourceTopics []streamsTopicInfo
	CopartitionGroups       []streamsCopartitionGroup
}

type streamsTopicInfo struct {
	Name              string
	Partitions        int32 // 0: not enforced
	ReplicationFactor int16 // 0: the broker default
	Configs           []keyValue
}

type streamsCopartitionGroup struct {
	SourceTopics, SourceTopicRegex, RepartitionSourceTopics []int16
}

type keyValue struct{ Key, Value string }

// streamsMemberMetadata is StreamsGroupMemberMetadataValue.
type streamsMemberMetadata struct {
	InstanceID         *string
	RackID             *string
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	TopologyEpoch      int32
	ProcessID          string
	UserEndpoint       *streamsEndpoint
	ClientTags         []keyValue
}

type streamsEndpoint struct {
	Host string
	Port uint16
}

// StreamsMemberState is a streams member's reconciliation state; the values are
// Kafka's streams MemberState bytes (part of the on-disk format; do not change).
type StreamsMemberState int8

// Streams member states.
const (
	StreamsMemberStable          StreamsMemberState = 1
	StreamsMemberUnrevokedTasks  StreamsMemberState = 2
	StreamsMemberUnreleasedTasks StreamsMemberState = 3
)

func (s StreamsMemberState) String() string {
	switch s {
	case StreamsMemberStable:
		return "STABLE"
	case StreamsMemberUnrevokedTasks:
		return "UNREVOKED_TASKS"
	case StreamsMemberUnreleasedTasks:
		return "UNRELEASED_TASKS"
	}
	return "UNKNOWN"
}

// streamsCurrentAssignment is StreamsGroupCurrentMemberAssignmentValue.
type streamsCurrentAssignment struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               StreamsMemberState
	Assigned            StreamsTasks
	Pending             StreamsTasks // pending revocation
}

// sgRecord is one streams-group record in typed form. Exactly one value field
// matches Type; all are nil/zero for a tombstone.
type sgRecord struct {
	Type      int16
	Group     string
	Member    string // types 19, 21, 22
	Tombstone bool

	Epoch                  int32 // types 17 and 20
	MetadataHash           int64 // type 17
	ValidatedTopologyEpoch int32 // type 17 (-1: none)
	MemberMD               *streamsMemberMetadata
	Target                 *StreamsTasks
	Current                *streamsCurrentAssignment
	Topology               *streamsTopology
}

func (r sgRecord) encode() Record {
	k := binary.BigEndian.AppendUint16(nil, uint16(r.Type))
	k = appendString(k, r.Group)
	switch r.Type {
	case sgMemberMetadataType, sgTargetAssignmentMemberType, sgCurrentMemberAssignmentType:
		k = appendString(k, r.Member)
	}
	if r.Tombstone {
		return Record{Key: k}
	}
	v := binary.BigEndian.AppendUint16(nil, 0)
	switch r.Type {
	case sgMetadataType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
		v = binary.BigEndian.AppendUint64(v, uint64(r.MetadataHash))
		if r.ValidatedTopologyEpoch != -1 {
			v = appendUvarint(v, 1) // one tagged field: tag 0, 4 bytes
			v = appendUvarint(v, 0)
			v = appendUvarint(v, 4)
			v = binary.BigEndian.AppendUint32(v, uint32(r.ValidatedTopologyEpoch))
			return Record{Key: k, Value: v}
		}
	case sgTargetAssignmentMetadataType:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
	case sgMemberMetadataType:
		m := r.MemberMD
		v = appendCompactNullableString(v, m.InstanceID)
		v = appendCompactNullableString(v, m.RackID)
		v = appendCompactString(v, m.ClientID)
		v = appendCompactString(v, m.ClientHost)
		v = binary.BigEndian.AppendUint32(v, uint32(m.RebalanceTimeoutMs))
		v = binary.BigEndian.AppendUint32(v, uint32(m.TopologyEpoch))
		v = appendCompactString(v, m.ProcessID)
		if e := m.UserEndpoint; e != nil {
			v = append(v, 1)
			v = appendCompactString(v, e.Host)
			v = binary.BigEndian.AppendUint16(v, e.Port)
			v = append(v, 0)
		} else {
			v = append(v, 0xff)
		}
		v = appendKeyValues(v, m.ClientTags)
	case sgTargetAssignmentMemberType:
		v = appendStreamsTasks(v, *r.Target)
	case sgCurrentMemberAssignmentType:
		c := r.Current
		v = binary.BigEndian.AppendUint32(v, uint32(c.MemberEpoch))
		v = binary.BigEndian.AppendUint32(v, uint32(c.PreviousMemberEpoch))
		v = append(v, byte(c.State))
		v = appendStreamsTasks(v, c.Assigned)
		v = appendStreamsTasks(v, c.Pending)
	case sgTopologyType:
		t := r.Topology
		v = binary.BigEndian.AppendUint32(v, uint32(t.Epoch))
		v = appendUvarint(v, len(t.Subtopologies)+1)
		for _, s := range t.Subtopologies {
			v = appendCompactString(v, s.ID)
			v = appendCompactStrings(v, s.SourceTopics)
			v = appendCompactStrings(v, s.SourceTopicRegex)
			v = appendTopicInfos(v, s.StateChangelogTopics)
			v = appendCompactStrings(v, s.RepartitionSinkTopics)
			v = appendTopicInfos(v, s.RepartitionSourceTopics)
			v = appendUvarint(v, len(s.CopartitionGroups)+1)
			for _, g := range s.CopartitionGroups {
				for _, idx := range [][]int16{g.SourceTopics, g.SourceTopicRegex, g.RepartitionSourceTopics} {
					v = appendUvarint(v, len(idx)+1)
					for _, i := range idx {
						v = binary.BigEndian.AppendUint16(v, uint16(i))
					}
				}
				v = append(v, 0)
			}
			v = append(v, 0)
		}
	}
	v = append(v, 0) // tagged fields
	return Record{Key: k, Value: v}
}

func appendCompactStrings(b []byte, ss []string) []byte {
	b = appendUvarint(b, len(ss)+1)
	for _, s := range ss {
		b = appendCompactString(b, s)
	}
	return b
}

func appendKeyValues(b []byte, kvs []keyValue) []byte {
	b = appendUvarint(b, len(kvs)+1)
	for _, kv := range kvs {
		b = appendCompactString(b, kv.Key)
		b = appendCompactString(b, kv.Value)
		b = append(b, 0)
	}
	return b
}

func appendTopicInfos(b []byte, ts []streamsTopicInfo) []byte {
	b = appendUvarint(b, len(ts)+1)
	for _, t := range ts {
		b = appendCompactString(b, t.Name)
		b = binary.BigEndian.AppendUint32(b, uint32(t.Partitions))
		b = binary.BigEndian.AppendUint16(b, uint16(t.ReplicationFactor))
		b = appendKeyValues(b, t.Configs)
		b = append(b, 0)
	}
	return b
}

// appendStreamsTasks writes the three []TaskIds arrays of one StreamsTasks.
func appendStreamsTasks(b []byte, t StreamsTasks) []byte {
	for _, ts := range []TaskSet{t.Active, t.Standby, t.Warmup} {
		ids := ts.subtopologies()
		b = appendUvarint(b, len(ids)+1)
		for _, id := range ids {
			b = appendCompactString(b, id)
			ps := ts[id]
			b = appendUvarint(b, len(ps)+1)
			for _, p := range ps {
				b = binary.BigEndian.AppendUint32(b, uint32(p))
			}
			b = append(b, 0)
		}
	}
	return b
}

// subtopologies lists the subtopologies holding at least one task, sorted.
func (ts TaskSet) subtopologies() []string {
	out := make([]string, 0, len(ts))
	for id, ps := range ts {
		if len(ps) > 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// decodeStreamsRecord decodes a record of types 17-23 (nil, nil for type 18).
func decodeStreamsRecord(typ int16, key, value []byte) (*sgRecord, error) {
	if typ == sgPartitionMetadataType {
		return nil, nil
	}
	rd := &reader{b: key[2:]}
	r := &sgRecord{Type: typ, Group: rd.str(), ValidatedTopologyEpoch: -1}
	switch typ {
	case sgMemberMetadataType, sgTargetAssignmentMemberType, sgCurrentMemberAssignmentType:
		r.Member = rd.str()
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%w: streams group record key type %d", ErrCorruptRecord, typ)
	}
	if value == nil {
		r.Tombstone = true
		return r, nil
	}
	rd = &reader{b: value}
	rd.i16() // value version: 0 in Kafka 4.x (later additions are tagged)
	switch typ {
	case sgMetadataType:
		r.Epoch = rd.i32()
		r.MetadataHash = rd.i64()
		for n := rd.uvarint(); n > 0 && rd.err == nil; n-- {
			tag, size := rd.uvarint(), rd.uvarint()
			b := rd.need(size)
			if tag == 0 && len(b) == 4 {
				r.ValidatedTopologyEpoch = int32(binary.BigEndian.Uint32(b))
			}
		}
		if rd.err != nil {
			return nil, fmt.Errorf("%w: streams group record value type %d: %v", ErrCorruptRecord, typ, rd.err)
		}
		return r, nil
	case sgTargetAssignmentMetadataType:
		r.Epoch = rd.i32()
	case sgMemberMetadataType:
		m := &streamsMemberMetadata{}
		m.InstanceID = rd.cnstr()
		m.RackID = rd.cnstr()
		m.ClientID = rd.cstr()
		m.ClientHost = rd.cstr()
		m.RebalanceTimeoutMs = rd.i32()
		m.TopologyEpoch = rd.i32()
		m.ProcessID = rd.cstr()
		if rd.i8() >= 0 {
			e := &streamsEndpoint{Host: rd.cstr()}
			if b := rd.need(2); b != nil {
				e.Port = binary.BigEndian.Uint16(b)
			}
			rd.tags()
			m.UserEndpoint = e
		}
		m.ClientTags = rd.keyValues()
		r.MemberMD = m
	case sgTargetAssignmentMemberType:
		t := rd.streamsTasks()
		r.Target = &t
	case sgCurrentMemberAssignmentType:
		c := &streamsCurrentAssignment{}
		c.MemberEpoch = rd.i32()
		c.PreviousMemberEpoch = rd.i32()
		c.State = StreamsMemberState(rd.i8())
		c.Assigned = rd.streamsTasks()
		c.Pending = rd.streamsTasks()
		r.Current = c
	case sgTopologyType:
		t := &streamsTopology{Epoch: rd.i32()}
		for n := rd.arrayLen(); n > 0 && rd.err == nil; n-- {
			s := streamsSubtopology{ID: rd.cstr()}
			s.SourceTopics = rd.cstrs()
			s.SourceTopicRegex = rd.cstrs()
			s.StateChangelogTopics = rd.topicInfos()
			s.RepartitionSinkTopics = rd.cstrs()
			s.RepartitionSourceTopics = rd.topicInfos()
			for g := rd.arrayLen(); g > 0 && rd.err == nil; g-- {
				var cg streamsCopartitionGroup
				for _, dst := range []*[]int16{&cg.SourceTopics, &cg.SourceTopicRegex, &cg.RepartitionSourceTopics} {
					for i := rd.arrayLen(); i > 0 && rd.err == nil; i-- {
						*dst = append(*dst, rd.i16())
					}
				}
				rd.tags()
				s.CopartitionGroups = append(s.CopartitionGroups, cg)
			}
			rd.tags()
			t.Subtopologies = append(t.Subtopologies, s)
		}
		r.Topology = t
	}
	rd.tags()
	if rd.err != nil {
		return nil, fmt.Errorf("%w: streams group record value type %d: %v", ErrCorruptRecord, typ, rd.err)
	}
	return r, nil
}

func (r *reader) cstrs() []string {
	out := []string{}
	for n := r.arrayLen(); n > 0 && r.err == nil; n-- {
		out = append(out, r.cstr())
	}
	return out
}

func (r *reader) keyValues() []keyValue {
	var out []keyValue
	for n := r.arrayLen(); n > 0 && r.err == nil; n-- {
		kv := keyValue{Key: r.cstr(), Value: r.cstr()}
		r.tags()
		out = append(out, kv)
	}
	return out
}

func (r *reader) topicInfos() []streamsTopicInfo {
	var out []streamsTopicInfo
	for n := r.arrayLen(); n > 0 && r.err == nil; n-- {
		t := streamsTopicInfo{Name: r.cstr(), Partitions: r.i32(), ReplicationFactor: r.i16()}
		t.Configs = r.keyValues()
		r.tags()
		out = append(out, t)
	}
	return out
}

// streamsTasks reads three []TaskIds arrays; a tagged field of an entry (Kafka's
// AssignmentEpochs) is skipped.
func (r *reader) streamsTasks() StreamsTasks {
	var t StreamsTasks
	for _, dst := range []*TaskSet{&t.Active, &t.Standby, &t.Warmup} {
		ts := TaskSet{}
		for n := r.arrayLen(); n > 0 && r.err == nil; n-- {
			id := r.cstr()
			var ps []int32
			for k := r.arrayLen(); k > 0 && r.err == nil; k-- {
				ps = append(ps, r.i32())
			}
			r.tags()
			if len(ps) > 0 {
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				ts[id] = append(ts[id], ps...)
			}
		}
		*dst = ts
	}
	return t
}
