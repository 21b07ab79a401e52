package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createWithAssignment creates topic name with one partition per assignment.
func createWithAssignment(t *testing.T, c *Controller, name string, configs map[string]string, assignments ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for i, a := range assignments {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), a
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, strp(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	if code := c.CreateTopics(req).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(code))
	}
}

// reassignReq asks for topic's partitions to move to the given targets (nil cancels).
func reassignReq(version int16, topic string, targets map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(version)
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 100; p++ {
		target, ok := targets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, target
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// reassignCodes maps "topic-partition" to its answer's code and message.
func reassignCodes(resp *kmsg.AlterPartitionAssignmentsResponse) map[string]string {
	out := map[string]string{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			s := "OK"
			if rp.ErrorCode != 0 {
				s = kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Message
			}
			if rp.ErrorMessage != nil {
				s += ": " + *rp.ErrorMessage
			}
			out[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = s
		}
	}
	return out
}

// leaderAltersISR sends the leader's AlterPartition for partition 0 of topic with a new ISR.
func leaderAltersISR(t *testing.T, c *Controller, topic string, isr ...int32) *kmsg.AlterPartitionResponseTopicPartition {
	t.Helper()
	img := c.Image()
	ti := img.Topics[topic]
	p := ti.Partitions[0]
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = p.Leader, img.Brokers[p.Leader].Epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = ti.ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.LeaderEpoch, rp.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
	for _, r := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = r, img.Brokers[r].Epoch
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.HandleAlterPartition(req)
	if resp.ErrorCode != 0 {
		t.Fatalf("AlterPartition: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return &resp.Topics[0].Partitions[0]
}

func listAll(c *Controller) *kmsg.ListPartitionReassignmentsResponse {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	return c.ListPartitionReassignments(req)
}

func partitionState(p PartitionImage) string {
	return fmt.Sprintf("replicas %v adding %v removing %v isr %v leader %d epochs %d/%d",
		p.Replicas, p.AddingReplicas, p.RemovingReplicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
}

// TestReassignmentMovesLeader: {1,2} led by 1 moves to {2,3}: replicas 2,3,1 with 3
// adding and 1 removing; the leader's ISR expansion with 3 completes it, the leadership
// goes to 2 with a new leader epoch and the old leader is told NEW_LEADER_ELECTED.
func TestReassignmentMovesLeader(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1, 2})
	before := c.Image().Topics["a"].Partitions[0]
	if before.Leader != 1 {
		t.Fatalf("leader %d, want 1", before.Leader)
	}
	if got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: {2, 3}}))); got["a-0"] != "OK" {
		t.Fatalf("answer %v", got)
	}
	p := c.Image().Topics["a"].Partitions[0]
	want := fmt.Sprintf("replicas [2 3 1] adding [3] removing [1] isr [1 2] leader 1 epochs %d/%d", before.LeaderEpoch, before.PartitionEpoch+1)
	if partitionState(p) != want {
		t.Fatalf("during the move: %s\nwant %s", partitionState(p), want)
	}
	l := listAll(c)
	if len(l.Topics) != 1 || l.Topics[0].Topic != "a" || len(l.Topics[0].Partitions) != 1 ||
		!slices.Equal(l.Topics[0].Partitions[0].Replicas, []int32{2, 3, 1}) ||
		!slices.Equal(l.Topics[0].Partitions[0].AddingReplicas, []int32{3}) ||
		!slices.Equal(l.Topics[0].Partitions[0].RemovingReplicas, []int32{1}) {
		t.Fatalf("list: %+v", l.Topics)
	}

	// 3 caught up: the leader adds it to the ISR, which completes the move.
	ans := leaderAltersISR(t, c, "a", 1, 2, 3)
	if ans.ErrorCode != kerr.NewLeaderElected.Code {
		t.Fatalf("AlterPartition answer %v, want NEW_LEADER_ELECTED", kerr.ErrorForCode(ans.ErrorCode))
	}
	p = c.Image().Topics["a"].Partitions[0]
	want = fmt.Sprintf("replicas [2 3] adding [] removing [] isr [2 3] leader 2 epochs %d/%d", before.LeaderEpoch+1, before.PartitionEpoch+2)
	if partitionState(p) != want {
		t.Fatalf("after the move: %s\nwant %s", partitionState(p), want)
	}
	if l := listAll(c); len(l.Topics) != 0 {
		t.Fatalf("still listed: %+v", l.Topics)
	}
	// Nothing left to cancel.
	if got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: nil}))); got["a-0"] != kerr.NoReassignmentInProgress.Message {
		t.Fatalf("cancel after completion: %v", got)
	}
}

