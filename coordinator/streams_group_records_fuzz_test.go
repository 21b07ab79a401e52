package coordinator

import (
	"bytes"
	"testing"
)

// FuzzDecodeStreamsRecord feeds arbitrary keys and values to the streams group
// record decoder, seeded with a record of every type. It must never panic, and what
// it decodes must encode to bytes that decode and encode to the same bytes.
func FuzzDecodeStreamsRecord(f *testing.F) {
	top := topologyFromRequest(wordCount(1))
	top.Subtopologies[1].CopartitionGroups = []streamsCopartitionGroup{{RepartitionSourceTopics: []int16{0}}}
	for _, r := range []sgRecord{
		{Type: sgMetadataType, Group: "g", Epoch: 3, MetadataHash: 9, ValidatedTopologyEpoch: 1},
		{Type: sgMetadataType, Group: "g", Epoch: 3, ValidatedTopologyEpoch: -1},
		{Type: sgTopologyType, Group: "g", Topology: top},
		{Type: sgMemberMetadataType, Group: "g", Member: "m", MemberMD: &streamsMemberMetadata{ClientID: "c", ProcessID: "p",
			UserEndpoint: &streamsEndpoint{Host: "h", Port: 1}, ClientTags: []keyValue{{"a", "b"}}}},
		{Type: sgTargetAssignmentMetadataType, Group: "g", Epoch: 4},
		{Type: sgTargetAssignmentMemberType, Group: "g", Member: "m", Target: &StreamsTasks{Active: TaskSet{"0": {0, 1}}}},
		{Type: sgCurrentMemberAssignmentType, Group: "g", Member: "m", Current: &streamsCurrentAssignment{MemberEpoch: 2,
			State: StreamsMemberUnrevokedTasks, Assigned: StreamsTasks{Standby: TaskSet{"1": {2}}}, Pending: StreamsTasks{Active: TaskSet{"0": {3}}}}},
		{Type: sgMemberMetadataType, Group: "g", Member: "m", Tombstone: true},
	} {
		b := r.encode()
		f.Add(b.Key, b.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := DecodeRecord(key, value)
		if err != nil || d.Streams == nil {
			return
		}
		once := d.Streams.encode()
		d2, err := DecodeRecord(once.Key, once.Value)
		if err != nil || d2.Streams == nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		twice := d2.Streams.encode()
		if !bytes.Equal(once.Key, twice.Key) || !bytes.Equal(once.Value, twice.Value) {
			t.Fatalf("round trip changed the record:\n%x %x\n%x %x", once.Key, once.Value, twice.Key, twice.Value)
		}
	})
}
