package coordinator

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A share group survives a coordinator move: the next coordinator replays its
// records and knows its members, epochs and assignments; a member that leaves is
// gone after a move too, and a group that empties leaves nothing behind.
func TestShareGroupRecordsReplayed(t *testing.T) {
	log := newMemLog()
	c := startCoordinator(t, log, nil)
	a := c.ShareGroupHeartbeat(shareJoin("g", "a", "t"), "ca", "/ha")
	b := c.ShareGroupHeartbeat(shareJoin("g", "b", "t"), "cb", "/hb")
	if a.ErrorCode != 0 || b.ErrorCode != 0 || b.MemberEpoch != 2 {
		t.Fatalf("joins: %+v %+v", a, b)
	}
	c.Close()

	c = startCoordinator(t, log, nil)
	// b's epoch is known: its heartbeat is answered, not UNKNOWN_MEMBER_ID.
	if r := c.ShareGroupHeartbeat(shareBeat("g", "b", 2), "cb", "/hb"); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("b after the move: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	// a is one epoch behind (it never heartbeat at 2): it catches up as before the move.
	if r := c.ShareGroupHeartbeat(shareBeat("g", "a", 1), "ca", "/ha"); r.ErrorCode != 0 || r.MemberEpoch != 2 || !reflect.DeepEqual(shareAssignedOf(r), map[[16]byte][]int32{tid("t"): {0, 1, 2}}) {
		t.Fatalf("a after the move: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	// DescribeGroups (the classic API) says what Kafka 4.4 says of a share group.
	if dg := c.DescribeGroups([]string{"g"}, 6)[0]; dg.ErrorCode != kerr.GroupIDNotFound.Code || dg.ErrorMessage == nil || *dg.ErrorMessage != "Group g is not a classic group." {
		t.Fatalf("DescribeGroups of a share group: %+v", dg)
	}
	d := c.ShareGroupDescribe([]string{"g"})[0]
	if d.ErrorCode != 0 || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 || d.Members[0].ClientID != "ca" || d.Members[1].ClientHost != "/hb" {
		t.Fatalf("describe after the move: %+v", d)
	}
	leave := shareBeat("g", "a", -1)
	if r := c.ShareGroupHeartbeat(leave, "ca", "/ha"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	c.Close()

	c = startCoordinator(t, log, nil)
	d = c.ShareGroupDescribe([]string{"g"})[0]
	if d.ErrorCode != 0 || d.GroupEpoch != 3 || len(d.Members) != 1 || d.Members[0].MemberID != "b" {
		t.Fatalf("describe after a left and a move: %+v", d)
	}
	if r := c.ShareGroupHeartbeat(shareBeat("g", "b", 3), "cb", "/hb"); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("b with an epoch it was never given: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c.ShareGroupHeartbeat(shareBeat("g", "b", -1), "cb", "/hb")
	c.Close()

	c = startCoordinator(t, log, nil)
	if d := c.ShareGroupDescribe([]string{"g"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("the emptied group after a move: %+v", d)
	}
}

// A heartbeat whose records cannot be written changes nothing and says why.
func TestShareGroupWriteFailure(t *testing.T) {
	log := newMemLog()
	c := startCoordinator(t, log, nil)
	log.fail = kerr.NotEnoughReplicas
	if r := c.ShareGroupHeartbeat(shareJoin("g", "a", "t"), "ca", "/ha"); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join with a failing log: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := c.ShareGroupDescribe([]string{"g"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("a group was made by a failed join: %+v", d)
	}
	log.fail = nil
	if r := c.ShareGroupHeartbeat(shareJoin("g", "a", "t"), "ca", "/ha"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("join: %+v", r)
	}
	log.fail = errors.New("disk on fire")
	if r := c.ShareGroupHeartbeat(shareJoin("g", "b", "t"), "cb", "/hb"); r.ErrorCode == 0 {
		t.Fatal("second join answered with a failing log")
	}
	if d := c.ShareGroupDescribe([]string{"g"})[0]; d.GroupEpoch != 1 || len(d.Members) != 1 {
		t.Fatalf("a failed join changed the group: %+v", d)
	}
}

// FuzzDecodeShareGroupRecord feeds arbitrary keys and values to the share group
// record decoder, seeded with a record of every type; it must never panic, and what
// it decodes must encode back to the same.
func FuzzDecodeShareGroupRecord(f *testing.F) {
	rack := "r"
	for _, r := range []shgRecord{
		{Type: shgMemberMetadataType, Group: "g", Member: "m", RackID: &rack, ClientID: "c", ClientHost: "/h", Subscribed: []string{"a", "b"}},
		{Type: shgMetadataType, Group: "g", Epoch: 3},
		{Type: shgTargetAssignmentMetadataType, Group: "g", Epoch: 3},
		{Type: shgTargetAssignmentMemberType, Group: "g", Member: "m", Partitions: TopicPartitions{tid("t"): {0, 1}}},
		{Type: shgCurrentMemberAssignmentType, Group: "g", Member: "m", Epoch: 3, PrevEpoch: 2, Partitions: TopicPartitions{tid("t"): {1}}},
		{Type: shgMemberMetadataType, Group: "g", Member: "m", Tombstone: true},
	} {
		b := r.encode()
		f.Add(b.Key, b.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := DecodeRecord(key, value)
		if err != nil || d.Share == nil {
			return
		}
		again := d.Share.encode()
		d2, err := DecodeRecord(again.Key, again.Value)
		if err != nil || d2.Share == nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if a, b := dumpShareRecord(d.Share), dumpShareRecord(d2.Share); a != b {
			t.Fatalf("round trip changed the record:\n%s\n%s", a, b)
		}
		groups := map[string]*ShareGroup{}
		cfg := DefaultShareGroupConfig()
		replayShareGroupRecord(groups, d.Share, &cfg)
	})
}

func dumpShareRecord(r *shgRecord) string {
	return fmt.Sprintf("%d %q %q %v %d %d %v %q %q %q %v", r.Type, r.Group, r.Member, r.Tombstone, r.Epoch, r.PrevEpoch,
		deref(r.RackID), r.ClientID, r.ClientHost, r.Subscribed, r.Partitions)
}
