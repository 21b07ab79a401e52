package config

import (
	"strings"
)

// sslDefs are Kafka's ssl.* broker configs (SslConfigs and BrokerSecurityConfigs),
// with Kafka's names, types, defaults and importance. They apply to every SSL and
// SASL_SSL listener and to the broker's own outbound TLS connections; a
// listener.name.<listener>.ssl.* key overrides one for that listener (ListenerSSL).
// Values Go's crypto/tls cannot honour (JKS stores, Java providers) are refused when
// a TLS listener is built, never ignored. The keystore and truststore keys (Kafka's
// SslConfigs.RECONFIGURABLE_CONFIGS) can be altered per broker, plain or
// listener-prefixed: the listener then serves new handshakes with the new stores.
var sslDefs = []Def{
	{Name: "ssl.protocol", Type: TypeString, Default: "TLSv1.3", Importance: Medium,
		Doc: "The TLS protocol of the SSL context: TLSv1.3, TLSv1.2 or TLS; it caps the versions ssl.enabled.protocols allows."},
	{Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3", Importance: Medium,
		Doc: "The TLS versions accepted (TLSv1.2, TLSv1.3, and the older TLSv1.1, TLSv1); they must be contiguous."},
	{Name: "ssl.cipher.suites", Type: TypeList, NullDefault: true, Importance: Low,
		Doc: "TLS 1.2 cipher suites allowed, by IANA / Java name; unset means Go's secure defaults. An unknown name stops start-up."},
	{Name: "ssl.keystore.type", Type: TypeString, Default: "JKS", Dynamic: PerBroker, Importance: Medium,
		Doc: "Format of the keystore: PEM or PKCS12 (JKS, Kafka's default, cannot be read: convert it to PKCS12)."},
	{Name: "ssl.keystore.location", Type: TypeString, NullDefault: true, Dynamic: PerBroker, Importance: High,
		Doc: "Path of the keystore file: for PEM, the private key followed by the certificate chain."},
	{Name: "ssl.keystore.password", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "Password of a PKCS12 keystore file."},
	{Name: "ssl.key.password", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "Password of the private key: decrypts an encrypted PKCS#8 PEM key."},
	{Name: "ssl.keystore.key", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "The private key in PEM (PKCS#8, possibly encrypted with ssl.key.password), given inline instead of ssl.keystore.location."},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "The certificate chain in PEM, given inline with ssl.keystore.key."},
	{Name: "ssl.truststore.type", Type: TypeString, Default: "JKS", Dynamic: PerBroker, Importance: Medium,
		Doc: "Format of the truststore: PEM or PKCS12 (JKS cannot be read)."},
	{Name: "ssl.truststore.location", Type: TypeString, NullDefault: true, Dynamic: PerBroker, Importance: High,
		Doc: "Path of the truststore file (the CA certificates peers are verified against); unset means the system roots."},
	{Name: "ssl.truststore.password", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "Password of a PKCS12 truststore file."},
	{Name: "ssl.truststore.certificates", Type: TypePassword, NullDefault: true, Dynamic: PerBroker, Importance: High, Sensitive: true,
		Doc: "Trusted certificates in PEM, given inline instead of ssl.truststore.location."},
	{Name: "ssl.client.auth", Type: TypeString, Default: "none", Importance: Medium, Valid: oneOf("required", "requested", "none"),
		Doc: "Whether clients of a TLS listener must (required), may (requested) or need not (none) present a trusted certificate."},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https", Importance: Low,
		Doc: "https checks the host name of the brokers and controllers this broker dials against their certificates; empty disables the check."},
	{Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT", Importance: Low,
		Doc: "Rules (RULE:pattern/replacement/[LU], DEFAULT) mapping a client certificate's distinguished name to the principal's name."},
	{Name: "ssl.allow.dn.changes", Type: TypeBoolean, Default: "false", Importance: Low,
		Doc: "Whether a dynamically updated keystore may carry a certificate with another subject than the current one."},
	{Name: "ssl.allow.san.changes", Type: TypeBoolean, Default: "false", Importance: Low,
		Doc: "Whether a dynamically updated keystore may carry a certificate with other subject alternative names than the current one."},
	{Name: "ssl.keymanager.algorithm", Type: TypeString, Default: "SunX509", Importance: Low,
		Doc: "Java key manager algorithm; accepted as SunX509, NewSunX509 or PKIX (Go's X.509 key selection), anything else stops start-up."},
	{Name: "ssl.trustmanager.algorithm", Type: TypeString, Default: "PKIX", Importance: Low,
		Doc: "Java trust manager algorithm; accepted as PKIX or SunX509 (Go's X.509 path validation), anything else stops start-up."},
	{Name: "ssl.provider", Type: TypeString, NullDefault: true, Importance: Medium,
		Doc: "Java security provider; must stay unset (gokafkad uses Go's crypto/tls)."},
	{Name: "ssl.secure.random.implementation", Type: TypeString, NullDefault: true, Importance: Low,
		Doc: "Java SecureRandom implementation; must stay unset (Go's crypto/rand is used)."},
	{Name: "ssl.engine.factory.class", Type: TypeClass, NullDefault: true, Importance: Low,
		Doc: "Java SSL engine factory; must stay unset."},
}

