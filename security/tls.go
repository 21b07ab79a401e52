// Package security turns Kafka's ssl.* configs into crypto/tls configurations for the
// broker's TLS listeners and its own outbound TLS connections, and names TLS clients
// as Kafka does (the certificate's distinguished name through
// ssl.principal.mapping.rules). It reads the files the configs name and nothing else;
// a value Go cannot honour is an error naming the key and the value, never ignored.
package security

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/gokafkad/gokafkad/config"
)

// bad is the error of an ssl key whose value cannot be honoured. Passwords and inline
// keys are not repeated in the message.
func bad(s config.SSL, name, format string, args ...any) error {
	v := s.Get(name)
	if d, ok := config.BrokerDef(name); ok && d.Sensitive {
		v = "[hidden]"
	}
	return &config.Error{Key: s.Key(name), Value: v, Reason: fmt.Sprintf(format, args...)}
}

// tlsVersions are Kafka's (Java's) protocol names.
var tlsVersions = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// versionRange resolves ssl.enabled.protocols and ssl.protocol (which caps them, as a
// Java SSLContext of that protocol supports it and the older ones).
func versionRange(s config.SSL) (lo, hi uint16, err error) {
	enabled := s.List("ssl.enabled.protocols")
	if len(enabled) == 0 {
		enabled = []string{"TLSv1.2", "TLSv1.3"}
	}
	var vs []uint16
	for _, p := range enabled {
		v, ok := tlsVersions[p]
		if !ok {
			return 0, 0, bad(s, "ssl.enabled.protocols", "%q is not a protocol Go's crypto/tls serves (TLSv1.2, TLSv1.3, TLSv1.1, TLSv1)", p)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return 0, 0, bad(s, "ssl.enabled.protocols", "the protocols must be contiguous (Go's crypto/tls takes a minimum and a maximum version)")
		}
	}
	lo, hi = vs[0], vs[len(vs)-1]
	switch p := s.Get("ssl.protocol"); p {
	case "TLS", "TLSv1.3":
	case "TLSv1.2", "TLSv1.1", "TLSv1":
		hi = min(hi, tlsVersions[p])
	default:
		return 0, 0, bad(s, "ssl.protocol", "must be TLSv1.3, TLSv1.2, TLSv1.1, TLSv1 or TLS")
	}
	if hi < lo {
		return 0, 0, bad(s, "ssl.protocol", "allows none of ssl.enabled.protocols")
	}
	return lo, hi, nil
}

// cipherSuites maps IANA names (and Java's SSL_ aliases) to Go's suite ids.
var cipherSuites = func() map[string]*tls.CipherSuite {
	m := map[string]*tls.CipherSuite{}
	for _, c := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		m[c.Name] = c
	}
	return m
}()

// tls13Suites are TLS 1.3's suites; Go always enables all three.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// applyCipherSuites restricts c to ssl.cipher.suites. Go cannot choose among TLS 1.3
// suites: a list naming none of them drops TLS 1.3 (as Java would negotiate only
// TLS 1.2 then), a list naming some but not all is refused.
func applyCipherSuites(s config.SSL, c *tls.Config) error {
	names := s.List("ssl.cipher.suites")
	if len(names) == 0 {
		return nil
	}
	var ids []uint16
	n13 := 0
	for _, n := range names {
		if n == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
			continue // a signalling value, not a suite; Go always signals secure renegotiation
		}
		name := n
		if strings.HasPrefix(name, "SSL_") {
			name = "TLS_" + strings.TrimPrefix(name, "SSL_")
		}
		cs, ok := cipherSuites[name]
		if !ok {
			return bad(s, "ssl.cipher.suites", "cipher suite %s is unknown to Go's crypto/tls", n)
		}
		if slices.Contains(tls13Suites, name) {
			n13++
			continue
		}
		ids = append(ids, cs.ID)
	}
	if c.MaxVersion == tls.VersionTLS13 {
		switch {
		case n13 == 0 && c.MinVersion <= tls.VersionTLS12:
			c.MaxVersion = tls.VersionTLS12
		case n13 == 0:
			return bad(s, "ssl.cipher.suites", "names no TLS 1.3 suite while only TLSv1.3 is enabled")
		case n13 != len(tls13Suites):
			return bad(s, "ssl.cipher.suites", "Go's crypto/tls always enables all TLS 1.3 suites (%s): list all of them or none", strings.Join(tls13Suites, ", "))
		}
	}
	if len(ids) == 0 && c.MinVersion < tls.VersionTLS13 {
		if c.MaxVersion < tls.VersionTLS13 {
			return bad(s, "ssl.cipher.suites", "names no suite of the enabled protocols")
		}
		c.MinVersion = tls.VersionTLS13
	}
	c.CipherSuites = ids
	return nil
}

