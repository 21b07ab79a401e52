package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// The security mode (compat/cases_secclients.go):
//
//	goclients CLIENT --security SPEC...
//
// runs, for each SPEC in turn, either a short produce and group consume over a secured
// listener or, with refused=1, a connection that the broker must refuse. A SPEC is
// comma-separated key=value pairs:
//
//	name       the step reported: RESULT <name> ok|fail ...
//	bootstrap  the secured listener
//	protocol   SSL, SASL_SSL or SASL_PLAINTEXT
//	ca         PEM CA certificate the broker's certificate must chain to
//	cert, key  PEM client certificate (chain) and its PKCS#8 key
//	mechanism  PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER
//	user       SASL user; for OAUTHBEARER the sub claim of an unsecured JWS
//	password   SASL password
//	topic      topic to produce to and consume from (it exists)
//	group      consumer group
//	refused    1: the broker must refuse the connection; the step passes when the
//	           client fails, and reports "RESULT <name> ok <the client's error>"
//	           for compat to check that it is an authentication failure
type secSpec struct {
	name, bootstrap, protocol, ca, cert, key, mechanism, user, password, topic, group string
	refused                                                                           bool
}

// sec is the spec in force: the clients' constructors add its settings.
var sec *secSpec

func parseSecSpec(s string) (*secSpec, error) {
	sp := &secSpec{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("spec %q: %q is not key=value", s, kv)
		}
		switch k {
		case "name":
			sp.name = v
		case "bootstrap":
			sp.bootstrap = v
		case "protocol":
			sp.protocol = v
		case "ca":
			sp.ca = v
		case "cert":
			sp.cert = v
		case "key":
			sp.key = v
		case "mechanism":
			sp.mechanism = v
		case "user":
			sp.user = v
		case "password":
			sp.password = v
		case "topic":
			sp.topic = v
		case "group":
			sp.group = v
		case "refused":
			sp.refused = v == "1"
		default:
			return nil, fmt.Errorf("spec %q: unknown key %q", s, k)
		}
	}
	return sp, nil
}

func (s *secSpec) tls() bool  { return s != nil && strings.HasSuffix(s.protocol, "SSL") }
func (s *secSpec) sasl() bool { return s != nil && strings.HasPrefix(s.protocol, "SASL_") }

// tlsConfig is the TLS configuration of an SSL or SASL_SSL spec: the CA to trust, the
// client certificate when there is one, and the listener's host as the server name.
func (s *secSpec) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	if ca, err := os.ReadFile(s.ca); err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	host, _, _ := net.SplitHostPort(s.bootstrap)
	c := &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	if s.cert != "" {
		cert, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loading the client certificate:", err)
			os.Exit(2)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// unsecuredJWS is the token OAUTHBEARER clients send: an unsecured JWS (alg "none",
// no signature) with sub, iat and exp, which Kafka's default validator accepts.
func unsecuredJWS(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now()
	claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, now.Unix(), now.Add(time.Hour).Unix())
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func runSecurity(s scenario, specs []string) {
	for _, raw := range specs {
		sp, err := parseSecSpec(raw)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		sec, bootstrap, topic, group = sp, sp.bootstrap, sp.topic, sp.group
		t0 := time.Now()
		if sp.refused {
			resultWithin(sp.name, 20*time.Second, func(ctx context.Context) error {
				err := s.probe(ctx)
				if err == nil {
					return fmt.Errorf("the broker let the client in")
				}
				fmt.Printf("RESULT %s ok refused: %s\n", sp.name, strings.ReplaceAll(err.Error(), "\n", " "))
				return errReported
			})
			fmt.Fprintf(os.Stderr, "%s took %s\n", sp.name, time.Since(t0).Round(100*time.Millisecond))
			continue
		}
		result(sp.name, func(ctx context.Context) error {
			keys := []string{"k-sec-0", "k-sec-1", "k-sec-2", "k-sec-3", "k-sec-4"}
			if err := s.produce(ctx, "none", keys); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			got, err := s.consume(ctx, group, topic, keys, false)
			if err != nil {
				return fmt.Errorf("consume: %w", err)
			}
			for k, r := range got {
				if r.value != valueFor(k) {
					return fmt.Errorf("key %s has value %q", k, r.value)
				}
			}
			return nil
		})
		fmt.Fprintf(os.Stderr, "%s took %s\n", sp.name, time.Since(t0).Round(100*time.Millisecond))
	}
}
