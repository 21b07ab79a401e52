package server

// SaslHandshake: v0-1.
//
// On a SASL listener the handshake is served by the connection's authentication
// (sasl.go) before any handler runs, and again when a client re-authenticates. What
// reaches this handler is a handshake on a connection that is not authenticating — a
// PLAINTEXT or SSL listener, or a client that cannot re-authenticate — and is
// answered ILLEGAL_SASL_STATE, as Kafka's KafkaApis.handleSaslHandshakeRequest does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSaslHandshake(c *conn, r *request) error {
	req := r.req.(*kmsg.SASLHandshakeRequest)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	r.resp.finish(resp)
	return nil
}
