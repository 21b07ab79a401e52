// Package certgen makes throw-away certificates: a CA, certificates it signs for
// brokers and clients, and their keys written as Kafka's keystores take them (PEM with
// a plain or encrypted PKCS#8 key, PKCS12). Tests reach it through securitytest, which
// fails the test on an error; make bench uses it directly to secure the brokers it
// starts. Everything is made at run time; no key is ever committed.
package certgen

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
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// Validity is how long the certificates are valid (from an hour before they are made,
// so clocks a little apart agree).
const Validity = 24 * time.Hour

// CA is a certificate authority (ECDSA P-256).
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the CA certificate in PEM (a truststore).
	PEM []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(Validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
}

// Leaf is a certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is the certificate followed by the CA's (the chain); KeyPEM the
	// unencrypted PKCS#8 key.
	CertPEM, KeyPEM []byte
	// CA is the authority that signed it.
	CA *CA
}

// Issue signs a certificate for subject, valid for server and client use, with the
// given host names and IP addresses as subject alternative names.
func (ca *CA) Issue(subject pkix.Name, hosts ...string) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(Validity),
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
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	return &Leaf{Cert: cert, Key: key, CertPEM: chain, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), CA: ca}, nil
}

// PEMKeystore is the key followed by the chain, as ssl.keystore.type=PEM reads a file.
func (l *Leaf) PEMKeystore() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// EncryptedKeyPEM is the key as an encrypted PKCS#8 PEM block (PBES2, PBKDF2 with
// HMAC-SHA256, AES-256-CBC: what openssl pkcs8 -topk8 -v2 aes-256-cbc writes).
func (l *Leaf) EncryptedKeyPEM(password string) ([]byte, error) {
	p8, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		return nil, err
	}
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	const iter = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		return nil, err
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
	var merr error
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil && merr == nil {
			merr = err
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
	if merr != nil {
		return nil, merr
	}
	der, err := asn1.Marshal(info)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), nil
}

// PKCS12 is the key and chain as a PKCS12 keystore with password (modern encryption,
// as keytool writes).
func (l *Leaf) PKCS12(password string) ([]byte, error) {
	return pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.CA.Cert}, password)
}

// TrustPKCS12 is the CA certificate as a Java PKCS12 truststore with password.
func (ca *CA) TrustPKCS12(password string) ([]byte, error) {
	return pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
}
