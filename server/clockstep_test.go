package server

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stepWallClock steps the machine's wall clock by d and puts it back, at the test's
// end, to the time it would show had it not been stepped (counted on the monotonic
// clock). It skips the test without CAP_SYS_TIME. Other tests on the machine see the
// step: keep d to a minute or two (the fault campaign's clock faults do the same).
func stepWallClock(t *testing.T, d time.Duration) {
	t.Helper()
	base := time.Now()
	ts := unix.NsecToTimespec(base.UnixNano() + int64(d))
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		t.Skipf("cannot step the wall clock (needs CAP_SYS_TIME): %v", err)
	}
	t.Cleanup(func() {
		ts := unix.NsecToTimespec(base.Round(0).Add(time.Since(base)).UnixNano())
		if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
			t.Errorf("restore the wall clock: %v", err)
		}
	})
}

// An idle connection is closed connections.max.idle.ms after its last activity,
// however the wall clock steps meanwhile: its last activity was wall-clock
// nanoseconds, so after a step back of a minute the idle check found it active and
// set its next deadline a minute further on.
func TestIdleConnectionClosedAfterClockStepBack(t *testing.T) {
	b := startTestBroker(t, map[string]string{"connections.max.idle.ms": "2000"})
	c := dialRaw(t, b.Addr(), "idle")
	if !apiVersions(c, 10*time.Second) {
		t.Fatal("ApiVersions not answered")
	}
	idleSince := time.Now()
	stepWallClock(t, -time.Minute)
	if !c.closedByBroker(15 * time.Second) {
		t.Fatalf("a connection idle for %v (connections.max.idle.ms=2000) was not closed after a step back of the clock", time.Since(idleSince).Round(time.Second))
	}
}
