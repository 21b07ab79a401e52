package security

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/gokafkad/gokafkad/config"
)

// Store holds a listener's certificate (key and chain), replaceable while the listener
// serves: handshakes read it, a dynamic keystore update swaps it, open connections are
// left alone.
type Store struct {
	cert atomic.Pointer[tls.Certificate]
}

// NewStore loads the keystore of s (the store is empty when s names none).
func NewStore(s config.SSL) (*Store, error) {
	st := &Store{}
	c, err := LoadKeystore(s)
	if err != nil {
		return nil, err
	}
	if c != nil {
		st.cert.Store(c)
	}
	return st, nil
}

// Certificate is the current certificate (nil when there is none).
func (st *Store) Certificate() *tls.Certificate { return st.cert.Load() }

// Set replaces the certificate.
func (st *Store) Set(c *tls.Certificate) { st.cert.Store(c) }

// storeType is a store type in Kafka's spelling, upper-cased.
func storeType(s config.SSL, key string) string {
	return strings.ToUpper(strings.TrimSpace(s.Get(key)))
}

// javaStore is the error for store types only Java reads.
func javaStore(s config.SSL, key string) error {
	return bad(s, key, "Go cannot read %s stores; convert it to PKCS12 (keytool -importkeystore -deststoretype PKCS12) or use PEM", s.Get(key))
}

// LoadKeystore reads the key and certificate chain ssl.keystore.* name: a PEM file
// (key and chain), PEM given inline (ssl.keystore.key and
// ssl.keystore.certificate.chain), or a PKCS12 file. It returns nil when no keystore
// is configured. The rules on which keys go together are Kafka's
// (DefaultSslEngineFactory).
func LoadKeystore(s config.SSL) (*tls.Certificate, error) {
	typ := storeType(s, "ssl.keystore.type")
	loc := s.Get("ssl.keystore.location")
	inlineKey := s.Get("ssl.keystore.key")
	switch {
	case inlineKey != "":
		switch {
		case typ != "PEM":
			return nil, bad(s, "ssl.keystore.type", "ssl.keystore.key can only be given with ssl.keystore.type=PEM")
		case s.Get("ssl.keystore.certificate.chain") == "":
			return nil, bad(s, "ssl.keystore.certificate.chain", "ssl.keystore.key is set, so the certificate chain must be too")
		case loc != "":
			return nil, bad(s, "ssl.keystore.location", "cannot be set together with ssl.keystore.key")
		case s.IsSet("ssl.keystore.password"):
			return nil, bad(s, "ssl.keystore.password", "cannot be set for PEM keys; only ssl.key.password can")
		}
		c, err := pemKeyPair([]byte(inlineKey), []byte(s.Get("ssl.keystore.certificate.chain")), s)
		if err != nil {
			return nil, err
		}
		return c, nil
	case loc == "":
		if s.Get("ssl.keystore.certificate.chain") != "" {
			return nil, bad(s, "ssl.keystore.key", "ssl.keystore.certificate.chain is set, so the key must be too")
		}
		return nil, nil
	}
	switch typ {
	case "PEM", "PKCS12":
	case "JKS", "JCEKS", "BKS":
		return nil, javaStore(s, "ssl.keystore.type")
	default:
		return nil, bad(s, "ssl.keystore.type", "must be PEM or PKCS12")
	}
	data, err := os.ReadFile(loc)
	if err != nil {
		return nil, bad(s, "ssl.keystore.location", "cannot read the keystore: %v", err)
	}
	switch typ {
	case "PEM":
		if s.IsSet("ssl.keystore.password") {
			return nil, bad(s, "ssl.keystore.password", "cannot be set for PEM keystores; only ssl.key.password can")
		}
		return pemKeyPair(data, data, s)
	case "PKCS12":
		key, leaf, chain, err := pkcs12.DecodeChain(data, s.Get("ssl.keystore.password"))
		if err != nil {
			return nil, bad(s, "ssl.keystore.location", "cannot read the PKCS12 keystore (wrong ssl.keystore.password?): %v", err)
		}
		c := &tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
		for _, ic := range chain {
			c.Certificate = append(c.Certificate, ic.Raw)
		}
		if err := checkKeyMatches(key, leaf); err != nil {
			return nil, bad(s, "ssl.keystore.location", "%v", err)
		}
		return c, nil
	}
	panic("unreachable")
}

