package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// saslDefs are Kafka's SASL broker configs (BrokerSecurityConfigs, SaslConfigs) that
// gokafkad honours. Like Kafka, a SASL listener may override them with
// listener.name.<listener>.<key>, and the per-mechanism ones (sasl.jaas.config,
// connections.max.reauth.ms) with listener.name.<listener>.<mechanism>.<key>, the
// mechanism in lower case (ListenerSASL). Any other sasl.* key (callback handler
// classes, Kerberos, OAuth JWKS validation, login refresh) stops start-up
// (CheckSASLKeys): gokafkad cannot honour it.
var saslDefs = []Def{
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "GSSAPI", Importance: Medium,
		Doc: "Mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (GSSAPI, Kafka's default, cannot be served and stops start-up on a SASL listener)."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI", Importance: Medium,
		Doc: "Mechanism this broker logs in with on a SASL inter-broker listener (its own JAAS username/password); must be enabled there."},
	{Name: "sasl.mechanism.controller.protocol", Type: TypeString, Default: "GSSAPI", Importance: High,
		Doc: "Mechanism used on a SASL controller listener; must be enabled there."},
	{Name: "sasl.server.max.receive.size", Type: TypeInt, Default: "524288", Importance: Low,
		Doc: "Largest frame accepted before authentication; a bigger one closes the connection before anything is allocated (CVE-2022-34917)."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", Importance: Medium,
		Doc: "Session lifetime of a SASL connection (KIP-368): clients are told to re-authenticate within it, and a request past it closes the connection; 0 = no limit."},
	{Name: "sasl.jaas.config", Type: TypePassword, NullDefault: true, Importance: Medium, Sensitive: true,
		Doc: "JAAS login module of a mechanism; on a broker it must be prefixed, listener.name.{listenerName}.{saslMechanism}.sasl.jaas.config, as in Kafka."},
	{Name: "sasl.server.callback.handler.class", Type: TypeClass, NullDefault: true, Importance: Medium,
		Doc: "Only org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler, prefixed listener.name.{listenerName}.oauthbearer.: OAUTHBEARER tokens are then signed JWTs checked against sasl.oauthbearer.jwks.endpoint.url."},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: TypeString, NullDefault: true, Importance: Medium,
		Doc: "The JWKS holding the keys OAUTHBEARER tokens are signed with, as a file: URL read at start-up (http and https are not supported and stop start-up)."},
	{Name: "sasl.oauthbearer.expected.audience", Type: TypeList, NullDefault: true, Importance: Low,
		Doc: "Audiences a signed token's aud must name one of; unset: a token with an aud claim is refused, as Kafka's validator refuses it."},
	{Name: "sasl.oauthbearer.expected.issuer", Type: TypeString, NullDefault: true, Importance: Low,
		Doc: "The iss a signed token must have; unset: not checked."},
	{Name: "sasl.oauthbearer.sub.claim.name", Type: TypeString, Default: "sub", Importance: Low,
		Doc: "The claim of a signed token naming the principal."},
	{Name: "sasl.oauthbearer.scope.claim.name", Type: TypeString, Default: "scope", Importance: Low,
		Doc: "The claim of a signed token holding its scope."},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Type: TypeInt, Default: "30", Importance: Low,
		Doc: "Clock difference tolerated on a signed token's exp and nbf."},
}

// oauthValidatorClasses name Kafka's secured OAUTHBEARER validator (in Kafka 4's
// package and in the older secured one).
var oauthValidatorClasses = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
}

// oauthKeys are the keys of Kafka's secured OAUTHBEARER validator, which may carry the
// listener and mechanism prefixes.
var oauthKeys = []string{"sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience",
	"sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.scope.claim.name",
	"sasl.oauthbearer.clock.skew.seconds"}

// saslMechanismPrefixes are the lower-cased mechanism names a per-mechanism key may
// carry after the listener prefix.
var saslMechanismPrefixes = []string{"plain", "scram-sha-256", "scram-sha-512", "oauthbearer", "gssapi"}

// splitSASLKey takes a config key apart: its listener (lower case, "" when
// unprefixed), mechanism (lower case, "" when none) and the key proper.
func splitSASLKey(k string) (listener, mechanism, key string) {
	key = k
	if rest, ok := strings.CutPrefix(k, "listener.name."); ok {
		if l, r, ok := strings.Cut(rest, "."); ok && l != "" {
			listener, key = strings.ToLower(l), r
			for _, m := range saslMechanismPrefixes {
				if r2, ok := strings.CutPrefix(key, m+"."); ok {
					mechanism, key = m, r2
					break
				}
			}
		}
	}
	return listener, mechanism, key
}

// isListenerSASLKey reports whether k is a listener-prefixed key ListenerSASL reads.
func isListenerSASLKey(k string) bool {
	l, m, key := splitSASLKey(k)
	if l == "" {
		return false
	}
	switch key {
	case "sasl.enabled.mechanisms", "sasl.server.max.receive.size":
		return m == ""
	case "sasl.jaas.config":
		return m != ""
	case "connections.max.reauth.ms":
		return true
	case "sasl.server.callback.handler.class":
		return m == "oauthbearer"
	}
	return slices.Contains(oauthKeys, key) && (m == "" || m == "oauthbearer")
}

