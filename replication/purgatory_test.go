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
