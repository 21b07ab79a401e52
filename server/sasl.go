package server

// SASL on a SASL_PLAINTEXT / SASL_SSL listener, as Kafka's SaslServerAuthenticator.
// Authentication sits in the connection's read loop, before any request reaches a
// handler:
//
//	frame (≤ sasl.server.max.receive.size until authenticated, CVE-2022-34917)
//	  → saslConn.frame: ApiVersions (once) / SaslHandshake / SaslAuthenticate only,
//	    anything else closes the connection
//	  → sasl.Server (the pure exchange of the mechanism)
//	  → conn.session.principal = User:<name>, then requests go to their handlers.
//
// SaslHandshake v1 is followed by SaslAuthenticate requests (v0–v2); v0 by raw tokens,
// size-prefixed without Kafka headers (kafka-python still uses it; Kafka 4 keeps it).
// Failures are answered as Kafka answers them (UNSUPPORTED_SASL_MECHANISM with the
// enabled list, SASL_AUTHENTICATION_FAILED with the mechanism's public message or the
// generic one) and the connection is closed once the answer is out.
//
// Re-authentication (KIP-368): SaslAuthenticate v1+ is told the session lifetime (the
// smaller of connections.max.reauth.ms and the credential's expiry, OAUTHBEARER's exp).
// A client that used v1+ may send SaslHandshake again on its authenticated connection
// to re-authenticate, with the same mechanism and principal; a request arriving after
// the session expired closes the connection, as Kafka's SocketServer does.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/sasl"
)

// API keys of the SASL requests.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslListener is what a SASL listener authenticates with, built once at start-up.
type saslListener struct {
	name string
	// mechanisms are the enabled ones, in configuration order (SaslHandshake lists them).
	mechanisms []string
	maxReceive int32
	plain      sasl.PlainUsers
	oauth      sasl.OAuthOptions
	// reauth is each mechanism's connections.max.reauth.ms (0: none).
	reauth map[string]time.Duration
	// scram finds a user's SCRAM credential for a mechanism type (the metadata image).
	scram func(user string, mech int8) (sasl.ScramCredential, bool)
	// token finds a delegation token for a SCRAM token login (delegation_tokens.go).
	token func(id string, m *sasl.ScramMechanism) (sasl.ScramToken, bool)
	// failLog logs failed authentications, at most a burst a second: a client that
	// retries a wrong password in a loop must not fill the log.
	failLog zerolog.Logger
}

// newSASLListener checks and resolves the SASL configuration of listener name, as
// Kafka's SaslChannelBuilder does at start-up: every enabled mechanism must be one
// gokafkad serves (GSSAPI is refused) and have its JAAS login module configured.
func (b *Broker) newSASLListener(name string) (*saslListener, error) {
	sc, err := b.cfg.ListenerSASL(name)
	if err != nil {
		return nil, err
	}
	l := &saslListener{name: sc.Listener, maxReceive: sc.MaxReceiveSize, reauth: map[string]time.Duration{},
		failLog: b.log.Sample(&zerolog.BurstSampler{Burst: 10, Period: time.Second}).With().Str("listener", sc.Listener).Logger()}
	l.scram = func(user string, mech int8) (sasl.ScramCredential, bool) {
		// A node with a controller reads its controller's image: a controller-only
		// node has no broker image, and the controller's is set before any listener
		// accepts. A broker-only node's listeners accept once b.ctl is set.
		if b.localCtl != nil {
			return b.localCtl.Image().ScramCredential(user, mech)
		}
		return b.ctl.Image().ScramCredential(user, mech)
	}
	l.token = b.scramToken
	if len(sc.EnabledMechanisms) == 0 {
		return nil, fmt.Errorf("server: listener %s: sasl.enabled.mechanisms is empty: no SASL mechanism is enabled", sc.Listener)
	}
	for _, m := range sc.EnabledMechanisms {
		if m == sasl.GSSAPI {
			return nil, fmt.Errorf("server: listener %s: sasl.enabled.mechanisms includes GSSAPI (Kafka's default), which gokafkad cannot serve (no Kerberos): enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER instead", sc.Listener)
		}
		if !sasl.Supported(m) {
			return nil, fmt.Errorf("server: listener %s: sasl.enabled.mechanisms: mechanism %s is not supported by gokafkad (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", sc.Listener, m)
		}
		key := sc.JAASKey[m]
		if sc.JAAS[m] == "" {
			return nil, fmt.Errorf("server: listener %s: no JAAS configuration for SASL mechanism %s: set %s", sc.Listener, m, key)
		}
		e, err := sasl.ParseJAASConfig(sc.JAAS[m])
		if err != nil {
			return nil, fmt.Errorf("server: %s: %w", key, err)
		}
		if want := loginModuleFor(m); e.LoginModule != want {
			return nil, fmt.Errorf("server: %s: login module %s is not supported for %s by gokafkad (use %s)", key, e.LoginModule, m, want)
		}
		switch m {
		case sasl.Plain:
			l.plain = sasl.PlainUsersFromJAAS(e)
		case sasl.OAuthBearer:
			if l.oauth, err = sasl.OAuthOptionsFromJAAS(e); err != nil {
				return nil, fmt.Errorf("server: %s: %w", key, err)
			}
			if l.oauth.JWT, err = jwtOptions(sc); err != nil {
				return nil, err
			}
		}
		if ms := sc.ReauthMs[m]; ms > 0 {
			l.reauth[m] = time.Duration(ms) * time.Millisecond
		}
		l.mechanisms = append(l.mechanisms, m)
	}
	return l, nil
}