// SSL is the TLS configuration of one listener: every ssl.* key, with its
// listener.name.<listener>.ssl.* override when one is set, as Kafka resolves a
// listener's configs. A null value is "".
type SSL struct {
	// Listener is the listener name (upper case), "" for the unprefixed keys.
	Listener string
	values   map[string]string
	keys     map[string]string
}

// Get returns the value of ssl key name ("" when null).
func (s SSL) Get(name string) string { return s.values[name] }

// List returns the value of list key name, split ("" is the empty list).
func (s SSL) List(name string) []string { return splitList(s.values[name]) }

// IsSet reports whether key name has a non-null value.
func (s SSL) IsSet(name string) bool {
	_, ok := s.values[name]
	return ok
}

// Key is the config key name's value came from: listener.name.<l>.name when the
// listener overrides it, else name. Errors name it.
func (s SSL) Key(name string) string {
	if k, ok := s.keys[name]; ok {
		return k
	}
	return name
}

// listenerPrefix is Kafka's prefix of listener-specific configs.
func listenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// splitListenerKey splits "listener.name.<l>.<key>" into <l> and <key>.
func splitListenerKey(k string) (listener, key string, ok bool) {
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return "", "", false
	}
	listener, key, ok = strings.Cut(rest, ".")
	return listener, key, ok && listener != ""
}

// listenerSSLDef returns the definition of an ssl key a listener-prefixed key k
// overrides.
func listenerSSLDef(k string) (*Def, bool) {
	_, key, ok := splitListenerKey(k)
	if !ok || !strings.HasPrefix(key, "ssl.") {
		return nil, false
	}
	for i := range sslDefs {
		if sslDefs[i].Name == key {
			return &sslDefs[i], true
		}
	}
	return nil, false
}

// checkListenerOverrides validates the values of listener-prefixed ssl keys.
func (b *Broker) checkListenerOverrides() error {
	for _, m := range []map[string]string{b.Raw, b.dynDefault, b.dynBroker} {
		for k, v := range m {
			if d, ok := listenerSSLDef(k); ok {
				if _, err := d.parseValue(v); err != nil {
					return invalid(k, v, "%s", err.(*Error).Reason)
				}
			}
		}
	}
	return nil
}

// ListenerSSL resolves the ssl.* configs of listener (any case).
func (b *Broker) ListenerSSL(listener string) SSL {
	s := SSL{Listener: strings.ToUpper(listener), values: map[string]string{}, keys: map[string]string{}}
	prefix := listenerPrefix(listener)
	for _, d := range sslDefs {
		pk := prefix + d.Name
		if v, ok := b.dynBroker[pk]; ok {
			s.values[d.Name], s.keys[d.Name] = strings.TrimSpace(v), pk
			continue
		}
		if v, ok := b.Raw[pk]; ok {
			s.values[d.Name], s.keys[d.Name] = strings.TrimSpace(v), pk
			continue
		}
		if !b.isNull[d.Name] {
			s.values[d.Name] = b.values[d.Name]
		}
	}
	// As Kafka (KIP-684): the broker-wide ssl.client.auth applies to SSL listeners
	// only; a SASL_SSL listener asks for client certificates only when its own
	// listener.name.<l>.ssl.client.auth says so.
	if _, prefixed := s.keys["ssl.client.auth"]; !prefixed && b.ListenerSecurityProtocolMap[s.Listener] == "SASL_SSL" {
		s.values["ssl.client.auth"] = "none"
	}
	return s
}

// validateListenerOverride is ValidateDynamicBrokerConfig for a listener-prefixed key.
func validateListenerOverride(d *Def, name, value string, perBroker bool) error {
	switch {
	case d.Dynamic == ReadOnly:
		return &Error{Key: name, Value: value, Reason: "cannot be updated dynamically", Level: ErrReadOnly}
	case !perBroker:
		return &Error{Key: name, Value: value, Reason: "can only be updated for a specific broker, not as a cluster default", Level: ErrPerBrokerOnly}
	}
	if _, err := d.parseValue(value); err != nil {
		return invalid(name, value, "%s", err.(*Error).Reason)
	}
	return nil
}

// describeListenerOverrides describes the listener-prefixed ssl keys set dynamically
// for this broker, as Kafka lists them among a broker's configs.
func (b *Broker) describeListenerOverrides() []ConfigEntry {
	var out []ConfigEntry
	for k, v := range b.dynBroker {
		d, ok := listenerSSLDef(k)
		if !ok {
			continue
		}
		out = append(out, ConfigEntry{
			Name: k, Value: v, Source: SourceDynamicBrokerConfig, Sensitive: d.Sensitive, Type: d.Type, Doc: d.Doc,
			Synonyms: []ConfigSynonym{{Name: k, Value: v, Source: SourceDynamicBrokerConfig}},
		})
	}
	return out
}

// SSLDef returns the definition of ssl key name, or of the ssl key a
// listener.name.<l>.ssl.* name overrides.
func SSLDef(name string) (Def, bool) {
	if d, ok := listenerSSLDef(name); ok {
		return *d, true
	}
	for _, d := range sslDefs {
		if d.Name == name {
			return d, true
		}
	}
	return Def{}, false
}
