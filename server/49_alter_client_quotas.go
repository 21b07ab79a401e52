package server

// AlterClientQuotas: v0-1.
//
// Forwarded to the active controller as the client sent it (Kafka's brokers always
// forward it), which validates each entry (controller.AlterClientQuotas: Kafka's
// INVALID_REQUEST cases) and, unless validate_only, writes ClientQuotaRecords. Every
// broker enforces the result once the records reach its image (quotas.go).
// ALTER_CONFIGS on the cluster is checked before (authz.go), on the broker and, for
// a client that is not a broker, on the controller listener.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterClientQuotas(c *conn, r *request) error {
	req := r.req.(*kmsg.AlterClientQuotasRequest)
	go func() { r.resp.finish(c.b.ctl.AlterClientQuotas(req)) }()
	return nil
}

// AlterClientQuotas forwards an AlterClientQuotas request to the active controller.
func (m *brokerMeta) AlterClientQuotas(req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.AlterClientQuotasResponse)
	}
	return resp.(*kmsg.AlterClientQuotasResponse)
}

// alterClientQuotasErrors answers every entry of req with code.
func alterClientQuotasErrors(req *kmsg.AlterClientQuotasRequest, resp *kmsg.AlterClientQuotasResponse, code int16, msg *string) {
	for _, e := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		r.ErrorCode, r.ErrorMessage = code, msg
		for _, en := range e.Entity {
			o := kmsg.NewAlterClientQuotasResponseEntryEntity()
			o.Type, o.Name = en.Type, en.Name
			r.Entity = append(r.Entity, o)
		}
		resp.Entries = append(resp.Entries, r)
	}
}
