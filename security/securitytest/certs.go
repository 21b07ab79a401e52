// Package securitytest makes certificates for tests: a CA, certificates it signs for
// brokers and clients, and their keys written as Kafka's keystores take them (PEM with
// a plain or encrypted PKCS#8 key, PKCS12). Everything is generated per test into
// t.TempDir(); no key is ever committed. The certificates come from certgen (which
// make bench uses too); this package fails the test where certgen returns an error.
package securitytest

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"

	"github.com/gokafkad/gokafkad/security/certgen"
)

// CA is a certificate authority made for one test.
type CA struct {
	*certgen.CA
	t testing.TB
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	ca, err := certgen.NewCA(cn)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{CA: ca, t: t}
}

// Leaf is a certificate and its key (CertPEM is the chain, KeyPEM the unencrypted
// PKCS#8 key).
type Leaf struct {
	*certgen.Leaf
	t testing.TB
}

// Issue signs a certificate for subject, valid for server and client use, with
// 127.0.0.1, ::1 and localhost as subject alternative names.
func (ca *CA) Issue(subject pkix.Name) *Leaf {
	ca.t.Helper()
	return ca.IssueFor(subject, "127.0.0.1", "::1", "localhost")
}

// IssueFor is Issue with the given host names and IP addresses as subject alternative
// names.
func (ca *CA) IssueFor(subject pkix.Name, hosts ...string) *Leaf {
	ca.t.Helper()
	l, err := ca.CA.Issue(subject, hosts...)
	if err != nil {
		ca.t.Fatal(err)
	}
	return &Leaf{Leaf: l, t: ca.t}
}

// Write writes data to name in dir and returns the path.
func Write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// EncryptedKeyPEM is the key as an encrypted PKCS#8 PEM block (PBES2, PBKDF2 with
// HMAC-SHA256, AES-256-CBC: what openssl pkcs8 -topk8 -v2 aes-256-cbc writes).
func (l *Leaf) EncryptedKeyPEM(password string) []byte {
	l.t.Helper()
	b, err := l.Leaf.EncryptedKeyPEM(password)
	if err != nil {
		l.t.Fatal(err)
	}
	return b
}

// PKCS12 is the key and chain as a PKCS12 keystore with password (modern encryption,
// as keytool writes).
func (l *Leaf) PKCS12(password string) []byte {
	l.t.Helper()
	b, err := l.Leaf.PKCS12(password)
	if err != nil {
		l.t.Fatal(err)
	}
	return b
}

// TrustPKCS12 is the CA certificate as a Java PKCS12 truststore with password.
func (ca *CA) TrustPKCS12(password string) []byte {
	ca.t.Helper()
	b, err := ca.CA.TrustPKCS12(password)
	if err != nil {
		ca.t.Fatal(err)
	}
	return b
}
