package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The clock faults step the system's wall clock (CLOCK_REALTIME) with clock_settime,
// which needs CAP_SYS_TIME. Every node of a run shares the one kernel clock, so a step
// moves every node's wall clock at once: what these faults test is a broker's use of
// wall-clock time across a jump (timestamps, the time index, time-based roll and
// retention, transaction and token expiry), not skew between nodes. The monotonic
// clock (CLOCK_MONOTONIC, which Go's time.Now also reads and its durations use) does
// not move.

// errNoSysTime says the campaign cannot step the clock.
var errNoSysTime = errors.New("stepping the wall clock needs CAP_SYS_TIME (run as root)")

// maxClockStep bounds every step (other users of the machine are told the clock may
// jump by up to a few minutes).
const maxClockStep = 2 * time.Minute

// wallClock is the process's hold on the system clock: how far it has stepped it.
// restore puts it back to the time it would show had nobody stepped it, measured by
// the monotonic clock from the moment of the first step.
var wallClock struct {
	mu sync.Mutex
	// base is time.Now() just before the first step (its monotonic reading is what
	// restore counts from); zero while the clock is not stepped.
	base time.Time
	// closed: the campaign is ending (restoreClockForGood); no more steps.
	closed bool
}

// canStepClock says whether this process holds CAP_SYS_TIME.
func canStepClock() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[unix.CAP_SYS_TIME/32].Effective&(1<<(unix.CAP_SYS_TIME%32)) == 0 {
		return errNoSysTime
	}
	return nil
}

// setWall sets CLOCK_REALTIME to t.
func setWall(t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	return unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
}

// stepClock moves the wall clock to d away from the true time (not d from where it
// is now: steps do not add up).
func stepClock(d time.Duration) error {
	if d > maxClockStep || d < -maxClockStep {
		return fmt.Errorf("clock step %v: more than %v", d, maxClockStep)
	}
	wallClock.mu.Lock()
	defer wallClock.mu.Unlock()
	if wallClock.closed {
		return errors.New("the campaign is ending: the clock stays where it is")
	}
	if wallClock.base.IsZero() {
		wallClock.base = time.Now()
	}
	return setWall(trueNowLocked().Add(d))
}

// trueNowLocked is the wall time had the clock not been stepped.
// Lock should be held.
func trueNowLocked() time.Time {
	b := wallClock.base
	// b's wall reading plus the monotonic time since: Round(0) drops the monotonic
	// reading, so Add moves the wall reading alone.
	return b.Round(0).Add(time.Since(b))
}

// restoreClock puts the wall clock back to the true time if this process stepped it;
// safe to call any number of times, from any goroutine (a signal handler, a deferred
// call during a panic).
func restoreClock() error {
	wallClock.mu.Lock()
	defer wallClock.mu.Unlock()
	if wallClock.base.IsZero() {
		return nil
	}
	if err := setWall(trueNowLocked()); err != nil {
		return fmt.Errorf("restore the wall clock: %w", err)
	}
	wallClock.base = time.Time{}
	return nil
}

// restoreClockForGood restores the clock and refuses any later step: for the exits
// (a signal's handler runs while the run's goroutine may still be stepping).
func restoreClockForGood() error {
	wallClock.mu.Lock()
	wallClock.closed = true
	wallClock.mu.Unlock()
	return restoreClock()
}

// clockOffset is how far the wall clock is now from the true time (zero when this
// process has not stepped it).
func clockOffset() time.Duration {
	wallClock.mu.Lock()
	defer wallClock.mu.Unlock()
	if wallClock.base.IsZero() {
		return 0
	}
	return time.Now().Round(0).Sub(trueNowLocked())
}

// clockFor steps the wall clock to each of steps in turn (an offset from the true
// time), holding each for hold, then restores it. The clock is restored however this
// returns (a fault that panics included).
func (r *runCtx) clockFor(steps []time.Duration, hold func() time.Duration) string {
	defer func() {
		if err := restoreClock(); err != nil {
			r.t.Fatal(err)
		}
		r.heal()
	}()
	r.start()
	var held time.Duration
	for _, d := range steps {
		r.must(stepClock(d))
		h := hold()
		held += h
		r.hold(h)
	}
	return fmt.Sprintf("held %v", held.Round(time.Millisecond))
}

// signed renders a clock step as +1m12.5s or −40s.
func signed(d time.Duration) string {
	if d < 0 {
		return "−" + (-d).Round(100*time.Millisecond).String()
	}
	return "+" + d.Round(100*time.Millisecond).String()
}

// sharedClock is what every clock fault's description ends with.
const sharedClock = "; every node shares the machine's one clock, so every node's wall clock jumps at once (no skew between nodes), and the monotonic clock does not move. The topics have `segment.ms=2000`, so segments roll by record timestamps during the run (and timestamp lookups cross segments)"

// clockTopics are the clock faults' topic settings: segments that roll by time.
var clockTopics = map[string]string{"segment.ms": "2000"}

var clockFaults = []fault{
	{
		name:  "clock-forward",
		clock: true, topicConfigs: clockTopics,
		about: fmt.Sprintf("step the wall clock (clock_settime) forward by 30–120 s — past `transaction.timeout.ms` (%v) and the session timeouts —, hold it 3–6 s, then step it back to the time it would show had it not been stepped (measured on the monotonic clock)"+sharedClock, txnTimeout),
		do: func(r *runCtx) string {
			d := r.between(30*time.Second, 120*time.Second)
			held := r.clockFor([]time.Duration{d}, func() time.Duration { return r.between(3*time.Second, 6*time.Second) })
			return fmt.Sprintf("stepped the wall clock %s, %s, stepped it back", signed(d), held)
		},
	},
	{
		name:  "clock-backward",
		clock: true, topicConfigs: clockTopics,
		about: "step the wall clock backward by 30–120 s, hold it 3–6 s, then step it forward to the time it would show had it not been stepped: new records' timestamps go back below those already written" + sharedClock,
		do: func(r *runCtx) string {
			d := -r.between(30*time.Second, 120*time.Second)
			held := r.clockFor([]time.Duration{d}, func() time.Duration { return r.between(3*time.Second, 6*time.Second) })
			return fmt.Sprintf("stepped the wall clock %s, %s, stepped it forward again", signed(d), held)
		},
	},
	{
		name:  "clock-strobe",
		clock: true, topicConfigs: clockTopics,
		about: "step the wall clock 4–8 times within a few seconds, alternately forward and backward, each step to 5–90 s away from the true time and held 0.2–1 s, then back to the true time" + sharedClock,
		do: func(r *runCtx) string {
			n := 4 + r.rng.IntN(5)
			sign := time.Duration(1)
			if r.rng.IntN(2) == 0 {
				sign = -1
			}
			var steps []time.Duration
			var shown []string
			for range n {
				d := sign * r.between(5*time.Second, 90*time.Second)
				steps = append(steps, d)
				shown = append(shown, signed(d))
				sign = -sign
			}
			held := r.clockFor(steps, func() time.Duration { return r.between(200*time.Millisecond, time.Second) })
			return fmt.Sprintf("stepped the wall clock to %v from the true time, %s, then back to it", shown, held)
		},
	},
}

func init() { faults = append(faults, clockFaults...) }
