package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// secured is one secured broker of the security suite and what its clients need.
type secured struct {
	b       *Broker
	certs   *certSet
	plain   string // PLAINTEXT listener: the operator's (User:ANONYMOUS is a super user)
	ssl     string // SSL, client certificates required
	saslSSL string // SASL_SSL, SCRAM-SHA-512 and SCRAM-SHA-256
	saslPT  string // SASL_PLAINTEXT: PLAIN, OAUTHBEARER (unsecured JWS), SCRAM-SHA-512/256
}

// securedProps is the server.properties both kinds of broker get for the security
// suite, as an operator would write it for Kafka 4.4: four client listeners, a
// PKCS#12 keystore and a PEM truststore, SCRAM, PLAIN and OAUTHBEARER (the unsecured
// JWS validator), and the StandardAuthorizer.
func securedProps(dir string, cs *certSet) ([][2]string, *secured, error) {
	ports := make([]int, 5)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		ports[i] = p
	}
	s := &secured{certs: cs}
	a := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	s.plain, s.ssl, s.saslSSL, s.saslPT = a(ports[0]), a(ports[1]), a(ports[2]), a(ports[3])
	listeners := fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", s.plain, s.ssl, s.saslSSL, s.saslPT)
	props := [][2]string{
		{"process.roles", "broker,controller"},
		{"node.id", "1"},
		{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", ports[4])},
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"listeners", listeners + fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", ports[4])},
		{"advertised.listeners", listeners},
		{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"},
		{"ssl.keystore.type", "PKCS12"},
		{"ssl.keystore.location", cs.BrokerP12},
		{"ssl.keystore.password", cs.Password},
		{"ssl.key.password", cs.Password},
		{"ssl.truststore.type", "PEM"},
		{"ssl.truststore.location", cs.CA},
		{"listener.name.ssl.ssl.client.auth", "required"},
		{"ssl.principal.mapping.rules", "RULE:^CN=([^,]*),O=gokafkad-compat$/$1/,DEFAULT"},
		{"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512,SCRAM-SHA-256,OAUTHBEARER"},
		{"listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256"},
		{"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
		{"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
		// SCRAM here too, for franz-go's own SASL tests (they dial without TLS).
		{"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER,SCRAM-SHA-512,SCRAM-SHA-256"},
		{"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
		{"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
		// OAUTHBEARER with no callback handlers: Kafka's unsecured JWS validator.
		{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"},
		{"listener.name.sasl_plaintext.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`},
		{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
		// User:kgo-client runs franz-go's whole pkg/kgo suite over mutual TLS.
		{"super.users", "User:ANONYMOUS;User:kgo-client"},
		{"allow.everyone.if.no.acl.found", "false"},
		// Delegation tokens (kafka-delegation-tokens over SASL_PLAINTEXT / SCRAM).
		{"delegation.token.secret.key", "compat-token-secret"},
	}
	props = append(props, dataProps(dir)...)
	return props, s, nil
}

// tlsHandshake checks that addr completes a TLS handshake whose certificate chains to
// the suite's CA (with the trusted client certificate offered).
func tlsHandshake(addr string, cs *certSet) error {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(cs.CA)
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(cs.ClientCert, cs.ClientKey)
	if err != nil {
		return err
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
	if err != nil {
		return errf("no TLS handshake on %s: %v", addr, err)
	}
	return c.Close()
}

// clientConfig writes a Java client config file into dir and returns its path.
func clientConfig(dir, name string, lines ...string) (string, error) {
	// kafka-broker-api-versions' own request timeout is 5 s, too short for a JVM's
	// first TLS handshake on a loaded two-core machine; 30 s is the other tools' default.
	lines = append(lines, "request.timeout.ms=30000")
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// securitySuite starts, beside each broker under test, a second broker of the same
// kind with the same secured server.properties, and drives it with Kafka's CLI tools
// and kcat: TLS with client certificates and principal mapping, SCRAM users managed
// with kafka-configs, PLAIN, ACLs managed with kafka-acls, and clients refused with
// wrong passwords, untrusted certificates or no ACL.
func securitySuite() Suite {
	return Suite{Name: "security", Steps: func(x *X) []Step {
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		topic, prefixed, group := "sec-"+suffix, "secp-"+suffix, "sec-group-"+suffix
		var s *secured
		var sslConf, scramConf, plainConf, badPlainConf, rogueConf string
		up := func() error {
			if s == nil || s.b == nil || !s.b.Alive() {
				return errf("the secured broker is not running")
			}
			return nil
		}
		// tool runs a CLI tool against the secured broker, failing when it exits non-zero.
		tool := func(x *X, stdin, name string, args ...string) (Result, error) {
			if err := up(); err != nil {
				return Result{}, err
			}
			return x.MustTool(stdin, name, args...)
		}
		produce := func(x *X, conf string, n int) Result {
			var in strings.Builder
			for i := range n {
				fmt.Fprintf(&in, "secured-%d\n", i)
			}
			return x.Tool(in.String(), "console-producer", "--bootstrap-server", s.saslSSL, "--topic", topic,
				"--command-config", conf, "--producer-property", "acks=all", "--producer-property", "max.block.ms=15000",
				"--producer-property", "delivery.timeout.ms=20000", "--producer-property", "request.timeout.ms=10000")
		}
		return []Step{
			{Client: "security (broker)", Feature: "starts from a secured server.properties (SSL, SASL_SSL/SCRAM, SASL_PLAINTEXT/PLAIN, StandardAuthorizer)", Timeout: 3 * time.Minute, Run: func(x *X) error {
				dir := filepath.Join(x.Work, x.B.Name+"-secured")
				cs, err := makeCerts(filepath.Join(dir, "certs"))
				if err != nil {
					return err
				}
				props, sec, err := securedProps(dir, cs)
				if err != nil {
					return err
				}
				s = sec
				tls := []string{"ssl.truststore.type=PEM", "ssl.truststore.location=" + cs.CA}
				if sslConf, err = clientConfig(x.Dir(), "ssl.properties", append(tls, "security.protocol=SSL",
					"ssl.keystore.type=PKCS12", "ssl.keystore.location="+cs.ClientP12, "ssl.keystore.password="+cs.Password)...); err != nil {
					return err
				}
				if rogueConf, err = clientConfig(x.Dir(), "rogue.properties", append(tls, "security.protocol=SSL",
					"ssl.keystore.type=PKCS12", "ssl.keystore.location="+cs.RogueClientP12, "ssl.keystore.password="+cs.Password)...); err != nil {
					return err
				}
				if scramConf, err = clientConfig(x.Dir(), "scram.properties", append(tls, "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
					`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`)...); err != nil {
					return err
				}
				if plainConf, err = clientConfig(x.Dir(), "plain.properties", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
					`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`); err != nil {
					return err
				}
				if badPlainConf, err = clientConfig(x.Dir(), "plain-bad.properties", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
					`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="wrong";`); err != nil {
					return err
				}
				var b *Broker
				if x.B.Name == "kafka" {
					b, err = x.Env.startKafka(x.Ctx(), "kafka-secured", dir, props, s.plain)
				} else {
					b, err = x.Env.startGokafkad(x.Ctx(), "gokafkad-secured", dir, props, s.plain)
				}
				if err != nil {
					return err
				}
				s.b = b
				x.Env.extra = append(x.Env.extra, b)
				if x.Env.secured == nil {
					x.Env.secured = map[string]*secured{}
				}
				x.Env.secured[x.B.Name] = s
				// Every listener is served with its own protocol: TLS on the SSL and
				// SASL_SSL ports, with the broker certificate the CA signed.
				// (The broker answers on PLAINTEXT first; on a loaded machine Kafka may
				// bind the others a moment later.)
				for _, addr := range []string{s.ssl, s.saslSSL} {
					if err := x.waitUntil(func() error { return tlsHandshake(addr, cs) }); err != nil {
						return err
					}
				}
				_, err = tool(x, "", "topics", "--bootstrap-server", s.plain, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
				return err
			}},
			{Client: "security (Java CLI)", Feature: "SSL with a client certificate: endpoints of the SSL listener, principal from ssl.principal.mapping.rules", Run: func(x *X) error {
				r, err := tool(x, "", "broker-api-versions", "--bootstrap-server", s.ssl, "--command-config", sslConf)
				if err != nil {
					return err
				}
				if !strings.Contains(r.Stdout, s.ssl+" (id: 1 rack: null") {
					return errf("broker 1 is not listed at the SSL listener's address %s", s.ssl)
				}
				// The mapped principal (User:compat-client) may describe the topic once an ACL says so.
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--add", "--allow-principal", "User:compat-client",
					"--operation", "Describe", "--topic", topic); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					r, err := tool(x, "", "topics", "--bootstrap-server", s.ssl, "--command-config", sslConf, "--list")
					if err != nil {
						return err
					}
					if !hasLine(r.Stdout, topic) {
						return errf("topic %s not listed to User:compat-client", topic)
					}
					return nil
				})
			}},
			{Client: "security (Java CLI)", Feature: "SSL with a certificate of an untrusted CA is refused", Run: func(x *X) error {
				if err := up(); err != nil {
					return err
				}
				r := x.Tool("", "topics", "--bootstrap-server", s.ssl, "--command-config", rogueConf, "--list")
				if r.Err == nil && hasLine(r.Stdout, topic) {
					return errf("a client with an untrusted certificate listed topics")
				}
				if !strings.Contains(r.Out(), "SslAuthenticationException") && !strings.Contains(r.Out(), "SSL handshake failed") {
					return errf("want an SSL handshake failure, got: %s", lastErrorLine(r.Out()))
				}
				return nil
			}},
			{Client: "security (Java CLI)", Feature: "kafka-configs adds and describes a SCRAM-SHA-512 user", Run: func(x *X) error {
				if _, err := tool(x, "", "configs", "--bootstrap-server", s.plain, "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=bob-secret]",
					"--entity-type", "users", "--entity-name", "bob"); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					r, err := tool(x, "", "configs", "--bootstrap-server", s.plain, "--describe", "--entity-type", "users", "--entity-name", "bob")
					if err != nil {
						return err
					}
					return want(r.Stdout, "SCRAM-SHA-512=iterations=8192")
				})
			}},
			{Client: "security (Java CLI)", Feature: "SASL_SSL / SCRAM-SHA-512 producer refused until kafka-acls --producer allows it", Timeout: 3 * time.Minute, Run: func(x *X) error {
				if err := up(); err != nil {
					return err
				}
				r := produce(x, scramConf, 5)
				if !strings.Contains(r.Out(), "TopicAuthorizationException") && !strings.Contains(r.Out(), "Not authorized to access topics") {
					return errf("want TopicAuthorizationException before the ACL, got: %s", lastErrorLine(r.Out()))
				}
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--add", "--allow-principal", "User:bob", "--producer", "--topic", topic); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					if r := produce(x, scramConf, 5); r.Err != nil || strings.Contains(r.Out(), "Exception") {
						return errf("produce after the ACL: %s", lastErrorLine(r.Out()))
					}
					return nil
				})
			}},
			{Client: "security (Java CLI)", Feature: "SASL_SSL / SCRAM-SHA-512 consumer group with kafka-acls --consumer", Timeout: 3 * time.Minute, Run: func(x *X) error {
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", group); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					r, err := tool(x, "", "console-consumer", "--bootstrap-server", s.saslSSL, "--topic", topic, "--group", group,
						"--command-config", scramConf, "--from-beginning", "--max-messages", "5", "--timeout-ms", "20000")
					if err != nil {
						return err
					}
					return want(r.Stdout, "secured-4")
				})
			}},
			{Client: "security (Java CLI)", Feature: "kafka-delegation-tokens --create / --describe / --renew / --expire over SASL_PLAINTEXT / SCRAM-SHA-512; a client logs in with the token as its owner", Timeout: 3 * time.Minute, Run: func(x *X) error {
				return delegationTokenStep(x, tool, s.saslPT, topic)
			}},
			{Client: "security (Java CLI)", Feature: "kafka-acls lists and removes ACLs, prefixed patterns included", Run: func(x *X) error {
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--add", "--allow-principal", "User:alice", "--operation", "Write",
					"--topic", prefixed, "--resource-pattern-type", "prefixed"); err != nil {
					return err
				}
				r, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--list", "--topic", prefixed, "--resource-pattern-type", "prefixed")
				if err != nil {
					return err
				}
				if !strings.Contains(r.Stdout, "patternType=PREFIXED") || !strings.Contains(r.Stdout, "principal=User:alice") || !strings.Contains(r.Stdout, "operation=WRITE") {
					return errf("the prefixed ACL is not listed")
				}
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write",
					"--topic", prefixed, "--resource-pattern-type", "prefixed"); err != nil {
					return err
				}
				return x.waitUntil(func() error {
					r, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--list", "--topic", prefixed, "--resource-pattern-type", "prefixed")
					if err != nil {
						return err
					}
					if strings.Contains(r.Stdout, "principal=User:alice") {
						return errf("the prefixed ACL is still listed after --remove")
					}
					return nil
				})
			}},
			{Client: "security (Java CLI)", Feature: "SASL_PLAINTEXT / PLAIN: the right password is let in, a wrong one refused", Run: func(x *X) error {
				if _, err := tool(x, "", "acls", "--bootstrap-server", s.plain, "--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", topic); err != nil {
					return err
				}
				if err := x.waitUntil(func() error {
					r, err := tool(x, "", "topics", "--bootstrap-server", s.saslPT, "--command-config", plainConf, "--list")
					if err != nil {
						return err
					}
					if !hasLine(r.Stdout, topic) {
						return errf("topic %s not listed to User:alice", topic)
					}
					return nil
				}); err != nil {
					return err
				}
				r := x.Tool("", "topics", "--bootstrap-server", s.saslPT, "--command-config", badPlainConf, "--list")
				if r.Err == nil || !strings.Contains(r.Out(), "SaslAuthenticationException") {
					return errf("want SaslAuthenticationException for a wrong password, got: %s", lastErrorLine(r.Out()))
				}
				return nil
			}},
			{Client: "security (kcat)", Feature: "SSL with a client certificate: metadata names the SSL listener", Run: func(x *X) error {
				if _, err := exec.LookPath("kcat"); err != nil {
					return errf("kcat is not installed (Debian: apt-get install kcat)")
				}
				if err := up(); err != nil {
					return err
				}
				r := x.Exec(Cmd{Name: "kcat", Args: []string{"-b", s.ssl, "-L", "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + s.certs.CA,
					"-X", "ssl.certificate.location=" + s.certs.ClientCert, "-X", "ssl.key.location=" + s.certs.ClientKey}})
				if r.Err != nil {
					return errf("kcat: %v: %s", r.Err, lastErrorLine(r.Stderr))
				}
				if !strings.Contains(r.Stdout, "broker 1 at "+s.ssl) {
					return errf("broker 1 is not listed at the SSL listener's address %s", s.ssl)
				}
				if !strings.Contains(r.Stdout, `topic "`+topic+`"`) {
					return errf("topic %s not in kcat's metadata for User:compat-client", topic)
				}
				return nil
			}},
		}
	}}
}

