package integration

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/security/securitytest"
	"github.com/gokafkad/gokafkad/server"
)

// saslProps is a single node whose client listener is SASL_PLAINTEXT with every
// mechanism gokafkad serves: PLAIN users admin and alice, SCRAM users made with
// kadm, OAUTHBEARER with Kafka's unsecured tokens.
func saslProps(extra ...string) Option {
	kv := []string{
		"listeners", "SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name", "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"sasl.mechanism.inter.broker.protocol", "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";`,
	}
	return Props(append(kv, extra...)...)
}

func adminPlain() kgo.Opt {
	return kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
}

// saslErr pings with mech and returns the error (nil when authenticated).
func saslErr(t *testing.T, b *Broker, mech sasl.Mechanism) error {
	t.Helper()
	cl := b.Client(kgo.SASL(mech), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	return cl.Ping(Ctx(t, 10*time.Second))
}

// wantSASLFailed checks err is SASL_AUTHENTICATION_FAILED carrying msg.
func wantSASLFailed(t *testing.T, err error, msg string) {
	t.Helper()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED with %q", err, msg)
	}
}

func TestSASLPlain(t *testing.T) {
	b := StartBroker(t, saslProps())
	cl := b.Client(adminPlain(), kgo.AllowAutoTopicCreation())
	ctx := Ctx(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-plain", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as admin: %v", err)
	}
	if err := saslErr(t, b, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Fatalf("alice: %v", err)
	}
	wantSASLFailed(t, saslErr(t, b, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()),
		"Authentication failed: Invalid username or password")
	wantSASLFailed(t, saslErr(t, b, plain.Auth{User: "nobody", Pass: "x"}.AsMechanism()),
		"Authentication failed: Invalid username or password")
	// A client without SASL gets nothing but a closed connection.
	if err := b.Client(kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)).Ping(Ctx(t, 5*time.Second)); err == nil {
		t.Fatal("a client without SASL was served")
	}
}

func TestSASLScram(t *testing.T) {
	b := StartBroker(t, saslProps())
	adm := kadm.NewClient(b.Client(adminPlain()))
	ctx := Ctx(t, 30*time.Second)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"},
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "dave-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter: %v %v", err, altered.Error())
	}
	carol := b.Client(kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()), kgo.AllowAutoTopicCreation())
	if err := carol.ProduceSync(ctx, &kgo.Record{Topic: "sasl-scram", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("carol produces: %v", err)
	}
	if err := saslErr(t, b, scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("dave: %v", err)
	}
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism "
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: "carol", Pass: "wrong"}.AsSha256Mechanism()), generic+"SCRAM-SHA-256")
	// carol has no SCRAM-SHA-512 credential; dave's password is for 512 only.
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()), generic+"SCRAM-SHA-512")
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha256Mechanism()), generic+"SCRAM-SHA-256")

	// Deleting the credential refuses the next login.
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	wantSASLFailed(t, saslErr(t, b, scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()), generic+"SCRAM-SHA-512")
}

// unsecuredToken is a Kafka unsecured JWS for sub expiring at exp.
func unsecuredToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, time.Now().Unix()-1, exp.Unix()))) + "."
}

func TestSASLOAuthBearer(t *testing.T) {
	b := StartBroker(t, saslProps())
	tok := unsecuredToken("erin", time.Now().Add(time.Hour))
	if err := saslErr(t, b, oauth.Auth{Token: tok}.AsMechanism()); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	wantSASLFailed(t, saslErr(t, b, oauth.Auth{Token: unsecuredToken("erin", time.Now().Add(-time.Minute))}.AsMechanism()),
		`{"status":"invalid_token"}`)
	wantSASLFailed(t, saslErr(t, b, oauth.Auth{Token: "not-a-jws"}.AsMechanism()), `{"status":"invalid_token"}`)
}

// saslRaw speaks the SASL requests by hand on a raw connection.
type saslRaw struct {
	*rawConn
	corr int32
}

func (c *saslRaw) request(req kmsg.Request, resp kmsg.Response) {
	c.t.Helper()
	c.corr++
	c.send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, c.corr))
	corr, body := c.readResponse()
	if corr != c.corr {
		c.t.Fatalf("correlation id %d, want %d", corr, c.corr)
	}
	if req.IsFlexible() && req.Key() != 18 {
		body = body[1:] // no header tags
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatal(err)
	}
}

