package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// certSet is what the security suite's brokers and clients use, made fresh for each
// run (nothing is committed): a CA, a broker certificate for 127.0.0.1 / localhost,
// a client certificate it signed (and another for franz-go's tests), and a client
// certificate of another CA that the brokers must refuse. Each key is in PEM (PKCS#8) beside its certificate; the broker
// and the trusted client also get a PKCS#12 keystore (made by openssl) for Java.
type certSet struct {
	Dir      string
	Password string // of the PKCS#12 keystores

	CA              string // CA certificate (PEM): the truststore
	BrokerP12       string
	ClientCert      string // PEM certificate of the trusted client
	ClientKey       string // its PEM key
	ClientP12       string
	KgoClientCert   string // trusted, of User:kgo-client (a super user): franz-go's tests over TLS
	KgoClientKey    string
	RogueClientCert string // signed by a CA the brokers do not trust
	RogueClientKey  string
	RogueClientP12  string
}

// clientDN is the trusted client certificate's subject as Kafka renders it (RFC 2253).
const clientDN = "CN=compat-client,O=gokafkad-compat"

func makeCerts(dir string) (*certSet, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cs := &certSet{Dir: dir, Password: "compat-keystore-pw"}
	p := func(name string) string { return filepath.Join(dir, name) }

	ca, caKey, err := newCert("gokafkad-compat CA", nil, nil, true, nil)
	if err != nil {
		return nil, err
	}
	rogue, rogueKey, err := newCert("gokafkad-compat rogue CA", nil, nil, true, nil)
	if err != nil {
		return nil, err
	}
	broker, brokerKey, err := newCert("localhost", ca, caKey, false, func(t *x509.Certificate) {
		t.DNSNames = []string{"localhost"}
		t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}
	client, clientKey, err := newCert("compat-client", ca, caKey, false, func(t *x509.Certificate) {
		t.Subject.Organization = []string{"gokafkad-compat"}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}
	kgoClient, kgoClientKey, err := newCert("kgo-client", ca, caKey, false, func(t *x509.Certificate) {
		t.Subject.Organization = []string{"gokafkad-compat"}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}
	rogueClient, rogueClientKey, err := newCert("compat-client", rogue, rogueKey, false, func(t *x509.Certificate) {
		t.Subject.Organization = []string{"gokafkad-compat"}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}

	cs.CA = p("ca.crt")
	cs.ClientCert, cs.ClientKey = p("client.crt"), p("client.key")
	cs.RogueClientCert, cs.RogueClientKey = p("rogue-client.crt"), p("rogue-client.key")
	cs.KgoClientCert, cs.KgoClientKey = p("kgo-client.crt"), p("kgo-client.key")
	files := []struct {
		path string
		data []byte
	}{
		{cs.CA, certPEM(ca)},
		{p("rogue-ca.crt"), certPEM(rogue)},
		{p("broker.crt"), append(certPEM(broker), certPEM(ca)...)},
		{p("broker.key"), keyPEM(brokerKey)},
		{cs.ClientCert, append(certPEM(client), certPEM(ca)...)},
		{cs.ClientKey, keyPEM(clientKey)},
		{cs.KgoClientCert, append(certPEM(kgoClient), certPEM(ca)...)},
		{cs.KgoClientKey, keyPEM(kgoClientKey)},
		{cs.RogueClientCert, append(certPEM(rogueClient), certPEM(rogue)...)},
		{cs.RogueClientKey, keyPEM(rogueClientKey)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	cs.BrokerP12, cs.ClientP12, cs.RogueClientP12 = p("broker.p12"), p("client.p12"), p("rogue-client.p12")
	for _, k := range []struct{ cert, key, out string }{
		{p("broker.crt"), p("broker.key"), cs.BrokerP12},
		{cs.ClientCert, cs.ClientKey, cs.ClientP12},
		{cs.RogueClientCert, cs.RogueClientKey, cs.RogueClientP12},
	} {
		out, err := exec.Command("openssl", "pkcs12", "-export", "-in", k.cert, "-inkey", k.key,
			"-out", k.out, "-passout", "pass:"+cs.Password, "-name", "key").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("openssl pkcs12 -export: %v\n%s", err, out)
		}
	}
	return cs, nil
}

func newCert(cn string, parent *x509.Certificate, parentKey *rsa.PrivateKey, isCA bool, edit func(*x509.Certificate)) (*x509.Certificate, *rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	t := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if isCA {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage |= x509.KeyUsageCertSign
	}
	if edit != nil {
		edit(t)
	}
	if parent == nil {
		parent, parentKey = t, key
	}
	der, err := x509.CreateCertificate(rand.Reader, t, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
