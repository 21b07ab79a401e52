package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestElectLeaderChange: one partition's PREFERRED and UNCLEAN election, case by case
// (ReplicationControlManager.electLeader with PartitionChangeBuilder).
func TestElectLeaderChange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		typ              int8
		replicas, isr    []int32
		leader           int32
		fenced, shutting []int32
		wantCode         int16
		wantLeader       int32 // when wantCode is 0
		wantISR          []int32
	}{
		{"preferred leads already", ElectionPreferred, []int32{1, 2, 3}, []int32{1, 2, 3}, 1, nil, nil, kerr.ElectionNotNeeded.Code, 0, nil},
		{"preferred in the ISR and live", ElectionPreferred, []int32{1, 2, 3}, []int32{2, 3, 1}, 2, nil, nil, 0, 1, []int32{2, 3, 1}},
		{"preferred out of the ISR", ElectionPreferred, []int32{1, 2, 3}, []int32{2, 3}, 2, nil, nil, kerr.PreferredLeaderNotAvailable.Code, 0, nil},
		{"preferred fenced", ElectionPreferred, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, []int32{1}, nil, kerr.PreferredLeaderNotAvailable.Code, 0, nil},
		{"preferred shutting down", ElectionPreferred, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, nil, []int32{1}, kerr.PreferredLeaderNotAvailable.Code, 0, nil},
		{"leaderless: the next valid replica", ElectionPreferred, []int32{1, 2, 3}, []int32{3}, -1, nil, nil, 0, 3, []int32{3}},
		{"leaderless, no valid replica", ElectionPreferred, []int32{1, 2, 3}, []int32{3}, -1, []int32{3}, nil, kerr.PreferredLeaderNotAvailable.Code, 0, nil},
		{"unclean with a leader", ElectionUnclean, []int32{1, 2, 3}, []int32{2}, 2, nil, nil, kerr.ElectionNotNeeded.Code, 0, nil},
		{"unclean, a live ISR member first", ElectionUnclean, []int32{1, 2, 3}, []int32{3}, -1, nil, nil, 0, 3, []int32{3}},
		{"unclean: first live replica, ISR of itself", ElectionUnclean, []int32{1, 2, 3}, []int32{1}, -1, []int32{1}, nil, 0, 2, []int32{2}},
		{"unclean skips fenced replicas", ElectionUnclean, []int32{1, 2, 3}, []int32{1}, -1, []int32{1, 2}, nil, 0, 3, []int32{3}},
		{"unclean, nobody live", ElectionUnclean, []int32{1, 2}, []int32{1}, -1, []int32{1, 2}, nil, kerr.EligibleLeadersNotAvailable.Code, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := imageWith(tc.replicas, tc.isr, tc.leader, tc.fenced, tc.shutting)
			ch, code, _ := electLeaderChange(img, img.Topics["t"], "t", 0, tc.typ)
			if code != tc.wantCode || (ch != nil) != (code == 0) {
				t.Fatalf("code %v change %+v, want %v", kerr.ErrorForCode(code), ch, kerr.ErrorForCode(tc.wantCode))
			}
			if code != 0 {
				return
			}
			got := after(img, []Record{{PartitionChange: ch}})
			if got.Leader != tc.wantLeader || !slices.Equal(got.ISR, tc.wantISR) || got.LeaderEpoch != 8 || got.PartitionEpoch != 10 {
				t.Fatalf("got leader %d ISR %v epochs %d/%d, want %d %v 8/10", got.Leader, got.ISR, got.LeaderEpoch, got.PartitionEpoch, tc.wantLeader, tc.wantISR)
			}
		})
	}
	img := imageWith([]int32{1}, []int32{1}, 1, nil, nil)
	if _, code, msg := electLeaderChange(img, nil, "nope", 0, ElectionPreferred); code != kerr.UnknownTopicOrPartition.Code || *msg != "No such topic as nope" {
		t.Errorf("unknown topic: %v %v", kerr.ErrorForCode(code), *msg)
	}
	for _, p := range []int32{1, -1} {
		if _, code, msg := electLeaderChange(img, img.Topics["t"], "t", p, ElectionPreferred); code != kerr.UnknownTopicOrPartition.Code || *msg != fmt.Sprintf("No such partition as t-%d", p) {
			t.Errorf("unknown partition %d: %v %v", p, kerr.ErrorForCode(code), *msg)
		}
	}
}

