package server

// Hooks: the seams an in-process test harness (kafkatest) uses to put faults between a
// node and the rest of the world. They sit at the edges only — the TCP connections the
// node opens and accepts, and each decoded request before it is handled — so the
// broker under test runs its real code everywhere else. A process started from
// server.properties never has them (Config.Hooks is nil), and then each costs one nil
// check where it would apply.

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/security"
)

// Hooks are Config.Hooks; a nil field leaves its path alone.
type Hooks struct {
	// Dial, when set, makes the TCP connection of every connection this node opens
	// to another node: replica fetchers and transaction peers (inter-broker
	// listener), the controller channel, the metadata fetch and Raft (controller
	// listener). TLS and SASL, when the listener has them, run over what it returns.
	// ctx carries the dial's timeout.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Accept, when set, wraps every connection a listener (named listener) accepts,
	// before anything reads or writes it (a TLS handshake included). Connection
	// limits (max.connections.per.ip) have already counted it by its own address.
	Accept func(listener string, nc net.Conn) net.Conn
	// Listen, when set, opens the TCP listener named listener on addr (kafkatest
	// hands over a voter's controller listener it bound before the node started, so
	// that the other voters can reach it from their first message on).
	Listen func(listener, addr string) (net.Listener, error)
	// Request, when set, sees every request decoded on a broker or controller
	// listener (Raft messages and SASL authentication excepted) before it is
	// authorized and handled, in the connection's read loop, and says what to do with
	// it. It must not keep req beyond the call (its bytes may be reused).
	Request func(req *HookedRequest) HookAction
	// ShareGroups, when set, serves the share-group APIs (76-79), which are not
	// complete yet and so are advertised nowhere else (share_apis.go).
	ShareGroups bool
}

// HookedRequest is a request as Hooks.Request sees it.
type HookedRequest struct {
	// Listener is the name of the listener the request came in on, and Remote the
	// connection's remote address ("host:port").
	Listener string
	Remote   string
	Header   protocol.RequestHeader
	Request  kmsg.Request
}

// HookAction is what Hooks.Request decides for a request; the zero value handles it
// as usual.
type HookAction struct {
	// Delay holds the request (and, as the connection's read loop waits, every later
	// request of its connection, as a slow broker would) this long before the rest of
	// the action applies.
	Delay time.Duration
	// Drop closes the connection without answering.
	Drop bool
	// Response, when set, is sent as the answer instead of handling the request (its
	// version is set to the request's). An acks=0 produce gets no answer.
	Response kmsg.Response
}

// errHookDrop closes a connection a hook dropped.
var errHookDrop = errors.New("server: connection dropped by a test hook")

// hookRequest runs the request hook on rq and applies its action; handled reports
// that rq was answered (or skipped) and needs no handler; an error closes the
// connection.
func (c *conn) hookRequest(rq *request) (handled bool, err error) {
	act := c.b.cfg.Hooks.Request(&HookedRequest{Listener: c.session.listener, Remote: c.nc.RemoteAddr().String(),
		Header: rq.hdr, Request: rq.req})
	if act.Delay > 0 {
		t := time.NewTimer(act.Delay)
		select {
		case <-t.C:
		case <-c.b.closing:
			t.Stop()
			rq.resp.skip()
			return true, net.ErrClosed
		}
	}
	switch {
	case act.Drop:
		rq.resp.skip()
		return true, errHookDrop
	case act.Response != nil:
		if p, ok := rq.req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			rq.resp.skip()
			return true, nil
		}
		act.Response.SetVersion(rq.hdr.APIVersion)
		rq.resp.finish(act.Response)
		return true, nil
	}
	return false, nil
}

// hookedAccept wraps an accepted connection with Hooks.Accept.
func (b *Broker) hookedAccept(l *listener, nc net.Conn) net.Conn {
	if h := b.cfg.Hooks; h != nil && h.Accept != nil {
		return h.Accept(l.Name, nc)
	}
	return nc
}

// hookedDialer is the plain-TCP dialer of outbound connections: Hooks.Dial, or nil
// (net.Dialer, see dial) without hooks.
func (b *Broker) hookedDialer() replication.DialFunc {
	if h := b.cfg.Hooks; h != nil && h.Dial != nil {
		return h.Dial
	}
	return nil
}

// tlsOver dials with base (plain TCP when nil), then makes the TLS handshake with c
// over that connection, checking the certificate of the host dialled.
func tlsOver(base replication.DialFunc, c *tls.Config) replication.DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := dial(ctx, base, addr, dialTimeout)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, security.WithServerName(c, host))
		hctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}
