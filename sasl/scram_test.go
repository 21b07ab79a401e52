package sasl

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScramRFCVectors replays the exchanges of RFC 5802 §5 (SHA-1) and RFC 7677 §3
// (SHA-256) through the server with the RFCs' nonces.
func TestScramRFCVectors(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		mech                     *ScramMechanism
		salt                     string
		clientFirst, serverNonce string
		serverFirst              string
		clientFinal, serverFinal string
	}{
		{
			name: "RFC 5802", mech: scramSHA1, salt: "QSXCR+Q6sek8bf92",
			clientFirst: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
			serverNonce: "3rfcNHYJY1ZVvWVs7j",
			serverFirst: "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
			clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
			serverFinal: "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
		},
		{
			name: "RFC 7677", mech: SCRAMSHA256, salt: "W22ZaJ0SNY7soEsUEjb6gQ==",
			clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
			serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
			clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			salt := mustB64(t, tc.salt)
			cred := tc.mech.Credential(salt, tc.mech.SaltedPassword("pencil", salt, 4096), 4096)
			s := NewScramServer(tc.mech, func(u string) (ScramCredential, bool) { return cred, u == "user" }, nil)
			s.nonce = func() (string, error) { return tc.serverNonce, nil }
			got, err := s.Step(time.Time{}, []byte(tc.clientFirst))
			if err != nil || string(got) != tc.serverFirst {
				t.Fatalf("server-first = %q, %v; want %q", got, err, tc.serverFirst)
			}
			got, err = s.Step(time.Time{}, []byte(tc.clientFinal))
			if err != nil || string(got) != tc.serverFinal {
				t.Fatalf("server-final = %q, %v; want %q", got, err, tc.serverFinal)
			}
			if !s.Done() || s.AuthorizationID() != "user" {
				t.Fatalf("done %v, user %q", s.Done(), s.AuthorizationID())
			}
			if _, err := s.Step(time.Time{}, []byte(tc.clientFinal)); !errors.Is(err, ErrIllegalState) {
				t.Fatalf("step after done: %v", err)
			}
		})
	}
}