// imageOf builds an image with brokers 1..5 (fenced as given) and topic "t" with one
// partition per entry of parts: replicas, then the leader; every replica in the ISR.
func imageOf(fenced []int32, parts ...[]int32) *MetadataImage {
	img := imageWith([]int32{1}, []int32{1}, 1, fenced, nil)
	t := img.Topics["t"]
	t.Partitions = nil
	for _, p := range parts {
		replicas := p[:len(p)-1]
		t.Partitions = append(t.Partitions, PartitionImage{Replicas: replicas, ISR: slices.Clone(replicas), Leader: p[len(p)-1]})
	}
	return img
}

// TestRebalanceElections: the automatic rebalance's decision (the ZooKeeper
// controller's checkAndTriggerAutoLeaderRebalance rule).
func TestRebalanceElections(t *testing.T) {
	// Broker 1 is preferred for 4 partitions and leads 3 of them: 25% imbalance.
	quarter := [][]int32{{1, 2, 1}, {1, 2, 1}, {1, 2, 1}, {1, 2, 2}, {2, 1, 2}}
	for _, tc := range []struct {
		name    string
		img     *MetadataImage
		percent int32
		want    []int32 // partitions given back, in order
	}{
		{"balanced", imageOf(nil, []int32{1, 2, 1}, []int32{2, 1, 2}), 10, nil},
		{"above the percentage", imageOf(nil, quarter...), 10, []int32{3}},
		{"at the percentage: not above", imageOf(nil, quarter...), 25, nil},
		{"just below it", imageOf(nil, quarter...), 24, []int32{3}},
		{"0 balances any imbalance (KRaft's behaviour)", imageOf(nil, quarter...), 0, []int32{3}},
		{"preferred replica fenced: not moved", imageOf([]int32{1}, quarter...), 10, nil},
		{"several brokers", imageOf(nil, []int32{1, 2, 2}, []int32{2, 3, 3}, []int32{3, 1, 3}, []int32{4, 5, 4}), 10, []int32{0, 1}},
		{"leaderless partition counts and is given back", imageOf(nil, []int32{1, 2, -1}), 10, []int32{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, more := rebalanceElections(tc.img, tc.percent, 100)
			var got []int32
			for _, r := range recs {
				got = append(got, r.PartitionChange.Partition)
				p := tc.img.Topics["t"].Partitions[r.PartitionChange.Partition]
				if *r.PartitionChange.Leader != p.Replicas[0] || r.PartitionChange.ISR != nil {
					t.Errorf("change %+v does not just elect the preferred replica of %+v", r.PartitionChange, p)
				}
			}
			if !slices.Equal(got, tc.want) || more {
				t.Fatalf("moved %v (more %v), want %v", got, more, tc.want)
			}
		})
	}
	t.Run("batches", func(t *testing.T) {
		img := imageOf(nil, []int32{1, 2, 2}, []int32{1, 2, 2}, []int32{1, 2, 2})
		if recs, more := rebalanceElections(img, 10, 2); len(recs) != 2 || !more {
			t.Fatalf("%d changes, more %v; want 2, true", len(recs), more)
		}
		if recs, more := rebalanceElections(img, 10, 3); len(recs) != 3 || more {
			t.Fatalf("%d changes, more %v; want 3, false", len(recs), more)
		}
	})
}

