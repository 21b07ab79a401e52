package storage

import (
	"errors"
	"math"
	"testing"
	"time"
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

func TestProducerStateExpiry(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 2 * int64(len(idem(t, 1, 0, 0, 1)))
	e := newEnv(t, cfg)
	l := e.log()
	now := e.clock.Now().UnixMilli()
	app := func(pid int64, seq int32, ts int64) {
		t.Helper()
		s := spec(1, ts)
		s.pid, s.epoch, s.seq = pid, 0, seq
		if _, err := l.AppendAsLeader(makeBatch(t, s), 0, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	day := int64(24 * 3600 * 1000)
	// Producer 1 wrote two days ago (its own segments), producer 2 just now.
	app(1, 0, now-2*day)
	app(1, 1, now-2*day)
	app(2, 0, now)
	app(2, 1, now)
	app(3, 0, now)
	if l.NumSegments() != 3 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	e.reopen()
	l = e.m.Log(tp0)
	// Producer 1's segment is old: not read, so producer 1 is unknown (any sequence goes),
	// while producer 2 is still tracked.
	s := spec(1, now)
	s.pid, s.epoch, s.seq = 2, 0, 5
	if _, err := l.AppendAsLeader(makeBatch(t, s), 0, e.clock.Now()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("producer 2 forgotten: %v", err)
	}
	s.pid, s.seq = 1, 7
	if _, err := l.AppendAsLeader(makeBatch(t, s), 0, e.clock.Now()); err != nil {
		t.Fatalf("producer 1 still tracked: %v", err)
	}
	// A day later everything expires at the next retention run.
	e.clock.Advance(25 * time.Hour)
	e.m.RunRetention()
	s.pid, s.seq = 2, 9
	if _, err := l.AppendAsLeader(makeBatch(t, s), 0, e.clock.Now()); err != nil {
		t.Fatalf("producer 2 not expired: %v", err)
	}
}
