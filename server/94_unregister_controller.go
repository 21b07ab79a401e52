package server

// UnregisterController: v0 (KIP-1312), and ControllerRegistration: v0 (KIP-919, the
// controller listener only).
//
// kafka-cluster unregister-controller --id N, kafka-metadata-quorum remove-controller
// --unregister and Admin.unregisterController: carried out by the active controller
// (controller.UnregisterController: INVALID_REQUEST for its own id,
// CONTROLLER_ID_NOT_REGISTERED for an id without a registration, otherwise an
// UnregisterControllerRecord removes the registration), forwarded there by brokers as
// the client sent it (KafkaApis.forwardToController). Authorized as Kafka: ALTER on
// the cluster, else CLUSTER_AUTHORIZATION_FAILED (CLUSTER_ACTION also passes on the
// controller listener: a forwarding broker). The request type is
// protocol.UnregisterControllerRequest: kmsg has none yet.
//
// Every controller registers itself (controllerRegistrationLoop): whenever its
// controller's image has no registration at this process's incarnation and
// controller listener, it sends ControllerRegistration to the active controller
// (in-process when that is its own), as Kafka's ControllerRegistrationManager; so a
// controller unregistered while it runs registers again at once, as in Kafka.

import (
	"context"
	"crypto/rand"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/protocol"
)

func handleUnregisterController(c *conn, r *request) error {
	req := r.req.(*protocol.UnregisterControllerRequest)
	go func() {
		resp, err := c.b.ctl.forward(req)
		if err != nil {
			resp = unregisterControllerResponse(req, kerr.RequestTimedOut.Code, "")
		}
		r.resp.finish(resp)
	}()
	return nil
}

// unregisterController carries out req on ctl.
func unregisterController(ctl *controller.Controller, req *protocol.UnregisterControllerRequest) kmsg.Response {
	code, msg := ctl.UnregisterController(req.ControllerID)
	return unregisterControllerResponse(req, code, msg)
}

// unregisterControllerResponse answers req with code and msg (none when empty; an
// error code alone gets its Kafka message, as Kafka's getErrorResponse).
func unregisterControllerResponse(req *protocol.UnregisterControllerRequest, code int16, msg string) *protocol.UnregisterControllerResponse {
	resp := &protocol.UnregisterControllerResponse{Version: req.Version, ErrorCode: code}
	if msg == "" && code != 0 {
		if e := kerr.ErrorForCode(code); e != nil {
			if ke, ok := e.(*kerr.Error); ok {
				msg = ke.Description
			}
		}
	}
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// controllerRegistrationLoop keeps this node's controller registered (see the file
// comment) until b closes.
func (b *Broker) controllerRegistrationLoop() {
	defer b.wg.Done()
	ctl := b.localCtl
	var incarnation [16]byte
	_, _ = rand.Read(incarnation[:])
	want := controller.TopicID(incarnation).String()
	host, portStr, err := net.SplitHostPort(b.ControllerAddr())
	if err != nil {
		b.log.Error().Err(err).Msg("controller registration: no controller listener address")
		return
	}
	port, _ := strconv.Atoi(portStr)
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = ctl.ListenerName(), host, uint16(port)
	ep := controller.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: int32(port)}
	ch := newControllerChannel(ctl, b.cfg.voters(), b.out.controller, "gokafkad-controller-"+strconv.Itoa(int(ctl.NodeID()))+"-registration", b.closing, b.log)
	defer ch.close()
	changed := make(chan struct{}, 1)
	ctl.Subscribe(func(_, _ *controller.MetadataImage) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	failures := 0
	for {
		b.maybeUpdateRaftVoter(ch, l) // 82_update_raft_voter.go
		cur, ok := ctl.Image().Controllers[ctl.NodeID()]
		if ctl.Image().ClusterID != "" && (!ok || cur.IncarnationID != want || !slices.Equal(cur.Endpoints, []controller.BrokerEndpoint{ep})) {
			req := kmsg.NewPtrControllerRegistrationRequest()
			req.ControllerID, req.IncarnationID = ctl.NodeID(), incarnation
			req.Listeners = []kmsg.ControllerRegistrationRequestListener{l}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := ch.request(ctx, req)
			cancel()
			if err == nil && resp.(*kmsg.ControllerRegistrationResponse).ErrorCode == 0 {
				failures = 0
				b.log.Info().Str("incarnation_id", want).Msg("controller registration sent")
			} else if failures++; failures == 1 || failures%60 == 0 {
				b.log.Warn().Err(err).Int("failures", failures).Msg("controller registration failed; retrying")
			}
		}
		select {
		case <-b.closing:
			return
		case <-changed:
		case <-time.After(time.Second):
		}

	}
}
