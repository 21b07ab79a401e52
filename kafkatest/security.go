package kafkatest

// Secured client listeners: TLS with certificates made at start, SASL users (PLAIN in
// the listener's JAAS entry, SCRAM in the metadata log), both at once (SASL_SSL), and
// the StandardAuthorizer. A secured cluster's brokers serve clients on a listener
// named after its security protocol (SSL, SASL_PLAINTEXT or SASL_SSL) and talk to each
// other on a listener of their own, BROKER (inter.broker.listener.name), as Kafka
// operators lay out a cluster whose clients log in: the nodes' own traffic never
// needs a client's credentials, and a SCRAM user can be made once the cluster runs.
// BROKER and CONTROLLER are PLAINTEXT, or with ACLs on SASL_PLAINTEXT with PLAIN as
// the user BrokerPrincipal names (a super user), so that no client principal is ever
// the cluster's own.

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/sasl"
	"github.com/gokafkad/gokafkad/security/certgen"
)

// The SASL mechanisms WithSASL takes: Kafka's names.
const (
	PLAIN       = sasl.Plain
	SCRAMSHA256 = sasl.ScramSHA256
	SCRAMSHA512 = sasl.ScramSHA512
)

// BrokerUser is the SASL user (PLAIN, on the BROKER and CONTROLLER listeners) the
// nodes of a cluster WithACLs log in to each other as; "User:" + BrokerUser is a super
// user. WithUser cannot take the name.
const BrokerUser = "kafkatest-broker"

// BrokerListener is the listener brokers replicate over in a secured cluster.
const BrokerListener = "BROKER"

// scramIterations is the PBKDF2 iteration count of the SCRAM users NewCluster makes:
// Kafka's minimum, so that start-up and every login stay quick.
const scramIterations = 4096

// WithTLS serves clients over TLS (the SSL listener, or SASL_SSL with WithSASL): a CA
// and a broker certificate for 127.0.0.1, ::1 and localhost are made at start (ECDSA
// P-256, certgen); TLSConfig is a client configuration that trusts them, CACertPEM the
// CA for other clients.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// WithTLSClientAuth is WithTLS with client certificates required
// (listener.name.<listener>.ssl.client.auth=required, which also applies to SASL_SSL,
// as Kafka's KIP-684). ClientCertificate makes one; its principal is "User:" + its
// common name (ssl.principal.mapping.rules=RULE:^CN=([^,]*)$/$1/,DEFAULT unless
// WithBrokerConfig sets the rules).
func WithTLSClientAuth() Option {
	return func(o *options) { o.tls, o.clientAuth = true, true }
}

// WithSASL makes clients authenticate with SASL, with the mechanisms given (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512; sasl.enabled.mechanisms), as the WithUser users: on
// SASL_PLAINTEXT, or SASL_SSL with WithTLS. A wrong password gets
// SASL_AUTHENTICATION_FAILED, as from Kafka. Later calls add mechanisms.
func WithSASL(mechanisms ...string) Option {
	return func(o *options) {
		for _, m := range mechanisms {
			if !slices.Contains(o.mechanisms, m) {
				o.mechanisms = append(o.mechanisms, m)
			}
		}
	}
}

// WithUser adds a SASL user for every mechanism of WithSASL: in the PLAIN listener's
// JAAS entry (user_<name>="<password>"), and as SCRAM credentials (4096 iterations)
// made through the controller before NewCluster returns. More SCRAM users can be made
// later with any admin client (kadm's AlterUserSCRAMs). Names are JAAS words (letters,
// digits, '.', '-', '_', '$'); passwords have no '"' or '\'.
func WithUser(name, password string) Option {
	return func(o *options) {
		if o.users == nil {
			o.users = map[string]string{}
		}
		o.users[name] = password
	}
}

// WithUsers is WithUser for each user name → password.
func WithUsers(users map[string]string) Option {
	return func(o *options) {
		for n, p := range users {
			WithUser(n, p)(o)
		}
	}
}

// WithACLs turns on Kafka's StandardAuthorizer
// (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer) with
// superUsers (principals such as "User:admin") and the cluster's own, "User:" +
// BrokerUser, as super.users; allow.everyone.if.no.acl.found stays false, Kafka's
// default, so every other principal needs ACLs (kadm's CreateACLs as a super user).
func WithACLs(superUsers ...string) Option {
	return func(o *options) {
		o.acls = true
		o.superUsers = append(o.superUsers, superUsers...)
	}
}