// jwtOptions are the options of Kafka's secured OAUTHBEARER validator when the
// listener uses it (nil: the unsecured validator, Kafka's default). As Kafka, the
// validator needs sasl.oauthbearer.jwks.endpoint.url; a JWKS URL without the validator
// is refused rather than left unused while unsigned tokens are accepted.
func jwtOptions(sc config.SASL) (*sasl.JWTOptions, error) {
	urlKey := "sasl.oauthbearer.jwks.endpoint.url"
	u := sc.OAuth[urlKey]
	if !sc.OAuthValidator {
		if u != "" {
			return nil, fmt.Errorf("server: listener %s: %s is set but OAUTHBEARER uses the unsecured validator: set listener.name.%s.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
				sc.Listener, sc.OAuthKey[urlKey], strings.ToLower(sc.Listener))
		}
		return nil, nil
	}
	if u == "" {
		return nil, fmt.Errorf("server: listener %s: OAuthBearerValidatorCallbackHandler needs %s", sc.Listener, urlKey)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "file" {
		return nil, fmt.Errorf("server: %s: %q is not a file: URL", sc.OAuthKey[urlKey], u)
	}
	path := pu.Path
	if path == "" {
		path = pu.Opaque
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", sc.OAuthKey[urlKey], err)
	}
	keys, err := sasl.ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("server: %s (%s): %w", sc.OAuthKey[urlKey], path, err)
	}
	skew, err := strconv.Atoi(sc.OAuth["sasl.oauthbearer.clock.skew.seconds"])
	if err != nil || skew < 0 {
		return nil, fmt.Errorf("server: %s: not a non-negative integer", sc.OAuthKey["sasl.oauthbearer.clock.skew.seconds"])
	}
	o := &sasl.JWTOptions{
		Keys:           keys,
		ExpectedIssuer: sc.OAuth["sasl.oauthbearer.expected.issuer"],
		SubClaimName:   sc.OAuth["sasl.oauthbearer.sub.claim.name"],
		ScopeClaimName: sc.OAuth["sasl.oauthbearer.scope.claim.name"],
		ClockSkew:      time.Duration(skew) * time.Second,
	}
	for _, a := range strings.Split(sc.OAuth["sasl.oauthbearer.expected.audience"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.ExpectedAudience = append(o.ExpectedAudience, a)
		}
	}
	return o, nil
}

// loginModuleFor is the JAAS login module a mechanism is configured with.
func loginModuleFor(mech string) string {
	switch mech {
	case sasl.Plain:
		return sasl.PlainLoginModule
	case sasl.OAuthBearer:
		return sasl.OAuthBearerLoginModule
	}
	return sasl.ScramLoginModule
}

