package server

// Client quotas, enforced as Kafka's ClientQuotaManager / ClientRequestQuotaManager
// do, from the quotas AlterClientQuotas wrote to the metadata log (this broker's
// image):
//
//   - producer_byte_rate: the bytes of a client's Produce requests;
//   - consumer_byte_rate: the record bytes of its consumer Fetch responses (a
//     consumer's fetch is also cut to what the quota lets through in a window, as
//     Kafka's getMaxValueInQuotaWindow);
//   - request_percentage: the time its requests spend in their handlers, in percent
//     of one thread.
//
// Whose quota applies is Kafka's precedence, per key: /users/<u>/clients/<c>,
// /users/<u>/clients/<default>, /users/<u>, /users/<default>/clients/<c>,
// /users/<default>/clients/<default>, /users/<default>, /clients/<c>,
// /clients/<default> — the first that sets the key. The level also says who shares
// one measure: a user's quota is shared by all its client ids, a client id's quota by
// all connections with that id, and a default is measured per user and/or client id,
// not for all of them together (DefaultQuotaCallback.quotaMetricTags). The user is the
// session principal's name (ANONYMOUS on PLAINTEXT).
//
// Each rate is measured over quota.window.num windows of quota.window.size.seconds
// (quotaRate). A request that takes a client over a quota is answered at once with
// throttle_time_ms (the time the rate needs to come back within the quota; at most
// one window for request_percentage), and the connection is muted (KIP-219): the
// broker reads nothing more from it until that time has passed. A throttled consumer
// Fetch is answered without records (its bytes are not counted), as Kafka's
// getThrottledResponse. Replica fetches and WriteTxnMarkers (cluster actions) are
// exempt, as in Kafka; the controller listener has no quotas.
//
// Without a quota in the image (the common case) the whole cost on the request path
// is reading the image's ClientQuotas pointer, nil.

import (
	"github.com/gokafkad/gokafkad/internal/monotime"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

// brokerQuotas holds the broker's quota sensors: one per quota key and measured
// entity (quotaSensorKey).
type brokerQuotas struct {
	window quotaWindow
	mu     sync.Mutex
	// sensors are dropped once idle for a whole window (their rate is then 0 anyway),
	// swept when the map has doubled since the last sweep: clients choose their ids,
	// so the map must not keep one per id ever seen.
	sensors map[quotaSensorKey]*quotaSensor
	sweepAt int
}

// quotaSensorKey names one measure: a quota key and the (user, client id) it is
// counted for ("" for a part not in it), as Kafka's metric tags.
type quotaSensorKey struct {
	key            string
	user, clientID string
	ip             string // connection_creation_rate (connquotas_ip.go)
}

type quotaSensor struct {
	mu     sync.Mutex
	rate   quotaRate
	bucket tokenBucket // controller_mutation_rate (controller_mutation_quota.go)
	last   int64       // ms of the last record
}

// newBrokerQuotas measures with cfg's quota.window.num and quota.window.size.seconds
// (Kafka's defaults, 11 and 1, where unset).
func newBrokerQuotas(cfg *config.Broker) *brokerQuotas {
	samples, seconds := 11, 1
	if cfg != nil && cfg.QuotaWindowNum > 0 {
		samples = int(cfg.QuotaWindowNum)
	}
	if cfg != nil && cfg.QuotaWindowSizeSeconds > 0 {
		seconds = int(cfg.QuotaWindowSizeSeconds)
	}
	return &brokerQuotas{
		window:  quotaWindow{samples: samples, windowMs: int64(seconds) * 1000},
		sensors: map[quotaSensorKey]*quotaSensor{},
		sweepAt: 1024,
	}
}

// resolveQuota returns key's quota for (user, clientID) and the measure it is counted
// on, as Kafka's DefaultQuotaCallback (quotaMetricTags, then quotaLimit).
func resolveQuota(q *controller.ClientQuotasImage, key, user, clientID string) (float64, quotaSensorKey, bool) {
	none := controller.QuotaName{}
	def := controller.QuotaName{Set: true, Default: true}
	u := controller.QuotaName{Set: true, Name: user}
	c := controller.QuotaName{Set: true, Name: clientID}
	for _, l := range [...]struct {
		user, client controller.QuotaName
		tagUser      bool
		tagClient    bool
	}{
		{u, c, true, true}, {u, def, true, true}, {u, none, true, false},
		{def, c, true, true}, {def, def, true, true}, {def, none, true, false},
		{none, c, false, true}, {none, def, false, true},
	} {
		v, ok := q.Get(controller.QuotaEntity{User: l.user, ClientID: l.client}, key)
		if !ok {
			continue
		}
		k := quotaSensorKey{key: key}
		if l.tagUser {
			k.user = user
		}
		if l.tagClient {
			k.clientID = clientID
		}
		return v, k, true
	}
	return 0, quotaSensorKey{}, false
}

// sensor returns the sensor of k, made on first use.
func (bq *brokerQuotas) sensor(k quotaSensorKey, now int64) *quotaSensor {
	bq.mu.Lock()
	defer bq.mu.Unlock()
	s := bq.sensors[k]
	if s != nil {
		return s
	}
	if len(bq.sensors) >= bq.sweepAt {
		idle := int64(bq.window.samples) * bq.window.windowMs
		for key, o := range bq.sensors {
			o.mu.Lock()
			if now-o.last >= idle {
				delete(bq.sensors, key)
			}
			o.mu.Unlock()
		}
		bq.sweepAt = max(1024, 2*len(bq.sensors))
	}
	s = &quotaSensor{last: now}
	bq.sensors[k] = s
	return s
}

// boundSensor is a sensor with the quota it is held to.
type boundSensor struct {
	s     *quotaSensor
	bound float64
	w     quotaWindow
}

// recordAndThrottle records v at now and returns the throttle the rate then needs
// (Sensor.record with checkQuotas, QuotaUtils.throttleTime).
func (b boundSensor) recordAndThrottle(v float64, now int64) int64 {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.rate.record(b.w, v, now)
	b.s.last = now
	return b.s.rate.throttleMs(b.w, b.bound, now)
}

// record records v at now without checking the quota (an unrecord is negative).
func (b boundSensor) record(v float64, now int64) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.rate.record(b.w, v, now)
	b.s.last = now
}