// delegationTokenStep drives kafka-delegation-tokens as bob (a SCRAM-SHA-512 user with
// the producer ACLs on topic) on the SASL_PLAINTEXT listener at addr: a token with
// alice as renewer is created and described; a client logged in with it (tokenauth)
// is bob and lists the topic, and may not create tokens itself; the token is renewed,
// then expired at once and no longer described.
func delegationTokenStep(x *X, tool func(x *X, stdin, name string, args ...string) (Result, error), addr, topic string) error {
	bobConf, err := clientConfig(x.Dir(), "scram-pt.properties", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`)
	if err != nil {
		return err
	}
	r, err := tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--create",
		"--max-life-time-period", "-1", "--renewer-principal", "User:alice")
	if err != nil {
		return err
	}
	_, after, ok := strings.Cut(r.Stdout, "Created delegation token with tokenId : ")
	if !ok {
		return errf("no token id in kafka-delegation-tokens --create's output")
	}
	id := strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
	var hmac string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if f := strings.Fields(l); len(f) >= 5 && f[0] == id {
			hmac = f[1]
			if f[2] != "User:bob" || f[3] != "User:bob" || f[4] != "[User:alice]" {
				return errf("created token row %q: want owner and requester User:bob, renewers [User:alice]", l)
			}
		}
	}
	if hmac == "" {
		return errf("no row for token %s in kafka-delegation-tokens --create's output", id)
	}
	// Without --owner-principal the tool asks for an empty owner list ("for current
	// user"), which Kafka answers with no tokens.
	r, err = tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--describe")
	if err != nil {
		return err
	}
	if err := want(r.Stdout, "Total number of tokens : 0"); err != nil {
		return err
	}
	r, err = tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--describe", "--owner-principal", "User:bob")
	if err != nil {
		return err
	}
	if err := want(r.Stdout, id); err != nil {
		return err
	}
	tokenConf, err := clientConfig(x.Dir(), "token.properties", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+id+`" password="`+hmac+`" tokenauth="true";`)
	if err != nil {
		return err
	}
	if err := x.waitUntil(func() error {
		r, err := tool(x, "", "topics", "--bootstrap-server", addr, "--command-config", tokenConf, "--list")
		if err != nil {
			return err
		}
		if !hasLine(r.Stdout, topic) {
			return errf("topic %s not listed to the token's owner User:bob", topic)
		}
		return nil
	}); err != nil {
		return err
	}
	r = x.Tool("", "delegation-tokens", "--bootstrap-server", addr, "--command-config", tokenConf, "--create", "--max-life-time-period", "-1")
	if r.Err == nil || !strings.Contains(r.Out(), "UnsupportedByAuthenticationException") {
		return errf("want UnsupportedByAuthenticationException for a token created over a token login, got: %s", lastErrorLine(r.Out()))
	}
	r, err = tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
	if err != nil {
		return err
	}
	if err := want(r.Stdout, "Completed renew operation. New expiry date : "); err != nil {
		return err
	}
	r, err = tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
	if err != nil {
		return err
	}
	if err := want(r.Stdout, "Completed expire operation."); err != nil {
		return err
	}
	return x.waitUntil(func() error {
		r, err := tool(x, "", "delegation-tokens", "--bootstrap-server", addr, "--command-config", bobConf, "--describe", "--owner-principal", "User:bob")
		if err != nil {
			return err
		}
		if strings.Contains(r.Stdout, id) {
			return errf("token %s still described after --expire --expiry-time-period -1", id)
		}
		return nil
	})
}
