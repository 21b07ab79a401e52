package server

// TLS on the broker's listeners and on its own outbound connections. A TLS listener
// (SSL, SASL_SSL) gets a tls.Config from its ssl.* configs, listener.name.<l>.ssl.*
// first (security.ServerConfig); the handshake runs in the connection's goroutine
// (serveConn) and the client certificate's distinguished name, through the listener's
// ssl.principal.mapping.rules, becomes conn.session.principal. Connections this broker
// opens — replica fetchers and transaction peers on the inter-broker listener, the
// controller channel and Raft on the first controller listener — dial TLS with that
// listener's keystore (client certificate) and truststore when its protocol is SSL
// (outbound.dial). Responses over TLS are copied, not sent with sendfile: the kernel
// cannot encrypt them (see sendFile's fallback).

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/security"
)

// listenerTLS is what a TLS listener serves with.
type listenerTLS struct {
	name string
	// config is what tls.Server gets: every handshake takes the current state's
	// config (GetConfigForClient), so a keystore or truststore update applies to new
	// connections and leaves open ones alone.
	config *tls.Config
	cur    atomic.Pointer[tlsState]
	mapper *security.PrincipalMapper
}

// tlsState is a listener's TLS configuration built from one set of ssl.* values.
type tlsState struct {
	config *tls.Config
	store  *security.Store
}

// buildTLSState builds the server side of listener name from its ssl.* configs.
func buildTLSState(s config.SSL) (*tlsState, error) {
	store, err := security.NewStore(s)
	if err != nil {
		return nil, err
	}
	tc, err := security.ServerConfig(s, store)
	if err != nil {
		return nil, err
	}
	return &tlsState{config: tc, store: store}, nil
}

// newListenerTLS builds the TLS side of listener name from its ssl.* configs.
func (b *Broker) newListenerTLS(name string) (*listenerTLS, error) {
	s := b.cfg.ListenerSSL(name)
	st, err := buildTLSState(s)
	if err != nil {
		return nil, fmt.Errorf("server: listener %s: %w", name, err)
	}
	mapper, err := security.NewPrincipalMapper(s.Get("ssl.principal.mapping.rules"))
	if err != nil {
		return nil, fmt.Errorf("server: listener %s: %s: %w", name, s.Key("ssl.principal.mapping.rules"), err)
	}
	lt := &listenerTLS{name: name, mapper: mapper}
	lt.cur.Store(st)
	lt.config = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return lt.cur.Load().config, nil
	}}
	return lt, nil
}

// dialTimeout bounds connecting (TCP and TLS handshake) to another node.
const dialTimeout = 10 * time.Second

// outbound holds how this node dials the inter-broker and controller listeners of
// other nodes: nil means plain TCP.
type outbound struct {
	interBroker replication.DialFunc
	controller  replication.DialFunc
}

// newOutbound builds the dialers of the listeners this node connects to: TLS on SSL
// and SASL_SSL, then on SASL_* the broker's own SASL login (sasl_client.go) with
// sasl.mechanism.inter.broker.protocol or sasl.mechanism.controller.protocol.
func (b *Broker) newOutbound() (outbound, error) {
	var o outbound
	clientID := "gokafkad-broker-" + strconv.Itoa(int(b.cfg.NodeID))
	mk := func(name, mech string) (replication.DialFunc, error) {
		d, err := b.tlsOutbound(name)
		if d == nil {
			d = b.hookedDialer() // plain TCP (nil) unless a test harness dials
		}
		if err != nil || !isSASLProtocol(b.cfg.ListenerSecurityProtocolMap[name]) {
			return d, err
		}
		l, err := newSASLLogin(b.cfg.Broker, name, mech, b.cfg.Now)
		if err != nil {
			return nil, err
		}
		return saslDialer(d, l, clientID, b.cfg.Now), nil
	}
	var err error
	if b.cfg.IsBroker() {
		if o.interBroker, err = mk(b.cfg.InterBrokerListenerName, b.cfg.SASLMechanismInterBrokerProtocol()); err != nil {
			return o, err
		}
	}
	if len(b.cfg.ControllerListenerNames) > 0 {
		if o.controller, err = mk(b.cfg.ControllerListenerNames[0], b.cfg.SASLMechanismControllerProtocol()); err != nil {
			return o, err
		}
	}
	return o, nil
}

// tlsOutbound is the TLS dialer of listener name (nil when it is not SSL or SASL_SSL).
func (b *Broker) tlsOutbound(name string) (replication.DialFunc, error) {
	if !isTLSProtocol(b.cfg.ListenerSecurityProtocolMap[name]) {
		return nil, nil
	}
	s := b.cfg.ListenerSSL(name)
	store, err := security.NewStore(s)
	if err != nil {
		return nil, fmt.Errorf("server: outbound connections on listener %s: %w", name, err)
	}
	tc, err := security.ClientConfig(s, store)
	if err != nil {
		return nil, fmt.Errorf("server: outbound connections on listener %s: %w", name, err)
	}
	if base := b.hookedDialer(); base != nil {
		return tlsOver(base, tc), nil
	}
	return tlsDialer(tc), nil
}

// tlsDialer dials TLS with c, checking the certificate of the host dialled.
func tlsDialer(c *tls.Config) replication.DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: security.WithServerName(c, host)}
		return d.DialContext(ctx, "tcp", addr)
	}
}

// dial connects with d, or plain TCP when d is nil.
func dial(ctx context.Context, d replication.DialFunc, addr string, timeout time.Duration) (net.Conn, error) {
	if d != nil {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return d(ctx, addr)
	}
	nd := net.Dialer{Timeout: timeout}
	return nd.DialContext(ctx, "tcp", addr)
}
