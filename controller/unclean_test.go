package controller

import (
	"slices"
	"testing"
)

func allowUnclean(*MetadataImage, *TopicImage) bool { return true }

// TestUncleanElection: where no ISR member is active and the topic allows it, the
// first active replica in assignment order leads with an ISR of itself; otherwise
// nothing changes (Kafka's PartitionChangeBuilder with Election.UNCLEAN).
func TestUncleanElection(t *testing.T) {
	t.Run("leader fenced, the rest of the ISR gone", func(t *testing.T) {
		img := imageWith([]int32{1, 2, 3}, []int32{1}, 1, nil, nil)
		got := after(img, electionsWithout(img, 1, allowUnclean))
		if got.Leader != 2 || !slices.Equal(got.ISR, []int32{2}) || got.LeaderEpoch != 8 {
			t.Fatalf("leader %d ISR %v epoch %d, want 2 [2] 8", got.Leader, got.ISR, got.LeaderEpoch)
		}
		if got := after(img, electionsWithout(img, 1, nil)); got.Leader != -1 || !slices.Equal(got.ISR, []int32{1}) {
			t.Fatalf("unclean off: leader %d ISR %v, want -1 [1]", got.Leader, got.ISR)
		}
	})
	t.Run("a clean candidate wins", func(t *testing.T) {
		img := imageWith([]int32{1, 2, 3}, []int32{1, 3}, 1, nil, nil)
		if got := after(img, electionsWithout(img, 1, allowUnclean)); got.Leader != 3 || !slices.Equal(got.ISR, []int32{3}) {
			t.Fatalf("leader %d ISR %v, want the ISR member 3", got.Leader, got.ISR)
		}
	})
	t.Run("skips fenced replicas", func(t *testing.T) {
		img := imageWith([]int32{1, 2, 3}, []int32{1}, 1, []int32{2}, nil)
		if got := after(img, electionsWithout(img, 1, allowUnclean)); got.Leader != 3 || !slices.Equal(got.ISR, []int32{3}) {
			t.Fatalf("leader %d ISR %v, want 3 [3]", got.Leader, got.ISR)
		}
	})
	t.Run("unfenced out-of-ISR replica of a leaderless partition", func(t *testing.T) {
		img := imageWith([]int32{1, 2}, []int32{1}, -1, []int32{1, 2}, nil)
		if got := after(img, unfenceRecords(img, img.Brokers[2], allowUnclean)); got.Leader != 2 || !slices.Equal(got.ISR, []int32{2}) {
			t.Fatalf("leader %d ISR %v, want 2 [2]", got.Leader, got.ISR)
		}
		if got := after(img, unfenceRecords(img, img.Brokers[2], nil)); got.Leader != -1 {
			t.Fatalf("unclean off: leader %d", got.Leader)
		}
	})
	t.Run("leaderless partitions when the setting turns on", func(t *testing.T) {
		img := imageWith([]int32{1, 2, 3}, []int32{1}, -1, []int32{1}, nil)
		if recs := uncleanElections(img, func(*MetadataImage, *TopicImage) bool { return false }); len(recs) != 0 {
			t.Fatalf("records with unclean off: %+v", recs)
		}
		if got := after(img, uncleanElections(img, allowUnclean)); got.Leader != 2 || !slices.Equal(got.ISR, []int32{2}) {
			t.Fatalf("leader %d ISR %v, want 2 [2]", got.Leader, got.ISR)
		}
		led := imageWith([]int32{1, 2, 3}, []int32{1}, 1, nil, nil)
		if recs := uncleanElections(led, allowUnclean); len(recs) != 0 {
			t.Fatalf("records for a partition with a leader: %+v", recs)
		}
		live := imageWith([]int32{1, 2, 3}, []int32{1}, -1, nil, nil) // ISR member 1 live: a clean election's job
		if recs := uncleanElections(live, allowUnclean); len(recs) != 0 {
			t.Fatalf("records for a partition with a live ISR member: %+v", recs)
		}
	})
}

// TestUncleanEnabledPrecedence: topic setting, then this node's dynamic broker
// config, then the cluster-wide default, then the static setting.
func TestUncleanEnabledPrecedence(t *testing.T) {
	c := &Controller{cfg: Config{NodeID: 100, UncleanLeaderElectionEnable: true}}
	img := emptyImage()
	topic := &TopicImage{Name: "t", Configs: map[string]string{}}
	if !c.uncleanEnabled(img, topic) {
		t.Fatal("static true not used")
	}
	img.Configs["broker:"] = map[string]string{uncleanConfig: "false"}
	if c.uncleanEnabled(img, topic) {
		t.Fatal("cluster-wide false ignored")
	}
	img.Configs["broker:100"] = map[string]string{uncleanConfig: "true"}
	if !c.uncleanEnabled(img, topic) {
		t.Fatal("node's own dynamic config ignored")
	}
	topic.Configs[uncleanConfig] = "false"
	if c.uncleanEnabled(img, topic) {
		t.Fatal("topic setting ignored")
	}
}