// TestScramRefusals covers what the server refuses and what the client is told.
func TestScramRefusals(t *testing.T) {
	salt := []byte("salt")
	cred := SCRAMSHA256.Credential(salt, SCRAMSHA256.SaltedPassword("pencil", salt, 4096), 4096)
	weak := SCRAMSHA256.Credential(salt, SCRAMSHA256.SaltedPassword("pencil", salt, 100), 100)
	lookup := func(u string) (ScramCredential, bool) {
		switch u {
		case "user", "a,b=c":
			return cred, true
		case "weak":
			return weak, true
		}
		return ScramCredential{}, false
	}
	const nonce = "rOprNGfwEbeRWgbNEkqO"
	full := nonce + "SERVER"
	for _, tc := range []struct {
		name, first, final string
		wantErr            string // substring of the error; "" for success
		public             bool
	}{
		{name: "unknown user", first: "n,,n=nobody,r=" + nonce, wantErr: "Invalid user credentials"},
		{name: "bad format", first: "x,,n=user,r=" + nonce, wantErr: "Invalid SCRAM client first message format"},
		{name: "channel binding requested", first: "p=tls-unique,,n=user,r=" + nonce, wantErr: "Invalid SCRAM client first message format"},
		{name: "empty nonce", first: "n,,n=user,r=", wantErr: "Invalid SCRAM client first message format"},
		{name: "bad escape", first: "n,,n=us=er,r=" + nonce, wantErr: "Invalid SCRAM client first message format"},
		{name: "other authzid", first: "n,a=admin,n=user,r=" + nonce, wantErr: "Client requested an authorization id that is different from username", public: true},
		{name: "same authzid", first: "n,a=user,n=user,r=" + nonce, final: "proof"},
		{name: "escaped name", first: "n,,n=a=2Cb=3Dc,r=" + nonce, final: "proof"},
		{name: "reserved m and extensions", first: "n,,m=x,n=user,r=" + nonce + ",ext=1", final: "proof"},
		{name: "delegation token", first: "n,,n=user,r=" + nonce + ",tokenauth=true", wantErr: "Token Authentication failed"},
		{name: "too few iterations", first: "n,,n=weak,r=" + nonce, wantErr: "less than the minimum 4096"},
		{name: "nonce not the combined one", first: "n,,n=user,r=" + nonce, final: "c=biws,r=XX" + full + ",p=AAAA", wantErr: "Invalid client nonce"},
		{name: "nonce only ends with ours", first: "n,,n=user,r=" + nonce, final: "c=biws,r=" + nonce + "x" + full[len(nonce):] + ",p=AAAA", wantErr: "Invalid client nonce"},
		{name: "wrong proof", first: "n,,n=user,r=" + nonce, final: "c=biws,r=" + full + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)), wantErr: "Invalid client credentials"},
		{name: "short proof", first: "n,,n=user,r=" + nonce, final: "c=biws,r=" + full + ",p=AAAA", wantErr: "Invalid client credentials"},
		{name: "final without proof", first: "n,,n=user,r=" + nonce, final: "c=biws,r=" + full, wantErr: "Invalid SCRAM client final message format"},
		{name: "proof with newline", first: "n,,n=user,r=" + nonce, final: "c=biws,r=" + full + ",p=AA\nAA", wantErr: "Invalid SCRAM client final message format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScramServer(SCRAMSHA256, lookup, nil)
			s.nonce = func() (string, error) { return "SERVER", nil }
			_, err := s.Step(time.Time{}, []byte(tc.first))
			if err == nil && tc.final != "" {
				final := tc.final
				if final == "proof" {
					final = clientFinalFor(t, s, "pencil")
				}
				_, err = s.Step(time.Time{}, []byte(final))
			}
			if tc.wantErr == "" {
				if err != nil || !s.Done() {
					t.Fatalf("got %v, done %v", err, s.Done())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrFailed) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			msg := ClientMessage(err, ScramSHA256, false)
			generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
			if tc.public != (msg != generic) {
				t.Fatalf("client message %q (public %v)", msg, tc.public)
			}
			if s.Done() {
				t.Fatal("done after a failure")
			}
		})
	}
}

// clientFinalFor computes a correct client-final for the server's current exchange.
func clientFinalFor(t *testing.T, s *ScramServer, password string) string {
	t.Helper()
	m := s.mech
	fields := strings.Split(s.serverFirst, ",")
	salt := mustB64(t, strings.TrimPrefix(fields[1], "s="))
	salted := m.SaltedPassword(password, salt, 4096)
	without := "c=biws,r=" + s.combinedNonce
	auth := s.clientFirstBare + "," + s.serverFirst + "," + without
	clientKey := m.hmac(salted, []byte("Client Key"))
	h := m.newHash()
	h.Write(clientKey)
	sig := m.hmac(h.Sum(nil), []byte(auth))
	for i := range sig {
		sig[i] ^= clientKey[i]
	}
	return without + ",p=" + base64.StdEncoding.EncodeToString(sig)
}