// secureRandoms are the Java SecureRandom names crypto/rand stands in for.
var secureRandoms = []string{"SHA1PRNG", "NativePRNG", "NativePRNGBlocking", "NativePRNGNonBlocking", "DRBG"}

// checkJavaOnly refuses the keys that select Java machinery Go has no counterpart for.
func checkJavaOnly(s config.SSL) error {
	if s.IsSet("ssl.provider") {
		return bad(s, "ssl.provider", "Java security providers do not apply to Go's crypto/tls; leave it unset")
	}
	if s.IsSet("ssl.engine.factory.class") {
		return bad(s, "ssl.engine.factory.class", "custom SSL engine factories are not supported; leave it unset")
	}
	if r := s.Get("ssl.secure.random.implementation"); r != "" && !slices.Contains(secureRandoms, r) {
		return bad(s, "ssl.secure.random.implementation", "not a SecureRandom crypto/rand stands in for (%s)", strings.Join(secureRandoms, ", "))
	}
	if a := s.Get("ssl.keymanager.algorithm"); a != "SunX509" && a != "NewSunX509" && a != "PKIX" {
		return bad(s, "ssl.keymanager.algorithm", "must be SunX509, NewSunX509 or PKIX")
	}
	if a := s.Get("ssl.trustmanager.algorithm"); a != "PKIX" && a != "SunX509" && a != "SunPKIX" && a != "X509" && a != "X.509" {
		return bad(s, "ssl.trustmanager.algorithm", "must be PKIX or SunX509")
	}
	return nil
}

// base builds what server and client configs share: versions, suites, roots.
func base(s config.SSL) (*tls.Config, *x509.CertPool, error) {
	if err := checkJavaOnly(s); err != nil {
		return nil, nil, err
	}
	lo, hi, err := versionRange(s)
	if err != nil {
		return nil, nil, err
	}
	c := &tls.Config{MinVersion: lo, MaxVersion: hi}
	if err := applyCipherSuites(s, c); err != nil {
		return nil, nil, err
	}
	roots, err := LoadTruststore(s)
	if err != nil {
		return nil, nil, err
	}
	return c, roots, nil
}

// ServerConfig is the tls.Config of a TLS listener: its keystore's certificate,
// ssl.client.auth against its truststore (the system roots when none is set), the
// protocols and cipher suites allowed. The certificate is read through Store, so it
// can be replaced without restarting the listener.
func ServerConfig(s config.SSL, store *Store) (*tls.Config, error) {
	c, roots, err := base(s)
	if err != nil {
		return nil, err
	}
	switch a := s.Get("ssl.client.auth"); a {
	case "none", "":
		c.ClientAuth = tls.NoClientCert
	case "requested":
		c.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		c.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, bad(s, "ssl.client.auth", "must be required, requested or none")
	}
	c.ClientCAs = roots
	if store.Certificate() == nil {
		return nil, bad(s, "ssl.keystore.location", "a TLS listener needs a keystore: set ssl.keystore.location (PEM or PKCS12) or ssl.keystore.key and ssl.keystore.certificate.chain")
	}
	c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return store.Certificate(), nil }
	return c, nil
}

// ClientConfig is the tls.Config of the broker's own connections to a TLS listener of
// another node: the keystore's certificate as client certificate (when there is one),
// the truststore as roots, and the host name checked unless
// ssl.endpoint.identification.algorithm is empty. The caller sets ServerName per
// connection (WithServerName).
func ClientConfig(s config.SSL, store *Store) (*tls.Config, error) {
	c, roots, err := base(s)
	if err != nil {
		return nil, err
	}
	c.RootCAs = roots
	if store.Certificate() != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return store.Certificate(), nil }
	}
	switch alg := s.Get("ssl.endpoint.identification.algorithm"); strings.ToLower(alg) {
	case "https":
	case "":
		// Verify the chain but not the name, as Java with no endpoint identification.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("security: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	default:
		return nil, bad(s, "ssl.endpoint.identification.algorithm", "must be https or empty")
	}
	return c, nil
}

// WithServerName returns a copy of c that checks the certificate of host.
func WithServerName(c *tls.Config, host string) *tls.Config {
	n := c.Clone()
	n.ServerName = host
	return n
}