// TestReassignmentLeaderStays: the leader is in the target, so it keeps leading, but a
// replica left the assignment: the leader epoch is bumped anyway, and the AlterPartition
// answer carries the new state.
func TestReassignmentLeaderStays(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1, 2})
	before := c.Image().Topics["a"].Partitions[0]
	c.AlterPartitionReassignments(reassignReq(0, "a", map[int32][]int32{0: {1, 3}}))
	// An ISR change that does not hold every target replica completes nothing.
	if ans := leaderAltersISR(t, c, "a", 1); ans.ErrorCode != 0 {
		t.Fatalf("shrink: %v", kerr.ErrorForCode(ans.ErrorCode))
	}
	if p := c.Image().Topics["a"].Partitions[0]; !isReassigning(p) || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("after a shrink: %s", partitionState(p))
	}
	ans := leaderAltersISR(t, c, "a", 1, 3)
	if ans.ErrorCode != 0 || ans.LeaderID != 1 || ans.LeaderEpoch != before.LeaderEpoch+1 || !slices.Equal(ans.ISR, []int32{1, 3}) {
		t.Fatalf("answer %+v", ans)
	}
	want := fmt.Sprintf("replicas [1 3] adding [] removing [] isr [1 3] leader 1 epochs %d/%d", before.LeaderEpoch+1, before.PartitionEpoch+3)
	if p := c.Image().Topics["a"].Partitions[0]; partitionState(p) != want {
		t.Fatalf("after the move: %s\nwant %s", partitionState(p), want)
	}
}

// TestReassignmentCompletesAtOnce: a target already in the ISR (a reordering, a
// smaller replica set) completes in the request's own record.
func TestReassignmentCompletesAtOnce(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1, 2, 3}, []int32{1, 2, 3})
	before := c.Image().Topics["a"].Partitions[0]
	resp := c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: {2, 3}, 1: {3, 2, 1}}))
	if got := reassignCodes(resp); got["a-0"] != "OK" || got["a-1"] != "OK" {
		t.Fatalf("answer %v", got)
	}
	img := c.Image()
	want := fmt.Sprintf("replicas [2 3] adding [] removing [] isr [2 3] leader 2 epochs %d/%d", before.LeaderEpoch+1, before.PartitionEpoch+1)
	if p := img.Topics["a"].Partitions[0]; partitionState(p) != want {
		t.Fatalf("shrunk: %s\nwant %s", partitionState(p), want)
	}
	// A reordering removes nobody: no leader epoch bump, the leader stays.
	want = fmt.Sprintf("replicas [3 2 1] adding [] removing [] isr [1 2 3] leader 1 epochs %d/%d", before.LeaderEpoch, before.PartitionEpoch+1)
	if p := img.Topics["a"].Partitions[1]; partitionState(p) != want {
		t.Fatalf("reordered: %s\nwant %s", partitionState(p), want)
	}
	// The same target again changes nothing.
	off := c.Image().Offset
	if got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{1: {3, 2, 1}}))); got["a-1"] != "OK" || c.Image().Offset != off {
		t.Fatalf("no-op: %v, offset %d → %d", got, off, c.Image().Offset)
	}
}

// TestReassignmentCancel: cancelling reverts to the original replicas; the adding
// replicas leave the ISR and the assignment (a leader epoch bump), the leader stays.
func TestReassignmentCancel(t *testing.T) {
	c := newTestController(t, 4)
	createWithAssignment(t, c, "a", nil, []int32{1, 2})
	before := c.Image().Topics["a"].Partitions[0]
	c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: {3, 4}}))
	leaderAltersISR(t, c, "a", 1, 2, 3) // 3 caught up, 4 not yet
	if p := c.Image().Topics["a"].Partitions[0]; partitionState(p) != fmt.Sprintf("replicas [3 4 1 2] adding [3 4] removing [1 2] isr [1 2 3] leader 1 epochs %d/%d", before.LeaderEpoch, before.PartitionEpoch+2) {
		t.Fatalf("midway: %s", partitionState(p))
	}
	if got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: nil}))); got["a-0"] != "OK" {
		t.Fatalf("cancel: %v", got)
	}
	want := fmt.Sprintf("replicas [1 2] adding [] removing [] isr [1 2] leader 1 epochs %d/%d", before.LeaderEpoch+1, before.PartitionEpoch+3)
	if p := c.Image().Topics["a"].Partitions[0]; partitionState(p) != want {
		t.Fatalf("cancelled: %s\nwant %s", partitionState(p), want)
	}
}

