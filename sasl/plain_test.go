package sasl

import (
	"errors"
	"testing"
	"time"
)

func TestPlain(t *testing.T) {
	users := PlainUsers{"alice": "alice-secret", "bob": "bob"}
	for _, tc := range []struct {
		name, msg, want string // want: the client's error message, "" for success
	}{
		{"good", "\x00alice\x00alice-secret", ""},
		{"authzid equal", "alice\x00alice\x00alice-secret", ""},
		{"authzid other", "bob\x00alice\x00alice-secret", "Authentication failed: Client requested an authorization id that is different from username"},
		{"wrong password", "\x00alice\x00nope", "Authentication failed: Invalid username or password"},
		{"password prefix", "\x00alice\x00alice", "Authentication failed: Invalid username or password"},
		{"unknown user", "\x00carol\x00x", "Authentication failed: Invalid username or password"},
		{"no user", "\x00\x00x", "Authentication failed: username not specified"},
		{"no password", "\x00alice\x00", "Authentication failed: password not specified"},
		{"two tokens", "alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"},
		{"four tokens", "\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"many tokens", "\x00\x00\x00\x00\x00\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"empty", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewPlainServer(users)
			out, err := s.Step(time.Time{}, []byte(tc.msg))
			if tc.want == "" {
				if err != nil || !s.Done() || s.AuthorizationID() != "alice" || len(out) != 0 {
					t.Fatalf("got %q %v done %v user %q", out, err, s.Done(), s.AuthorizationID())
				}
				if _, err := s.Step(time.Time{}, []byte(tc.msg)); !errors.Is(err, ErrIllegalState) {
					t.Fatalf("second step: %v", err)
				}
				return
			}
			if err == nil || s.Done() {
				t.Fatal("accepted")
			}
			if got := ClientMessage(err, Plain, false); got != tc.want {
				t.Fatalf("client message %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlainUsersFromJAAS(t *testing.T) {
	e, err := ParseJAASConfig(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	u := PlainUsersFromJAAS(e)
	if len(u) != 2 || u["admin"] != "admin-secret" || u["alice"] != "alice-secret" {
		t.Fatalf("users %v", u)
	}
}
