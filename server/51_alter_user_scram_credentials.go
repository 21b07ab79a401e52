package server

// AlterUserScramCredentials: v0.
//
// Forwarded to the active controller as the client sent it (Kafka's brokers always
// forward it), which validates each user (controller.AlterUserScramCredentials:
// DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL for an empty name or iterations outside
// 4096..16384, UNSUPPORTED_SASL_MECHANISM, RESOURCE_NOT_FOUND for deleting what does
// not exist) and writes UserScramCredentialRecord / RemoveUserScramCredentialRecord.
// SCRAM logins read the result from the metadata image.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterUserScramCredentials(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	go func() { r.resp.finish(c.b.ctl.AlterUserScramCredentials(req)) }()
	return nil
}

// AlterUserScramCredentials forwards an AlterUserScramCredentials request to the
// active controller.
func (m *brokerMeta) AlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.AlterUserSCRAMCredentialsResponse)
	}
	return resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
}

// alterScramErrors answers every user of req with code.
func alterScramErrors(req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse, code int16) {
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode = user, code
		resp.Results = append(resp.Results, r)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
}
