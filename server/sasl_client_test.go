package server

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/sasl"
)

// startSASLBroker starts a single node whose client listener is SASL_PLAINTEXT with
// every mechanism, the broker's own logins configured as Kafka's are.
func startSASLBroker(t *testing.T, extra map[string]string) *Broker {
	t.Helper()
	props := map[string]string{
		"listeners":                            "SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":       "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":           "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":              "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="admin-secret" user_admin="admin-secret";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="scram-secret";`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="scram-secret";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredLoginStringClaim_sub="admin" unsecuredLoginListClaim_scope=",a,b" unsecuredLoginLifetimeSeconds="60";`,
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := DefaultConfig(t.TempDir()).WithProps(props)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBrokerSASLLogin logs in to a SASL listener as the broker does on its outbound
// connections, with each mechanism, then is served.
func TestBrokerSASLLogin(t *testing.T) {
	b := startSASLBroker(t, map[string]string{"connections.max.reauth.ms": "30000"})
	for _, m := range []*sasl.ScramMechanism{sasl.SCRAMSHA256, sasl.SCRAMSHA512} {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt = "admin", m.Type(), 4096, []byte("salt")
		u.SaltedPassword = m.SaltedPassword("scram-secret", u.Salt, 4096)
		req.Upsertions = append(req.Upsertions, u)
		if code := b.localCtl.AlterUserScramCredentials(req).Results[0].ErrorCode; code != 0 {
			t.Fatalf("creating the SCRAM user: %d", code)
		}
	}
	for _, mech := range []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512, sasl.OAuthBearer} {
		l, err := newSASLLogin(b.cfg.Broker, "SASL_PLAINTEXT", mech, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lifetime, err := l.authenticate(ctx, nc, "broker-test")
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if lifetime <= 0 || lifetime > 60*time.Second {
			t.Fatalf("%s: session lifetime %v", mech, lifetime)
		}
		cc := &ctlConn{addr: b.Addr(), clientID: "broker-test", nc: nc}
		cc.br = bufio.NewReaderSize(nc, 64<<10)
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		if _, err := cc.roundTrip(context.Background(), md); err != nil {
			t.Fatalf("%s: metadata after login: %v", mech, err)
		}
		cc.close()
	}
}

func TestBrokerSASLLoginRefusals(t *testing.T) {
	b := startSASLBroker(t, nil)
	// Wrong password: the server's message comes back.
	cfg, err := b.cfg.WithProps(map[string]string{
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="nope";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := newSASLLogin(cfg.Broker, "SASL_PLAINTEXT", sasl.Plain, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := l.authenticate(context.Background(), nc, "x"); err == nil || !strings.Contains(err.Error(), "Invalid username or password") {
		t.Fatalf("wrong password: %v", err)
	}
	// No username in the JAAS entry: refused when the login is built.
	cfg, _ = b.cfg.WithProps(map[string]string{
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="x";`,
	})
	if _, err := newSASLLogin(cfg.Broker, "SASL_PLAINTEXT", sasl.Plain, time.Now); err == nil {
		t.Fatal("a login without username was built")
	}
}