// newServer starts an exchange of mechanism mech (one of l.mechanisms).
func (l *saslListener) newServer(mech string) sasl.Server {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(l.plain)
	case sasl.OAuthBearer:
		return sasl.NewOAuthServer(l.oauth)
	}
	m, _ := sasl.ScramMechanismByName(mech)
	return sasl.NewScramServer(m, func(user string) (sasl.ScramCredential, bool) { return l.scram(user, m.Type()) }, rand.Reader).
		WithTokens(func(id string) (sasl.ScramToken, bool) { return l.token(id, m) })
}

// checkSASLConfig refuses SASL settings gokafkad cannot honour (config.CheckSASLKeys)
// and checks, as Kafka's KafkaConfig does for the inter-broker one, that the
// mechanisms this node uses on its SASL inter-broker and controller listeners are
// enabled there.
func checkSASLConfig(cfg *config.Broker) error {
	if err := cfg.CheckSASLKeys(); err != nil {
		return err
	}
	check := func(listener, mech, key, what string) error {
		if listener == "" {
			return nil
		}
		p := cfg.ListenerSecurityProtocolMap[listener]
		if p != "SASL_PLAINTEXT" && p != "SASL_SSL" {
			return nil
		}
		if mech == sasl.GSSAPI {
			return fmt.Errorf("server: %s is GSSAPI (Kafka's default), which gokafkad cannot use: set it to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER for the SASL %s listener %s", key, what, listener)
		}
		sc, err := cfg.ListenerSASL(listener)
		if err != nil {
			return err
		}
		if !slices.Contains(sc.EnabledMechanisms, mech) {
			return fmt.Errorf("server: %s must be included in sasl.enabled.mechanisms when SASL is used for %s communication (listener %s enables %s)", key, what, listener, strings.Join(sc.EnabledMechanisms, ","))
		}
		return nil
	}
	if cfg.IsBroker() || len(cfg.ProcessRoles) == 0 {
		if err := check(cfg.InterBrokerListenerName, cfg.SASLMechanismInterBrokerProtocol(), "sasl.mechanism.inter.broker.protocol", "inter-broker"); err != nil {
			return err
		}
	}
	// Kafka does not check the controller mechanism at all; gokafkad checks it where
	// the controller listener is bound (a broker-only node's config need not list the
	// controllers' enabled mechanisms; its login is checked by newSASLLogin).
	if len(cfg.ControllerListenerNames) > 0 && cfg.IsController() {
		return check(cfg.ControllerListenerNames[0], cfg.SASLMechanismControllerProtocol(), "sasl.mechanism.controller.protocol", "controller")
	}
	return nil
}

// saslState is where a connection is in authentication.
type saslState int8

const (
	// saslHandshakeOrVersions: the first request, ApiVersions or SaslHandshake.
	saslHandshakeOrVersions saslState = iota
	// saslHandshakeOnly: after ApiVersions, SaslHandshake only.
	saslHandshakeOnly
	// saslAuthenticating: after SaslHandshake v1, SaslAuthenticate only.
	saslAuthenticating
	// saslRawTokens: after SaslHandshake v0, raw tokens without headers.
	saslRawTokens
	// saslComplete: authenticated; requests go to their handlers.
	saslComplete
)

// saslConn is one connection's authentication state. Only the read loop uses it.
type saslConn struct {
	l     *saslListener
	state saslState
	// server is the exchange in progress (nil before a handshake).
	server    sasl.Server
	mechanism string
	// principal is the authenticated principal (kept when re-authenticating).
	principal string
	// clientReauth: the client used SaslAuthenticate v1+, so it knows session
	// lifetimes and may re-authenticate (Kafka's connectedClientSupportsReauthentication).
	clientReauth bool
	// reauthenticating: the exchange in progress is a re-authentication.
	reauthenticating bool
	// badMechanism is set when a re-authentication asked for another mechanism: the
	// next token closes the connection, as Kafka's REAUTH_BAD_MECHANISM state.
	badMechanism string
	// expiry ends the session (zero: never).
	expiry time.Time
}

func newSASLConn(l *saslListener) *saslConn { return &saslConn{l: l} }

// maxFrame is the largest frame the connection may send next.
func (s *saslConn) maxFrame(socketMax int32) int32 {
	if s.state == saslComplete {
		return socketMax
	}
	return s.l.maxReceive
}

