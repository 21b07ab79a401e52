package server

// SaslAuthenticate: v0-2.
//
// Served by the connection's authentication on a SASL listener (sasl.go). What reaches
// this handler is a SaslAuthenticate outside an exchange (a non-SASL listener, or an
// authenticated connection that did not start a re-authentication), answered
// ILLEGAL_SASL_STATE as Kafka's KafkaApis.handleSaslAuthenticateRequest does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSaslAuthenticate(c *conn, r *request) error {
	req := r.req.(*kmsg.SASLAuthenticateRequest)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
	r.resp.finish(resp)
	return nil
}
