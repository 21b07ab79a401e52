package replication

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafkad/gokafkad/storage"
)

var tp0 = storage.TopicPartition{Topic: "t", Partition: 0}

func TestDelayedCompletesAtOnceWhenReady(t *testing.T) {
	p := NewPurgatory()
	var expired atomic.Int32
	done := make(chan struct{})
	p.TryCompleteElseWatch(NewDelayed(func() bool { return true }, func(e bool) {
		if e {
			expired.Add(1)
		}
		close(done)
	}), []storage.TopicPartition{tp0}, time.Hour)
	<-done
	if expired.Load() != 0 || p.Watched() != 0 {
		t.Fatalf("expired=%d watched=%d, want 0 and 0", expired.Load(), p.Watched())
	}
}

func TestDelayedCompletesOnCheckAndComplete(t *testing.T) {
	p := NewPurgatory()
	var ready atomic.Bool
	result := make(chan bool, 1)
	p.TryCompleteElseWatch(NewDelayed(ready.Load, func(e bool) { result <- e }), []storage.TopicPartition{tp0}, time.Hour)
	if p.Watched() != 1 {
		t.Fatalf("watched=%d, want 1", p.Watched())
	}
	p.CheckAndComplete(tp0) // not ready yet: stays
	select {
	case <-result:
		t.Fatal("completed before it was ready")
	default:
	}
	ready.Store(true)
	p.CheckAndComplete(storage.TopicPartition{Topic: "other"}) // another key: no effect
	p.CheckAndComplete(tp0)
	if e := <-result; e {
		t.Fatal("completed as expired, want completed by its condition")
	}
	if p.Watched() != 0 {
		t.Fatalf("watched=%d after completion, want 0", p.Watched())
	}
}

func TestDelayedExpiresOnceAndIsUnwatched(t *testing.T) {
	p := NewPurgatory()
	var calls atomic.Int32
	result := make(chan bool, 2)
	p.TryCompleteElseWatch(NewDelayed(func() bool { return false }, func(e bool) {
		calls.Add(1)
		result <- e
	}), []storage.TopicPartition{tp0, {Topic: "t", Partition: 1}}, 20*time.Millisecond)
	if e := <-result; !e {
		t.Fatal("want expired")
	}
	p.CheckAndComplete(tp0)
	if calls.Load() != 1 {
		t.Fatalf("completed %d times, want once", calls.Load())
	}
	if p.Watched() != 0 {
		t.Fatalf("watched=%d after expiry, want 0", p.Watched())
	}
}

// TestWatchUnwatchManyKeys is issue 11's fetch naming the same partition 200,000
// times: its entry used to unwatch in O(n²) under the purgatory-wide lock, stalling
// every acks=all produce and long poll. Duplicates are now watched once, and
// completing an operation on 200,000 distinct partitions beside 1,000 others on one
// of them takes well under a second.
func TestWatchUnwatchManyKeys(t *testing.T) {
	p := NewPurgatory()
	dup := make([]storage.TopicPartition, 200_000)
	for i := range dup {
		dup[i] = tp0
	}
	distinct := make([]storage.TopicPartition, 200_000)
	for i := range distinct {
		distinct[i] = storage.TopicPartition{Topic: "d", Partition: int32(i)}
	}
	var ready atomic.Bool
	done := make(chan struct{}, 2)
	start := time.Now()
	p.TryCompleteElseWatch(NewDelayed(ready.Load, func(bool) { done <- struct{}{} }), dup, time.Hour)
	p.TryCompleteElseWatch(NewDelayed(ready.Load, func(bool) { done <- struct{}{} }), distinct, time.Hour)
	for range 1000 {
		p.TryCompleteElseWatch(NewDelayed(func() bool { return false }, func(bool) {}), distinct[:1], time.Hour)
	}
	if w := p.Watched(); w != 1+200_000+1000 {
		t.Fatalf("watched %d, want %d (the duplicated partition once)", w, 1+200_000+1000)
	}
	ready.Store(true)
	p.CheckAndComplete(tp0)
	p.CheckAndComplete(distinct[0])
	<-done
	<-done
	if w := p.Watched(); w != 1000 {
		t.Fatalf("watched %d after completion, want the 1000 others", w)
	}
	if d := time.Since(start); d > 10*time.Second { // O(n²) took minutes
		t.Fatalf("watching and completing took %v", d)
	}
}
