package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/storage"
)

// The min ISR an acks=all write needs is min.insync.replicas capped at the replica
// count (Kafka's effectiveMinIsr): only a partition with more replicas than in-sync
// ones can be short of it.
func TestAppendRefusedBelowEffectiveMinISR(t *testing.T) {
	p := New(storage.TopicPartition{Topic: "t"}, [16]byte{}, nil, 1, zerolog.Nop())
	// Set directly: ApplyState would record the epoch in a log this test does not need.
	p.mu.state = State{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1}
	p.mu.isLeader = true
	for _, tc := range []struct {
		minISR int32
		want   int32
	}{{1, 1}, {2, 2}, {3, 3}, {5, 3}} {
		p.mu.Lock()
		got := p.effectiveMinISRLocked(tc.minISR)
		p.mu.Unlock()
		if got != tc.want {
			t.Errorf("effective min ISR for min.insync.replicas=%d with 3 replicas: %d, want %d", tc.minISR, got, tc.want)
		}
	}
	if _, err := p.AppendRecordsToLeader(nil, -1, 2, time.Now()); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 1 of 3, min ISR 2: %v, want ErrNotEnoughReplicas", err)
	}
}