// throttle is what the rate, as measured now, needs.
func (b boundSensor) throttle(now int64) int64 {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.s.rate.throttleMs(b.w, b.bound, now)
}

// quotaSensorFor returns the sensor that key's quota for this connection's principal
// and clientID is measured on, or false without such a quota.
func (c *conn) quotaSensorFor(q *controller.ClientQuotasImage, key, clientID string, now int64) (boundSensor, bool) {
	bound, k, ok := resolveQuota(q, key, quotaUser(c.session.principal), clientID)
	if !ok {
		return boundSensor{}, false
	}
	bq := c.b.quotas
	return boundSensor{s: bq.sensor(k, now), bound: bound, w: bq.window}, true
}

// quotaUser is the user name quotas are kept for: the principal's name without its
// type, as Kafka's KafkaPrincipal.getName.
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// clientQuotas returns the client quotas that apply to this connection's requests:
// nil (no quota set, or the controller listener) in the common case.
func (c *conn) clientQuotas() *controller.ClientQuotasImage {
	if !c.apis.clients() || c.b.ctl == nil {
		return nil
	}
	img := c.b.ctl.Image()
	if img == nil {
		return nil
	}
	return img.ClientQuotas
}

// handle runs the request's handler under the client's quotas: Produce bytes and the
// request rate are checked and recorded here, consumer Fetch bytes in answerFetch.
func (c *conn) handle(api *apiHandler, r *request, size int) error {
	q := c.clientQuotas()
	if q == nil {
		return c.handleRecovered(api, r)
	}
	start := time.Now()
	now := start.UnixMilli()
	var throttle int64
	if r.hdr.APIKey == int16(kmsg.Produce) {
		if s, ok := c.quotaSensorFor(q, controller.QuotaProducerByteRate, r.hdr.ClientID, now); ok {
			throttle = s.recordAndThrottle(float64(size), now)
		}
	}
	var reqSensor boundSensor
	exempt := r.hdr.APIKey == int16(kmsg.WriteTxnMarkers)
	if f, ok := r.req.(*kmsg.FetchRequest); ok && followerOf(f) != nil {
		exempt = true
	}
	if !exempt {
		if s, ok := c.quotaSensorFor(q, controller.QuotaRequestPercentage, r.hdr.ClientID, now); ok {
			reqSensor = s
			// ClientRequestQuotaManager bounds its throttle by one window.
			throttle = max(throttle, min(s.throttle(now), s.w.windowMs))
		}
	}
	if throttle > 0 {
		c.throttle(r.resp, throttle, start)
	}
	err := c.handleRecovered(api, r)
	if reqSensor.s != nil {
		// Percent of one thread: 100 per second spent.
		reqSensor.record(time.Since(start).Seconds()*100, time.Now().UnixMilli())
	}
	return err
}

