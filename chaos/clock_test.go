package main

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wallMinusMono is CLOCK_REALTIME − CLOCK_MONOTONIC: constant unless someone steps
// the wall clock (or NTP slews it, by far less than the tolerance below).
func wallMinusMono(t *testing.T) time.Duration {
	var rt, mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		t.Fatal(err)
	}
	return time.Duration(rt.Nano() - mono.Nano())
}

// Stepping the clock moves the wall clock and restoring puts it back where it would
// be, to within a few milliseconds. It steps the machine's clock by 1.5 s, so it runs
// only where the process may (CAP_SYS_TIME).
func TestStepAndRestoreClock(t *testing.T) {
	if err := canStepClock(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = restoreClock() })
	before := wallMinusMono(t)
	if err := stepClock(-1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := wallMinusMono(t) - before; d > -1400*time.Millisecond || d < -1600*time.Millisecond {
		t.Fatalf("after a −1.5s step the wall clock moved %v", d)
	}
	if off := clockOffset(); off > -1400*time.Millisecond || off < -1600*time.Millisecond {
		t.Fatalf("clockOffset %v after a −1.5s step", off)
	}
	if err := stepClock(1500 * time.Millisecond); err != nil { // steps are from the true time
		t.Fatal(err)
	}
	if d := wallMinusMono(t) - before; d < 1400*time.Millisecond || d > 1600*time.Millisecond {
		t.Fatalf("after a +1.5s step the wall clock is %v off", d)
	}
	if err := restoreClock(); err != nil {
		t.Fatal(err)
	}
	if d := wallMinusMono(t) - before; d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Fatalf("restored, the wall clock is %v off", d)
	}
	if err := stepClock(3 * time.Minute); err == nil {
		t.Fatal("a 3-minute step was allowed")
	}
}
