package security

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"

	"github.com/gokafkad/gokafkad/config"
	"github.com/gokafkad/gokafkad/security/securitytest"
)

// sslOf parses props and returns the ssl configs of listener SSL.
func sslOf(t *testing.T, props map[string]string) config.SSL {
	t.Helper()
	b, _, err := config.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	return b.ListenerSSL("SSL")
}

// wantConfigError checks err names key (and value, when given).
func wantConfigError(t *testing.T, err error, key, value string) {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != key || (value != "" && ce.Value != value) {
		t.Fatalf("error %v; want a config error naming %s=%q", err, key, value)
	}
}

// TestKeystores: PEM files, inline PEM, encrypted PKCS#8 keys and PKCS12 load; wrong
// passwords and Java-only store types stop start-up naming the key.
func TestKeystores(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "CA")
	leaf := ca.Issue(pkix.Name{CommonName: "broker"})
	pemFile := securitytest.Write(t, dir, "ks.pem", leaf.PEMKeystore())
	encFile := securitytest.Write(t, dir, "enc.pem", append(leaf.EncryptedKeyPEM("s3cret"), leaf.CertPEM...))
	p12 := securitytest.Write(t, dir, "ks.p12", leaf.PKCS12("storepw"))
	trustPEM := securitytest.Write(t, dir, "ca.pem", ca.PEM)
	trustP12 := securitytest.Write(t, dir, "trust.p12", ca.TrustPKCS12("trustpw"))

	ok := []map[string]string{
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": pemFile},
		{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(leaf.KeyPEM), "ssl.keystore.certificate.chain": string(leaf.CertPEM)},
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": encFile, "ssl.key.password": "s3cret"},
		{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(leaf.EncryptedKeyPEM("pw")), "ssl.keystore.certificate.chain": string(leaf.CertPEM), "ssl.key.password": "pw"},
		{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12, "ssl.keystore.password": "storepw"},
		{"listener.name.ssl.ssl.keystore.type": "PKCS12", "listener.name.ssl.ssl.keystore.location": p12, "listener.name.ssl.ssl.keystore.password": "storepw"},
	}
	for i, props := range ok {
		c, err := LoadKeystore(sslOf(t, props))
		if err != nil || c == nil || c.Leaf.Subject.CommonName != "broker" || len(c.Certificate) != 2 {
			t.Errorf("keystore %d: %v", i, err)
		}
	}
	for _, tc := range []struct {
		props      map[string]string
		key, value string
	}{
		{map[string]string{"ssl.keystore.location": pemFile}, "ssl.keystore.type", "JKS"}, // Kafka's default type
		{map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": p12}, "ssl.keystore.type", "JKS"},
		{map[string]string{"listener.name.ssl.ssl.keystore.type": "JKS", "ssl.keystore.location": p12}, "listener.name.ssl.ssl.keystore.type", "JKS"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": encFile}, "ssl.key.password", ""},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": encFile, "ssl.key.password": "wrong"}, "ssl.key.password", ""},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12, "ssl.keystore.password": "wrong"}, "ssl.keystore.location", ""},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pemFile, "ssl.keystore.password": "x"}, "ssl.keystore.password", ""},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(leaf.KeyPEM)}, "ssl.keystore.certificate.chain", ""},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": trustPEM}, "ssl.keystore.location", ""},
	} {
		_, err := LoadKeystore(sslOf(t, tc.props))
		wantConfigError(t, err, tc.key, tc.value)
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "storepw") {
			t.Errorf("error shows a password: %v", err)
		}
	}

	for i, props := range []map[string]string{
		{"ssl.truststore.type": "PEM", "ssl.truststore.location": trustPEM},
		{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)},
		{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": trustP12, "ssl.truststore.password": "trustpw"},
	} {
		if pool, err := LoadTruststore(sslOf(t, props)); err != nil || pool == nil {
			t.Errorf("truststore %d: %v", i, err)
		}
	}
	_, err := LoadTruststore(sslOf(t, map[string]string{"ssl.truststore.location": trustP12}))
	wantConfigError(t, err, "ssl.truststore.type", "JKS")
	if pool, err := LoadTruststore(sslOf(t, nil)); pool != nil || err != nil {
		t.Errorf("no truststore: %v %v", pool, err)
	}
}

