package security

import (
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	"github.com/gokafkad/gokafkad/security/securitytest"
)

// FuzzDistinguishedName: any subject bytes give a name or an error, never a panic.
func FuzzDistinguishedName(f *testing.F) {
	ca := securitytest.NewCA(f, "CA")
	f.Add(ca.Issue(pkix.Name{CommonName: "a,b", Organization: []string{"O"}}).Cert.RawSubject)
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DistinguishedName(b)
	})
}

// FuzzDecryptPKCS8: any encrypted key bytes and password give a key or an error.
func FuzzDecryptPKCS8(f *testing.F) {
	ca := securitytest.NewCA(f, "CA")
	blk, _ := pem.Decode(ca.Issue(pkix.Name{CommonName: "k"}).EncryptedKeyPEM("pw"))
	f.Add(blk.Bytes, "pw")
	f.Add(blk.Bytes, "wrong")
	f.Fuzz(func(t *testing.T, der []byte, pw string) {
		_, _ = DecryptPKCS8(der, []byte(pw))
	})
}

// FuzzPrincipalMapper: any rules string parses or is refused; a parsed one maps any
// name without panicking.
func FuzzPrincipalMapper(f *testing.F) {
	f.Add("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", "CN=a,OU=b")
	f.Add(`RULE:\/*\**/**/`, "x")
	f.Add(`RULE:\Qabc/x/`, "abc")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := NewPrincipalMapper(rules)
		if err == nil {
			m.Name(dn)
		}
	})
}
