package partition

import (
	"errors"
	"slices"
	"testing"
)

// TestHandleISRAnswer: what a leader (ISR 1,2,3 at leader epoch 4, partition epoch 7,
// proposing to shrink to 1,2) does with each answer, as Kafka's
// handleAlterPartitionUpdate and handleAlterPartitionError.
func TestHandleISRAnswer(t *testing.T) {
	errX := errors.New("x")
	for _, tc := range []struct {
		name string
		// other: the answer is for an earlier proposal, not the pending one.
		other   bool
		a       ISRAnswer
		want    ISROutcome
		isr     []int32 // committed ISR after
		pending bool
	}{
		{"committed", false, ISRAnswer{ISR: []int32{1, 2}, LeaderEpoch: 4, PartitionEpoch: 8}, ISRCommitted, []int32{1, 2}, false},
		{"same partition epoch: nothing changed on the controller", false, ISRAnswer{ISR: []int32{1, 2, 3}, LeaderEpoch: 4, PartitionEpoch: 7}, ISRCommitted, []int32{1, 2, 3}, false},
		{"older partition epoch", false, ISRAnswer{ISR: []int32{1, 2, 3}, LeaderEpoch: 4, PartitionEpoch: 6}, ISRIgnored, []int32{1, 2, 3}, true},
		{"another leader epoch", false, ISRAnswer{ISR: []int32{1, 2}, LeaderEpoch: 5, PartitionEpoch: 9}, ISRIgnored, []int32{1, 2, 3}, true},
		{"answer to a replaced proposal", true, ISRAnswer{ISR: []int32{1, 2}, LeaderEpoch: 4, PartitionEpoch: 8}, ISRIgnored, []int32{1, 2, 3}, true},
		{"error for a replaced proposal", true, ISRAnswer{Err: errX, OnError: ISRErrorRollback}, ISRIgnored, []int32{1, 2, 3}, true},
		{"rollback", false, ISRAnswer{Err: errX, OnError: ISRErrorRollback}, ISRRolledBack, []int32{1, 2, 3}, false},
		{"await metadata", false, ISRAnswer{Err: errX, OnError: ISRErrorAwaitMetadata}, ISRStillPending, []int32{1, 2, 3}, true},
		{"retry", false, ISRAnswer{Err: errX, OnError: ISRErrorRetry}, ISRRetry, []int32{1, 2, 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLeader(1, State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}, 0, 0, nil)
			l.followers[2].LogEndOffset = 10 // caught up; 3 is not
			old, _ := l.MaybeShrinkISR(10, 100_000, 1000)
			prop := old
			if tc.other {
				l.AbortISRChange()
				prop, _ = l.MaybeShrinkISR(10, 100_000, 1000)
			}
			if prop == nil || !slices.Equal(prop.ISR, []int32{1, 2}) {
				t.Fatalf("proposal %+v, want a shrink to 1,2", prop)
			}
			if got := l.HandleISRAnswer(old, tc.a); got != tc.want {
				t.Fatalf("outcome %v, want %v", got, tc.want)
			}
			if !slices.Equal(l.ISR(), tc.isr) || l.Inflight() != tc.pending {
				t.Fatalf("ISR %v pending %v, want %v pending %v", l.ISR(), l.Inflight(), tc.isr, tc.pending)
			}
			if tc.pending && l.Proposed() != prop {
				t.Fatal("the pending proposal changed")
			}
		})
	}
}
