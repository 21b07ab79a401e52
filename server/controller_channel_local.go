package server

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleLocal carries out req on this node's own active controller (a combined
// node). A BrokerHeartbeat renews the broker's session as it is sent
// (controller.HeartbeatArrived) and is waited for only until ctx ends, as one sent
// over a connection would be: the controller's lock may be held for long (a commit
// moving 20,000 leaderships on a busy machine took longer than
// broker.session.timeout.ms), and a heartbeat loop blocked in that call sent no
// further heartbeat, so the fence loop fenced the node's own broker while it was
// heartbeating (issue 15). The abandoned call still completes in the background;
// its answer is dropped and the next heartbeat gets the broker's state.
func (ch *controllerChannel) handleLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	hb, ok := req.(*kmsg.BrokerHeartbeatRequest)
	if !ok {
		return handleControllerRequest(ch.local, req), nil
	}
	ch.local.HeartbeatArrived(hb.BrokerID, hb.BrokerEpoch)
	done := make(chan kmsg.Response, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil { // a bug: keep the node up, as the caller's guard did
				ch.log.Error().Interface("panic", r).Msg("in-process broker heartbeat panicked")
				done <- nil
			}
		}()
		done <- handleControllerRequest(ch.local, req)
	}()
	select {
	case resp := <-done:
		if resp == nil {
			return nil, errHeartbeatPanicked
		}
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errHeartbeatPanicked = errors.New("server: in-process broker heartbeat panicked")
