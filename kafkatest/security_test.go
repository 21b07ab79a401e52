package kafkatest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// produceOne writes one record with acks=all through cl and returns the error.
func produceOne(t *testing.T, cl *kgo.Client, topic, v string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr()
}

// pingErr is the error of a Ping (a Metadata request to a broker) through cl: how a
// client's login or handshake went, without the retries a produce makes.
func pingErr(t *testing.T, cl *kgo.Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// securedClient is a client of c with tlsCfg (nil: plain TCP) and mech (nil: no SASL),
// which gives up quickly on a broker that refuses it.
func securedClient(t *testing.T, c *kafkatest.Cluster, tlsCfg *tls.Config, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(5 * time.Second),
		kgo.ProduceRequestTimeout(3 * time.Second), kgo.RequestTimeoutOverhead(time.Second), kgo.MetadataMinAge(100 * time.Millisecond)}
	if tlsCfg != nil {
		o = append(o, kgo.DialTLSConfig(tlsCfg))
	}
	if mech != nil {
		o = append(o, kgo.SASL(mech))
	}
	return client(t, c, append(o, opts...)...)
}

// TestSASLSSLCluster: three brokers on SASL_SSL with SCRAM-SHA-512 and PLAIN users; the
// right credentials over TLS produce with acks=all to an RF 3 topic (replicated over
// the brokers' own listener), a wrong password gets SASL_AUTHENTICATION_FAILED, a
// client without TLS gets nothing, and after a kill and a restart of the leader the
// client reconnects with TLS and SASL to the new leader and then to the restarted one.
func TestSASLSSLCluster(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithTLS(), kafkatest.WithSASL(kafkatest.SCRAMSHA512, kafkatest.PLAIN), kafkatest.WithSASL(kafkatest.SCRAMSHA256),
		kafkatest.WithUser("alice", "alice-secret"), kafkatest.WithUsers(map[string]string{"bob": "bob-secret"}))
	if got := c.SecurityProtocol(); got != "SASL_SSL" {
		t.Fatalf("SecurityProtocol() = %q", got)
	}
	if got := c.SASLMechanisms(); len(got) != 3 || got[0] != "SCRAM-SHA-512" || got[1] != "PLAIN" || got[2] != "SCRAM-SHA-256" {
		t.Fatalf("SASLMechanisms() = %v", got)
	}
	if !strings.Contains(string(c.CACertPEM()), "BEGIN CERTIFICATE") {
		t.Fatalf("CACertPEM() = %q", c.CACertPEM())
	}

	alice := securedClient(t, c, c.TLSConfig(), scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	if err := produceOne(t, alice, "orders", "scram"); err != nil {
		t.Fatalf("SCRAM-SHA-512 over TLS: %v", err)
	}
	bob := securedClient(t, c, c.TLSConfig(), plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())
	if err := produceOne(t, bob, "orders", "plain"); err != nil {
		t.Fatalf("PLAIN over TLS: %v", err)
	}
	bob256 := securedClient(t, c, c.TLSConfig(), scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())
	if err := produceOne(t, bob256, "orders", "scram-256"); err != nil {
		t.Fatalf("SCRAM-SHA-256 over TLS: %v", err)
	}
	c.WaitHighWatermark("orders", 0, 3)

	for name, mech := range map[string]sasl.Mechanism{
		"SCRAM": scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(),
		"PLAIN": plain.Auth{User: "bob", Pass: "wrong"}.AsMechanism(),
	} {
		wrong := securedClient(t, c, c.TLSConfig(), mech)
		if err := pingErr(t, wrong); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	noTLS := securedClient(t, c, nil, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	if err := pingErr(t, noTLS); err == nil {
		t.Error("a produce without TLS to a SASL_SSL listener succeeded")
	}

	leader := c.WaitLeader("orders", 0)
	c.Kill(leader)
	if l := c.WaitLeader("orders", 0); l == leader {
		t.Fatalf("leader still %d after its kill", l)
	}
	if err := produceOne(t, alice, "orders", "after the kill"); err != nil {
		t.Fatalf("produce after killing leader %d: %v", leader, err)
	}
	c.Restart(leader)
	c.WaitISR("orders", 0, 0, 1, 2)
	c.MoveLeader("orders", 0, leader)
	if err := produceOne(t, alice, "orders", "on the restarted broker"); err != nil {
		t.Fatalf("produce to restarted leader %d: %v", leader, err)
	}
	c.WaitHighWatermark("orders", 0, 5)
}

// TestTLSClientAuthWithACLs: client certificates required and the authorizer on. A
// certificate of the super user produces; one of another user is that principal
// (User:bob) and gets TOPIC_AUTHORIZATION_FAILED until the super user grants it Write;
// a client without a certificate fails its TLS handshake; replication (RF 2) goes on
// over the brokers' own listener as their super user.
func TestTLSClientAuthWithACLs(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("orders", 1, 2),
		kafkatest.WithTLSClientAuth(), kafkatest.WithACLs("User:admin"))
	if got := c.SecurityProtocol(); got != "SSL" {
		t.Fatalf("SecurityProtocol() = %q", got)
	}
	withCert := func(cn string) *tls.Config {
		cfg := c.TLSConfig()
		cfg.Certificates = []tls.Certificate{c.ClientCertificate(cn)}
		return cfg
	}
	admin := securedClient(t, c, withCert("admin"), nil)
	if err := produceOne(t, admin, "orders", "admin"); err != nil {
		t.Fatalf("super user: %v", err)
	}
	c.WaitHighWatermark("orders", 0, 1)

	bob := securedClient(t, c, withCert("bob"), nil)
	if err := produceOne(t, bob, "orders", "bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("User:bob without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	acl := kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpWrite, kadm.OpDescribe)
	res, err := kadm.NewClient(admin).CreateACLs(ctx(t), acl)
	if err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %v", err, res)
	}
	waitFor(t, "bob's produce once granted Write", func() bool { return produceOne(t, bob, "orders", "bob") == nil })

	noCert := securedClient(t, c, c.TLSConfig(), nil)
	err = pingErr(t, noCert)
	if err == nil || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("without a client certificate: %v, want a TLS handshake failure", err)
	}
}

