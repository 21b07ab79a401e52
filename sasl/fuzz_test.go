package sasl

import (
	"bytes"
	"testing"
	"time"
)

// The fuzz targets feed arbitrary client tokens to every exchange and the JAAS parser:
// nothing may panic, and no exchange may complete without the right credentials.

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00secret"))
	f.Add([]byte("alice\x00alice\x00secret"))
	f.Add([]byte("\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := NewPlainServer(PlainUsers{"alice": "secret"})
		if _, err := s.Step(time.Time{}, msg); err == nil {
			if !s.Done() || s.AuthorizationID() != "alice" || !bytes.Contains(msg, []byte("\x00secret")) {
				t.Fatalf("accepted %q", msg)
			}
		}
	})
}

func FuzzScram(f *testing.F) {
	f.Add([]byte("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawLSERVER,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add([]byte("n,a=user,m=x,n=user,r=abc,ext=1"), []byte("c=biws,r=abcSERVER,e=1,p=AAAA"))
	f.Add([]byte("n,,n=user,r=abc,tokenauth=true"), []byte(""))
	f.Add([]byte("n,,n=token,r=abc,tokenauth=true"), []byte("c=biws,r=abcSERVER,p=AAAA"))
	salt := []byte("salt")
	cred := SCRAMSHA256.Credential(salt, SCRAMSHA256.SaltedPassword("pencil", salt, 4096), 4096)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewScramServer(SCRAMSHA256, func(u string) (ScramCredential, bool) { return cred, u == "user" }, nil).
			WithTokens(func(id string) (ScramToken, bool) { return ScramToken{Credential: cred, Owner: "owner"}, id == "token" })
		s.nonce = func() (string, error) { return "SERVER", nil }
		if _, err := s.Step(time.Time{}, first); err != nil {
			return
		}
		if _, err := s.Step(time.Time{}, final); err == nil {
			t.Fatalf("random proof accepted: %q %q", first, final)
		}
	})
}

func FuzzOAuth(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer "+unsecuredJWS(`{"sub":"alice","exp":1700000060}`)+"\x01\x01"), []byte("\x01"))
	f.Add([]byte("n,a=alice,\x01auth=Bearer "+unsecuredJWS(`{"sub":"alice","exp":1}`)+"\x01k=v\x01\x01"), []byte("\x01"))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		s := NewOAuthServer(OAuthOptions{RequiredScope: []string{"x"}})
		now := time.Unix(1_700_000_000, 0)
		if _, err := s.Step(now, first); err != nil || s.Done() {
			return
		}
		_, _ = s.Step(now, second)
	})
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`)
	f.Add("a.B required // c\n k='v\\101' /* x */;")
	f.Add(`a "b`)
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseJAAS(s)
		if err == nil && len(es) == 0 {
			t.Fatal("no entries and no error")
		}
	})
}
