package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestListenerSASL(t *testing.T) {
	b, unknown, err := Parse(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":                 "plain,SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":                  `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`,
		"listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms": "5000",
		"connections.max.reauth.ms":                                            "9000",
		"listener.name.sasl_plaintext.sasl.server.max.receive.size":            "1000",
	})
	if err != nil || len(unknown) != 0 {
		t.Fatalf("parse: %v, unknown %v", err, unknown)
	}
	if err := b.CheckSASLKeys(); err != nil {
		t.Fatal(err)
	}
	s, err := b.ListenerSASL("SASL_PLAINTEXT")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.EnabledMechanisms, []string{"PLAIN", "SCRAM-SHA-512"}) || s.MaxReceiveSize != 1000 ||
		!strings.Contains(s.JAAS["PLAIN"], "user_a") || s.JAAS["SCRAM-SHA-512"] != "" ||
		s.ReauthMs["PLAIN"] != 9000 || s.ReauthMs["SCRAM-SHA-512"] != 5000 {
		t.Fatalf("resolved %+v", s)
	}
	b2, _, err := Parse(map[string]string{
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file:///jwks.json",
		"sasl.oauthbearer.expected.audience":                                          "a,b",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.CheckSASLKeys(); err != nil {
		t.Fatal(err)
	}
	o, _ := b2.ListenerSASL("SASL_PLAINTEXT")
	if !o.OAuthValidator || o.OAuth["sasl.oauthbearer.jwks.endpoint.url"] != "file:///jwks.json" || o.OAuth["sasl.oauthbearer.expected.audience"] != "a,b" ||
		o.OAuth["sasl.oauthbearer.sub.claim.name"] != "sub" || o.OAuth["sasl.oauthbearer.clock.skew.seconds"] != "30" {
		t.Fatalf("oauth %+v", o)
	}
	other, _ := b.ListenerSASL("PLAINTEXT")
	if !slices.Equal(other.EnabledMechanisms, []string{"PLAIN"}) || other.MaxReceiveSize != 524288 {
		t.Fatalf("unprefixed %+v", other)
	}
}

func TestCheckSASLKeysRefuses(t *testing.T) {
	for _, k := range []string{
		"sasl.jaas.config",
		"sasl.server.callback.handler.class",
		"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
		"sasl.oauthbearer.jwks.endpoint.url",
		"sasl.kerberos.service.name",
		"listener.name.x.sasl.jaas.config", // no mechanism
		"sasl.server.callback.handler.class",
		"listener.name.x.oauthbearer.sasl.server.callback.handler.class", // not Kafka's validator
		"listener.name.x.plain.sasl.oauthbearer.expected.issuer",         // another mechanism
	} {
		b, _, err := Parse(map[string]string{k: "x"})
		if err == nil {
			err = b.CheckSASLKeys()
		}
		if err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s: %v", k, err)
		}
	}
	b, _, _ := Parse(map[string]string{"listener.name.x.plain.connections.max.reauth.ms": "soon"})
	if err := b.CheckSASLKeys(); err == nil {
		t.Error("a bad prefixed value was accepted")
	}
}

// TestSASLSSLClientAuth: as Kafka (KIP-684), the broker-wide ssl.client.auth is for
// SSL listeners; a SASL_SSL listener takes only its listener-prefixed one.
func TestSASLSSLClientAuth(t *testing.T) {
	b, _, err := Parse(map[string]string{
		"listeners":                           "SSL://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094,OTHER://127.0.0.1:9095,CONTROLLER://127.0.0.1:9093",
		"listener.security.protocol.map":      "SSL:SSL,SASL_SSL:SASL_SSL,OTHER:SASL_SSL,CONTROLLER:PLAINTEXT",
		"ssl.client.auth":                     "required",
		"listener.name.other.ssl.client.auth": "requested",
		"inter.broker.listener.name":          "SSL",
	})
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range map[string]string{"SSL": "required", "SASL_SSL": "none", "OTHER": "requested"} {
		if got := b.ListenerSSL(l).Get("ssl.client.auth"); got != want {
			t.Errorf("%s: ssl.client.auth %q, want %q", l, got, want)
		}
	}
}