// throttle gives resp a throttle time of ms (the longest asked) and mutes the
// connection until ms after now.
func (c *conn) throttle(resp *response, ms int64, now time.Time) {
	ms = min(ms, 1<<31-1)
	for {
		cur := resp.throttle.Load()
		if int64(cur) >= ms || resp.throttle.CompareAndSwap(cur, int32(ms)) {
			break
		}
	}
	until := monotime.Of(now.Add(time.Duration(ms) * time.Millisecond))
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			break
		}
	}
}

// waitMuted holds the read loop while the connection is muted by a throttle: its
// socket is not read until then (TCP holds the client back). Broker shutdown ends
// the wait. A throttle longer than connections.max.idle.ms (a huge request far over
// a small byte rate) closes the connection once that time has passed, as the idle
// connection it is, rather than hold it for the whole throttle.
func (c *conn) waitMuted() error {
	until := c.mutedUntil.Load()
	if until == 0 {
		return nil
	}
	d := time.Until(monotime.Time(until))
	if d <= 0 {
		c.mutedUntil.CompareAndSwap(until, 0)
		return nil
	}
	idle := c.b.limits.idle
	wait := d
	if idle > 0 {
		wait = min(d, idle)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.b.closing:
		return net.ErrClosed
	}
	if wait < d {
		return errIdle
	}
	c.mutedUntil.CompareAndSwap(until, 0)
	// Mute time is not idleness: the idle clock starts again now.
	c.lastActive.Store(monotime.Now())
	return nil
}

// applyThrottle sets the throttle time of a response the writer is about to encode,
// keeping a longer one its handler set.
func applyThrottle(r *response, ms int32) {
	if r.msg == nil {
		return // Fetch chunks: answerFetch set the field before encoding.
	}
	if tr, ok := r.msg.(kmsg.ThrottleResponse); ok {
		if cur, _ := tr.Throttle(); cur >= ms {
			return
		}
	}
	if st, ok := r.msg.(kmsg.SetThrottleResponse); ok {
		st.SetThrottle(ms)
	}
}

// fetchQuota is a consumer Fetch's consumer_byte_rate sensor and its connection.
type fetchQuota struct {
	c *conn
	s boundSensor
}

// consumerQuota returns the consumer_byte_rate quota of a consumer Fetch, or nil.
func (c *conn) consumerQuota(r *request) *fetchQuota {
	q := c.clientQuotas()
	if q == nil {
		return nil
	}
	s, ok := c.quotaSensorFor(q, controller.QuotaConsumerByteRate, r.hdr.ClientID, time.Now().UnixMilli())
	if !ok {
		return nil
	}
	return &fetchQuota{c: c, s: s}
}

// maxBytes is what the quota lets through in a window: the most a throttled-free
// fetch may return (ClientQuotaManager.getMaxValueInQuotaWindow).
func (f *fetchQuota) maxBytes() int64 {
	v := f.s.bound * float64(f.s.w.samples-1) * float64(f.s.w.windowMs) / 1000
	if v >= 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

// throttleFetch records a consumer Fetch answer of size bytes and returns the throttle
// it needs, the larger of the byte rate's and the request rate's (already set on the
// response); a throttled answer's bytes are taken back, as it goes out without
// records.
func (f *fetchQuota) throttleFetch(r *request, size int64) int64 {
	now := time.Now()
	ms := now.UnixMilli()
	t := f.s.recordAndThrottle(float64(size), ms)
	t = max(t, int64(r.resp.throttle.Load()))
	if t > 0 {
		f.s.record(-float64(size), ms)
		f.c.throttle(r.resp, t, now)
	}
	return t
}
