package monotime

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRoundTrip(t *testing.T) {
	now := time.Now()
	n := Of(now)
	if n <= 0 {
		t.Fatalf("reading %d, want positive", n)
	}
	if d := Time(n).Sub(now); d != 0 {
		t.Fatalf("Time(Of(now)) is %v from now", d)
	}
	later := now.Add(1500 * time.Millisecond)
	if d := time.Duration(Of(later) - n); d != 1500*time.Millisecond {
		t.Fatalf("readings 1.5s apart differ by %v", d)
	}
	if u := time.Until(Time(Of(later))); u <= 0 || u > 1500*time.Millisecond {
		t.Fatalf("Until a reading 1.5s ahead: %v", u)
	}
}

// A step of the system clock moves time.Now().UnixNano() and not the readings. It
// steps the machine's wall clock back 30 s (and forward again), so it runs only with
// CAP_SYS_TIME (the fault campaign's clock faults do this on purpose).
func TestImmuneToClockStep(t *testing.T) {
	var rt unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	back := unix.NsecToTimespec(base.UnixNano() - int64(30*time.Second))
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &back); err != nil {
		t.Skipf("cannot step the wall clock (CAP_SYS_TIME): %v", err)
	}
	t.Cleanup(func() {
		ts := unix.NsecToTimespec(base.Round(0).Add(time.Since(base)).UnixNano())
		if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
			t.Errorf("restore the wall clock: %v", err)
		}
	})
	wallNs := time.Now().UnixNano() - base.UnixNano()
	monoNs := Now() - Of(base)
	if wallNs > int64(-29*time.Second) {
		t.Fatalf("the wall clock moved %v after a −30s step", time.Duration(wallNs))
	}
	if monoNs < 0 || monoNs > int64(time.Second) {
		t.Fatalf("the monotonic reading moved %v across the step", time.Duration(monoNs))
	}
}
