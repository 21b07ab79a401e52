package server

// connection_creation_rate: the per-IP connection quota of the metadata log (KIP-612),
// as Kafka's ConnectionQuotas.recordIpConnectionMaybeThrottle. A new connection on the
// broker listener from an address with a quota (ip=<address>, else the default ip
// entity) is counted on that address's rate, measured like the client quotas
// (quota.window.num × quota.window.size.seconds); one over it is not admitted: it is
// taken back from the rate and closed, unanswered, after the throttle time (at most
// one window), as Kafka's acceptor closes a throttled socket. Without a quota the
// cost per accepted connection is one nil pointer read.

import (
	"net"
	"time"

	"github.com/gokafkad/gokafkad/controller"
)

// ipConnectionThrottle records a new connection from ip and returns how long to hold
// it before closing it (0: admit it).
func (b *Broker) ipConnectionThrottle(ip string) time.Duration {
	if b.ctl == nil {
		return 0
	}
	img := b.ctl.Image()
	if img == nil || img.ClientQuotas == nil {
		return 0
	}
	q := img.ClientQuotas
	bound, ok := q.Get(controller.QuotaEntity{IP: controller.QuotaName{Set: true, Name: ip}}, controller.QuotaConnectionCreationRate)
	if !ok {
		bound, ok = q.Get(controller.QuotaEntity{IP: controller.QuotaName{Set: true, Default: true}}, controller.QuotaConnectionCreationRate)
	}
	if !ok {
		return 0
	}
	now := time.Now().UnixMilli()
	bq := b.quotas
	s := boundSensor{s: bq.sensor(quotaSensorKey{key: controller.QuotaConnectionCreationRate, ip: ip}, now), bound: bound, w: bq.window}
	t := min(s.recordAndThrottle(1, now), bq.window.windowMs)
	if t <= 0 {
		return 0
	}
	s.record(-1, now)
	return time.Duration(t) * time.Millisecond
}

// closeThrottled closes a connection refused by connection_creation_rate after d.
func (b *Broker) closeThrottled(nc net.Conn, d time.Duration, ip string) {
	if b.limits.rejectLog.TryLock() {
		if now := time.Now(); now.Sub(b.limits.lastReject) >= time.Second {
			b.limits.lastReject = now
			b.log.Info().Str("client_ip", ip).Dur("throttle", d).
				Msg("connection throttled: connection_creation_rate reached for this address (further ones within a second are not logged)")
		}
		b.limits.rejectLog.Unlock()
	}
	time.AfterFunc(d, func() { nc.Close() })
}