// TestProtocolsAndCipherSuites: Kafka's protocol and suite names mapped to Go's, and
// what Go cannot honour refused.
func TestProtocolsAndCipherSuites(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "CA")
	ks := securitytest.Write(t, dir, "ks.pem", ca.Issue(pkix.Name{CommonName: "b"}).PEMKeystore())
	server := func(extra ...string) (*tls.Config, error) {
		props := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks}
		for i := 0; i+1 < len(extra); i += 2 {
			props[extra[i]] = extra[i+1]
		}
		s := sslOf(t, props)
		st, err := NewStore(s)
		if err != nil {
			return nil, err
		}
		return ServerConfig(s, st)
	}
	c, err := server()
	if err != nil || c.MinVersion != tls.VersionTLS12 || c.MaxVersion != tls.VersionTLS13 || c.ClientAuth != tls.NoClientCert {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if c, _ := server("ssl.enabled.protocols", "TLSv1.3"); c.MinVersion != tls.VersionTLS13 {
		t.Error("TLSv1.3 only")
	}
	if c, _ := server("ssl.protocol", "TLSv1.2"); c.MaxVersion != tls.VersionTLS12 {
		t.Error("ssl.protocol=TLSv1.2 does not cap at 1.2")
	}
	if c, _ := server("ssl.client.auth", "required"); c.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Error("required")
	}
	if c, _ := server("ssl.client.auth", "requested"); c.ClientAuth != tls.VerifyClientCertIfGiven {
		t.Error("requested")
	}
	c, err = server("ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,SSL_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
	if err != nil || len(c.CipherSuites) != 2 || c.MaxVersion != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 suites only: %v %v (TLS 1.3 must be off: Java would have no 1.3 suite)", c, err)
	}
	if c, err := server("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"); err != nil || c.MinVersion != tls.VersionTLS13 {
		t.Errorf("TLS 1.3 suites only: %v", err)
	}
	for _, tc := range []struct{ key, value string }{
		{"ssl.cipher.suites", "TLS_NO_SUCH_SUITE"},
		{"ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"},
		{"ssl.enabled.protocols", "SSLv3"},
		{"ssl.enabled.protocols", "TLSv1,TLSv1.3"},
		{"ssl.protocol", "SSL"},
		{"ssl.provider", "SunJSSE"},
		{"ssl.keymanager.algorithm", "Foo"},
		{"ssl.engine.factory.class", "com.example.Engine"},
	} {
		_, err := server(tc.key, tc.value)
		wantConfigError(t, err, tc.key, tc.value)
	}
	if _, err := server("ssl.cipher.suites", "TLS_NO_SUCH_SUITE"); !strings.Contains(err.Error(), "TLS_NO_SUCH_SUITE") {
		t.Errorf("the unknown suite is not named: %v", err)
	}
	_, err = ServerConfig(sslOf(t, nil), &Store{})
	wantConfigError(t, err, "ssl.keystore.location", "")
}

// TestClientEndpointIdentification: the broker's own TLS connections check the host
// name with ssl.endpoint.identification.algorithm=https and only the chain when it is
// empty; an untrusted server is refused either way.
func TestClientEndpointIdentification(t *testing.T) {
	dir := t.TempDir()
	ca := securitytest.NewCA(t, "CA")
	serve := func(leaf *securitytest.Leaf) string {
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.(*tls.Conn).Handshake()
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	wrongName := serve(ca.IssueFor(pkix.Name{CommonName: "b"}, "broker.example"))
	untrusted := serve(securitytest.NewCA(t, "other").Issue(pkix.Name{CommonName: "b"}))
	trust := securitytest.Write(t, dir, "ca.pem", ca.PEM)
	dial := func(alg, addr string) error {
		s := sslOf(t, map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": trust, "ssl.endpoint.identification.algorithm": alg})
		c, err := ClientConfig(s, &Store{})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", addr, WithServerName(c, "127.0.0.1"))
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial("https", wrongName); err == nil {
		t.Error("https: a certificate for another host was accepted")
	}
	if err := dial("", wrongName); err != nil {
		t.Errorf("no endpoint identification: %v", err)
	}
	if err := dial("", untrusted); err == nil {
		t.Error("no endpoint identification: an untrusted certificate was accepted")
	}
	_, err := ClientConfig(sslOf(t, map[string]string{"ssl.endpoint.identification.algorithm": "ldaps"}), &Store{})
	wantConfigError(t, err, "ssl.endpoint.identification.algorithm", "ldaps")
}
