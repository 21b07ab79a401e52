package sasl

import (
	"crypto/subtle"
	"strings"
	"time"
)

// PlainUsers is the PLAIN password store: the user_<name>="<password>" options of the
// listener's PlainLoginModule JAAS entry, keyed by name.
type PlainUsers map[string]string

// PlainUsersFromJAAS takes the user_<name> options of a JAAS entry, as Kafka's
// PlainServerCallbackHandler reads them.
func PlainUsersFromJAAS(e JAASEntry) PlainUsers {
	u := PlainUsers{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			u[name] = v
		}
	}
	return u
}

// check compares password with the stored one in constant time (for the password;
// whether the user exists is not hidden, as in Kafka).
func (u PlainUsers) check(user, password string) bool {
	want, ok := u[user]
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

// PlainServer is SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: one message
// authzid NUL authcid NUL passwd; the authzid must be empty or equal the authcid.
type PlainServer struct {
	users PlainUsers
	state exchangeState
	user  string
}

// NewPlainServer starts a PLAIN exchange against users.
func NewPlainServer(users PlainUsers) *PlainServer { return &PlainServer{users: users} }

// exchangeState is where an exchange is.
type exchangeState int8

const (
	stateStart exchangeState = iota
	stateFinal               // SCRAM: waiting for the client-final message; OAUTHBEARER: for the error ack
	stateDone
	stateFailed
)

// Mechanism implements Server.
func (s *PlainServer) Mechanism() string { return Plain }

// Done implements Server.
func (s *PlainServer) Done() bool { return s.state == stateDone }

// AuthorizationID implements Server.
func (s *PlainServer) AuthorizationID() string { return s.user }

// CredentialExpiry implements Server: passwords do not expire.
func (s *PlainServer) CredentialExpiry() time.Time { return time.Time{} }

// Step implements Server.
func (s *PlainServer) Step(_ time.Time, response []byte) ([]byte, error) {
	if s.state != stateStart {
		s.state = stateFailed
		return nil, ErrIllegalState
	}
	s.state = stateFailed
	authzid, user, password, err := parsePlain(string(response))
	if err != nil {
		return nil, err
	}
	switch {
	case user == "":
		return nil, public("Authentication failed: username not specified")
	case password == "":
		return nil, public("Authentication failed: password not specified")
	case !s.users.check(user, password):
		return nil, public("Authentication failed: Invalid username or password")
	case authzid != "" && authzid != user:
		return nil, public("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.user = user
	s.state = stateDone
	return []byte{}, nil
}

// parsePlain splits a PLAIN message into its three NUL-separated tokens. As Kafka's
// extractTokens it looks at most four tokens deep, and anything but three is an error.
func parsePlain(msg string) (authzid, user, password string, err error) {
	n := min(strings.Count(msg, "\x00")+1, 4)
	if n != 3 {
		return "", "", "", public("Invalid SASL/PLAIN response: expected 3 tokens, got %d", n)
	}
	parts := strings.SplitN(msg, "\x00", 3)
	return parts[0], parts[1], parts[2], nil
}
