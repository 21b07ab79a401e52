package server

// Listeners: every entry of `listeners` is bound, each with the security protocol
// listener.security.protocol.map gives its name and the advertised address of the
// advertised.listeners entry of the same name. A connection knows the listener it came
// in on (conn.session.listener / securityProtocol): Metadata, DescribeCluster and
// FindCoordinator answer with every broker's endpoint on that listener, as Kafka's
// KafkaApis does with request.context.listenerName.
//
// Brokers reach each other on inter.broker.listener.name (or the listener named after
// security.inter.broker.protocol) and the controllers on the first of
// controller.listener.names; dialListener is where such an outbound connection is made
// with the protocol of that listener.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/controller"
)

// listener is one bound entry of listeners.
type listener struct {
	config.Listener // name, configured host and port, security protocol
	ln              net.Listener
	apis            *apiTable // brokerAPIs (narrowed when pretending, as_version.go), or controllerAPIs on a controller listener
	// advHost and advPort are what this listener is advertised as.
	advHost string
	advPort int32
	// tls is the server side of an SSL / SASL_SSL listener (nil otherwise).
	tls *listenerTLS
	// sasl authenticates the connections of a SASL_PLAINTEXT / SASL_SSL listener
	// (nil otherwise; sasl.go).
	sasl *saslListener
	// refusedLog logs refused handshakes, at most a burst a second: a client that
	// retries in a loop must not fill the log.
	refusedLog zerolog.Logger
}

// addr is the advertised host:port.
func (l *listener) addr() string { return net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort))) }

// Kafka's SecurityProtocol ids, as BrokerRegistration carries them.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// isTLSProtocol reports whether a security protocol runs over TLS.
func isTLSProtocol(p string) bool { return p == "SSL" || p == "SASL_SSL" }

// checkListenerSecurity refuses a listener whose security protocol gokafkad cannot
// serve, so that nothing configured as secured is ever served in the clear. It is the
// one place that knows which protocols are supported. It is called for every listener
// this node binds and for the listeners it dials (inter-broker, controller); what a
// SASL listener needs (mechanisms, JAAS) is checked when it is built
// (newSASLListener, newSASLLogin).
func checkListenerSecurity(name, protocol string) error {
	switch protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		return nil
	}
	return fmt.Errorf("server: listener %s has unknown security protocol %q", name, protocol)
}

// isSASLProtocol reports whether a security protocol authenticates with SASL.
func isSASLProtocol(p string) bool { return p == "SASL_PLAINTEXT" || p == "SASL_SSL" }