// pemKeyPair parses a PKCS#8 private key (encrypted with ssl.key.password, or not;
// PKCS#1 and SEC 1 keys are taken too) from keyPEM and the certificate chain, leaf
// first, from chainPEM.
func pemKeyPair(keyPEM, chainPEM []byte, s config.SSL) (*tls.Certificate, error) {
	keyName := "ssl.keystore.key"
	if s.Get("ssl.keystore.location") != "" {
		keyName = "ssl.keystore.location"
	}
	var key any
	for rest := keyPEM; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		var err error
		switch blk.Type {
		case "ENCRYPTED PRIVATE KEY":
			pw := s.Get("ssl.key.password")
			if pw == "" {
				return nil, bad(s, "ssl.key.password", "the private key is encrypted: ssl.key.password must be set")
			}
			key, err = DecryptPKCS8(blk.Bytes, []byte(pw))
			if errors.Is(err, ErrBadKeyPassword) {
				return nil, bad(s, "ssl.key.password", "%v", err)
			}
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(blk.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, bad(s, keyName, "cannot read the private key: %v", err)
		}
		break
	}
	if key == nil {
		return nil, bad(s, keyName, "no PEM private key (BEGIN PRIVATE KEY or BEGIN ENCRYPTED PRIVATE KEY) found")
	}
	chainName := "ssl.keystore.certificate.chain"
	if s.Get("ssl.keystore.location") != "" {
		chainName = "ssl.keystore.location"
	}
	certs, err := pemCertificates(chainPEM)
	if err != nil {
		return nil, bad(s, chainName, "%v", err)
	}
	if len(certs) == 0 {
		return nil, bad(s, chainName, "no PEM certificate found")
	}
	if err := checkKeyMatches(key, certs[0]); err != nil {
		return nil, bad(s, chainName, "%v", err)
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, ct := range certs {
		c.Certificate = append(c.Certificate, ct.Raw)
	}
	return c, nil
}

// pemCertificates parses every CERTIFICATE block of data.
func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return out, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("cannot parse a certificate: %v", err)
		}
		out = append(out, c)
	}
}

// checkKeyMatches makes sure the key belongs to the certificate.
func checkKeyMatches(key any, leaf *x509.Certificate) error {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return errors.New("the private key cannot sign")
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return errors.New("the private key does not match the first certificate of the chain")
	}
	return nil
}

// LoadTruststore reads the certificates ssl.truststore.* name (a PEM or PKCS12 file,
// or PEM inline); nil means none is configured and the system roots apply, as Java's
// default trust store does.
func LoadTruststore(s config.SSL) (*x509.CertPool, error) {
	typ := storeType(s, "ssl.truststore.type")
	loc := s.Get("ssl.truststore.location")
	var certs []*x509.Certificate
	switch inline := s.Get("ssl.truststore.certificates"); {
	case inline != "":
		if typ != "PEM" {
			return nil, bad(s, "ssl.truststore.type", "ssl.truststore.certificates can only be given with ssl.truststore.type=PEM")
		}
		if loc != "" {
			return nil, bad(s, "ssl.truststore.location", "cannot be set together with ssl.truststore.certificates")
		}
		cs, err := pemCertificates([]byte(inline))
		if err != nil {
			return nil, bad(s, "ssl.truststore.certificates", "%v", err)
		}
		certs = cs
	case loc == "":
		return nil, nil
	default:
		switch typ {
		case "PEM", "PKCS12":
		case "JKS", "JCEKS", "BKS":
			return nil, javaStore(s, "ssl.truststore.type")
		default:
			return nil, bad(s, "ssl.truststore.type", "must be PEM or PKCS12")
		}
		data, err := os.ReadFile(loc)
		if err != nil {
			return nil, bad(s, "ssl.truststore.location", "cannot read the truststore: %v", err)
		}
		switch typ {
		case "PEM":
			if s.IsSet("ssl.truststore.password") {
				return nil, bad(s, "ssl.truststore.password", "cannot be set for PEM truststores")
			}
			cs, err := pemCertificates(data)
			if err != nil {
				return nil, bad(s, "ssl.truststore.location", "%v", err)
			}
			certs = cs
		case "PKCS12":
			cs, err := pkcs12.DecodeTrustStore(data, s.Get("ssl.truststore.password"))
			if err != nil {
				return nil, bad(s, "ssl.truststore.location", "cannot read the PKCS12 truststore (wrong ssl.truststore.password?): %v", err)
			}
			certs = cs
		}
	}
	if len(certs) == 0 {
		key := "ssl.truststore.location"
		if loc == "" {
			key = "ssl.truststore.certificates"
		}
		return nil, bad(s, key, "no certificate found")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