func (c *saslRaw) handshake(version int16, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	c.request(req, resp)
	return resp
}

func (c *saslRaw) authenticate(version int16, token string) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = []byte(token)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	c.request(req, resp)
	return resp
}

func (c *saslRaw) metadata() *kmsg.MetadataResponse {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	resp := kmsg.NewPtrMetadataResponse()
	c.request(req, resp)
	return resp
}

func dialSASL(t *testing.T, b *Broker) *saslRaw {
	return &saslRaw{rawConn: dialRaw(t, b.Addr())}
}

func TestSASLBeforeAuthentication(t *testing.T) {
	b := StartBroker(t, saslProps())

	// Any request but ApiVersions / SaslHandshake closes the connection, unanswered.
	c := dialSASL(t, b)
	c.send(frame(3, 12, 1, true, []byte{0, 1, 0, 0, 0}))
	c.expectClosed()

	// ApiVersions is served once, then only SaslHandshake; an unknown version is
	// answered with v0 and UNSUPPORTED_VERSION and may be retried (KIP-511).
	c = dialSASL(t, b)
	c.send(frame(18, 127, 7, true, []byte{0, 0, 0}))
	if corr, body := c.readResponse(); corr != 7 || binary.BigEndian.Uint16(body) != uint16(kerr.UnsupportedVersion.Code) {
		t.Fatalf("ApiVersions v127 before authentication: %d %v", corr, body[:2])
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	avr := kmsg.NewPtrApiVersionsResponse()
	c.request(av, avr)
	if avr.ErrorCode != 0 || len(avr.ApiKeys) == 0 {
		t.Fatalf("ApiVersions before authentication: %+v", avr)
	}
	c.send(frame(3, 12, 9, true, []byte{0, 1, 0, 0, 0}))
	c.expectClosed()

	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
	c = dialSASL(t, b)
	hs := c.handshake(1, "GSSAPI")
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
		t.Fatalf("handshake: %+v", hs)
	}
	c.expectClosed()

	// After SaslHandshake v1, only SaslAuthenticate.
	c = dialSASL(t, b)
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	c.send(frame(3, 12, 9, true, []byte{0, 1, 0, 0, 0}))
	c.expectClosed()

	// A failed SaslAuthenticate is answered, then the connection is closed.
	c = dialSASL(t, b)
	c.handshake(1, "PLAIN")
	if r := c.authenticate(2, "\x00alice\x00nope"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("authenticate: %+v", r)
	}
	c.expectClosed()

	// Authenticated: requests are served; a second SaslAuthenticate is ILLEGAL_SASL_STATE.
	c = dialSASL(t, b)
	c.handshake(1, "PLAIN")
	if r := c.authenticate(0, "\x00alice\x00alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("authenticate: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if m := c.metadata(); len(m.Brokers) != 1 {
		t.Fatalf("metadata after authentication: %+v", m)
	}
	if r := c.authenticate(0, "\x00alice\x00alice-secret"); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second authenticate: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestSASLOversizedFrameBeforeAuthentication(t *testing.T) {
	b := StartBroker(t, saslProps())
	// Only the size prefix of a 2 GiB frame: refused on the size alone, before
	// anything is allocated or read (CVE-2022-34917).
	c := dialSASL(t, b)
	c.send([]byte{0x7f, 0xff, 0xff, 0xff})
	c.expectClosed()
	// One byte over sasl.server.max.receive.size (524288).
	c = dialSASL(t, b)
	c.send(binary.BigEndian.AppendUint32(nil, 524289))
	c.expectClosed()
	// After authentication, socket.request.max.bytes applies again.
	c = dialSASL(t, b)
	c.handshake(1, "PLAIN")
	c.authenticate(1, "\x00alice\x00alice-secret")
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(strings.Repeat("t", 600<<10))
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrMetadataResponse()
	c.request(req, resp)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata for a 600 KiB request: %+v", resp)
	}
}

func TestSASLHandshakeV0RawTokens(t *testing.T) {
	b := StartBroker(t, saslProps())
	c := dialSASL(t, b)
	if hs := c.handshake(0, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("handshake v0: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	tok := "\x00alice\x00alice-secret"
	c.send(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil || binary.BigEndian.Uint32(sz[:]) != 0 {
		t.Fatalf("raw PLAIN answer: %v %v", sz, err)
	}
	if m := c.metadata(); len(m.Brokers) != 1 {
		t.Fatalf("metadata after raw authentication: %+v", m)
	}
	// A bad raw token can only be refused by closing.
	c = dialSASL(t, b)
	c.handshake(0, "PLAIN")
	bad := "\x00alice\x00nope"
	c.send(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...))
	c.expectClosed()
}

// TestSASLReauthentication: connections.max.reauth.ms is the session lifetime told
// to the client; re-authenticating on the connection extends it; a request past it
// closes the connection. The broker's clock is moved instead of waiting.
func TestSASLReauthentication(t *testing.T) {
	var skew atomic.Int64
	b := StartBroker(t, saslProps("connections.max.reauth.ms", "60000"), func(c *server.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	c := dialSASL(t, b)
	c.handshake(1, "PLAIN")
	if r := c.authenticate(1, "\x00alice\x00alice-secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 60000 {
		t.Fatalf("authenticate: %+v", r)
	}
	skew.Store(int64(50 * time.Second))
	// Re-authenticate within the lifetime: same mechanism, same principal.
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("re-auth handshake: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	if r := c.authenticate(1, "\x00alice\x00alice-secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 60000 {
		t.Fatalf("re-authenticate: %+v", r)
	}
	skew.Store(int64(100 * time.Second)) // past the first session, within the second
	if m := c.metadata(); len(m.Brokers) != 1 {
		t.Fatalf("metadata after re-authentication: %+v", m)
	}
	skew.Store(int64(111 * time.Second)) // past the second
	c.send(frame(3, 12, 50, true, []byte{0, 1, 0, 0, 0}))
	c.expectClosed()

	// Re-authenticating as someone else is refused.
	c = dialSASL(t, b)
	c.handshake(1, "PLAIN")
	c.authenticate(1, "\x00alice\x00alice-secret")
	c.handshake(1, "PLAIN")
	if r := c.authenticate(1, "\x00admin\x00admin-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		!strings.Contains(*r.ErrorMessage, "Cannot change principals during re-authentication from User.alice: User.admin") {
		t.Fatalf("re-authenticate as admin: %+v", r)
	}
	c.expectClosed()

	// A v0 client is not told a lifetime and cannot re-authenticate, but its
	// session still ends.
	c = dialSASL(t, b)
	c.handshake(1, "PLAIN")
	c.authenticate(0, "\x00alice\x00alice-secret")
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on an authenticated v0 session: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	skew.Add(int64(61 * time.Second))
	c.send(frame(3, 12, 50, true, []byte{0, 1, 0, 0, 0}))
	c.expectClosed()
}

// TestSASLReauthWithFranzGo: franz-go re-authenticates in place within the lifetime
// it is told, and keeps producing past it: more logins than connections.
func TestSASLReauthWithFranzGo(t *testing.T) {
	// franz-go re-authenticates a second (its least pessimism) before the end.
	b := StartBroker(t, saslProps("connections.max.reauth.ms", "2500"))
	var logins atomic.Int32
	mech := plain.Plain(func(context.Context) (plain.Auth, error) {
		logins.Add(1)
		return plain.Auth{User: "alice", Pass: "alice-secret"}, nil
	})
	var conns connectCounter
	cl := b.Client(kgo.SASL(mech), kgo.DefaultProduceTopic("sasl-reauth"), kgo.AllowAutoTopicCreation(), kgo.WithHooks(&conns))
	ctx := Ctx(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "in-place re-authentications", func() bool {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return logins.Load() >= conns.n.Load()+2
	})
}

// connectCounter counts a client's broker connections.
type connectCounter struct{ n atomic.Int32 }

func (c *connectCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

func TestSASLStartupRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"GSSAPI enabled", []string{"sasl.enabled.mechanisms", "GSSAPI,PLAIN"}, "GSSAPI"},
		{"unknown mechanism", []string{"sasl.enabled.mechanisms", "PLAIN,AWS_MSK_IAM", "sasl.mechanism.inter.broker.protocol", "PLAIN"}, "AWS_MSK_IAM"},
		{"no JAAS", []string{"sasl.enabled.mechanisms", "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config", ""}, "listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		{"wrong login module", []string{"listener.name.sasl_plaintext.plain.sasl.jaas.config", `com.example.Login required;`}, "com.example.Login"},
		{"bad JAAS", []string{"listener.name.sasl_plaintext.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a=`}, "JAAS"},
		{"inter-broker mechanism not enabled", []string{"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256", "sasl.enabled.mechanisms", "PLAIN"}, "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms"},
		{"inter-broker GSSAPI", []string{"sasl.mechanism.inter.broker.protocol", "GSSAPI"}, "GSSAPI"},
		{"unprefixed JAAS", []string{"sasl.jaas.config", "x"}, "sasl.jaas.config"},
		{"custom callback handler", []string{"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class", "com.example.Handler"}, "sasl.server.callback.handler.class"},
		{"broker-only node dialing a SASL controller listener with GSSAPI", []string{"process.roles", "broker", "node.id", "2",
			"listeners", "SASL_PLAINTEXT://127.0.0.1:0", "controller.quorum.voters", "1@127.0.0.1:1",
			"listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}, "GSSAPI"},
		{"broker-only node without its controller login", []string{"process.roles", "broker", "node.id", "2",
			"listeners", "SASL_PLAINTEXT://127.0.0.1:0", "controller.quorum.voters", "1@127.0.0.1:1",
			"listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"sasl.mechanism.controller.protocol", "PLAIN"}, "listener.name.controller.plain.sasl.jaas.config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig(t.TempDir())
			saslProps(tc.kv...)(&cfg)
			b, err := server.Start(cfg)
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// TestSASLSSLScram: SCRAM-SHA-512 over TLS on a SASL_SSL listener, as the README
// shows a client connecting; the SASL user, not the certificate, is the principal.
func TestSASLSSLScram(t *testing.T) {
	ca := securitytest.NewCA(t, "test-ca")
	leaf := ca.Issue(pkix.Name{CommonName: "broker"})
	dir := t.TempDir()
	b := StartBroker(t, Props(
		"listeners", "SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name", "SASL_SSL",
		"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol", "PLAIN",
		"ssl.keystore.type", "PEM",
		"ssl.keystore.location", securitytest.Write(t, dir, "broker.pem", leaf.PEMKeystore()),
		"ssl.truststore.type", "PEM",
		"ssl.truststore.location", securitytest.Write(t, dir, "ca.pem", ca.PEM),
		"listener.name.sasl_ssl.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required `+
			`username="admin" password="admin-secret" user_admin="admin-secret";`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	))
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	ctx := Ctx(t, 30*time.Second)
	adm := kadm.NewClient(b.Client(kgo.DialTLSConfig(tlsCfg), adminPlain()))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}}); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("over-tls"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce over SASL_SSL: %v", err)
	}
	wantSASLFailed(t, b.Client(kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)).Ping(ctx),
		"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
	// Without TLS the listener does not even answer ApiVersions.
	if err := b.Client(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.DialTimeout(2*time.Second)).Ping(Ctx(t, 5*time.Second)); err == nil {
		t.Fatal("served without TLS")
	}
}

// TestSASLPrincipalsAndACLs: the SASL user is the principal ACLs see. alice may not
// write until an ACL names User:alice; she may not manage SCRAM users (ALTER on the
// cluster); the super user admin may.
func TestSASLPrincipalsAndACLs(t *testing.T) {
	b := StartBroker(t, saslProps(
		"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:admin",
	))
	ctx := Ctx(t, 30*time.Second)
	adm := kadm.NewClient(b.Client(adminPlain()))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "acl-sasl"); err != nil {
		t.Fatal(err)
	}
	aliceMech := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	alice := b.Client(aliceMech, kgo.DefaultProduceTopic("acl-sasl"), kgo.RequestRetries(0), kgo.RecordRetries(1))
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without an ACL: %v", err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("acl-sasl").Allow("User:alice").Operations(kadm.OpWrite)); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "alice's ACL to apply", func() bool {
		cl := b.Client(aliceMech, kgo.DefaultProduceTopic("acl-sasl"), kgo.RequestRetries(0), kgo.RecordRetries(1))
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr() == nil
	})
	if _, err := kadm.NewClient(b.Client(aliceMech)).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "eve", Mechanism: kadm.ScramSha256, Password: "x"}}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice alters SCRAM users: %v", err)
	}
	if _, err := kadm.NewClient(b.Client(aliceMech)).DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describes SCRAM users: %v", err)
	}
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "eve", Mechanism: kadm.ScramSha256, Password: "x"}}); err != nil || res.Error() != nil {
		t.Fatalf("admin alters SCRAM users: %v %v", err, res.Error())
	}
}

