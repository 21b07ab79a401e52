package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/security/securitytest"
)

// sessionsOf lists the principal and listener of every open connection of b.
func sessionsOf(b *Broker) []session {
	b.connsMu.Lock()
	defer b.connsMu.Unlock()
	var out []session
	for c := range b.conns {
		out = append(out, c.session)
	}
	return out
}

// TestTLSClientPrincipal: a TLS client's principal is User: and its certificate's
// distinguished name through the listener's ssl.principal.mapping.rules; a name no rule
// maps is refused; a client with no certificate (client auth requested) is
// User:ANONYMOUS; every session knows its listener.
func TestTLSClientPrincipal(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "test CA")
	ks := securitytest.Write(t, dir, "broker.pem", ca.Issue(pkix.Name{CommonName: "broker"}).PEMKeystore())
	trust := securitytest.Write(t, dir, "ca.pem", ca.PEM)
	cfg, err := DefaultConfig(dir).WithProps(map[string]string{
		"listeners":                      "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.type":              "PEM", "ssl.keystore.location": ks,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": trust,
		"ssl.client.auth": "requested",
		"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,RULE:^CN=([a-z]+)$/$1/",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	connect := func(subject *pkix.Name) error {
		tc := &tls.Config{RootCAs: pool}
		if subject != nil {
			leaf := ca.Issue(*subject)
			cert, _ := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
			tc.Certificates = []tls.Certificate{cert}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(tc), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	waitPrincipal := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			ss := sessionsOf(b)
			if i := slices.IndexFunc(ss, func(s session) bool { return s.principal == want }); i >= 0 {
				if ss[i].listener != "SSL" || ss[i].securityProtocol != "SSL" {
					t.Errorf("session %+v does not know its listener", ss[i])
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no connection with principal %s; sessions %+v", want, ss)
			}
			time.Sleep(5 * time.Millisecond) // polling the broker's connection table
		}
	}
	if err := connect(&pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Eng"}, Organization: []string{"Example"}}); err != nil {
		t.Fatal(err)
	}
	waitPrincipal("User:alice@eng")
	if err := connect(&pkix.Name{CommonName: "bob"}); err != nil {
		t.Fatal(err)
	}
	waitPrincipal("User:bob")
	if err := connect(nil); err != nil {
		t.Fatal(err)
	}
	waitPrincipal("User:ANONYMOUS")
	if err := connect(&pkix.Name{CommonName: "Mallory", Country: []string{"XX"}}); err == nil {
		t.Error("a client whose name no rule maps was served")
	}
}