// bindListener listens on l (at override instead of its own address when set) and
// works out what it is advertised as.
func (b *Broker) bindListener(l config.Listener, override string, apis *apiTable) (*listener, error) {
	if err := checkListenerSecurity(l.Name, l.SecurityProtocol); err != nil {
		return nil, err
	}
	bl := &listener{Listener: l, apis: apis,
		refusedLog: b.log.Sample(&zerolog.BurstSampler{Burst: 10, Period: time.Second}).With().Str("listener", l.Name).Logger()}
	if isTLSProtocol(l.SecurityProtocol) {
		lt, err := b.newListenerTLS(l.Name)
		if err != nil {
			return nil, err
		}
		bl.tls = lt
	}
	if isSASLProtocol(l.SecurityProtocol) {
		sl, err := b.newSASLListener(l.Name)
		if err != nil {
			return nil, err
		}
		bl.sasl = sl
	}
	addr := l.Addr()
	if override != "" {
		addr = override
	}
	listen := func(name, addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	if h := b.cfg.Hooks; h != nil && h.Listen != nil {
		listen = h.Listen
	}
	ln, err := listen(l.Name, addr)
	if err != nil {
		return nil, fmt.Errorf("server: listener %s: listen on %s: %w", l.Name, addr, err)
	}
	bl.ln = ln
	bound := ln.Addr().(*net.TCPAddr)
	bl.advHost, bl.advPort = bound.IP.String(), int32(bound.Port)
	if bound.IP.IsUnspecified() {
		// As Kafka: an empty host is advertised as the machine's name.
		if h, err := os.Hostname(); err == nil {
			bl.advHost = h
		}
	}
	if override == "" {
		for _, a := range b.cfg.AdvertisedListeners {
			if a.Name != l.Name {
				continue
			}
			if a.Host != "" {
				bl.advHost = a.Host
			}
			if a.Port != 0 {
				bl.advPort = int32(a.Port)
			}
		}
	}
	return bl, nil
}

// bindListeners binds every listener of the given kind (controller listeners or broker
// listeners); override, when set, replaces the first one's address (Config.Listen and
// Config.ControllerListen, for tests on 127.0.0.1:0).
func (b *Broker) bindListeners(ls []config.Listener, override string, apis *apiTable) ([]*listener, error) {
	var out []*listener
	for i, l := range ls {
		o := ""
		if i == 0 {
			o = override
		}
		bl, err := b.bindListener(l, o, apis)
		if err != nil {
			for _, x := range out {
				x.ln.Close()
			}
			return nil, err
		}
		out = append(out, bl)
	}
	return out, nil
}

// handshakeTimeout bounds a TLS handshake, so that a client that connects and says
// nothing costs a goroutine for a bounded time only.
const handshakeTimeout = 10 * time.Second

// serveConn runs one accepted connection of l: the TLS handshake on a TLS listener
// (the client certificate gives the principal), then the connection loop, which on a
// SASL listener authenticates first (the SASL user is then the principal).
func (b *Broker) serveConn(l *listener, nc net.Conn) {
	defer b.wg.Done()
	s := session{principal: anonymousPrincipal, listener: l.Name, securityProtocol: l.SecurityProtocol}
	if l.tls != nil {
		tc := tls.Server(nc, l.tls.config)
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		go func() { // a shutdown ends the handshake at once
			select {
			case <-b.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := tc.HandshakeContext(ctx)
		cancel()
		if err == nil {
			s.principal, err = l.tls.mapper.TLSPrincipal(tc.ConnectionState().PeerCertificates)
		}
		if err != nil {
			l.refusedLog.Info().Err(err).Str("remote", nc.RemoteAddr().String()).Msg("TLS connection refused")
			nc.Close()
			return
		}
		nc = tc
	}
	c := newConn(b, nc, l.apis, s)
	if l.sasl != nil {
		c.auth = newSASLConn(l.sasl)
	}
	b.connsMu.Lock()
	select {
	case <-b.closing:
		b.connsMu.Unlock()
		nc.Close()
		return
	default:
	}
	b.conns[c] = struct{}{}
	b.connsMu.Unlock()
	c.serve()
	b.connsMu.Lock()
	delete(b.conns, c)
	b.connsMu.Unlock()
}

// registrationListeners are this broker's listeners as BrokerRegistration carries
// them: every broker (non-controller) listener with its advertised address.
func (b *Broker) registrationListeners() []controller.BrokerEndpoint {
	var out []controller.BrokerEndpoint
	for _, l := range b.listeners {
		out = append(out, controller.BrokerEndpoint{Name: l.Name, Host: l.advHost, Port: l.advPort,
			SecurityProtocol: securityProtocolIDs[l.SecurityProtocol]})
	}
	return out
}

// interBrokerEndpoint is the address of broker id on the inter-broker listener, or
// false when the broker is unknown, fenced or has no such listener.
func (b *Broker) interBrokerEndpoint(id int32) (string, bool) {
	br, ok := b.ctl.Image().Brokers[id]
	if !ok || br.Fenced {
		return "", false
	}
	ep, ok := br.Endpoint(b.cfg.InterBrokerListenerName)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
}

// checkOutboundListeners refuses to start when the listener this node dials other
// brokers or the controllers on has a protocol gokafkad cannot speak.
func checkOutboundListeners(cfg *config.Broker) error {
	var errs []error
	if cfg.IsBroker() {
		errs = append(errs, checkListenerSecurity(cfg.InterBrokerListenerName, cfg.ListenerSecurityProtocolMap[cfg.InterBrokerListenerName]))
	}
	if len(cfg.ControllerListenerNames) > 0 {
		n := cfg.ControllerListenerNames[0]
		errs = append(errs, checkListenerSecurity(n, cfg.ListenerSecurityProtocolMap[n]))
	}
	return errors.Join(errs...)
}
