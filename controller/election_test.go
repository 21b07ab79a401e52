package controller

import (
	"fmt"
	"slices"
	"testing"
)

// imageWith builds an image with brokers 1..5 (fenced / shutting down as given) and one
// topic "t" whose partition 0 has the given state.
func imageWith(replicas, isr []int32, leader int32, fenced, shutting []int32) *MetadataImage {
	img := emptyImage()
	for id := int32(1); id <= 5; id++ {
		img.Brokers[id] = BrokerImage{ID: id, Epoch: int64(id), Fenced: slices.Contains(fenced, id), InControlledShutdown: slices.Contains(shutting, id)}
	}
	t := &TopicImage{Name: "t", ID: TopicID{1}, Configs: map[string]string{},
		Partitions: []PartitionImage{{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 7, PartitionEpoch: 9}}}
	img.Topics["t"], img.TopicsByID[t.ID] = t, t
	return img
}

// after applies recs and returns partition 0 of "t".
func after(img *MetadataImage, recs []Record) PartitionImage {
	for i := range recs {
		img = apply(img, &recs[i])
	}
	return img.Topics["t"].Partitions[0]
}

// TestElectionsWithout: Kafka's rule when a broker is fenced or shuts down, case by case.
func TestElectionsWithout(t *testing.T) {
	for _, tc := range []struct {
		name             string
		replicas, isr    []int32
		leader, remove   int32
		fenced, shutting []int32
		wantLeader       int32
		wantISR          []int32
		wantLeaderEpoch  int32
	}{
		{"leader leaves: next ISR member in assignment order", []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 1, nil, nil, 2, []int32{2, 3}, 8},
		{"assignment order, not ISR order", []int32{1, 2, 3}, []int32{3, 1, 2}, 1, 1, nil, nil, 2, []int32{3, 2}, 8},
		{"skip fenced ISR members", []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 1, []int32{2}, nil, 3, []int32{2, 3}, 8},
		{"skip shutting-down ISR members", []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 1, nil, []int32{2}, 3, []int32{2, 3}, 8},
		{"follower leaves: leader stays, epoch too", []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 3, nil, nil, 1, []int32{1, 2}, 7},
		{"out-of-sync replica is never elected", []int32{1, 2, 3}, []int32{1, 3}, 1, 1, nil, nil, 3, []int32{3}, 8},
		{"last ISR member stays in the ISR, leaderless", []int32{1, 2, 3}, []int32{1}, 1, 1, nil, nil, -1, []int32{1}, 8},
		{"no live ISR member: leaderless", []int32{1, 2}, []int32{1, 2}, 1, 1, []int32{2}, nil, -1, []int32{2}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := imageWith(tc.replicas, tc.isr, tc.leader, tc.fenced, tc.shutting)
			got := after(img, electionsWithout(img, tc.remove, nil))
			if got.Leader != tc.wantLeader || !slices.Equal(got.ISR, tc.wantISR) || got.LeaderEpoch != tc.wantLeaderEpoch {
				t.Fatalf("got leader %d isr %v leader epoch %d, want %d %v %d", got.Leader, got.ISR, got.LeaderEpoch, tc.wantLeader, tc.wantISR, tc.wantLeaderEpoch)
			}
			if got.PartitionEpoch != 10 {
				t.Fatalf("partition epoch %d, want 10", got.PartitionEpoch)
			}
		})
	}
	// A broker in no ISR and leading nothing changes nothing.
	img := imageWith([]int32{1, 2, 3}, []int32{1, 2}, 1, nil, nil)
	if recs := electionsWithout(img, 3, nil); len(recs) != 0 {
		t.Fatalf("records for a broker outside the ISR: %+v", recs)
	}
}

// TestUnfenceElectsLeaderlessPartitions: an unfenced broker leads the leaderless
// partitions whose ISR holds it, and nothing else changes.
func TestUnfenceElectsLeaderlessPartitions(t *testing.T) {
	for i, tc := range []struct {
		replicas, isr []int32
		leader        int32
		unfence       int32
		wantLeader    int32
	}{
		{[]int32{1, 2}, []int32{1}, -1, 1, 1},
		{[]int32{1, 2}, []int32{2}, -1, 1, -1},  // not in the ISR: no unclean election
		{[]int32{1, 2}, []int32{1, 2}, 2, 1, 2}, // has a leader: unchanged
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			img := imageWith(tc.replicas, tc.isr, tc.leader, []int32{tc.unfence}, nil)
			got := after(img, unfenceRecords(img, img.Brokers[tc.unfence], nil))
			if got.Leader != tc.wantLeader {
				t.Fatalf("leader %d, want %d", got.Leader, tc.wantLeader)
			}
		})
	}
}