// TestSASLPlaintextPlain: SASL_PLAINTEXT with PLAIN; SCRAM, not enabled, is refused
// with UNSUPPORTED_SASL_MECHANISM as by Kafka.
func TestSASLPlaintextPlain(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1), kafkatest.WithSASL(kafkatest.PLAIN), kafkatest.WithUser("alice", "pw"))
	if got := c.SecurityProtocol(); got != "SASL_PLAINTEXT" || c.TLSConfig() != nil {
		t.Fatalf("SecurityProtocol() = %q, TLSConfig() = %v", got, c.TLSConfig())
	}
	if err := produceOne(t, securedClient(t, c, nil, plain.Auth{User: "alice", Pass: "pw"}.AsMechanism()), "t", "v"); err != nil {
		t.Fatal(err)
	}
	err := pingErr(t, securedClient(t, c, nil, scram.Auth{User: "alice", Pass: "pw"}.AsSha256Mechanism()))
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("SCRAM-SHA-256: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}

// TestRefusedSecurityOptions: security options that cannot be honoured stop NewCluster
// with a message naming them.
func TestRefusedSecurityOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []kafkatest.Option
		want string
	}{
		{[]kafkatest.Option{kafkatest.WithSASL(kafkatest.PLAIN)}, "WithSASL(PLAIN) without WithUser"},
		{[]kafkatest.Option{kafkatest.WithUser("a", "b")}, "WithUser without WithSASL"},
		{[]kafkatest.Option{kafkatest.WithSASL("GSSAPI"), kafkatest.WithUser("a", "b")}, `WithSASL("GSSAPI")`},
		{[]kafkatest.Option{kafkatest.WithSASL(kafkatest.PLAIN), kafkatest.WithUser("a b", "c")}, `WithUser("a b")`},
		{[]kafkatest.Option{kafkatest.WithSASL(kafkatest.PLAIN), kafkatest.WithUser(kafkatest.BrokerUser, "c")}, "BrokerUser"},
		{[]kafkatest.Option{kafkatest.WithTLS(), kafkatest.WithBrokerConfig(map[string]string{"ssl.keystore.type": "PKCS12"})}, "ssl.keystore.type"},
		{[]kafkatest.Option{kafkatest.WithACLs("admin")}, `WithACLs("admin")`},
	} {
		msg := fatalOf(t, func(tb kafkatest.TB) { kafkatest.NewCluster(tb, tc.opts...) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("NewCluster failed with %q, want a message naming %s", msg, tc.want)
		}
	}
}

// TestSecuredSeparateControllers: ACLs with separate controllers (the controller-only
// node logs in with the brokers' own user on its CONTROLLER listener) and a PLAIN
// super user on SASL_PLAINTEXT; a restarted broker rejoins the ISR.
func TestSecuredSeparateControllers(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithSeparateControllers(1), kafkatest.WithTopic("t", 1, 2),
		kafkatest.WithSASL(kafkatest.PLAIN), kafkatest.WithUser("admin", "pw"), kafkatest.WithACLs("User:admin"))
	admin := securedClient(t, c, nil, plain.Auth{User: "admin", Pass: "pw"}.AsMechanism())
	if err := produceOne(t, admin, "t", "first"); err != nil {
		t.Fatal(err)
	}
	c.Restart(1)
	c.WaitISR("t", 0, 0, 1)
	if err := produceOne(t, admin, "t", "second"); err != nil {
		t.Fatal(err)
	}
	c.WaitHighWatermark("t", 0, 2)
}
