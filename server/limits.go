package server

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/gokafkad/gokafkad/internal/monotime"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
)

// limits is the broker's state for the bounds a client cannot push past (issue 11):
// recovered panics, the memory budget of request frames, the requests being handled,
// and connection quotas.
type limits struct {
	panics panicCounter
	// memory is queued.max.request.bytes: bytes of request frames being read or
	// handled, and what decoding them may allocate, on every listener.
	memory memoryBudget
	// handling holds one token per request being handled (queued.max.requests).
	handling chan struct{}
	// idle is connections.max.idle.ms (0: connections never time out).
	idle time.Duration
	// brokerConns and controllerConns are the connection quotas of the broker
	// and controller listeners.
	brokerConns, controllerConns *connectionQuotas
	// rejectLog bounds the log lines for refused connections to one a second.
	rejectLog  sync.Mutex
	lastReject time.Time
}

// maxInFlightPerConn bounds the requests one connection has read and not yet been
// answered for (parked in the purgatory or waiting for the writer): the reader stops
// reading the socket until the oldest is answered. Kafka reads one request per
// connection at a time; clients pipeline up to 5 by default (librdkafka more), so 32
// keeps their pipelining while bounding what one connection can park.
const maxInFlightPerConn = 32

// initLimits sets the limits from the broker config (Start, before listening).
func (b *Broker) initLimits() error {
	b.limits.memory.limit = b.cfg.QueuedMaxRequestBytes
	b.limits.handling = make(chan struct{}, b.cfg.QueuedMaxRequests)
	if b.cfg.ConnectionsMaxIdleMs > 0 {
		b.limits.idle = time.Duration(b.cfg.ConnectionsMaxIdleMs) * time.Millisecond
	}
	var err error
	name := func(ls []config.Listener) string {
		if len(ls) == 0 {
			return ""
		}
		return ls[0].Name
	}
	if b.limits.brokerConns, err = newConnectionQuotas(b.cfg.Broker, name(b.cfg.BrokerListeners())); err != nil {
		return err
	}
	b.limits.controllerConns, err = newConnectionQuotas(b.cfg.Broker, name(b.cfg.ControllerListeners()))
	return err
}

// admit applies the connection quotas of the listener serving apis to a connection
// just accepted: it may wait (max.connections, max.connection.creation.rate) or
// close the connection (max.connections.per.ip). leave must be called when an
// admitted connection ends.
func (b *Broker) admit(nc net.Conn, apis *apiTable) (leave func(), ok bool) {
	q := b.limits.brokerConns
	if apis == controllerAPIs {
		q = b.limits.controllerConns
	}
	ip := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(ip); err == nil {
		ip = h
	}
	if p := net.ParseIP(ip); p != nil {
		ip = p.String()
	}
	if err := q.inc(ip, b.closing); err != nil {
		nc.Close()
		if errors.Is(err, errTooManyConnections) {
			b.limits.rejectLog.Lock()
			if now := time.Now(); now.Sub(b.limits.lastReject) >= time.Second {
				b.limits.lastReject = now
				b.log.Info().Str("listener", q.listener).Str("client_ip", ip).
					Msg("rejected connection: max.connections.per.ip reached for this address (further rejections within a second are not logged)")
			}
			b.limits.rejectLog.Unlock()
		}
		return nil, false
	}
	if apis.clients() {
		if d := b.ipConnectionThrottle(ip); d > 0 {
			q.dec(ip)
			b.closeThrottled(nc, d, ip)
			return nil, false
		}
	}
	return func() { q.dec(ip) }, true
}

// QueuedRequestBytes is how many bytes of request frames the broker holds now (being
// read or handled), counted against queued.max.request.bytes.
func (b *Broker) QueuedRequestBytes() int64 { return b.limits.memory.inUse() }

// memoryBudget is a byte budget with waiting: Acquire blocks while the bytes would
// exceed the limit. A reader that cannot grow its frame stops reading its socket, so
// the client is held back by TCP instead of the broker allocating.
type memoryBudget struct {
	limit int64 // <= 0: unbounded (counted only)
	mu    sync.Mutex
	used  int64
	// freed is closed (and cleared) when bytes are released while someone waits.
	freed chan struct{}
}