// TestExampleSecureSASL: examples/secure/sasl.properties works as the README says:
// with the certificates gen-certs.sh makes, the node starts (moved to free ports and a
// temporary directory), the admin of its JAAS entry logs in with PLAIN and makes
// alice's SCRAM user, and alice produces and consumes with SCRAM-SHA-512 over TLS.
func TestExampleSecureSASL(t *testing.T) {
	dir, certs := exampleCerts(t)
	props := exampleProps(t, "examples/secure/sasl.properties", certs)
	cport := freePort(t)
	props["listeners"] = fmt.Sprintf("SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", cport)
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", cport)
	delete(props, "advertised.listeners")
	props["log.dirs"] = filepath.Join(dir, "data")
	bc, unknown, err := config.Parse(props)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("parse: %v (unknown %v)", err, unknown)
	}
	b, err := server.Start(server.Config{Broker: bc, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("examples/secure/sasl.properties: %v", err)
	}
	t.Cleanup(func() { b.Close() })

	ca, _ := os.ReadFile(filepath.Join(certs, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tlsCfg := kgo.DialTLSConfig(&tls.Config{RootCAs: pool})
	ctx := Ctx(t, 30*time.Second)
	adm := kadm.NewClient(NewClient(t, b.Addr(), tlsCfg, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("making alice: %v %v", err, res.Error())
	}
	cl := NewClient(t, b.Addr(), tlsCfg, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.ConsumeTopics("greetings"), kgo.AllowAutoTopicCreation())
	if err := produceConsume(t, cl, "greetings"); err != nil {
		t.Fatalf("alice over SASL_SSL: %v", err)
	}
}

// TestSASLOAuthJWKS: with Kafka's secured validator
// (OAuthBearerValidatorCallbackHandler) and a JWKS file, OAUTHBEARER takes tokens
// signed with a key of the set, checks audience and issuer, and refuses unsigned
// (unsecured) tokens, tokens signed by another key and expired ones.
func TestSASLOAuthJWKS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	enc := base64.RawURLEncoding.EncodeToString
	jwks := fmt.Sprintf(`{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","n":%q,"e":%q}]}`,
		enc(key.N.Bytes()), enc(big.NewInt(int64(key.E)).Bytes()))
	path := securitytest.Write(t, t.TempDir(), "jwks.json", []byte(jwks))
	b := StartBroker(t, saslProps(
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class", "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url", "file://"+path,
		"sasl.oauthbearer.expected.audience", "kafka",
		"sasl.oauthbearer.expected.issuer", "https://idp.example",
	))
	sign := func(k *rsa.PrivateKey, claims string) string {
		signed := enc([]byte(`{"alg":"RS256","kid":"k1","typ":"JWT"}`)) + "." + enc([]byte(claims))
		d := sha256.Sum256([]byte(signed))
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return signed + "." + enc(sig)
	}
	now := time.Now().Unix()
	good := fmt.Sprintf(`{"sub":"svc","aud":"kafka","iss":"https://idp.example","iat":%d,"exp":%d}`, now-1, now+600)
	if err := saslErr(t, b, oauth.Auth{Token: sign(key, good)}.AsMechanism()); err != nil {
		t.Fatalf("signed token: %v", err)
	}
	for name, tok := range map[string]string{
		"unsecured":    unsecuredToken("svc", time.Now().Add(time.Hour)),
		"other key":    sign(other, good),
		"expired":      sign(key, fmt.Sprintf(`{"sub":"svc","aud":"kafka","iss":"https://idp.example","iat":%d,"exp":%d}`, now-600, now-60)),
		"wrong issuer": sign(key, fmt.Sprintf(`{"sub":"svc","aud":"kafka","iss":"https://evil","iat":%d,"exp":%d}`, now-1, now+600)),
	} {
		if err := saslErr(t, b, oauth.Auth{Token: tok}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s token: %v", name, err)
		}
	}

	// A JWKS URL without the validator would leave unsigned tokens accepted: refused.
	cfg := server.DefaultConfig(t.TempDir())
	saslProps("sasl.oauthbearer.jwks.endpoint.url", "file://"+path)(&cfg)
	if b, err := server.Start(cfg); err == nil {
		b.Close()
		t.Fatal("started with a JWKS URL and the unsecured validator")
	} else if !strings.Contains(err.Error(), "OAuthBearerValidatorCallbackHandler") {
		t.Fatalf("error %q", err)
	}
}
