package coordinator

import (
	"fmt"
	"testing"
)

// FuzzDecodeConsumerRecord feeds arbitrary keys and values to the consumer group
// record decoder, seeded with a record of every type. It must never panic, and what
// it decodes must encode back to something that decodes the same.
func FuzzDecodeConsumerRecord(f *testing.F) {
	inst, re := "i", "t.*"
	for _, r := range []cgRecord{
		{Type: cgMetadataType, Group: "g", Epoch: 3},
		{Type: cgPartitionMetadataType, Group: "g", Subscription: map[string]TopicMetadata{"t": {ID: tid("t"), Name: "t", NumPartitions: 3}}},
		{Type: cgMemberMetadataType, Group: "g", Member: "m", Member5: &memberMetadata{InstanceID: &inst, ClientID: "c",
			ClientHost: "/h", SubscribedTopicNames: []string{"a", "b"}, SubscribedTopicRegex: &re, RebalanceTimeoutMs: 10}},
		{Type: cgTargetAssignmentMetadataType, Group: "g", Epoch: 4},
		{Type: cgTargetAssignmentMemberType, Group: "g", Member: "m", Target: TopicPartitions{tid("t"): {0, 1}}},
		{Type: cgCurrentMemberAssignmentType, Group: "g", Member: "m", Current: &currentAssignment{MemberEpoch: 2,
			PreviousMemberEpoch: 1, State: MemberUnrevokedPartitions, Assigned: TopicPartitions{tid("t"): {0}},
			PendingRevocation: TopicPartitions{tid("t"): {1}}}},
		{Type: cgMemberMetadataType, Group: "g", Member: "m", Tombstone: true},
		{Type: cgRegularExpressionType, Group: "g", Regex: "t.*", Resolved: &resolvedRegex{Topics: []string{"t", "tt"}, Version: 1, Timestamp: 2}},
	} {
		b := r.encode()
		f.Add(b.Key, b.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := DecodeRecord(key, value)
		if err != nil || d.Consumer == nil {
			return
		}
		again := d.Consumer.encode()
		d2, err := DecodeRecord(again.Key, again.Value)
		if err != nil || d2.Consumer == nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if a, b := fmt.Sprintf("%+v", dumpRecord(d.Consumer)), fmt.Sprintf("%+v", dumpRecord(d2.Consumer)); a != b {
			t.Fatalf("round trip changed the record:\n%s\n%s", a, b)
		}
	})
}

func dumpRecord(r *cgRecord) string {
	s := fmt.Sprintf("%d %q %q %v %d %v %v", r.Type, r.Group, r.Member, r.Tombstone, r.Epoch, r.Subscription, r.Target)
	if m := r.Member5; m != nil {
		s += fmt.Sprintf(" %v %v %q %q %q %v %d %v", deref(m.InstanceID), deref(m.RackID), m.ClientID, m.ClientHost,
			m.SubscribedTopicNames, deref(m.SubscribedTopicRegex), m.RebalanceTimeoutMs, deref(m.ServerAssignor))
	}
	if c := r.Current; c != nil {
		s += fmt.Sprintf(" %+v", *c)
	}
	if rr := r.Resolved; rr != nil {
		s += fmt.Sprintf(" %q %q %+v", r.Regex, rr.Topics, *rr)
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return "=" + *s
}