var (
	errBudgetTimeout = errors.New("server: request frame not completed within connections.max.idle.ms (queued.max.request.bytes spent)")
	errConnClosed    = errors.New("server: connection closed")
)

// acquire takes n bytes, waiting until they fit. A caller holding every byte in use
// (own) is let through, so one request larger than what is left of the budget — a
// frame of socket.request.max.bytes rounded up to its pool class, with its decoding
// — cannot wait for itself. It fails at deadline (zero: none) or when stop is closed.
func (m *memoryBudget) acquire(n, own int, deadline time.Time, stop <-chan struct{}) error {
	var timeout <-chan time.Time
	for {
		m.mu.Lock()
		if m.limit <= 0 || m.used+int64(n) <= m.limit || m.used == int64(own) {
			m.used += int64(n)
			m.mu.Unlock()
			return nil
		}
		if m.freed == nil {
			m.freed = make(chan struct{})
		}
		freed := m.freed
		m.mu.Unlock()
		if timeout == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return errBudgetTimeout
		case <-stop:
			return errConnClosed
		}
	}
}

func (m *memoryBudget) release(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= int64(n)
	if m.freed != nil {
		close(m.freed)
		m.freed = nil
	}
}

func (m *memoryBudget) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// connBudget is the broker's memory budget as one connection's frame reader sees it:
// a wait ends with the frame's deadline or the connection.
type connBudget struct{ c *conn }

func (cb connBudget) Acquire(n int) error {
	c := cb.c
	if err := c.b.limits.memory.acquire(n, c.held, c.frameDeadline, c.b.closing); err != nil {
		return err
	}
	c.held += n
	return nil
}

func (cb connBudget) Release(n int) {
	cb.c.held -= n
	cb.c.b.limits.memory.release(n)
}

// releaseHeld gives back every budget byte the connection holds.
func (c *conn) releaseHeld() {
	if c.held != 0 {
		c.b.limits.memory.release(c.held)
		c.held = 0
	}
}

var errIdle = errors.New("server: connection idle for longer than connections.max.idle.ms")

// readFrame reads the next request frame, charged to the memory budget (held until
// releaseHeld, once the request is handled). With connections.max.idle.ms
// set, a connection that sends nothing for that long while nothing of it is in flight
// is closed (errIdle), and so is one whose frame is not complete that long after its
// first byte, as Kafka's Selector expires idle channels.
func (c *conn) readFrame() ([]byte, error) {
	idle := c.b.limits.idle
	if idle > 0 {
		for {
			deadline := monotime.Time(c.lastActive.Load()).Add(idle)
			if c.inflight.Load() > 0 {
				deadline = time.Now().Add(idle)
			}
			c.readDeadline(deadline)
			err := c.frames.WaitFrame()
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, err
			}
			if c.inflight.Load() == 0 && time.Since(monotime.Time(c.lastActive.Load())) >= idle {
				return nil, errIdle
			}
		}
		c.frameDeadline = time.Now().Add(idle)
		c.readDeadline(c.frameDeadline)
	}
	frame, _, err := c.frames.Read() // its charge is in c.held
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errIdle
	}
	c.lastActive.Store(monotime.Now())
	return frame, err
}

// queue gives r its place in the answer order; it blocks while maxInFlightPerConn
// requests of this connection are unanswered.
func (c *conn) queue(r *response) {
	c.inflight.Add(1)
	c.out <- r
}

// parkedOps are the operations a connection has waiting in the purgatory: when it
// closes they are expired at once (answered with what they have, or dropped with the
// socket), not left to their timeouts.
type parkedOps struct {
	mu sync.Mutex
	m  map[*replication.Delayed]struct{}
}

func (c *conn) park(d *replication.Delayed) {
	c.parked.mu.Lock()
	defer c.parked.mu.Unlock()
	if c.parked.m == nil {
		c.parked.m = map[*replication.Delayed]struct{}{}
	}
	c.parked.m[d] = struct{}{}
}

func (c *conn) unpark(d *replication.Delayed) {
	c.parked.mu.Lock()
	defer c.parked.mu.Unlock()
	delete(c.parked.m, d)
}

