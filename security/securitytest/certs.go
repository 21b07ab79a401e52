// Package securitytest makes certificates for tests: a CA, certificates it signs for
// brokers and clients, and their keys written as Kafka's keystores take them (PEM with
// a plain or encrypted PKCS#8 key, PKCS12). Everything is generated per test into
// t.TempDir(); no key is ever committed.
package securitytest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the CA certificate in PEM (a truststore).
	PEM []byte
	t   testing.TB
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), t: t}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Leaf is a certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is the certificate followed by the CA's (the chain); KeyPEM the
	// unencrypted PKCS#8 key.
	CertPEM, KeyPEM []byte
	ca              *CA
}

// Issue signs a certificate for subject, valid for server and client use, with
// 127.0.0.1, ::1 and localhost as subject alternative names.
func (ca *CA) Issue(subject pkix.Name) *Leaf {
	return ca.IssueFor(subject, "127.0.0.1", "::1", "localhost")
}

// IssueFor is Issue with the given host names and IP addresses as subject alternative
// names.
func (ca *CA) IssueFor(subject pkix.Name, hosts ...string) *Leaf {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	return &Leaf{Cert: cert, Key: key, CertPEM: chain, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), ca: ca}
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

// PEMKeystore is the key followed by the chain, as ssl.keystore.type=PEM reads a file.
func (l *Leaf) PEMKeystore() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// EncryptedKeyPEM is the key as an encrypted PKCS#8 PEM block (PBES2, PBKDF2 with
// HMAC-SHA256, AES-256-CBC: what openssl pkcs8 -topk8 -v2 aes-256-cbc writes).
func (l *Leaf) EncryptedKeyPEM(password string) []byte {
	t := l.ca.t
	p8, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	const iter = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(p8)%16
	plain := append(p8, make([]byte, pad)...)
	for i := len(p8); i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	block, _ := aes.NewCipher(key)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)

	type algo struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue `asn1:"optional"`
	}
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := struct {
		Salt      []byte
		Iter      int
		KeyLength int
		PRF       algo
	}{salt, iter, 32, algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}}
	params := struct {
		KDF algo
		Enc algo
	}{
		KDF: algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, Parameters: raw(kdf)},
		Enc: algo{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: raw(iv)},
	}
	info := struct {
		Algo algo
		Data []byte
	}{algo{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, Parameters: raw(params)}, enc}
	der, err := asn1.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}

// PKCS12 is the key and chain as a PKCS12 keystore with password (modern encryption,
// as keytool writes).
func (l *Leaf) PKCS12(password string) []byte {
	t := l.ca.t
	data, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TrustPKCS12 is the CA certificate as a Java PKCS12 truststore with password.
func (ca *CA) TrustPKCS12(password string) []byte {
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		ca.t.Fatal(err)
	}
	return data
}
