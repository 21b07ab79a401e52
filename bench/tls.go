package main

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"

	"github.com/gokafkad/gokafkad/security/certgen"
)

// benchCerts are the TLS scenario's certificates, made by the bench at run time with
// security/certgen (the code the tests use): a CA, and one broker certificate for
// 127.0.0.1 and localhost that every node of both deployments presents, as a PKCS#12
// keystore (what keytool writes, so Kafka and gokafkad read the same file), with the CA
// as a PEM truststore.
type benchCerts struct {
	keystore, truststore string
	password             string      // of the keystore and its key
	client               *tls.Config // the bench's franz-go clients: trust the CA, no client certificate
}

func makeBenchCerts(dir string) (*benchCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := certgen.NewCA("gokafkad-bench CA")
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Issue(pkix.Name{CommonName: "localhost", Organization: []string{"gokafkad-bench"}}, "127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	bc := &benchCerts{
		keystore:   filepath.Join(dir, "broker.p12"),
		truststore: filepath.Join(dir, "ca.pem"),
		password:   "bench-keystore-pw",
	}
	p12, err := leaf.PKCS12(bc.password)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(bc.keystore, p12, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(bc.truststore, ca.PEM, 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	bc.client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return bc, nil
}

// secure turns a node's PLAINTEXT properties into SSL ones, as a Kafka user secures a
// cluster: clients, brokers among themselves (inter.broker.listener.name) and the
// controller quorum all on SSL listeners, with the same keystore and truststore;
// server certificates only (ssl.client.auth stays none), host names checked on the
// brokers' own connections (Kafka's default ssl.endpoint.identification.algorithm=https).
func (bc *benchCerts) secure(p props) props {
	for _, k := range []string{"listeners", "advertised.listeners"} {
		if v := p.get(k); v != "" {
			p = p.set(k, strings.ReplaceAll(v, "PLAINTEXT://", "SSL://"))
		}
	}
	if p.get("inter.broker.listener.name") != "" {
		p = p.set("inter.broker.listener.name", "SSL")
	}
	return p.set("listener.security.protocol.map", "CONTROLLER:SSL,SSL:SSL").
		set("ssl.keystore.type", "PKCS12").
		set("ssl.keystore.location", bc.keystore).
		set("ssl.keystore.password", bc.password).
		set("ssl.key.password", bc.password).
		set("ssl.truststore.type", "PEM").
		set("ssl.truststore.location", bc.truststore)
}