// expireParked completes every operation the connection still has parked (its read
// side is done).
func (c *conn) expireParked() {
	c.parked.mu.Lock()
	ds := make([]*replication.Delayed, 0, len(c.parked.m))
	for d := range c.parked.m {
		ds = append(ds, d)
	}
	c.parked.mu.Unlock()
	for _, d := range ds {
		c.b.rm.Purgatory.Expire(d)
	}
}

// maxFetchWait bounds a Fetch's max_wait_ms: at most connections.max.idle.ms (10
// minutes when that is disabled). A request in flight keeps its connection from
// being idle, so an unbounded wait would keep a connection, and the fetch's
// purgatory entry, forever; the client gets what there is when the bound passes.
func (b *Broker) maxFetchWait(ms int32) time.Duration {
	bound := b.limits.idle
	if bound <= 0 {
		bound = 10 * time.Minute
	}
	return min(time.Duration(ms)*time.Millisecond, bound)
}

// errDecodeTooCostly refuses a request whose decoding could take more memory than the
// whole of queued.max.request.bytes.
var errDecodeTooCostly = errors.New("server: request could take more memory to decode than queued.max.request.bytes")

// chargeDecode charges to the memory budget what decoding frame into req may
// allocate (protocol.DecodeCost), waiting like a frame's growth; the charge is held
// with the frame's until the request is handled. A malformed Produce or Fetch is
// refused here, before kmsg allocates for it.
func (c *conn) chargeDecode(frame []byte, req kmsg.Request) error {
	cost, err := protocol.RequestDecodeCost(frame, req)
	if err != nil {
		return err
	}
	m := &c.b.limits.memory
	if m.limit <= 0 || cost == 0 {
		return nil
	}
	if int64(cost) > m.limit {
		return fmt.Errorf("%w: %s of %d bytes, up to %d bytes to decode", errDecodeTooCostly, protocol.NameForKey(req.Key()), len(frame), cost)
	}
	return connBudget{c}.Acquire(cost)
}

// takesHandlingSlot reports whether r counts against queued.max.requests. Some
// handlers wait for replication (an offset commit or a coordinator write waits for
// the high watermark), so followers' fetches, which move it, never wait for a slot,
// nor does the controller listener; otherwise handlers waiting for replication could
// hold every slot the fetches need.
func (c *conn) takesHandlingSlot(r *request) bool {
	if !c.apis.clients() {
		return false
	}
	if f, ok := r.req.(*kmsg.FetchRequest); ok && followerOf(f) != nil {
		return false
	}
	return true
}

// Socket deadlines are coarse: moving one costs a timer update, too much for every
// request, so a deadline at least t is kept while it is no later than t plus a
// sixteenth of connections.max.idle.ms. Timeouts thus fire between the idle time
// and 1/16 later; an idle wait that fires early is re-armed (readFrame checks).

// readDeadline makes the socket's read deadline at least t (read goroutine).
func (c *conn) readDeadline(t time.Time) {
	slack := c.b.limits.idle / 16
	if !c.rdl.Before(t) && c.rdl.Before(t.Add(slack)) {
		return
	}
	c.rdl = t.Add(slack)
	c.nc.SetReadDeadline(c.rdl)
}

// setWriteDeadline gives the next response connections.max.idle.ms to be written:
// a client that stops reading its answers is closed, as an idle one is, instead of
// holding its queued responses forever (write goroutine).
func (c *conn) setWriteDeadline() {
	idle := c.b.limits.idle
	if idle <= 0 {
		return
	}
	t := time.Now().Add(idle)
	if !c.wdl.Before(t) && c.wdl.Before(t.Add(idle/16)) {
		return
	}
	c.wdl = t.Add(idle / 16)
	c.nc.SetWriteDeadline(c.wdl)
}

// wrote records that responses went out: the connection is active.
func (c *conn) wrote() { c.lastActive.Store(monotime.Now()) }

// writers are the connections' 64 KiB write buffers, held only while responses are
// being sent: 400 connections that never get an answer hold none.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

func getWriter(w io.Writer) *bufio.Writer {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

// putWriter gives back a flushed write buffer, and drops an encoding buffer that a
// large response grew (it would stay with the connection otherwise).
func putWriter(bw *bufio.Writer, buf []byte) (*bufio.Writer, []byte) {
	bw.Reset(nil)
	writers.Put(bw)
	if cap(buf) > 64<<10 {
		buf = nil
	}
	return nil, buf
}
