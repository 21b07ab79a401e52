package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A streams group's id is refused to the other kinds with Kafka's messages, and
// turns classic only once empty: the paths modern_group.go shares, seen from the
// streams side (the consumer side is TestCoordinatorConsumerGroupOffsetsAndReload).
func TestCoordinatorStreamsGroupAmongKinds(t *testing.T) {
	c := startCoordinator(t, newMemLog(), (&clock{now: time.UnixMilli(1_000_000_000)}).Now)
	if r := c.StreamsGroupHeartbeat(sgJoin("m1", "p1"), "c", "/h"); r.ErrorCode != 0 || r.MemberEpoch < 1 {
		t.Fatalf("streams join: %+v", r)
	}
	cg := c.ConsumerGroupHeartbeat(cgJoin("app", "x", "t"), "c", "/h")
	wantCode(t, "consumer join of a streams group", cg.ErrorCode, kerr.GroupIDNotFound.Code)
	if cg.ErrorMessage == nil || *cg.ErrorMessage != "Group app is not a consumer group." {
		t.Fatalf("consumer join message: %v", cg.ErrorMessage)
	}
	d := c.ConsumerGroupDescribe([]string{"app"})[0]
	if d.ErrorCode != kerr.GroupIDNotFound.Code || d.ErrorMessage == nil || *d.ErrorMessage != "Group app is not a consumer group." {
		t.Fatalf("ConsumerGroupDescribe of a streams group: %+v", d)
	}
	if d := c.StreamsGroupDescribe([]string{"app", "nope", ""}, false); d[0].ErrorCode != 0 || len(d[0].Members) != 1 ||
		d[1].ErrorCode != kerr.GroupIDNotFound.Code || *d[1].ErrorMessage != "Group nope not found." || d[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("StreamsGroupDescribe: %+v", d)
	}
	wantCode(t, "classic join of a streams group with a member", joinAndWait(t, c, joinGroupReq("app", "")).ErrorCode,
		kerr.InconsistentGroupProtocol.Code)

	if r := c.StreamsGroupHeartbeat(sgBeat("m1", -1, nil, nil), "c", "/h"); r.ErrorCode != 0 {
		t.Fatalf("streams leave: %+v", r)
	}
	if jr := joinAndWait(t, c, joinGroupReq("app", "")); jr.ErrorCode != kerr.MemberIDRequired.Code && jr.ErrorCode != 0 {
		t.Fatalf("classic join of an empty streams group: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	d2 := c.StreamsGroupDescribe([]string{"app"}, false)[0]
	if d2.ErrorCode != kerr.GroupIDNotFound.Code || *d2.ErrorMessage != "Group app is not a streams group." {
		t.Fatalf("StreamsGroupDescribe of a classic group: %+v", d2)
	}
}
