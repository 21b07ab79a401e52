package server

// The broker's own SASL login, for the connections it opens to other brokers
// (inter.broker.listener.name, sasl.mechanism.inter.broker.protocol) and to the
// controllers (the first of controller.listener.names,
// sasl.mechanism.controller.protocol) when those listeners are SASL_*. As Kafka's
// SaslClientAuthenticator: SaslHandshake v1, then SaslAuthenticate until the
// mechanism is done, with the credentials of the listener's JAAS entry for the
// mechanism (username / password of PlainLoginModule or ScramLoginModule; an
// unsecured token from OAuthBearerLoginModule's unsecuredLogin* options). newOutbound
// (tls.go) puts it on the dialers of those listeners.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	franzsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/replication"
	"github.com/gokafkad/gokafkad/sasl"
)

// saslLogin is how this broker logs in on one SASL listener it dials.
type saslLogin struct {
	listener  string
	mechanism string
	mech      franzsasl.Mechanism
	now       func() time.Time
}

// newSASLLogin builds the broker's login for listener with mechanism mech (the
// inter-broker or controller mechanism), from that listener's JAAS entry.
func newSASLLogin(cfg *config.Broker, listener, mech string, now func() time.Time) (*saslLogin, error) {
	name := strings.ToUpper(listener)
	if mech == sasl.GSSAPI {
		return nil, fmt.Errorf("server: this broker would log in to the SASL listener %s with GSSAPI (Kafka's default sasl.mechanism.inter.broker.protocol / sasl.mechanism.controller.protocol), which gokafkad cannot use: set PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", name)
	}
	jaas, key := cfg.ListenerJAAS(listener, mech)
	if jaas == "" {
		return nil, fmt.Errorf("server: no JAAS configuration for this broker's %s login on listener %s: set %s", mech, name, key)
	}
	e, err := sasl.ParseJAASConfig(jaas)
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", key, err)
	}
	if want := loginModuleFor(mech); e.LoginModule != want {
		return nil, fmt.Errorf("server: %s: login module %s is not supported for %s by gokafkad (use %s)", key, e.LoginModule, mech, want)
	}
	l := &saslLogin{listener: name, mechanism: mech, now: now}
	user, pass := e.Options["username"], e.Options["password"]
	needPassword := func() error {
		if user == "" || pass == "" {
			return fmt.Errorf("server: %s: the broker's own %s login needs username and password options", key, mech)
		}
		return nil
	}
	switch mech {
	case sasl.Plain:
		if err := needPassword(); err != nil {
			return nil, err
		}
		l.mech = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case sasl.ScramSHA256, sasl.ScramSHA512:
		if err := needPassword(); err != nil {
			return nil, err
		}
		a := scram.Auth{User: user, Pass: pass}
		l.mech = a.AsSha256Mechanism()
		if mech == sasl.ScramSHA512 {
			l.mech = a.AsSha512Mechanism()
		}
	case sasl.OAuthBearer:
		if _, err := unsecuredLoginToken(e, now()); err != nil { // checked at start-up
			return nil, fmt.Errorf("server: %s: %w", key, err)
		}
		l.mech = oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			t, err := unsecuredLoginToken(e, l.now())
			return oauth.Auth{Token: t, Extensions: unsecuredLoginExtensions(e)}, err
		})
	default:
		return nil, fmt.Errorf("server: SASL mechanism %s cannot be used for this broker's own login", mech)
	}
	return l, nil
}

// unsecuredLoginToken makes the unsecured JWS Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler makes: claims from the
// unsecuredLoginStringClaim_<name>, unsecuredLoginNumberClaim_<name> and
// unsecuredLoginListClaim_<name> options (a list's first character is its
// separator), iat now, exp after unsecuredLoginLifetimeSeconds (3600); the principal
// claim (unsecuredLoginPrincipalClaimName, "sub") must be set.
func unsecuredLoginToken(e sasl.JAASEntry, now time.Time) (string, error) {
	claims := map[string]any{}
	for k, v := range e.Options {
		switch {
		case strings.HasPrefix(k, "unsecuredLoginStringClaim_"):
			claims[strings.TrimPrefix(k, "unsecuredLoginStringClaim_")] = v
		case strings.HasPrefix(k, "unsecuredLoginNumberClaim_"):
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return "", fmt.Errorf("option %s is not a number: %q", k, v)
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginNumberClaim_")] = n
		case strings.HasPrefix(k, "unsecuredLoginListClaim_"):
			var list []string
			if v != "" {
				for _, s := range strings.Split(v[1:], v[:1]) {
					if s != "" {
						list = append(list, s)
					}
				}
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = list
		}
	}
	principalClaim := e.Options["unsecuredLoginPrincipalClaimName"]
	if principalClaim == "" {
		principalClaim = "sub"
	}
	if s, _ := claims[principalClaim].(string); strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("no principal: set unsecuredLoginStringClaim_%s", principalClaim)
	}
	lifetime := int64(3600)
	if v := e.Options["unsecuredLoginLifetimeSeconds"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("unsecuredLoginLifetimeSeconds %q is not a positive integer", v)
		}
		lifetime = n
	}
	ms := now.UnixMilli()
	claims["iat"] = float64(ms) / 1000
	claims["exp"] = float64(ms)/1000 + float64(lifetime)
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(body) + ".", nil
}

