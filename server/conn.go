package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"github.com/gokafkad/gokafkad/internal/monotime"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

var connIDs atomic.Uint64

// conn is one client connection: a read goroutine (serve) that decodes requests and
// runs their handlers, and a write goroutine (writeLoop) that sends responses strictly
// in request order. A handler may answer later (acks=all, long-polling fetch): the
// writer waits for the oldest unanswered request, so later answers queue behind it.
type conn struct {
	b *Broker
	// apis is the listener's API table (brokerAPIs or controllerAPIs).
	apis *apiTable
	nc   net.Conn
	log  zerolog.Logger
	// out holds responses in request order; its capacity bounds the requests in flight
	// on one connection (the reader blocks when it is full).
	out chan *response
	// broken is closed when the read side failed: the writer stops waiting for
	// answers that will never matter.
	broken chan struct{}
	// session is who is on the other end, as Kafka's RequestContext has it.
	session session

	// frames reads request frames from nc (made when the read loop starts, so nc may
	// be wrapped before, e.g. by TLS). maxFrame, when set before serve, is its first
	// MaxSize instead of socket.request.max.bytes — the hook for
	// sasl.server.max.receive.size before authentication; set frames.MaxSize from
	// the read goroutine once the limit changes.
	frames   *protocol.FrameReader
	maxFrame int32
	// frameDeadline is when the frame being read must be complete, and held the
	// budget bytes the connection holds (read goroutine only).
	frameDeadline time.Time
	held          int
	// rdl and wdl are the socket's read and write deadlines as last set (by the
	// read and the write goroutine).
	rdl, wdl time.Time
	// inflight counts requests read and not yet answered on the wire.
	inflight atomic.Int32
	// lastActive is when a frame was last read or a response last written (a
	// monotime reading: a step of the wall clock must not make a busy connection
	// look idle, nor an idle one busy).
	lastActive atomic.Int64
	// parked are this connection's operations waiting in the purgatory.
	parked parkedOps
	// auth is the SASL authentication of a SASL listener's connection (nil
	// elsewhere); see sasl.go.
	auth *saslConn
	// id is the connection's number in this process; heartbeats the broker whose
	// BrokerHeartbeats it carries (controller listener; controller_liveness.go).
	id         uint64
	heartbeats heartbeatOwner
	// mutedUntil is when a client-quota throttle ends (a monotime reading, so that a
	// step of the wall clock neither lengthens nor cuts it; 0: not muted): the
	// read loop reads nothing before (quotas.go).
	mutedUntil atomic.Int64
}

// session is what authorization needs to know of a connection: the principal the
// listener's authentication established and the client's address. Until a listener
// authenticates (TLS client certificates, SASL), every connection is User:ANONYMOUS,
// as on Kafka's PLAINTEXT listeners.
type session struct {
	// principal is "Type:name", e.g. "User:ANONYMOUS" or "User:CN=alice".
	principal string
	// host is the client's IP address, as ACLs match it.
	host string
	// listener is the name of the listener the connection came in on, and
	// securityProtocol that listener's protocol (PLAINTEXT, SSL, ...), as Kafka's
	// RequestContext.listenerName and securityProtocol.
	listener         string
	securityProtocol string
	// tokenAuthenticated is set when SASL/SCRAM logged in with a delegation token
	// (Kafka's KafkaPrincipal.tokenAuthenticated): such a session may not manage
	// tokens (delegation_tokens.go).
	tokenAuthenticated bool
}

// anonymousPrincipal is the principal of an unauthenticated connection.
const anonymousPrincipal = "User:ANONYMOUS"

// response is one request's answer slot.
type response struct {
	ready chan struct{} // closed once the answer is set
	// answered is set by the first finish / finishChunks / skip; later ones are
	// ignored (a request failed after a panic may still be completed by the purgatory).
	answered atomic.Bool

	key      int16
	flexible bool
	corrID   int32
	none     bool // no response at all (acks=0 produce)
	// throttle is the throttle_time_ms a client quota gave this answer (quotas.go).
	throttle atomic.Int32
	// rawToken: raw is a SASL token sent without a response header (SaslHandshake v0).
	rawToken bool
	raw      []byte
	// Either msg, or body chunks with file slices between them (fetch via sendfile):
	// chunks[0], slices[0], chunks[1], slices[1], ..., chunks[len(slices)].
	msg    kmsg.Response
	chunks [][]byte
	slices []storage.FileSlice

	// metric, version and start are for the request metrics: metric is the
	// status.RequestMetric index + 1, 0 when not counted (http_status.go).
	metric  int16
	version int16
	start   time.Time
}

func (r *response) finish(msg kmsg.Response) {
	if !r.answered.CompareAndSwap(false, true) {
		return
	}
	r.msg = msg
	close(r.ready)
}

