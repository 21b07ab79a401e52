package partition

import "testing"

// epochs builds an epoch cache lookup from (epoch, start offset) entries and a LEO, with
// Kafka's endOffsetFor semantics.
func epochs(leo int64, entries ...[2]int64) EndOffsetForEpoch {
	return func(e int32) (int32, int64) {
		for i := len(entries) - 1; i >= 0; i-- {
			if int32(entries[i][0]) <= e {
				if i == len(entries)-1 {
					return int32(entries[i][0]), leo
				}
				return int32(entries[i][0]), entries[i+1][1]
			}
		}
		return -1, -1
	}
}

// TestDivergenceExperiment replays experiment 3 of the reference text: the old leader
// (broker 1) holds 0..14 in epoch 0 (10..14 acks=1 only it has); the new leader
// (broker 2) wrote 10..12 in epoch 1. Broker 1 fetches at 15 with last epoch 0, is told
// epoch 0 ended at 10, and truncates to 10.
func TestDivergenceExperiment(t *testing.T) {
	leader := epochs(13, [2]int64{0, 0}, [2]int64{1, 10})
	follower := epochs(15, [2]int64{0, 0})
	epoch, end, diverged := DivergingEpoch(15, 0, leader)
	if !diverged || epoch != 0 || end != 10 {
		t.Fatalf("diverging epoch (%d, %d, %v), want (0, 10, true)", epoch, end, diverged)
	}
	if got := TruncationOffset(epoch, end, 15, follower); got != 10 {
		t.Fatalf("truncate to %d, want 10", got)
	}
	// After truncating it fetches at 10 with last epoch 0: no divergence, records follow.
	if _, _, diverged := DivergingEpoch(10, 0, leader); diverged {
		t.Fatal("fetch at the truncation point still diverges")
	}
}

func TestDivergenceCases(t *testing.T) {
	for _, tc := range []struct {
		name             string
		fetchOffset      int64
		lastFetchedEpoch int32
		leader           EndOffsetForEpoch
		wantDiverged     bool
		follower         EndOffsetForEpoch
		followerLEO      int64
		wantTruncateTo   int64
	}{
		{name: "in step", fetchOffset: 8, lastFetchedEpoch: 1, leader: epochs(9, [2]int64{0, 0}, [2]int64{1, 5})},
		{name: "no epochs on the follower", fetchOffset: 8, lastFetchedEpoch: -1, leader: epochs(9, [2]int64{0, 0})},
		{
			name: "follower knows an epoch the leader never had", fetchOffset: 12, lastFetchedEpoch: 2,
			leader: epochs(20, [2]int64{0, 0}, [2]int64{3, 9}), wantDiverged: true,
			// leader answers (0, 9); follower has 0 (ends 7) and 2 (starts 7): cut at 7
			follower: epochs(12, [2]int64{0, 0}, [2]int64{2, 7}), followerLEO: 12, wantTruncateTo: 7,
		},
		{
			name: "follower without the leader's epoch cuts to its own end of an older one", fetchOffset: 12, lastFetchedEpoch: 4,
			leader: epochs(30, [2]int64{0, 0}, [2]int64{2, 10}, [2]int64{5, 20}), wantDiverged: true,
			// leader answers (2, 20); follower has epochs 0 and 4 only: cut at end of 0 = 11
			follower: epochs(12, [2]int64{0, 0}, [2]int64{4, 11}), followerLEO: 12, wantTruncateTo: 11,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			epoch, end, diverged := DivergingEpoch(tc.fetchOffset, tc.lastFetchedEpoch, tc.leader)
			if diverged != tc.wantDiverged {
				t.Fatalf("diverged %v, want %v", diverged, tc.wantDiverged)
			}
			if !diverged {
				return
			}
			if got := TruncationOffset(epoch, end, tc.followerLEO, tc.follower); got != tc.wantTruncateTo {
				t.Fatalf("truncate to %d (leader said epoch %d end %d), want %d", got, epoch, end, tc.wantTruncateTo)
			}
		})
	}
}