// unsecuredLoginExtensions are the unsecuredLoginExtension_<key> options.
func unsecuredLoginExtensions(e sasl.JAASEntry) map[string]string {
	ext := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "unsecuredLoginExtension_"); ok {
			ext[name] = v
		}
	}
	return ext
}

// errSASLLogin is what a failed outbound login wraps.
var errSASLLogin = errors.New("server: SASL login failed")

// authenticate logs in on nc, a fresh connection to a SASL listener: SaslHandshake
// v1 then SaslAuthenticate v1 until the mechanism is done. It returns the session
// lifetime the server gave (0: unlimited); the connection should be replaced before
// it ends.
func (l *saslLogin) authenticate(ctx context.Context, nc net.Conn, clientID string) (time.Duration, error) {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	br := bufio.NewReader(nc)
	var corr int32
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		corr++
		if _, err := nc.Write(appendRequest(nil, req, corr, clientID)); err != nil {
			return err
		}
		frame, err := protocol.ReadFrame(br, 1<<20, nil)
		if err != nil {
			return err
		}
		if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != corr {
			return errors.New("server: SASL answer out of order")
		}
		body := frame[4:]
		if req.IsFlexible() {
			if body, err = protocol.SkipTags(body); err != nil {
				return err
			}
		}
		resp.SetVersion(req.GetVersion())
		return resp.ReadFrom(body)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = l.mechanism
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	if err := roundTrip(hs, hsr); err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(hsr.ErrorCode); err != nil {
		return 0, fmt.Errorf("%w: %s on listener %s: %v (enabled: %s)", errSASLLogin, l.mechanism, l.listener, err, strings.Join(hsr.SupportedMechanisms, ","))
	}
	session, token, err := l.mech.Authenticate(ctx, nc.RemoteAddr().String())
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errSASLLogin, err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = token
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := roundTrip(req, resp); err != nil {
			return 0, err
		}
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			return 0, fmt.Errorf("%w: %s on listener %s: %v: %s", errSASLLogin, l.mechanism, l.listener, kerr.ErrorForCode(resp.ErrorCode), msg)
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", errSASLLogin, err)
		}
		if done {
			return time.Duration(resp.SessionLifetimeMillis) * time.Millisecond, nil
		}
		token = next
	}
}

// saslDialer dials with base (plain TCP when nil), then logs in with l. A session
// with a lifetime is replaced before it ends: once 90% of it has passed, the
// connection refuses further writes and closes, so its owner (fetcher, controller
// channel, Raft transport) dials and logs in again rather than being disconnected by
// the server mid-request.
func saslDialer(base replication.DialFunc, l *saslLogin, clientID string, now func() time.Time) replication.DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := dial(ctx, base, addr, dialTimeout)
		if err != nil {
			return nil, err
		}
		if _, ok := ctx.Deadline(); !ok { // a silent server must not hold the dialer
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, dialTimeout)
			defer cancel()
		}
		start := now()
		lifetime, err := l.authenticate(ctx, nc, clientID)
		if err != nil {
			nc.Close()
			return nil, err
		}
		if lifetime <= 0 {
			return nc, nil
		}
		return &expiringConn{Conn: nc, renewAt: start.Add(lifetime * 9 / 10), now: now}, nil
	}
}

// errSASLSessionEnded is a write on an outbound connection whose SASL session is about
// to end.
var errSASLSessionEnded = errors.New("server: SASL session lifetime ending, reconnecting")

// expiringConn is an outbound connection whose SASL session ends.
type expiringConn struct {
	net.Conn
	renewAt time.Time
	now     func() time.Time
}

// Write refuses (and closes the connection) once the session is near its end.
func (c *expiringConn) Write(p []byte) (int, error) {
	if !c.now().Before(c.renewAt) {
		c.Conn.Close()
		return 0, errSASLSessionEnded
	}
	return c.Conn.Write(p)
}