func (r *response) finishChunks(chunks [][]byte, slices []storage.FileSlice) {
	if !r.answered.CompareAndSwap(false, true) {
		return
	}
	r.chunks, r.slices = chunks, slices
	close(r.ready)
}

func (r *response) skip() {
	if !r.answered.CompareAndSwap(false, true) {
		return
	}
	r.none = true
	close(r.ready)
}

// request is what a handler gets.
type request struct {
	hdr  protocol.RequestHeader
	req  kmsg.Request
	resp *response
}

// newConn makes the connection of nc; s is its session as the listener established it
// (principal, listener), completed here with the client's host.
func newConn(b *Broker, nc net.Conn, apis *apiTable, s session) *conn {
	id := connIDs.Add(1)
	s.host = nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(s.host); err == nil {
		s.host = h
	}
	c := &conn{
		b: b, nc: nc, apis: apis, id: id,
		log:     b.log.With().Uint64("conn", id).Str("remote", nc.RemoteAddr().String()).Logger(),
		out:     make(chan *response, maxInFlightPerConn),
		broken:  make(chan struct{}),
		session: s,
	}
	c.lastActive.Store(monotime.Now())
	return c
}

// serve is the read loop. It returns when the connection is closed or misbehaves.
func (c *conn) serve() {
	writerDone := make(chan struct{})
	go func() {
		c.writeLoop()
		close(writerDone)
	}()
	err := c.readLoopRecovered()
	c.noteClosed(err)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errCloseAfterAnswer) {
		c.log.Info().Err(err).Msg("closing connection")
	}
	c.expireParked()
	c.b.share.connClosed(c) // share sessions close with their connection (share_partitions.go)
	close(c.out)
	// The writer drains what was already answered unless the socket is gone.
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errCloseAfterAnswer) {
		close(c.broken)
		c.nc.Close()
	}
	<-writerDone
	c.nc.Close()
}

func (c *conn) readLoop() error {
	maxFrame := c.b.cfg.SocketRequestMaxBytes
	if c.maxFrame > 0 {
		maxFrame = min(maxFrame, c.maxFrame)
	}
	br := protocol.GetReader(c.nc)
	defer protocol.PutReader(br) // only this goroutine reads c.frames
	c.frames = protocol.NewFrameReader(br, maxFrame, &framePool, connBudget{c})
	// The budget bytes of the request being handled are released before the next read.
	defer c.releaseHeld()
	for {
		c.releaseHeld()
		if c.auth != nil {
			c.frames.MaxSize = c.auth.maxFrame(maxFrame)
		}
		if err := c.waitMuted(); err != nil {
			return err
		}
		frame, err := c.readFrame()
		if err != nil {
			return err
		}
		if c.auth != nil {
			if handled, err := c.auth.frame(c, frame); err != nil {
				return err
			} else if handled {
				continue
			}
		}
		hdr, err := protocol.PeekHeader(frame)
		if err != nil {
			return err
		}
		if hdr.APIKey == raftMessageKey && c.apis == controllerAPIs {
			if err := c.stepRaftMessage(frame); err != nil {
				return err
			}
			continue
		}
		api := c.apis.get(hdr.APIKey)
		if api == nil {
			return protocol.ErrUnknownAPIKey
		}
		if hdr.APIVersion < api.min || hdr.APIVersion > api.max {
			if hdr.APIKey != protocol.APIVersionsKey {
				return errUnsupportedVersion
			}
			// KIP-511: answer an unknown ApiVersions version with v0 and the
			// supported versions, so the client can pick one.
			r := &response{ready: make(chan struct{}), key: hdr.APIKey, corrID: hdr.CorrelationID}
			c.queue(r)
			r.finish(c.apis.unsupportedAPIVersionsResponse())
			continue
		}
		req := protocol.RequestForKey(hdr.APIKey)
		if err := c.chargeDecode(frame, req); err != nil {
			return err
		}
		hdr, err = protocol.ParseRequest(frame, req)
		if err != nil {
			return err
		}
		r := &response{ready: make(chan struct{}), key: hdr.APIKey, flexible: req.IsFlexible(), corrID: hdr.CorrelationID}
		if c.b.metrics != nil {
			r.metric, r.version, r.start = requestMetric(hdr.APIKey, req)+1, hdr.APIVersion, time.Now()
		}
		c.queue(r)
		if e := c.log.Debug(); e.Enabled() {
			e.Str("api", protocol.NameForKey(hdr.APIKey)).Int16("version", hdr.APIVersion).
				Int32("correlation_id", hdr.CorrelationID).Str("client_id", hdr.ClientID).Msg("request")
		}
		rq := &request{hdr: hdr, req: req, resp: r}
		if c.b.cfg.Hooks != nil && c.b.cfg.Hooks.Request != nil {
			if handled, err := c.hookRequest(rq); err != nil {
				return err
			} else if handled {
				continue
			}
		}
		if c.b.authz != nil && !c.authorizeRequest(hdr.APIKey, rq) {
			continue
		}
		if err := c.handle(api, rq, len(frame)); err != nil {
			return err
		}
		if hdr.APIKey == int16(kmsg.Produce) {
			// handleProduce is done with the records once it returns: they are in
			// the log, and what waits in the purgatory refers only to the response.
			framePool.Put(frame)
		}
	}
}