// TestReassignmentCancelNeedsUnclean: when every ISR member is an adding replica (the
// original ones fell out), reverting is an unclean election: refused unless the topic
// allows it, then the first original replica leads with an ISR of itself.
func TestReassignmentCancelNeedsUnclean(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1})
	c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: {1, 2, 3}}))
	leaderAltersISR(t, c, "a", 1, 2)
	// The leadership moves to 2 and 1 leaves the ISR (as when 1 is fenced).
	img := c.Image()
	ch := &PartitionChangeRecord{TopicID: img.Topics["a"].ID, Partition: 0, Leader: ptr32(2), ISR: []int32{2}}
	c.mu.Lock()
	err := c.commit([]Record{{PartitionChange: ch}})
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: nil})))
	if got["a-0"] != kerr.InvalidReplicaAssignment.Message+": Unable to revert partition assignment for a:0 because it would require an unclean leader election." {
		t.Fatalf("cancel: %v", got)
	}
	inc := incReq(ResourceTopic, "a", op("unclean.leader.election.enable", OpSet, strp("true")))
	if code := c.IncrementalAlterConfigs(inc).Resources[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if got := reassignCodes(c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: nil}))); got["a-0"] != "OK" {
		t.Fatalf("cancel with unclean allowed: %v", got)
	}
	if p := c.Image().Topics["a"].Partitions[0]; !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 || isReassigning(p) {
		t.Fatalf("reverted: %s", partitionState(p))
	}
}

func ptr32(v int32) *int32 { return &v }

// TestReassignmentErrors: Kafka's per-partition errors and messages.
func TestReassignmentErrors(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1, 2}, []int32{2, 3})
	resp := c.AlterPartitionReassignments(reassignReq(0, "nope", map[int32][]int32{0: {1}}))
	if got := reassignCodes(resp); got["nope-0"] != kerr.UnknownTopicOrPartition.Message+": Unable to find a topic named nope." {
		t.Errorf("unknown topic: %v", got)
	}
	resp = c.AlterPartitionReassignments(reassignReq(0, "a", map[int32][]int32{
		0: {}, 1: {1, 1}, 5: {1}, 6: nil,
	}))
	got := reassignCodes(resp)
	for k, want := range map[string]string{
		"a-0": kerr.InvalidReplicaAssignment.Message + ": The manual partition assignment includes an empty replica list.",
		"a-1": kerr.InvalidReplicaAssignment.Message + ": The manual partition assignment includes the broker 1 more than once.",
		"a-5": kerr.UnknownTopicOrPartition.Message + ": Unable to find partition a:5.",
		"a-6": kerr.UnknownTopicOrPartition.Message + ": Unable to find partition a:6.",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	got = reassignCodes(c.AlterPartitionReassignments(reassignReq(0, "a", map[int32][]int32{0: {1, 9}, 1: nil})))
	if got["a-0"] != kerr.InvalidReplicaAssignment.Message+": The manual partition assignment includes broker 9, but no such broker is registered." {
		t.Errorf("unregistered broker: %q", got["a-0"])
	}
	if got["a-1"] != kerr.NoReassignmentInProgress.Message {
		t.Errorf("cancel without a reassignment: %q", got["a-1"])
	}

	// KIP-860: v1 with allow_replication_factor_change false.
	req := reassignReq(1, "a", map[int32][]int32{0: {1, 2, 3}, 1: {1, 3}})
	req.AllowReplicationFactorChange = false
	resp = c.AlterPartitionReassignments(req)
	if resp.AllowReplicationFactorChange {
		t.Error("answer says replication factor changes are allowed")
	}
	got = reassignCodes(resp)
	if got["a-0"] != kerr.InvalidReplicationFactor.Message+": The replication factor is changed from 2 to 3" || got["a-1"] != "OK" {
		t.Errorf("KIP-860: %v", got)
	}
	// During a move, the replica set it is heading for counts: 1,3 (replicas 1,3,2).
	req = reassignReq(1, "a", map[int32][]int32{1: {3}})
	req.AllowReplicationFactorChange = false
	if got := reassignCodes(c.AlterPartitionReassignments(req)); got["a-1"] != kerr.InvalidReplicationFactor.Message+": The replication factor is changed from 2 to 1" {
		t.Errorf("KIP-860 during a move: %v", got)
	}
	if p := c.Image().Topics["a"].Partitions[0]; isReassigning(p) {
		t.Errorf("refused partition changed: %s", partitionState(p))
	}
}

// TestReassignmentSurvivesSnapshot: adding and removing replicas are in the image
// records a snapshot is made of.
func TestReassignmentSurvivesSnapshot(t *testing.T) {
	c := newTestController(t, 3)
	createWithAssignment(t, c, "a", nil, []int32{1, 2})
	c.AlterPartitionReassignments(reassignReq(1, "a", map[int32][]int32{0: {2, 3}}))
	img := emptyImage()
	recs := ImageRecords(c.Image())
	for i := range recs {
		img = apply(img, &recs[i])
	}
	if got, want := partitionState(img.Topics["a"].Partitions[0]), partitionState(c.Image().Topics["a"].Partitions[0]); got != want {
		t.Fatalf("rebuilt %s, want %s", got, want)
	}
}
