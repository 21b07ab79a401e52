package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"software.sslmate.com/src/go-pkcs12"
)

// TestIssue checks what a TLS peer sees: the leaf chains to the CA for its host names,
// the PEM keystore loads as a key pair, and the PKCS12 stores hold the same key and
// certificates.
func TestIssue(t *testing.T) {
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(pkix.Name{CommonName: "broker"}, "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "elsewhere"}); err == nil {
		t.Error("the certificate verified for a host it was not issued for")
	}
	pemKS := leaf.PEMKeystore()
	if _, err := tls.X509KeyPair(pemKS, pemKS); err != nil {
		t.Errorf("PEM keystore: %v", err)
	}
	p12, err := leaf.PKCS12("pw")
	if err != nil {
		t.Fatal(err)
	}
	key, cert, chain, err := pkcs12.DecodeChain(p12, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if !cert.Equal(leaf.Cert) || len(chain) != 1 || !chain[0].Equal(ca.Cert) || key == nil {
		t.Errorf("PKCS12 keystore holds %v / %d CA certificates", cert.Subject, len(chain))
	}
	trust, err := ca.TrustPKCS12("pw")
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pkcs12.DecodeTrustStore(trust, "pw")
	if err != nil || len(certs) != 1 || !certs[0].Equal(ca.Cert) {
		t.Errorf("PKCS12 truststore: %d certificates, %v", len(certs), err)
	}
	if enc, err := leaf.EncryptedKeyPEM("pw"); err != nil || len(enc) == 0 {
		t.Errorf("EncryptedKeyPEM: %v", err)
	}
}