// framePool recycles the buffers of large request frames. Only produce frames go back
// (see readLoop): other handlers may keep slices of their request after returning.
var framePool protocol.FramePool

var errUnsupportedVersion = errors.New("server: unsupported api version")

// writeLoop sends answers in order, batching whatever is ready into one flush.
func (c *conn) writeLoop() {
	// The write buffer is taken from a pool while there is something to send and
	// given back once all is flushed, so an idle connection holds none (limits.go).
	var bw *bufio.Writer
	var buf []byte
	for r := range c.out {
		select {
		case <-r.ready:
		case <-c.b.closing: // shutting down: do not wait for parked fetches / produces
			c.nc.Close()
			for range c.out { // let the reader finish
			}
			return
		case <-c.broken: // the connection is being closed for a bad request
			for range c.out {
			}
			return
		}
		c.inflight.Add(-1)
		if r.none {
			c.observeRequest(r)
			continue
		}
		if t := r.throttle.Load(); t > 0 {
			applyThrottle(r, t)
		}
		c.setWriteDeadline()
		if bw == nil {
			bw = getWriter(c.nc)
		}
		buf = buf[:0]
		buf = append(buf, 0, 0, 0, 0)
		if !r.rawToken {
			buf = protocol.AppendResponseHeader(buf, r.key, r.flexible, r.corrID)
		}
		var err error
		if r.msg != nil || r.rawToken {
			if r.rawToken {
				buf = append(buf, r.raw...)
			} else {
				buf = r.msg.AppendTo(buf)
			}
			binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
			_, err = bw.Write(buf)
		} else {
			err = c.writeChunks(bw, buf, r)
		}
		c.observeRequest(r)
		if err == nil && len(c.out) == 0 {
			err = bw.Flush()
			c.wrote()
			if err == nil {
				bw, buf = putWriter(bw, buf)
			}
		}
		if err != nil {
			c.nc.Close()
			for range c.out { // let the reader finish
			}
			return
		}
	}
	if bw != nil {
		bw.Flush()
	}
}

// copyBelow is the size under which a file slice is read into the write buffer
// rather than sent with sendfile(2). A follower that keeps up fetches a few small
// batches at a time; sent as header, sendfile, trailer, such a response could wake its
// fetcher three times, each costing more than copying the bytes. Must not exceed the
// write buffer's size.
const copyBelow = 32 << 10

// writeChunks writes a response whose body is in-memory chunks with file slices
// between them. A response that fits in bw is copied into it whole, file bytes
// included, and leaves in one write. A larger one goes out with the socket corked, so
// it leaves as full segments: small slices copied, the others with sendfile.
func (c *conn) writeChunks(bw *bufio.Writer, hdr []byte, r *response) error {
	size := int64(len(hdr) - 4)
	for _, ch := range r.chunks {
		size += int64(len(ch))
	}
	for _, s := range r.slices {
		size += s.Len
	}
	binary.BigEndian.PutUint32(hdr, uint32(size))
	whole := size+4 <= int64(bw.Size())
	corked := false
	if whole {
		if int(size+4) > bw.Available() {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	} else {
		corked = setCork(c.nc, true)
	}
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	for i, ch := range r.chunks {
		if _, err := bw.Write(ch); err != nil {
			return err
		}
		if i >= len(r.slices) || r.slices[i].Len == 0 {
			continue
		}
		if s := r.slices[i]; whole || s.Len < copyBelow {
			if err := copySliceTo(bw, s); err != nil {
				return err
			}
			continue
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := sendFile(c.nc, r.slices[i]); err != nil {
			return err
		}
	}
	if corked {
		if err := bw.Flush(); err != nil {
			return err
		}
		setCork(c.nc, false)
	}
	return nil
}

// copySliceTo reads s into bw's buffer (s.Len must not exceed bw's size). A range
// truncated meanwhile is zero-filled, as sendFile does.
func copySliceTo(bw *bufio.Writer, s storage.FileSlice) error {
	if int(s.Len) > bw.Available() {
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	buf := bw.AvailableBuffer()[:s.Len]
	n, err := s.File.ReadAt(buf, s.Pos)
	switch {
	case errors.Is(err, io.EOF):
		clear(buf[n:])
	case err != nil:
		return err
	}
	_, err = bw.Write(buf)
	return err
}
