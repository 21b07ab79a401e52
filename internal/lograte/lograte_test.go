package lograte

import (
	"testing"
	"time"
)

func TestLimiterLogsOncePerIntervalAndTheEnd(t *testing.T) {
	l := &Limiter{Interval: time.Second}
	t0 := time.Unix(1000, 0)
	type step struct {
		at        time.Duration
		fail      bool
		wantLog   bool
		wantCount int // suppressed (Fail) or failures (OK)
	}
	steps := []step{
		{0, false, false, 0},                       // success with no run: nothing
		{0, true, true, 0},                         // first failure logged
		{100 * time.Millisecond, true, false, 0},   // within the interval: quiet
		{900 * time.Millisecond, true, false, 0},   // quiet
		{time.Second, true, true, 2},               // a line standing for the two quiet ones
		{1500 * time.Millisecond, true, false, 0},  // quiet
		{1600 * time.Millisecond, false, true, 5},  // the run ended: 5 failures
		{1700 * time.Millisecond, false, false, 0}, // once
		{1800 * time.Millisecond, true, true, 0},   // a new run logs at once
	}
	for i, s := range steps {
		var got bool
		var n int
		if s.fail {
			got, n = l.Fail(t0.Add(s.at))
		} else {
			got, n = l.OK()
		}
		if got != s.wantLog || n != s.wantCount {
			t.Fatalf("step %d (%+v): got (%v, %d)", i, s, got, n)
		}
	}
}

// TestLimiterBoundsAFailureStorm: 100,000 failures within a minute give at most one
// line per interval.
func TestLimiterBoundsAFailureStorm(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	lines, total := 0, 0
	for i := 0; i < 100000; i++ {
		if ok, n := l.Fail(t0.Add(time.Duration(i) * 600 * time.Microsecond)); ok {
			lines++
			total += n + 1
		}
	}
	if max := int(time.Minute/DefaultInterval) + 1; lines > max {
		t.Fatalf("%d lines for a minute of failures, want at most %d", lines, max)
	}
	if ended, n := l.OK(); !ended || n != 100000 {
		t.Fatalf("OK after the storm = (%v, %d), want (true, 100000)", ended, n)
	}
}
