// Package monotime is the process's monotonic clock as an int64, for instants kept in
// atomics (a deadline, a last-seen time) that are compared later. The wall-clock
// nanoseconds of time.Now().UnixNano() move when the system clock is stepped (an
// operator, NTP at boot, a VM resumed): a deadline stored that way ends minutes early
// or late after a jump. A time.Time from time.Now carries a monotonic reading that
// time.Since, Sub and net.Conn deadlines use, but an int64 loses it; these readings
// keep it. They mean nothing outside this process: never store or send one.
package monotime

import "time"

// start is the origin of the readings, a second before the process's first use of the
// package, so that every reading is positive (0 can stay a "none" sentinel).
var start = time.Now().Add(-time.Second)

// Of is t's monotonic reading in nanoseconds. t must come from time.Now (or be
// derived from such a time by Add): a time without a monotonic reading (parsed,
// rounded, from time.Unix) is measured on the wall clock.
func Of(t time.Time) int64 { return int64(t.Sub(start)) }

// Now is the monotonic reading of now.
func Now() int64 { return Of(time.Now()) }

// Time is the instant of reading n as a time.Time that carries it, so that
// time.Until, time.Since and deadlines on it are immune to wall-clock steps.
func Time(n int64) time.Time { return start.Add(time.Duration(n)) }