// security is a cluster's secured layout, made by options.securityLayout.
type security struct {
	// protocol is the client listener's security protocol, and its name.
	protocol string
	// internal is the BROKER and CONTROLLER listeners' protocol.
	internal string
	// props are the broker configs of the layout (WithBrokerConfig may not set them).
	props map[string]string
	// defaults are configs WithBrokerConfig may change.
	defaults map[string]string
	ca       *certgen.CA
	// brokerPassword is BrokerUser's (random per cluster).
	brokerPassword string
}

// secured reports whether the cluster has a client listener other than PLAINTEXT or
// the authorizer on.
func (o *options) secured() bool { return o.tls || len(o.mechanisms) > 0 || o.acls }

var jaasWord = regexp.MustCompile(`^[A-Za-z0-9._$-]+$`)

// checkSecurity checks the security options and makes the layout (o.sec).
func (o *options) checkSecurity() error {
	if !o.secured() {
		if len(o.users) > 0 {
			return fmt.Errorf("WithUser without WithSASL: no listener would take the users")
		}
		return nil
	}
	for _, m := range o.mechanisms {
		if m != PLAIN && m != SCRAMSHA256 && m != SCRAMSHA512 {
			return fmt.Errorf("WithSASL(%q): kafkatest serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", m)
		}
	}
	if len(o.mechanisms) > 0 && len(o.users) == 0 {
		return fmt.Errorf("WithSASL(%s) without WithUser: nobody could log in", strings.Join(o.mechanisms, ", "))
	}
	if len(o.mechanisms) == 0 && len(o.users) > 0 {
		return fmt.Errorf("WithUser without WithSASL: no listener would take the users")
	}
	for name, pw := range o.users {
		if name == BrokerUser {
			return fmt.Errorf("WithUser(%q): the name is the cluster's own (BrokerUser)", name)
		}
		if !jaasWord.MatchString(name) || strings.ContainsAny(pw, "\"\\\n") {
			return fmt.Errorf("WithUser(%q): a name of letters, digits, '.', '-', '_', '$' and a password without '\"', '\\' or a newline", name)
		}
	}
	for _, su := range o.superUsers {
		if !strings.Contains(su, ":") || strings.Contains(su, ";") {
			return fmt.Errorf("WithACLs(%q): a principal is TYPE:name, e.g. User:admin", su)
		}
	}
	s := &security{protocol: "SSL", internal: "PLAINTEXT", props: map[string]string{}, defaults: map[string]string{}}
	switch {
	case len(o.mechanisms) > 0 && o.tls:
		s.protocol = "SASL_SSL"
	case len(o.mechanisms) > 0:
		s.protocol = "SASL_PLAINTEXT"
	case !o.tls:
		s.protocol = "PLAINTEXT"
	}
	lname := "listener.name." + strings.ToLower(s.protocol) + "."
	if o.tls {
		ca, err := certgen.NewCA("kafkatest CA")
		if err != nil {
			return err
		}
		leaf, err := ca.Issue(pkix.Name{CommonName: "localhost", Organization: []string{"kafkatest"}}, "127.0.0.1", "::1", "localhost")
		if err != nil {
			return err
		}
		s.ca = ca
		maps.Copy(s.props, map[string]string{
			"ssl.keystore.type":              "PEM",
			"ssl.keystore.key":               string(leaf.KeyPEM),
			"ssl.keystore.certificate.chain": string(leaf.CertPEM),
			"ssl.truststore.type":            "PEM",
			"ssl.truststore.certificates":    string(ca.PEM),
		})
		if o.clientAuth {
			s.props[lname+"ssl.client.auth"] = "required"
			s.defaults["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]*)$/$1/,DEFAULT"
		}
	}
	if len(o.mechanisms) > 0 {
		s.props["sasl.enabled.mechanisms"] = strings.Join(o.mechanisms, ",")
		for _, m := range o.mechanisms {
			if m == PLAIN {
				var sb strings.Builder
				sb.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
				for _, name := range slices.Sorted(maps.Keys(o.users)) {
					fmt.Fprintf(&sb, " user_%s=%q", name, o.users[name])
				}
				sb.WriteString(";")
				s.props[lname+"plain.sasl.jaas.config"] = sb.String()
			} else {
				s.props[lname+strings.ToLower(m)+".sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
			}
		}
	}
	if o.acls {
		s.internal = "SASL_PLAINTEXT"
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		s.brokerPassword = hex.EncodeToString(b)
		jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" user_%s="%s";`,
			BrokerUser, s.brokerPassword, BrokerUser, s.brokerPassword)
		for _, l := range []string{"broker", "controller"} {
			s.props["listener.name."+l+".sasl.enabled.mechanisms"] = PLAIN
			s.props["listener.name."+l+".plain.sasl.jaas.config"] = jaas
		}
		s.props["sasl.mechanism.inter.broker.protocol"] = PLAIN
		s.props["sasl.mechanism.controller.protocol"] = PLAIN
		s.props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		s.props["super.users"] = strings.Join(append([]string{"User:" + BrokerUser}, o.superUsers...), ";")
	}
	for k := range s.props {
		if _, ok := o.props[k]; ok {
			return fmt.Errorf("WithBrokerConfig: %s is set by kafkatest's security options (WithTLS, WithSASL, WithACLs) and cannot be given", k)
		}
	}
	o.sec = s
	return nil
}

// SecurityProtocol is the client listener's security protocol: PLAINTEXT, SSL,
// SASL_PLAINTEXT or SASL_SSL (a client's security.protocol).
func (c *Cluster) SecurityProtocol() string {
	if c.opts.sec == nil {
		return "PLAINTEXT"
	}
	return c.opts.sec.protocol
}

// SASLMechanisms are the client listener's SASL mechanisms (WithSASL), nil without
// SASL.
func (c *Cluster) SASLMechanisms() []string { return slices.Clone(c.opts.mechanisms) }

// CACertPEM is the PEM of the CA that signed the brokers' certificates (nil without
// WithTLS): the ssl.truststore / ssl.ca.location of other clients.
func (c *Cluster) CACertPEM() []byte {
	if c.opts.sec == nil || c.opts.sec.ca == nil {
		return nil
	}
	return slices.Clone(c.opts.sec.ca.PEM)
}

// TLSConfig is a new client TLS configuration that trusts the cluster's CA, for
// kgo.DialTLSConfig (nil without WithTLS). With WithTLSClientAuth, add a certificate
// of ClientCertificate to its Certificates.
func (c *Cluster) TLSConfig() *tls.Config {
	pem := c.CACertPEM()
	if pem == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// ClientCertificate is a new client certificate with common name cn, signed by the
// cluster's CA; with WithTLSClientAuth its principal is "User:" + cn. It fails the
// test without WithTLS.
func (c *Cluster) ClientCertificate(cn string) tls.Certificate {
	c.t.Helper()
	if c.opts.sec == nil || c.opts.sec.ca == nil {
		c.t.Fatalf("kafkatest: ClientCertificate(%q) without WithTLS", cn)
		return tls.Certificate{}
	}
	leaf, err := c.opts.sec.ca.Issue(pkix.Name{CommonName: cn})
	if err == nil {
		var cert tls.Certificate
		if cert, err = tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err == nil {
			return cert
		}
	}
	c.t.Fatalf("kafkatest: ClientCertificate(%q): %v", cn, err)
	return tls.Certificate{}
}

// createUsers makes the SCRAM credentials of the WithUser users for every SCRAM
// mechanism of WithSASL and waits until every running broker has them.
func (c *Cluster) createUsers() error {
	var mechs []*sasl.ScramMechanism
	for _, name := range c.opts.mechanisms {
		if m, ok := sasl.ScramMechanismByName(name); ok {
			mechs = append(mechs, m)
		}
	}
	if len(mechs) == 0 || len(c.opts.users) == 0 {
		return nil
	}
	b := c.anyBroker()
	if b == nil {
		return fmt.Errorf("creating the SCRAM users: no broker running")
	}
	var want []controller.ScramKey
	ctx, cancel := c.ctx()
	defer cancel()
	// One request per mechanism: a request may name a user once only (Kafka's
	// DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same
	// request").
	for _, m := range mechs {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, name := range slices.Sorted(maps.Keys(c.opts.users)) {
			salt := make([]byte, 16)
			if _, err := rand.Read(salt); err != nil {
				return err
			}
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Mechanism, u.Iterations, u.Salt = name, m.Type(), scramIterations, salt
			u.SaltedPassword = m.SaltedPassword(c.opts.users[name], salt, scramIterations)
			req.Upsertions = append(req.Upsertions, u)
			want = append(want, controller.ScramKey{User: name, Mechanism: m.Type()})
		}
		r, err := b.ControllerRequest(ctx, req)
		if err != nil {
			return fmt.Errorf("creating the SCRAM users: %w", err)
		}
		for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
				msg := ""
				if res.ErrorMessage != nil {
					msg = ": " + *res.ErrorMessage
				}
				return fmt.Errorf("creating %s user %s: %w%s", m.Name(), res.User, err, msg)
			}
		}
	}
	return c.waitUntil(context.Background(), func() bool {
		return c.everyBroker(func(img *controller.MetadataImage) bool {
			for _, k := range want {
				if _, ok := img.Scram[k]; !ok {
					return false
				}
			}
			return true
		})
	}, func() string { return "the SCRAM users in every broker's metadata" })
}
