package storage

import (
	"errors"
	"math"
	"testing"
)

func idem(t *testing.T, pid int64, epoch int16, seq int32, records int) []byte {
	s := spec(records, 1000)
	s.pid, s.epoch, s.seq = pid, epoch, seq
	return makeBatch(t, s)
}

func TestIdempotentProducer(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	app := func(b []byte) (AppendInfo, error) { return l.AppendAsLeader(b, 0, e.clock.Now()) }

	// An unknown producer may start at any sequence (as Kafka's ProducerAppendInfo).
	if _, err := app(idem(t, 7, 0, 42, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := app(idem(t, 7, 0, 45, 2)); err != nil { // 45, 46
		t.Fatal(err)
	}
	// A resend of either retained batch is a duplicate with the original offsets.
	_, err := app(idem(t, 7, 0, 42, 3))
	var dup *DuplicateError
	if !errors.As(err, &dup) || !errors.Is(err, ErrDuplicateSequence) || dup.FirstOffset != 0 || dup.LastOffset != 2 || dup.Timestamp != 1002 {
		t.Fatalf("duplicate: %v %+v", err, dup)
	}
	if _, err := app(idem(t, 7, 0, 45, 2)); !errors.As(err, &dup) || dup.FirstOffset != 3 {
		t.Fatalf("duplicate: %v", err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatal("duplicate was written")
	}
	// Gaps and overlaps that are not exact resends are out of order.
	for _, seq := range []int32{48, 46, 0} {
		if _, err := app(idem(t, 7, 0, seq, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("seq %d: %v", seq, err)
		}
	}
	// A new epoch must start at 0; then the old epoch is fenced.
	if _, err := app(idem(t, 7, 1, 5, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at 5: %v", err)
	}
	if _, err := app(idem(t, 7, 1, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := app(idem(t, 7, 0, 47, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// Only the last 5 batches are remembered.
	for seq := int32(1); seq <= 6; seq++ {
		if _, err := app(idem(t, 7, 1, seq, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app(idem(t, 7, 1, 1, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sixth-last batch: %v", err)
	}
	if _, err := app(idem(t, 7, 1, 2, 1)); !errors.As(err, &dup) {
		t.Fatalf("fifth-last batch: %v", err)
	}
	// Producer state survives a reopen (rebuilt from batch headers) and a truncation.
	e.reopen()
	l = e.m.Log(tp0)
	if _, err := app(idem(t, 7, 1, 6, 1)); !errors.As(err, &dup) {
		t.Fatalf("after reopen: %v", err)
	}
	if _, err := app(idem(t, 7, 0, 0, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("after reopen, old epoch: %v", err)
	}
	leo := l.LogEndOffset()
	if err := l.TruncateTo(leo - 1); err != nil { // drops seq 6
		t.Fatal(err)
	}
	if _, err := app(idem(t, 7, 1, 6, 1)); err != nil {
		t.Fatalf("resend after truncation must be written: %v", err)
	}
}

func TestSequenceWraps(t *testing.T) {
	e := newEnv(t, testLogConfig())
	l := e.log()
	if _, err := l.AppendAsLeader(idem(t, 1, 0, math.MaxInt32-1, 2), 0, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(idem(t, 1, 0, 0, 1), 0, e.clock.Now()); err != nil {
		t.Fatalf("wrap: %v", err)
	}
}