// CheckSASLKeys refuses the SASL keys gokafkad cannot honour: an unprefixed
// sasl.jaas.config (Kafka ignores it on a broker with a warning; a broker that
// silently logged nobody in would be worse), and every sasl.* key other than those of
// saslDefs, plain or listener-prefixed (custom callback handlers, Kerberos, OAuth
// JWKS validation, login refresh settings), and invalid values of prefixed keys.
func (b *Broker) CheckSASLKeys() error {
	for k, v := range b.Raw {
		l, _, key := splitSASLKey(k)
		switch {
		case k == "sasl.jaas.config":
			return invalid(k, "[hidden]", "a broker's JAAS configuration must be prefixed with the listener and mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config")
		case k == "sasl.server.callback.handler.class":
			return invalid(k, v, "must be prefixed with the listener and mechanism: listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class")
		case l != "" && isListenerSASLKey(k):
			if _, err := brokerDefIndex[key].parseValue(v); err != nil {
				return invalid(k, v, "%s", err.(*Error).Reason)
			}
		case strings.HasPrefix(key, "sasl.") && (l != "" || brokerDefIndex[key] == nil):
			return &Error{Key: k, Reason: fmt.Sprintf("%s is not supported by gokafkad (supported SASL keys: sasl.enabled.mechanisms, sasl.mechanism.inter.broker.protocol, sasl.mechanism.controller.protocol, sasl.server.max.receive.size, connections.max.reauth.ms, listener.name.<listener>.<mechanism>.sasl.jaas.config, and the sasl.oauthbearer.* keys of Kafka's JWT validator)", k)}
		}
		switch v = strings.TrimSpace(v); key {
		case "sasl.server.callback.handler.class":
			if !slices.Contains(oauthValidatorClasses, v) {
				return invalid(k, v, "gokafkad has no SASL callback handler classes but Kafka's OAuthBearerValidatorCallbackHandler")
			}
		case "sasl.oauthbearer.jwks.endpoint.url":
			if !strings.HasPrefix(v, "file:") {
				return invalid(k, v, "only file: URLs are supported (gokafkad does not fetch a JWKS over http)")
			}
		}
	}
	return nil
}

// SASL is the SASL configuration of one listener, resolved as Kafka resolves a
// listener's configs: listener.name.<listener>.<mechanism>.<key>, then
// listener.name.<listener>.<key>, then <key>.
type SASL struct {
	// Listener is the listener name (upper case).
	Listener string
	// EnabledMechanisms is sasl.enabled.mechanisms, upper-cased, without duplicates.
	EnabledMechanisms []string
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
	// JAAS is each mechanism's sasl.jaas.config ("" when unset) and JAASKey the key
	// it was read from.
	JAAS, JAASKey map[string]string
	// ReauthMs is each mechanism's connections.max.reauth.ms.
	ReauthMs map[string]int64
	// OAuthValidator is set when OAUTHBEARER uses Kafka's secured validator
	// (listener.name.<l>.oauthbearer.sasl.server.callback.handler.class); OAuth holds
	// the sasl.oauthbearer.* values ("" when unset), OAuthKey the key each came from.
	OAuthValidator  bool
	OAuth, OAuthKey map[string]string
}

// ListenerSASL resolves the SASL configs of listener (any case).
func (b *Broker) ListenerSASL(listener string) (SASL, error) {
	l := strings.ToLower(listener)
	s := SASL{Listener: strings.ToUpper(listener), JAAS: map[string]string{}, JAASKey: map[string]string{}, ReauthMs: map[string]int64{},
		OAuth: map[string]string{}, OAuthKey: map[string]string{}}
	lookup := func(mech, key string) (string, string) {
		p := "listener.name." + l + "."
		if mech != "" {
			if v, ok := b.Raw[p+strings.ToLower(mech)+"."+key]; ok {
				return strings.TrimSpace(v), p + strings.ToLower(mech) + "." + key
			}
		}
		if key != "sasl.jaas.config" && key != "sasl.server.callback.handler.class" {
			if v, ok := b.Raw[p+key]; ok {
				return strings.TrimSpace(v), p + key
			}
			return b.values[key], key
		}
		return "", p + strings.ToLower(mech) + "." + key
	}
	mechs, _ := lookup("", "sasl.enabled.mechanisms")
	for _, m := range splitList(mechs) {
		if m = strings.ToUpper(m); !slices.Contains(s.EnabledMechanisms, m) {
			s.EnabledMechanisms = append(s.EnabledMechanisms, m)
		}
	}
	size, key := lookup("", "sasl.server.max.receive.size")
	n, err := strconv.ParseInt(size, 10, 32)
	if err != nil {
		return s, invalid(key, size, "not an integer")
	}
	s.MaxReceiveSize = int32(n)
	for _, m := range s.EnabledMechanisms {
		s.JAAS[m], s.JAASKey[m] = lookup(m, "sasl.jaas.config")
		v, key := lookup(m, "connections.max.reauth.ms")
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, invalid(key, v, "not a long")
		}
		s.ReauthMs[m] = ms
	}
	if h, _ := lookup("OAUTHBEARER", "sasl.server.callback.handler.class"); h != "" {
		s.OAuthValidator = true
	}
	for _, k := range oauthKeys {
		s.OAuth[k], s.OAuthKey[k] = lookup("OAUTHBEARER", k)
	}
	return s, nil
}

// SASLMechanismInterBrokerProtocol is sasl.mechanism.inter.broker.protocol.
func (b *Broker) SASLMechanismInterBrokerProtocol() string {
	return strings.ToUpper(b.values["sasl.mechanism.inter.broker.protocol"])
}

// SASLMechanismControllerProtocol is sasl.mechanism.controller.protocol.
func (b *Broker) SASLMechanismControllerProtocol() string {
	return strings.ToUpper(b.values["sasl.mechanism.controller.protocol"])
}

// ListenerJAAS is the sasl.jaas.config of mechanism mech on listener
// (listener.name.<listener>.<mech>.sasl.jaas.config; "" when unset) and its key, for
// a mechanism this node logs in with whether or not it enables it itself.
func (b *Broker) ListenerJAAS(listener, mech string) (value, key string) {
	key = "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mech) + ".sasl.jaas.config"
	return strings.TrimSpace(b.Raw[key]), key
}