func electReq(version int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(version)
	req.ElectionType = typ
	if topics != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range topics {
			if !yield(k) {
				return
			}
		}
	}) {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, topics[name]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// codes flattens an ElectLeaders answer to "topic-partition" → error code.
func codes(resp *kmsg.ElectLeadersResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		out[t.Topic] = -100 // the topic is listed
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

// TestElectLeadersRequest: broker 1 restarts and loses leadership of "a"; a preferred
// election gives it back once it is in the ISR again, with the leader and partition
// epochs bumped, and answers every case with Kafka's codes.
func TestElectLeadersRequest(t *testing.T) {
	c, _, epochs := lifecycleController(t, 3)
	createAssigned(t, c, "a", 1, 2, 3)
	createAssigned(t, c, "b", 2, 3, 1)
	if hb := heartbeat(c, 1, epochs[1], c.Image().Offset, true); !hb.ShouldShutdown {
		t.Fatalf("controlled shutdown of 1: %+v", hb)
	}
	epochs[1] = register(t, c, 1)
	if hb := heartbeat(c, 1, epochs[1], c.Image().Offset, false); hb.IsFenced {
		t.Fatalf("1 not unfenced: %+v", hb)
	}
	a := c.Image().Topics["a"]
	if p := a.Partitions[0]; p.Leader != 2 || slices.Contains(p.ISR, 1) {
		t.Fatalf("a after 1's restart: %+v", p)
	}
	preferredA := electReq(2, ElectionPreferred, map[string][]int32{"a": {0}})
	if got := codes(c.ElectLeaders(preferredA)); got["a-0"] != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("1 out of the ISR: %v", kerr.ErrorForCode(got["a-0"]))
	}
	// Broker 1 caught up: the leader adds it back.
	p := a.Partitions[0]
	if r := alterISR(c, 2, epochs[2], a, p.LeaderEpoch, p.PartitionEpoch, 2, 3, 1); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ISR expansion: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	before := c.Image().Topics["a"].Partitions[0]
	resp := c.ElectLeaders(preferredA)
	if got := codes(resp); resp.ErrorCode != 0 || got["a-0"] != 0 {
		t.Fatalf("preferred election: top %v, a-0 %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(got["a-0"]))
	}
	now := c.Image().Topics["a"].Partitions[0]
	if now.Leader != 1 || now.LeaderEpoch != before.LeaderEpoch+1 || now.PartitionEpoch != before.PartitionEpoch+1 || !slices.Equal(now.ISR, before.ISR) {
		t.Fatalf("after the election %+v (before %+v)", now, before)
	}

	for _, tc := range []struct {
		name string
		req  *kmsg.ElectLeadersRequest
		want map[string]int16
	}{
		{"not needed, unknown topic and partition, a partition named twice",
			electReq(2, ElectionPreferred, map[string][]int32{"a": {0, 0, 7}, "nope": {0}}),
			map[string]int16{"a": -100, "a-0": kerr.ElectionNotNeeded.Code, "a-7": kerr.UnknownTopicOrPartition.Code, "nope": -100, "nope-0": kerr.UnknownTopicOrPartition.Code}},
		{"null topics: every topic, partitions not needing an election left out",
			electReq(1, ElectionPreferred, nil), map[string]int16{"a": -100, "b": -100}},
		{"unclean with a leader", electReq(2, ElectionUnclean, map[string][]int32{"b": {0}}), map[string]int16{"b": -100, "b-0": kerr.ElectionNotNeeded.Code}},
		{"v0 is preferred whatever the field says", electReq(0, ElectionUnclean, map[string][]int32{"b": {0}}), map[string]int16{"b": -100, "b-0": kerr.ElectionNotNeeded.Code}},
		{"unknown election type", electReq(2, 5, map[string][]int32{"b": {0}}), map[string]int16{"b": -100, "b-0": kerr.InvalidRequest.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offset := c.Image().Offset
			resp := c.ElectLeaders(tc.req)
			if got := codes(resp); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if c.Image().Offset != offset {
				t.Fatal("an election that was not needed wrote records")
			}
		})
	}
	if resp := c.ElectLeaders(electReq(2, 5, nil)); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type, top level: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A null-topics election that has work to do reports it.
	heartbeat(c, 2, epochs[2], c.Image().Offset, true) // 2 hands b to 3
	epochs[2] = register(t, c, 2)
	heartbeat(c, 2, epochs[2], c.Image().Offset, false)
	b := c.Image().Topics["b"]
	p = b.Partitions[0]
	if p.Leader != 3 {
		t.Fatalf("b after 2's restart: %+v", p)
	}
	alterISR(c, 3, epochs[3], b, p.LeaderEpoch, p.PartitionEpoch, append(slices.Clone(p.ISR), 2)...)
	if got := codes(c.ElectLeaders(electReq(2, ElectionPreferred, nil))); fmt.Sprint(got) != fmt.Sprint(map[string]int16{"a": -100, "b": -100, "b-0": 0}) {
		t.Fatalf("null topics with b to elect: %v", got)
	}
	if l := c.Image().Topics["b"].Partitions[0].Leader; l != 2 {
		t.Fatalf("b's leader %d, want 2", l)
	}
}

// TestMaybeBalanceLeaders: the rebalance check commits the preferred elections.
func TestMaybeBalanceLeaders(t *testing.T) {
	c, _, epochs := lifecycleController(t, 2)
	c.cfg.LeaderImbalancePerBrokerPercentage = 10
	a := createAssigned(t, c, "a", 1, 2)
	heartbeat(c, 1, epochs[1], c.Image().Offset, true)
	epochs[1] = register(t, c, 1)
	heartbeat(c, 1, epochs[1], c.Image().Offset, false)
	c.maybeBalanceLeaders() // 1 is not in the ISR: nothing to do
	p := c.Image().Topics["a"].Partitions[0]
	if p.Leader != 2 {
		t.Fatalf("moved to a replica outside the ISR: %+v", p)
	}
	alterISR(c, 2, epochs[2], a, p.LeaderEpoch, p.PartitionEpoch, 2, 1)
	c.maybeBalanceLeaders()
	if p := c.Image().Topics["a"].Partitions[0]; p.Leader != 1 {
		t.Fatalf("not given back to its preferred replica: %+v", p)
	}
}
