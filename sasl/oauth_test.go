package sasl

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// UnsecuredJWS builds an unsecured token with the given claims (JSON object text).
func unsecuredJWS(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func TestOAuthUnsecured(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name   string
		opts   OAuthOptions
		token  string
		user   string // "" when refused
		status string // the JSON challenge when refused
	}{
		{name: "good", token: unsecuredJWS(`{"sub":"alice","exp":1700000060}`), user: "alice"},
		{name: "iat and scope", token: unsecuredJWS(`{"sub":"alice","iat":1699999990,"exp":1700000060,"scope":["a","b"]}`), user: "alice",
			opts: OAuthOptions{RequiredScope: []string{"a"}}},
		{name: "other principal claim", token: unsecuredJWS(`{"client":"svc","exp":1700000060}`), user: "svc",
			opts: OAuthOptions{PrincipalClaimName: "client"}},
		{name: "expired", token: unsecuredJWS(`{"sub":"alice","exp":1699999999}`), status: `{"status":"invalid_token"}`},
		{name: "expiring now", token: unsecuredJWS(`{"sub":"alice","exp":1700000000}`), status: `{"status":"invalid_token"}`},
		{name: "expired within skew", token: unsecuredJWS(`{"sub":"alice","exp":1699999999}`), user: "alice",
			opts: OAuthOptions{AllowableClockSkew: 5 * time.Second}},
		{name: "no exp", token: unsecuredJWS(`{"sub":"alice"}`), status: `{"status":"invalid_token"}`},
		{name: "exp a string", token: unsecuredJWS(`{"sub":"alice","exp":"1700000060"}`), status: `{"status":"invalid_token"}`},
		{name: "no sub", token: unsecuredJWS(`{"exp":1700000060}`), status: `{"status":"invalid_token"}`},
		{name: "blank sub", token: unsecuredJWS(`{"sub":" ","exp":1700000060}`), status: `{"status":"invalid_token"}`},
		{name: "issued in the future", token: unsecuredJWS(`{"sub":"alice","iat":1700000010,"exp":1700000060}`), status: `{"status":"invalid_token"}`},
		{name: "signed", token: enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"sub":"alice","exp":1700000060}`)) + ".c2ln", status: `{"status":"invalid_token"}`},
		{name: "alg none with signature", token: unsecuredJWS(`{"sub":"alice","exp":1700000060}`) + "c2ln", status: `{"status":"invalid_token"}`},
		{name: "two parts", token: enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"sub":"a","exp":1700000060}`)), status: `{"status":"invalid_token"}`},
		{name: "not json", token: enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`nope`)) + ".", status: `{"status":"invalid_token"}`},
		{name: "missing scope", token: unsecuredJWS(`{"sub":"alice","exp":1700000060,"scope":"a"}`),
			opts: OAuthOptions{RequiredScope: []string{"a", "b"}}, status: `{"status":"insufficient_scope", "scope":"[a, b]"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, first, err := oauth.Auth{Token: tc.token}.AsMechanism().Authenticate(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			s := NewOAuthServer(tc.opts)
			challenge, err := s.Step(now, first)
			if err != nil {
				t.Fatalf("step: %v", err)
			}
			if tc.user != "" {
				if !s.Done() || s.AuthorizationID() != tc.user || len(challenge) != 0 {
					t.Fatalf("done %v user %q challenge %q", s.Done(), s.AuthorizationID(), challenge)
				}
				if s.CredentialExpiry().IsZero() {
					t.Fatal("no expiry")
				}
				return
			}
			if string(challenge) != tc.status {
				t.Fatalf("challenge %q, want %q", challenge, tc.status)
			}
			_, ack, err := sess.Challenge(challenge)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Step(now, ack)
			if err == nil || s.Done() {
				t.Fatal("accepted after the error")
			}
			if got := ClientMessage(err, OAuthBearer, false); got != tc.status {
				t.Fatalf("client message %q, want %q", got, tc.status)
			}
		})
	}
}

func TestOAuthInitialResponse(t *testing.T) {
	tok := unsecuredJWS(`{"sub":"alice","exp":1700000060}`)
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name, msg, err string
	}{
		{"extensions", "n,,\x01auth=Bearer " + tok + "\x01ext=a b\x01\x01", ""},
		{"authzid equal", "n,a=alice,\x01auth=Bearer " + tok + "\x01\x01", ""},
		{"lower-case scheme", "n,,\x01auth=bearer " + tok + "\x01\x01", ""},
		{"authzid other", "n,a=bob,\x01auth=Bearer " + tok + "\x01\x01", "Client requested an authorization id (bob) that is different from the token's principal name (alice)"},
		{"no auth", "n,,\x01ext=1\x01\x01", "'auth' not specified"},
		{"other scheme", "n,,\x01auth=Basic " + tok + "\x01\x01", "Invalid scheme"},
		{"no final ^A", "n,,\x01auth=Bearer " + tok + "\x01", "Invalid OAUTHBEARER client first message"},
		{"channel binding", "y,,\x01auth=Bearer " + tok + "\x01\x01", "Invalid OAUTHBEARER client first message"},
		{"bad token chars", "n,,\x01auth=Bearer a,b\x01\x01", "invalid 'auth' format"},
		{"lone ^A first", "\x01", "Invalid OAUTHBEARER client first message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOAuthServer(OAuthOptions{})
			_, err := s.Step(now, []byte(tc.msg))
			if tc.err == "" {
				if err != nil || !s.Done() {
					t.Fatalf("%v done %v", err, s.Done())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func TestOAuthOptionsFromJAAS(t *testing.T) {
	e, err := ParseJAASConfig(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="a b" unsecuredValidatorAllowableClockSkewMs="1500";`)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OAuthOptionsFromJAAS(e)
	if err != nil || len(o.RequiredScope) != 2 || o.AllowableClockSkew != 1500*time.Millisecond {
		t.Fatalf("%+v %v", o, err)
	}
	e.Options["unsecuredValidatorAllowableClockSkewMs"] = "-1"
	if _, err := OAuthOptionsFromJAAS(e); err == nil {
		t.Fatal("negative skew accepted")
	}
}
