package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestJoinGroupV0V1 drives a classic group with JoinGroup v0 and v1, which Kafka 4.4
// serves again (KAFKA-19444, for librdkafka before 2.11), as kmsg encodes them over a
// real socket: v0-3 join without MEMBER_ID_REQUIRED, v0's rebalance timeout is its
// session timeout (the group waits for the member that has not rejoined), and the
// rebalance ends with both members in generation 2.
func TestJoinGroupV0V1(t *testing.T) {
	b := startTestBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	a, other := dialRaw(t, b.Addr(), "old-a"), dialRaw(t, b.Addr(), "old-b")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 0, "old"
	waitFor(t, 20*time.Second, "the group coordinator", func() bool {
		return a.roundTrip(fc).(*kmsg.FindCoordinatorResponse).ErrorCode == 0
	})

	join := func(version int16, member string) *kmsg.JoinGroupRequest {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID = version, "old", member
		req.SessionTimeoutMillis, req.ProtocolType = 6000, "consumer"
		if version >= 1 {
			req.RebalanceTimeoutMillis = 30000
		}
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		return req
	}

	// FindCoordinator answers once the coordinator's partition is led; its load may
	// still be under way, which a client retries (COORDINATOR_LOAD_IN_PROGRESS).
	var first *kmsg.JoinGroupResponse
	waitFor(t, 20*time.Second, "the coordinator to finish loading", func() bool {
		first = a.roundTrip(join(0, "")).(*kmsg.JoinGroupResponse)
		return first.ErrorCode != kerr.CoordinatorLoadInProgress.Code
	})
	if first.ErrorCode != 0 || first.Generation != 1 || first.MemberID == "" || first.LeaderID != first.MemberID ||
		first.Protocol == nil || *first.Protocol != "range" || len(first.Members) != 1 {
		t.Fatalf("v0 join of a new group: %+v", first)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "old", 1, first.MemberID
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = first.MemberID, []byte{0, 0, 0, 0, 0, 0, 0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	if r := a.roundTrip(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A second member joins with v1: the join parks until the first rejoins (within
	// its v0 rebalance timeout, 6 s), which its heartbeat is told.
	other.send(join(1, ""))
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "old", 1, first.MemberID
	waitFor(t, 5*time.Second, "REBALANCE_IN_PROGRESS on the first member's heartbeat", func() bool {
		return a.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	again := a.roundTrip(join(0, first.MemberID)).(*kmsg.JoinGroupResponse)
	second := kmsg.NewPtrJoinGroupResponse()
	second.Version = 1
	other.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := other.readInto(second); err != nil {
		t.Fatalf("v1 join: %v", err)
	}
	if again.ErrorCode != 0 || again.Generation != 2 || again.LeaderID != first.MemberID || len(again.Members) != 2 {
		t.Fatalf("v0 rejoin: %+v", again)
	}
	if second.ErrorCode != 0 || second.Generation != 2 || second.MemberID == "" || second.MemberID == first.MemberID ||
		second.LeaderID != first.MemberID || len(second.Members) != 0 {
		t.Fatalf("v1 join: %+v", second)
	}
}