// TestScramWithFranzGo runs franz-go's SCRAM client against the server, both hashes,
// with the right and a wrong password, and a random server nonce.
func TestScramWithFranzGo(t *testing.T) {
	for _, m := range []*ScramMechanism{SCRAMSHA256, SCRAMSHA512} {
		salt := []byte("0123456789abcdef")
		cred := m.Credential(salt, m.SaltedPassword("s3cret", salt, 8192), 8192)
		lookup := func(u string) (ScramCredential, bool) { return cred, u == "alice" }
		for _, pass := range []string{"s3cret", "wrong"} {
			auth := scram.Auth{User: "alice", Pass: pass}
			mech := auth.AsSha256Mechanism()
			if m == SCRAMSHA512 {
				mech = auth.AsSha512Mechanism()
			}
			sess, msg, err := mech.Authenticate(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			s := NewScramServer(m, lookup, rand.Reader)
			var done bool
			for !done {
				challenge, err := s.Step(time.Now(), msg)
				if err != nil {
					if pass == "s3cret" {
						t.Fatalf("%s: %v", m.Name(), err)
					}
					break
				}
				done, msg, err = sess.Challenge(challenge)
				if err != nil {
					t.Fatalf("%s client: %v", m.Name(), err)
				}
			}
			if (pass == "s3cret") != s.Done() {
				t.Fatalf("%s password %q: done %v", m.Name(), pass, s.Done())
			}
		}
	}
}

func TestScramMechanismTypes(t *testing.T) {
	for _, m := range []*ScramMechanism{SCRAMSHA256, SCRAMSHA512} {
		if got, ok := ScramMechanismByType(m.Type()); !ok || got != m {
			t.Fatalf("by type %d", m.Type())
		}
		if got, ok := ScramMechanismByName(m.Name()); !ok || got != m {
			t.Fatalf("by name %s", m.Name())
		}
	}
	if SCRAMSHA256.Type() != 1 || SCRAMSHA512.Type() != 2 {
		t.Fatal("Kafka's mechanism type numbers changed")
	}
	if ScramSaslName("a=b,c") != "a=3Db=2Cc" || scramUsername("a=3Db=2Cc") != "a=b,c" {
		t.Fatal("saslname escapes")
	}
}

// TestScramTokenLogin: with tokenauth=true the user name is a delegation token id,
// the credential the token's, and the session's user the token's owner, bounded by
// its expiry; an unknown token id is refused with Kafka's message.
func TestScramTokenLogin(t *testing.T) {
	salt := []byte("salt")
	cred := SCRAMSHA256.Credential(salt, SCRAMSHA256.SaltedPassword("hmac-base64", salt, 4096), 4096)
	expiry := time.UnixMilli(1_700_000_000_000)
	tokens := func(id string) (ScramToken, bool) {
		return ScramToken{Credential: cred, Owner: "alice", Expiry: expiry}, id == "tok1"
	}
	users := func(string) (ScramCredential, bool) { return ScramCredential{}, false }
	const nonce = "rOprNGfwEbeRWgbNEkqO"

	s := NewScramServer(SCRAMSHA256, users, nil).WithTokens(tokens)
	s.nonce = func() (string, error) { return "SERVER", nil }
	if _, err := s.Step(time.Time{}, []byte("n,,n=tok1,r="+nonce+",tokenauth=true")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(time.Time{}, []byte(clientFinalFor(t, s, "hmac-base64"))); err != nil || !s.Done() {
		t.Fatalf("token login: %v", err)
	}
	if s.AuthorizationID() != "alice" || !s.TokenAuthenticated() || !s.CredentialExpiry().Equal(expiry) {
		t.Fatalf("user %q, token %v, expiry %v", s.AuthorizationID(), s.TokenAuthenticated(), s.CredentialExpiry())
	}

	s = NewScramServer(SCRAMSHA256, users, nil).WithTokens(tokens)
	s.nonce = func() (string, error) { return "SERVER", nil }
	if _, err := s.Step(time.Time{}, []byte("n,,n=tok2,r="+nonce+",tokenauth=true")); err == nil || !strings.Contains(err.Error(), "Token Authentication failed: Invalid tokenId : tok2") {
		t.Fatalf("unknown token: %v", err)
	}
	// Without tokenauth the token id is just an unknown user.
	s = NewScramServer(SCRAMSHA256, users, nil).WithTokens(tokens)
	s.nonce = func() (string, error) { return "SERVER", nil }
	if _, err := s.Step(time.Time{}, []byte("n,,n=tok1,r="+nonce)); err == nil || !strings.Contains(err.Error(), "Invalid user credentials") {
		t.Fatalf("token id without tokenauth: %v", err)
	}
}
