package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/gokafkad/gokafkad/security/securitytest"
)

// TestPrincipalMappingRules runs Kafka's own SslPrincipalMapperTest cases: which rule
// strings parse, how they split, and what names they give.
func TestPrincipalMappingRules(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := NewPrincipalMapper(r); err != nil {
			t.Errorf("valid rule %q refused: %v", r, err)
		}
	}
	for _, r := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(?=x).*$/$1/", // look-ahead: Java has it, RE2 does not
	} {
		if _, err := NewPrincipalMapper(r); err == nil {
			t.Errorf("invalid rule %q accepted", r)
		}
	}

	m, err := NewPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":                                      "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US":                               "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":                                           "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":                                  "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":                                     "OU=JavaSoft,O=Sun Microsystems,C=US",
		"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "serviceuser",
	} {
		if got, ok := m.Name(dn); !ok || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, ok, want)
		}
	}
	// Kafka's security documentation example.
	doc, _ := NewPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT")
	if got, _ := doc.Name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"); got != "adminuser@admin" {
		t.Errorf("documented example gives %q, want adminuser@admin", got)
	}

	comma, _ := NewPrincipalMapper(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if got, _ := comma.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("comma with whitespace: %q", got)
	}
	none, _ := NewPrincipalMapper("RULE:^CN=(.*)$/$1/")
	if _, ok := none.Name("OU=x"); ok {
		t.Error("a name no rule matches was mapped")
	}
	// A reference beyond the groups stays literal, as Kafka escapes it.
	lit, _ := NewPrincipalMapper("RULE:^CN=(.*?),OU=(.*)$/$1@$4/")
	if got, _ := lit.Name("CN=a,OU=b"); got != "a@$4" {
		t.Errorf("literal back reference: %q", got)
	}
}

// TestPrincipalRulesSplitting: Kafka's testRulesSplitting, through the rules' string.
func TestPrincipalRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		{"[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
			"RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT"},
	} {
		m, err := NewPrincipalMapper(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got, want := m.String(), "SslPrincipalMapper(rules = "+tc.want+")"; got != want {
			t.Errorf("%q splits as %s, want %s", tc.rules, got, want)
		}
	}
}

// TestDistinguishedName: subjects written as Java's X500Principal.getName() writes
// them.
func TestDistinguishedName(t *testing.T) {
	ca := securitytest.NewCA(t, "test CA")
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{Country: []string{"US"}, Organization: []string{"Org"}, OrganizationalUnit: []string{"ServiceUsers"}, CommonName: "Duke"},
			"CN=Duke,OU=ServiceUsers,O=Org,C=US"},
		{pkix.Name{CommonName: "Tkac, Adam", Organization: []string{"a+b=c"}}, `CN=Tkac\, Adam,O=a\+b\=c`},
		{pkix.Name{CommonName: " padded #1 "}, `CN=\ padded \#1\ `},
		{pkix.Name{CommonName: "alice", ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: "a@b.c"}}},
			"1.2.840.113549.1.9.1=#0c056140622e63,CN=alice"},
		// Checked against Java 17's X500Principal.getName().
		{pkix.Name{Locality: []string{"Zürich"}, Province: []string{"ZH"}, StreetAddress: []string{"Main"}, CommonName: `x<y>;"\`, SerialNumber: "42"},
			`2.5.4.5=#13023432,CN=x\<y\>\;\"\\,STREET=Main,L=Zürich,ST=ZH`},
	} {
		leaf := ca.Issue(tc.name)
		got, err := DistinguishedName(leaf.Cert.RawSubject)
		if err != nil || got != tc.want {
			t.Errorf("DN of %v = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	m, _ := NewPrincipalMapper("DEFAULT")
	if p, _ := m.TLSPrincipal(nil); p != "User:ANONYMOUS" {
		t.Errorf("no certificate: %s", p)
	}
	if p, _ := m.TLSPrincipal([]*x509.Certificate{ca.Issue(pkix.Name{CommonName: "bob", Organization: []string{"O"}}).Cert}); p != "User:CN=bob,O=O" {
		t.Errorf("principal %s", p)
	}
}