// Errors that close a SASL connection.
var (
	errSASLIllegalState = errors.New("server: request not allowed during SASL authentication")
	errSASLExpired      = errors.New("server: SASL session expired without re-authentication")
	errSASLFailed       = errors.New("server: SASL authentication failed")
)

// frame runs a frame through authentication. handled means the frame was consumed
// here (answered or not); otherwise it goes on to the handlers. A returned error
// closes the connection, after what was answered is sent when it wraps
// errCloseAfterAnswer.
func (s *saslConn) frame(c *conn, frame []byte) (handled bool, err error) {
	now := c.b.cfg.Now()
	if s.state == saslRawTokens {
		return true, s.rawToken(c, now, frame)
	}
	hdr, err := protocol.PeekHeader(frame)
	if err != nil {
		return true, err
	}
	switch s.state {
	case saslComplete:
		if hdr.APIKey == saslHandshakeKey && s.clientReauth {
			s.reauthenticating = true
			return true, s.handshake(c, frame)
		}
		if !s.expiry.IsZero() && !now.Before(s.expiry) {
			return true, errSASLExpired
		}
		return false, nil
	case saslHandshakeOrVersions, saslHandshakeOnly:
		switch {
		case hdr.APIKey == protocol.APIVersionsKey && s.state == saslHandshakeOrVersions:
			// As Kafka: a version it does not serve is answered (KIP-511) and the
			// client may ask again; a served one is the only ApiVersions before the
			// handshake.
			if a := c.apis.get(hdr.APIKey); a != nil && hdr.APIVersion >= a.min && hdr.APIVersion <= a.max {
				s.state = saslHandshakeOnly
			}
			return false, nil
		case hdr.APIKey == saslHandshakeKey:
			return true, s.handshake(c, frame)
		}
		return true, fmt.Errorf("%w: unexpected Kafka request of type %s during SASL handshake", errSASLIllegalState, kmsg.NameForKey(hdr.APIKey))
	}
	// saslAuthenticating
	if hdr.APIKey != saslAuthenticateKey {
		return true, fmt.Errorf("%w: unexpected Kafka request of type %s during SASL authentication", errSASLIllegalState, kmsg.NameForKey(hdr.APIKey))
	}
	return true, s.authenticate(c, now, frame)
}

// parse decodes a SASL request after checking its version against the table.
func parseSASLRequest(c *conn, frame []byte, req kmsg.Request) (protocol.RequestHeader, error) {
	hdr, err := protocol.PeekHeader(frame)
	if err != nil {
		return hdr, err
	}
	if a := c.apis.get(hdr.APIKey); a == nil || hdr.APIVersion < a.min || hdr.APIVersion > a.max {
		return hdr, errUnsupportedVersion
	}
	return protocol.ParseRequest(frame, req)
}

// answer queues msg as the answer to the request with header hdr.
func (c *conn) answer(hdr protocol.RequestHeader, req kmsg.Request, msg kmsg.Response) {
	r := &response{ready: make(chan struct{}), key: hdr.APIKey, flexible: req.IsFlexible(), corrID: hdr.CorrelationID}
	c.queue(r)
	r.finish(msg)
}

