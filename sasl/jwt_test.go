package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"
	"time"
)

var b64 = base64.RawURLEncoding.EncodeToString

// testKeys are an RSA and an EC key and the JWKS publishing them.
type testKeys struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	jwks []byte
}

func newTestKeys(t testing.TB) *testKeys {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pad := func(b []byte) []byte { return append(make([]byte, 32-len(b)), b...) }
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256", "n": b64(r.N.Bytes()), "e": b64(big.NewInt(int64(r.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256", "x": b64(pad(e.X.Bytes())), "y": b64(pad(e.Y.Bytes()))},
		{"kty": "oct", "kid": "skipped", "k": "c2VjcmV0"},
	}})
	return &testKeys{rsa: r, ec: e, jwks: jwks}
}

// sign makes a JWS with header and claims (JSON text), signed as alg.
func (k *testKeys) sign(t testing.TB, header, claims string) string {
	var h struct{ Alg string }
	json.Unmarshal([]byte(header), &h)
	signed := b64([]byte(header)) + "." + b64([]byte(claims))
	var sig []byte
	var err error
	switch h.Alg {
	case "RS256":
		d := digest(crypto.SHA256, []byte(signed))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, d)
	case "PS256":
		d := digest(crypto.SHA256, []byte(signed))
		sig, err = rsa.SignPSS(rand.Reader, k.rsa, crypto.SHA256, d, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "ES256":
		d := digest(crypto.SHA256, []byte(signed))
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k.ec, d)
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

func TestOAuthJWT(t *testing.T) {
	k := newTestKeys(t)
	keys, err := ParseJWKS(k.jwks)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	claims := func(extra string) string {
		return fmt.Sprintf(`{"sub":"svc","iat":1699999990,"exp":1700000600%s}`, extra)
	}
	opts := JWTOptions{Keys: keys, ClockSkew: 30 * time.Second}
	withAud := opts
	withAud.ExpectedAudience, withAud.ExpectedIssuer = []string{"kafka"}, "https://issuer"
	otherSub := opts
	otherSub.SubClaimName = "client_id"
	for _, tc := range []struct {
		name  string
		opts  JWTOptions
		token string
		ok    bool
	}{
		{"RS256 by kid", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims("")), true},
		{"ES256 by kid", opts, k.sign(t, `{"alg":"ES256","kid":"e1"}`, claims("")), true},
		{"PS256 on an RS256 key", opts, k.sign(t, `{"alg":"PS256","kid":"r1"}`, claims("")), false},
		{"ES256 without kid: one EC key fits", opts, k.sign(t, `{"alg":"ES256"}`, claims("")), true},
		{"unknown kid", opts, k.sign(t, `{"alg":"RS256","kid":"zz"}`, claims("")), false},
		{"alg none", opts, b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(claims(""))) + ".", false},
		{"tampered claims", opts, func() string {
			tok := k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(""))
			p := splitJWS(tok)
			return p[0] + "." + b64([]byte(`{"sub":"admin","iat":1699999990,"exp":1700000600}`)) + "." + p[2]
		}(), false},
		{"expired", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, `{"sub":"svc","iat":1699999000,"exp":1699999960}`), false},
		{"expired within skew", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, `{"sub":"svc","iat":1699999000,"exp":1699999980}`), true},
		{"no iat", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, `{"sub":"svc","exp":1700000600}`), false},
		{"not yet valid", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"nbf":1700000100`)), false},
		{"aud without expected audience", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"aud":"kafka"`)), false},
		{"aud and iss expected", withAud, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"aud":["x","kafka"],"iss":"https://issuer"`)), true},
		{"wrong aud", withAud, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"aud":"x","iss":"https://issuer"`)), false},
		{"wrong iss", withAud, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"aud":"kafka","iss":"https://other"`)), false},
		{"no sub", opts, k.sign(t, `{"alg":"RS256","kid":"r1"}`, `{"iat":1699999990,"exp":1700000600}`), false},
		{"sub claim name", otherSub, k.sign(t, `{"alg":"RS256","kid":"r1"}`, claims(`,"client_id":"svc"`)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			s := NewOAuthServer(OAuthOptions{JWT: &o})
			challenge, err := s.Step(now, []byte("n,,\x01auth=Bearer "+tc.token+"\x01\x01"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ok != s.Done() {
				t.Fatalf("done %v, want %v (challenge %q)", s.Done(), tc.ok, challenge)
			}
			if tc.ok && (s.AuthorizationID() != "svc" || !s.CredentialExpiry().Equal(time.Unix(1_700_000_600, 0)) && tc.name != "expired within skew") {
				t.Fatalf("principal %q expiry %v", s.AuthorizationID(), s.CredentialExpiry())
			}
			if !tc.ok && string(challenge) != `{"status":"invalid_token"}` {
				t.Fatalf("challenge %q", challenge)
			}
		})
	}
}

func splitJWS(tok string) []string {
	var out []string
	start := 0
	for i := 0; i < len(tok); i++ {
		if tok[i] == '.' {
			out = append(out, tok[start:i])
			start = i + 1
		}
	}
	return append(out, tok[start:])
}

func TestParseJWKS(t *testing.T) {
	for _, bad := range []string{
		`nope`, `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"x"}]}`,
		`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, // 24-bit modulus
		`{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}]}`,
		`{"keys":[{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}]}`,
	} {
		if _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func FuzzOAuthJWT(f *testing.F) {
	k := newTestKeys(f)
	keys, err := ParseJWKS(k.jwks)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(k.sign(f, `{"alg":"RS256","kid":"r1"}`, `{"sub":"svc","iat":1,"exp":1700000600}`))
	f.Add(k.sign(f, `{"alg":"ES256"}`, `{"sub":"svc","iat":1,"exp":1700000600,"aud":["a"]}`))
	f.Fuzz(func(t *testing.T, token string) {
		s := NewOAuthServer(OAuthOptions{JWT: &JWTOptions{Keys: keys}})
		_, _ = s.Step(time.Unix(1_700_000_000, 0), []byte("n,,\x01auth=Bearer "+token+"\x01\x01"))
	})
}

func FuzzParseJWKS(f *testing.F) {
	f.Add(newTestKeys(f).jwks)
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseJWKS(data) })
}
