package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// LeaderEndpoint is a follower's connection to one leader broker, as Kafka's
// RemoteLeaderEndPoint over a BrokerBlockingSender: one request in flight, versions
// negotiated with ApiVersions once per connection, reconnect on any error.
type LeaderEndpoint struct {
	addr     string
	clientID string
	maxFrame int32

	mu       sync.Mutex
	nc       net.Conn
	br       *bufio.Reader
	corr     int32
	versions map[int16]int16 // the leader's max version per key
	// timeout bounds a request (and a dial) whose context has no deadline (0: none).
	timeout time.Duration
	// dial connects (plain TCP when nil).
	dial DialFunc
	// wbuf is the request encoding buffer, reused by every request.
	wbuf []byte
	// frame is the response buffer reused by RequestReusing.
	frame []byte
}

// NewLeaderEndpoint returns an endpoint for the broker at addr (dialled lazily).
// maxFrame bounds the response size (replica.fetch.response.max.bytes plus framing).
func NewLeaderEndpoint(addr, clientID string, maxFrame int32) *LeaderEndpoint {
	return &LeaderEndpoint{addr: addr, clientID: clientID, maxFrame: maxFrame}
}

// DialFunc opens a connection to addr (host:port): plain TCP, or TLS on an SSL
// listener.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// SetDial makes later connections with d (nil: plain TCP).
func (e *LeaderEndpoint) SetDial(d DialFunc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dial = d
}

// SetTimeout bounds every later request whose context has no deadline, dial included,
// so a caller that sends requests in a loop needs no context per request.
func (e *LeaderEndpoint) SetTimeout(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timeout = d
}

// Close drops the connection.
func (e *LeaderEndpoint) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closeLocked()
}

func (e *LeaderEndpoint) closeLocked() {
	if e.nc != nil {
		e.nc.Close()
		protocol.PutReader(e.br)
		e.nc, e.br, e.versions = nil, nil, nil
	}
}

// errNoCommonVersion is returned when the leader does not serve a key we need.
var errNoCommonVersion = errors.New("replication: leader does not serve the request's api")

// Request sends req at the highest version both sides serve and returns the response.
// Any failure closes the connection; the next call redials.
func (e *LeaderEndpoint) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return e.request(ctx, req, false)
}

// RequestReusing is Request reading the response into a buffer the endpoint keeps:
// byte fields of the response (a fetch's records) alias it and are valid only until
// the next RequestReusing. For the replica fetcher, which is done with one response
// before it sends the next fetch, this saves allocating and zeroing up to
// replica.fetch.response.max.bytes per fetch.
func (e *LeaderEndpoint) RequestReusing(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return e.request(ctx, req, true)
}

func (e *LeaderEndpoint) request(ctx context.Context, req kmsg.Request, reuse bool) (kmsg.Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nc == nil {
		if err := e.dialLocked(ctx); err != nil {
			return nil, err
		}
	}
	max, ok := e.versions[req.Key()]
	if !ok {
		return nil, fmt.Errorf("%w: %s", errNoCommonVersion, kmsg.NameForKey(req.Key()))
	}
	req.SetVersion(min(max, req.MaxVersion()))
	resp, err := e.roundTripLocked(ctx, req, reuse)
	if err != nil {
		e.closeLocked()
	}
	return resp, err
}

func (e *LeaderEndpoint) dialLocked(ctx context.Context) error {
	var nc net.Conn
	var err error
	if e.dial != nil {
		dctx := ctx
		if e.timeout > 0 {
			var cancel context.CancelFunc
			dctx, cancel = context.WithTimeout(ctx, e.timeout)
			defer cancel()
		}
		nc, err = e.dial(dctx, e.addr)
	} else {
		d := net.Dialer{Timeout: e.timeout}
		nc, err = d.DialContext(ctx, "tcp", e.addr)
	}
	if err != nil {
		return err
	}
	e.nc, e.br = nc, protocol.GetReader(nc)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gokafkad", "0"
	resp, err := e.roundTripLocked(ctx, av, false)
	if err != nil {
		e.closeLocked()
		return err
	}
	avr := resp.(*kmsg.ApiVersionsResponse)
	if avr.ErrorCode != 0 {
		e.closeLocked()
		return fmt.Errorf("replication: ApiVersions to %s: error %d", e.addr, avr.ErrorCode)
	}
	e.versions = map[int16]int16{}
	for _, k := range avr.ApiKeys {
		e.versions[k.ApiKey] = k.MaxVersion
	}
	return nil
}

// roundTripLocked writes one request frame and reads its response, into e.frame when
// reuse is set. Lock should be held.
func (e *LeaderEndpoint) roundTripLocked(ctx context.Context, req kmsg.Request, reuse bool) (kmsg.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		e.nc.SetDeadline(dl)
	} else if e.timeout > 0 {
		e.nc.SetDeadline(time.Now().Add(e.timeout))
	} else {
		e.nc.SetDeadline(time.Time{})
	}
	e.corr++
	corr := e.corr
	buf := append(e.wbuf[:0], 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(e.clientID)))
	buf = append(buf, e.clientID...)
	if req.IsFlexible() {
		buf = append(buf, 0) // no header tags
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	e.wbuf = buf
	if _, err := e.nc.Write(buf); err != nil {
		return nil, err
	}
	var reused []byte
	if reuse {
		reused = e.frame
	}
	frame, err := protocol.ReadFrame(e.br, e.maxFrame, reused)
	if err != nil {
		return nil, err
	}
	if reuse {
		e.frame = frame
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != corr {
		return nil, fmt.Errorf("replication: response correlation id mismatch from %s", e.addr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != protocol.APIVersionsKey {
		var err error
		if body, err = protocol.SkipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("replication: decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
