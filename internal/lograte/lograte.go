// Package lograte bounds the log lines of a failure that repeats (a full descriptor
// table, a disk that refuses writes): the first failure of a run is logged, then at
// most one line per interval carrying how many failures it stands for, and one line
// when the run ends. It does not log itself; callers ask it whether to.
package lograte

import (
	"sync"
	"time"
)

// Limiter is one kind of failure's log budget. The zero value logs at most once per
// DefaultInterval. Safe for concurrent use.
type Limiter struct {
	// Interval between logged lines of one run of failures (DefaultInterval when 0).
	Interval time.Duration

	mu sync.Mutex
	// failing: a run of failures is under way (a failure since the last success).
	failing bool
	// last is when the last line was logged; suppressed the failures since then,
	// total those of the run.
	last       time.Time
	suppressed int
	total      int
}

// DefaultInterval is the zero Limiter's interval.
const DefaultInterval = 10 * time.Second

// Fail records one failure at now. log is true when the caller should log it;
// suppressed is then the number of failures not logged since the previous line.
func (l *Limiter) Fail(now time.Time) (log bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	iv := l.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	l.total++
	if !l.failing || now.Sub(l.last) >= iv {
		l.failing = true
		l.last = now
		n := l.suppressed
		l.suppressed = 0
		return true, n
	}
	l.suppressed++
	return false, 0
}

// OK records a success. ended is true once per run of failures, on the first success
// after it, with the run's number of failures (so the caller can log that it ended).
func (l *Limiter) OK() (ended bool, failures int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failing {
		return false, 0
	}
	n := l.total
	l.failing, l.suppressed, l.total = false, 0, 0
	return true, n
}
