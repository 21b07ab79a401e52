package server

// UnregisterBroker: v0.
//
// kafka-cluster unregister --id N and Admin.unregisterBroker: carried out by the
// active controller (controller.UnregisterBroker: BROKER_ID_NOT_REGISTERED for an id
// without a registration, otherwise the broker leaves every ISR and leadership and an
// UnregisterBrokerRecord removes it from every node's metadata), forwarded there by
// brokers as the client sent it (KafkaApis.forwardToControllerOrFail). Authorized as
// Kafka's ControllerApis: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
// (brokerAuthz / controllerAuthz, before this handler).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleUnregisterBroker(c *conn, r *request) error {
	req := r.req.(*kmsg.UnregisterBrokerRequest)
	go func() { r.resp.finish(c.b.ctl.UnregisterBroker(req)) }()
	return nil
}

// UnregisterBroker forwards an UnregisterBroker request to the active controller.
func (m *brokerMeta) UnregisterBroker(req *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse {
	resp, err := m.forward(req)
	if err != nil {
		return notControllerResponse(req, kerr.RequestTimedOut.Code).(*kmsg.UnregisterBrokerResponse)
	}
	return resp.(*kmsg.UnregisterBrokerResponse)
}
