package server

import (
	"errors"
	"io"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The server side of noticing a dead broker early (controller/liveness.go): a
// controller-listener connection remembers the broker whose heartbeats it carries,
// tells the controller as each one is read, and tells it when the connection closes,
// and whether the broker's side closed it.

// heartbeatOwner is the broker whose BrokerHeartbeats a controller-listener
// connection carried last (read goroutine only).
type heartbeatOwner struct {
	set    bool
	broker int32
	epoch  int64
}

// controllerHeartbeatHandler serves BrokerHeartbeat on the controller listener: the
// connection is noted as the broker's before the heartbeat is handled, on the read
// goroutine, so the controller learns of it before it can learn of the close.
func controllerHeartbeatHandler(c *conn, r *request) error {
	if req, ok := r.req.(*kmsg.BrokerHeartbeatRequest); ok && c.b.localCtl != nil {
		c.heartbeats = heartbeatOwner{set: true, broker: req.BrokerID, epoch: req.BrokerEpoch}
		c.b.localCtl.BrokerHeartbeatConnection(req.BrokerID, req.BrokerEpoch, c.id)
	}
	return controllerHandler(c, r)
}

// noteClosed tells the controller that this connection, if it carried a broker's
// heartbeats, closed with the read loop's err.
func (c *conn) noteClosed(err error) {
	if !c.heartbeats.set || c.b.localCtl == nil {
		return
	}
	h := c.heartbeats
	c.b.localCtl.BrokerConnectionClosed(h.broker, h.epoch, c.id, closedByPeer(err))
}

// closedByPeer reports whether a read loop's error means the other side closed the
// connection (end of stream, mid-frame or not, or a reset: what a process's exit
// leaves), not this node (net.ErrClosed, an idle or frame deadline, a bad request, a
// refused SASL session).
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
