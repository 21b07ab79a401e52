// Package sasl holds the server side of the SASL mechanisms gokafkad speaks, as Kafka's
// SaslServer implementations: PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC
// 5802, RFC 7677) and OAUTHBEARER (RFC 7628) with Kafka's unsecured-JWS validator; and
// a parser for the JAAS values of sasl.jaas.config.
//
// The package is pure: no sockets, no files, no clocks. A Server is one exchange; the
// connection feeds it the client's tokens with the time (Step) and sends back what it
// returns. Randomness (the SCRAM server nonce) comes from a reader the caller gives.
//
// Errors follow Kafka's split between SaslAuthenticationException, whose message the
// client is shown, and SaslException, whose message stays in the broker's log while the
// client reads the generic "Authentication failed during authentication due to invalid
// credentials with SASL mechanism X" (ClientMessage).
package sasl

import (
	"errors"
	"fmt"
	"time"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	// GSSAPI is Kafka's default mechanism (Kerberos); gokafkad does not serve it.
	GSSAPI = "GSSAPI"
)

// Supported reports whether gokafkad serves the mechanism named name.
func Supported(name string) bool {
	switch name {
	case Plain, ScramSHA256, ScramSHA512, OAuthBearer:
		return true
	}
	return false
}

// ErrFailed is what every authentication failure wraps (errors.Is).
var ErrFailed = errors.New("sasl: authentication failed")

// ErrIllegalState is a token given to an exchange that is already complete or failed
// (Kafka's IllegalSaslStateException).
var ErrIllegalState = errors.New("sasl: illegal state")

// Error is an authentication failure. Public failures carry a message meant for the
// client (Kafka's SaslAuthenticationException); the others' messages are for the
// broker's log only (Kafka's SaslException).
type Error struct {
	Msg    string
	Public bool
}

func (e *Error) Error() string { return "sasl: " + e.Msg }

// Is makes errors.Is(err, ErrFailed) hold.
func (e *Error) Is(target error) bool { return target == ErrFailed }

func public(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Public: true}
}

func private(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// ClientMessage is the error message Kafka sends the client for err, a failure of
// mechanism during authentication (or re-authentication, when reauth): a public
// failure's own message, otherwise the generic one that reveals nothing (not even
// whether the user exists).
func ClientMessage(err error, mechanism string, reauth bool) string {
	var e *Error
	if errors.As(err, &e) && e.Public {
		return e.Msg
	}
	phase := "authentication"
	if reauth {
		phase = "re-authentication"
	}
	return "Authentication failed during " + phase + " due to invalid credentials with SASL mechanism " + mechanism
}

// Server is the server side of one SASL exchange.
type Server interface {
	// Mechanism is the mechanism's name.
	Mechanism() string
	// Step consumes the client's next token, received at now, and returns the
	// challenge to send back (possibly empty). After an error the exchange is over.
	Step(now time.Time, response []byte) (challenge []byte, err error)
	// Done reports whether the exchange completed successfully.
	Done() bool
	// AuthorizationID is the authenticated user's name once Done (Kafka's
	// getAuthorizationID; the principal is User:<it>).
	AuthorizationID() string
	// CredentialExpiry is when the credential the client presented stops being
	// valid (an OAUTHBEARER token's exp), zero when it does not expire. Once Done.
	CredentialExpiry() time.Time
}
