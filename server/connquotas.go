package server

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gokafkad/gokafkad/config"
)

// connectionQuotas are Kafka's ConnectionQuotas for one listener socket server (the
// broker listener, or the controller listener, which Kafka also serves with a socket
// server of its own):
//
//   - max.connections (and listener.name.<l>.max.connections): a connection accepted
//     while the broker or its listener is at its limit waits, unanswered, until one
//     closes; the acceptor accepts nothing else meanwhile (the rest wait in the
//     listen backlog). The inter-broker listener is exempt from the broker-wide
//     limit when the socket server serves more than one listener — gokafkad serves
//     one broker listener, so it never is.
//   - max.connection.creation.rate (and its listener form): connections beyond the
//     rate are delayed, by at most a second each (Kafka's quota window).
//   - max.connections.per.ip and its overrides: a connection over its address's
//     limit is closed as soon as it is accepted (Kafka's TooManyConnectionsException).
type connectionQuotas struct {
	listener  string
	protected bool // exempt from the broker-wide limits (see above)

	maxTotal, maxListener int
	maxPerIP              int
	overrides             map[string]int // by IP address
	rate, listenerRate    *rateLimiter   // nil: unlimited

	mu       sync.Mutex
	total    int // this socket server's connections (one listener each)
	perIP    map[string]int
	released chan struct{} // closed (and cleared) when a connection goes while someone waits
}

// errTooManyConnections is max.connections.per.ip, as Kafka's TooManyConnectionsException.
var errTooManyConnections = errors.New("server: too many connections from this address")

// newConnectionQuotas builds the quotas of the socket server serving listener.
func newConnectionQuotas(cfg *config.Broker, listener string) (*connectionQuotas, error) {
	q := &connectionQuotas{
		listener:    listener,
		maxTotal:    int(cfg.MaxConnections),
		maxListener: maxIntIfAbsent(cfg.ListenerMaxConnections, listener),
		maxPerIP:    int(cfg.MaxConnectionsPerIP),
		overrides:   map[string]int{},
		perIP:       map[string]int{},
	}
	for host, n := range cfg.MaxConnectionsPerIPOverrides {
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			var err error
			if addrs, err = net.LookupHost(host); err != nil {
				return nil, fmt.Errorf("server: max.connections.per.ip.overrides: cannot resolve %s: %w", host, err)
			}
		}
		for _, a := range addrs {
			q.overrides[net.ParseIP(a).String()] = int(n)
		}
	}
	q.rate = newRateLimiter(int(cfg.MaxConnectionCreationRate))
	q.listenerRate = newRateLimiter(maxIntIfAbsent(cfg.ListenerMaxConnectionCreationRate, listener))
	return q, nil
}

func maxIntIfAbsent(m map[string]int32, k string) int {
	if n, ok := m[k]; ok {
		return int(n)
	}
	return int(^uint32(0) >> 1)
}

// inc admits a connection from ip: it waits for the creation rate and for a slot
// (until stop is closed), then counts it; errTooManyConnections when ip is over its
// limit (the connection must be closed). Every nil return needs a dec.
func (q *connectionQuotas) inc(ip string, stop <-chan struct{}) error {
	if d := q.throttle(time.Now()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return errConnClosed
		}
	}
	for {
		q.mu.Lock()
		if q.slotAvailableLocked() {
			break
		}
		if q.released == nil {
			q.released = make(chan struct{})
		}
		released := q.released
		q.mu.Unlock()
		select {
		case <-released:
		case <-stop:
			return errConnClosed
		}
	}
	defer q.mu.Unlock()
	max := q.maxPerIP
	if n, ok := q.overrides[ip]; ok {
		max = n
	}
	if q.perIP[ip] >= max {
		return errTooManyConnections
	}
	q.perIP[ip]++
	q.total++
	return nil
}

// slotAvailableLocked is Kafka's connectionSlotAvailable. Lock should be held.
func (q *connectionQuotas) slotAvailableLocked() bool {
	switch {
	case q.total >= q.maxListener:
		return false
	case q.protected:
		return true
	default:
		return q.total < q.maxTotal
	}
}

// throttle records a new connection against the creation rates and returns how long
// to delay it (the longer of the broker's and the listener's).
func (q *connectionQuotas) throttle(now time.Time) time.Duration {
	var d time.Duration
	if !q.protected {
		d = q.rate.take(now)
	}
	return max(d, q.listenerRate.take(now))
}

// dec forgets a connection inc admitted.
func (q *connectionQuotas) dec(ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	q.total--
	if q.released != nil {
		close(q.released)
		q.released = nil
	}
}

// rateLimiter is a token bucket of rate tokens a second, holding at most one
// second's worth: Kafka measures the rate over a window of seconds and delays a
// connection by at most one window (quota.window.size.seconds, 1 s).
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

// newRateLimiter returns nil (unlimited) for Kafka's default, Integer.MAX_VALUE.
func newRateLimiter(perSecond int) *rateLimiter {
	if perSecond <= 0 || perSecond == int(^uint32(0)>>1) {
		if perSecond == 0 {
			return &rateLimiter{rate: 0}
		}
		return nil
	}
	return &rateLimiter{rate: float64(perSecond), tokens: float64(perSecond)}
}

// take spends a token and returns how long to wait before using it (at most 1 s).
func (r *rateLimiter) take(now time.Time) time.Duration {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rate == 0 {
		return time.Second
	}
	if !r.last.IsZero() {
		r.tokens = min(r.rate, r.tokens+now.Sub(r.last).Seconds()*r.rate)
	}
	r.last = now
	r.tokens--
	if r.tokens >= 0 {
		return 0
	}
	wait := time.Duration(-r.tokens / r.rate * float64(time.Second))
	if wait > time.Second {
		wait = time.Second
		r.tokens = -r.rate // do not owe more than a window
	}
	return wait
}