func (s *saslConn) handshake(c *conn, frame []byte) error {
	req := kmsg.NewPtrSASLHandshakeRequest()
	hdr, err := parseSASLRequest(c, frame, req)
	if err != nil {
		return err
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(req.Version)
	resp.SupportedMechanisms = s.l.mechanisms
	if !slices.Contains(s.l.mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.answer(hdr, req, resp)
		return fmt.Errorf("%w: unsupported SASL mechanism %q", errCloseAfterAnswer, req.Mechanism)
	}
	if s.reauthenticating && req.Version == 0 {
		return fmt.Errorf("%w: SaslHandshake v0 cannot re-authenticate", errSASLIllegalState)
	}
	c.answer(hdr, req, resp)
	if s.reauthenticating && req.Mechanism != s.mechanism {
		s.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", req.Mechanism, s.mechanism)
	}
	s.mechanism = req.Mechanism
	s.server = s.l.newServer(req.Mechanism)
	if req.Version == 0 {
		s.state = saslRawTokens
	} else {
		s.state = saslAuthenticating
	}
	return nil
}

func (s *saslConn) authenticate(c *conn, now time.Time, frame []byte) error {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	hdr, err := parseSASLRequest(c, frame, req)
	if err != nil {
		return err
	}
	if s.badMechanism != "" {
		return fmt.Errorf("%w: %s", errSASLFailed, s.badMechanism)
	}
	if req.Version > 0 {
		s.clientReauth = true
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(req.Version)
	fail := func(err error) error {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(sasl.ClientMessage(err, s.mechanism, s.reauthenticating))
		c.answer(hdr, req, resp)
		s.l.failLog.Info().Str("remote", c.nc.RemoteAddr().String()).Str("mechanism", s.mechanism).Err(err).Msg("SASL authentication failed")
		return fmt.Errorf("%w: %v", errCloseAfterAnswer, err)
	}
	challenge, err := s.server.Step(now, req.SASLAuthBytes)
	if err != nil {
		return fail(err)
	}
	resp.SASLAuthBytes = challenge
	if s.server.Done() {
		lifetime, err := s.complete(c, now)
		if err != nil {
			return fail(err)
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
	}
	c.answer(hdr, req, resp)
	return nil
}

// rawToken is one token of a SaslHandshake v0 exchange: no headers either way, and
// a failure can only close the connection.
func (s *saslConn) rawToken(c *conn, now time.Time, token []byte) error {
	challenge, err := s.server.Step(now, token)
	if err == nil && s.server.Done() {
		_, err = s.complete(c, now)
	}
	if err != nil {
		s.l.failLog.Info().Str("remote", c.nc.RemoteAddr().String()).Str("mechanism", s.mechanism).Err(err).Msg("SASL authentication failed")
		return fmt.Errorf("%w: %v", errSASLFailed, err)
	}
	r := &response{ready: make(chan struct{}), rawToken: true, raw: challenge}
	c.queue(r)
	close(r.ready)
	return nil
}

// complete ends a successful exchange: the principal, the session's lifetime.
func (s *saslConn) complete(c *conn, now time.Time) (time.Duration, error) {
	principal := "User:" + s.server.AuthorizationID()
	if s.reauthenticating {
		if principal != s.principal {
			return 0, &sasl.Error{Public: true, Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s: %s",
				strings.Replace(s.principal, ":", ".", 1), strings.Replace(principal, ":", ".", 1))}
		}
	} else {
		s.principal = principal
		// Set once, before any request of the session reaches a handler.
		c.session.principal = principal
		if t, ok := s.server.(*sasl.ScramServer); ok {
			c.session.tokenAuthenticated = t.TokenAuthenticated()
		}
	}
	lifetime := sessionLifetime(now, s.server.CredentialExpiry(), s.l.reauth[s.mechanism])
	s.expiry = time.Time{}
	if lifetime > 0 || !s.server.CredentialExpiry().IsZero() || s.l.reauth[s.mechanism] > 0 {
		s.expiry = now.Add(lifetime)
	}
	s.state, s.server, s.reauthenticating = saslComplete, nil, false
	c.log.Debug().Str("principal", principal).Str("mechanism", s.mechanism).Dur("session_lifetime", lifetime).Msg("SASL authenticated")
	return lifetime, nil
}

// sessionLifetime is how long a session may last, as Kafka's
// ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs: the smaller of the
// credential's remaining life and connections.max.reauth.ms, whichever are set (0:
// unlimited when neither is).
func sessionLifetime(now, credentialExpiry time.Time, maxReauth time.Duration) time.Duration {
	var d time.Duration
	switch {
	case credentialExpiry.IsZero() && maxReauth <= 0:
		return 0
	case credentialExpiry.IsZero():
		d = maxReauth
	case maxReauth <= 0:
		d = credentialExpiry.Sub(now)
	default:
		d = min(credentialExpiry.Sub(now), maxReauth)
	}
	return max(d, 0).Truncate(time.Millisecond)
}

// errCloseAfterAnswer closes a connection once the answers already queued are sent
// (Kafka sends a SASL failure's response, then closes).
var errCloseAfterAnswer = errors.New("server: closing after the answer")
