package controller

import "time"

// Noticing a dead broker before its session ends (gokafkad's own rule; Kafka waits
// for broker.session.timeout.ms in every case).
//
// A broker heartbeats over a connection to the active controller's listener. When the
// broker's process dies, its kernel closes that connection (FIN, or RST when unread
// bytes remained), and the controller's read side sees end of stream or a reset at
// once. A broker that is alive but silent (SIGSTOP, a network cut, a long GC pause)
// keeps its connection open, so the close is the evidence that tells the two apart:
//
//   - the server layer tells the controller which connections carry which broker's
//     heartbeats (BrokerHeartbeatConnection, as each heartbeat is read, before it is
//     handled) and when one of them closes (BrokerConnectionClosed), and whether the
//     broker's side closed it;
//   - when the last open heartbeat connection of a broker was closed by the broker's
//     side while this node is the active controller, the broker has closeGrace to
//     heartbeat again, on any connection; if it does not, the active controller
//     fences it as it would at the session timeout (fenceRecords: leaderships move,
//     ISRs shrink), for the broker epoch that connection carried only;
//   - everything else keeps the session timeout: a close made by this node (idle
//     timeout, a refused SASL session, shutdown, a bad request), a close seen while
//     this node is not the active controller, a broker with another heartbeat
//     connection still open, a combined node's in-process heartbeats (no socket), and
//     a new active controller, which gives every broker a full session (resetAll)
//     whatever it saw before.
//
// A live broker closes its own heartbeat connection only when a request on it fails
// (a timeout, the end of its SASL session: sasl_client.go's expiringConn, an answer
// it cannot read), and then heartbeats again at once on a new connection (its
// channel dials the same controller again at once: server/controller_channel.go; a
// heartbeat that failed is sent again 100 ms later: server/broker_lifecycle.go),
// well within the grace. A broker that finished a
// controlled shutdown is already fenced; one that restarts registers anew, and its
// new epoch is not the one the closed connection carried.

// closeGrace is how long a broker whose heartbeat connections all closed from its
// side has to heartbeat again before it is fenced. See DESIGN.md ("Noticing a dead
// broker") for why 500 ms.
const closeGrace = 500 * time.Millisecond

// closedSession is a broker whose every heartbeat connection was closed by its side.
type closedSession struct {
	epoch int64     // the broker epoch the last connection carried
	at    time.Time // when it closed
}

// connLiveness is the connection side of the brokers' liveness: which open
// connections carry each broker's heartbeats, and which brokers lost them all. Not
// safe for concurrent use (brokerHeartbeats holds it under its lock); time is passed
// in.
type connLiveness struct {
	// open is broker → connection id → the broker epoch of the last heartbeat read on
	// it. Invariant: no broker maps to an empty set.
	open map[int32]map[uint64]int64
	// closed are the brokers waiting out closeGrace. Invariant: a broker is in closed
	// only if it is not in open.
	closed map[int32]closedSession
}

func (l *connLiveness) init() {
	l.open, l.closed = map[int32]map[uint64]int64{}, map[int32]closedSession{}
}

// heartbeat records a heartbeat of broker at epoch read on conn: the broker is alive,
// whatever closed before.
func (l *connLiveness) heartbeat(broker int32, epoch int64, conn uint64) {
	m := l.open[broker]
	if m == nil {
		m = map[uint64]int64{}
		l.open[broker] = m
	}
	m[conn] = epoch
	delete(l.closed, broker)
}

// connClosed records that conn, which carried broker's heartbeats at epoch, closed;
// byPeer when the broker's side closed it, active when this node is the active
// controller. It reports whether the broker now waits out closeGrace.
func (l *connLiveness) connClosed(broker int32, epoch int64, conn uint64, byPeer, active bool, now time.Time) bool {
	if m := l.open[broker]; m != nil {
		delete(m, conn)
		if len(m) > 0 {
			return false // another connection still carries its heartbeats
		}
		delete(l.open, broker)
	}
	if !byPeer || !active {
		return false
	}
	l.closed[broker] = closedSession{epoch: epoch, at: now}
	return true
}

// reset forgets the closes seen so far (a new term as active controller: every broker
// gets a full session). Open connections stay known: they are still open.
func (l *connLiveness) reset() { clear(l.closed) }

// fenceReason says why the active controller fences a broker.
type fenceReason int

const (
	fenceSessionExpired   fenceReason = iota + 1 // silent for broker.session.timeout.ms
	fenceConnectionClosed                        // its heartbeat connections closed, not back within closeGrace
)

func (r fenceReason) String() string {
	switch r {
	case fenceSessionExpired:
		return "session expired"
	case fenceConnectionClosed:
		return "its controller connection closed"
	}
	return "unknown"
}

// fenceDecision is a broker to fence now.
type fenceDecision struct {
	broker int32
	epoch  int64
	reason fenceReason
}

// fenceDue decides which brokers of img the active controller fences at now: each
// unfenced broker whose last contact (lastContact) is a session timeout old, and each
// unfenced broker whose heartbeat connections closed from its side grace ago or more
// and that is still registered with the epoch they carried. Closes that no longer
// matter (the broker is fenced, or registered again with another epoch) or that are
// decided are forgotten; closes still in their grace are kept. Brokers come in id
// order.
func (l *connLiveness) fenceDue(img *MetadataImage, lastContact func(int32) time.Time, now time.Time, session, grace time.Duration) []fenceDecision {
	var out []fenceDecision
	for _, b := range img.SortedBrokers() {
		if b.Fenced {
			continue
		}
		if now.Sub(lastContact(b.ID)) >= session {
			out = append(out, fenceDecision{broker: b.ID, epoch: b.Epoch, reason: fenceSessionExpired})
			continue
		}
		if cl, ok := l.closed[b.ID]; ok && cl.epoch == b.Epoch && now.Sub(cl.at) >= grace {
			out = append(out, fenceDecision{broker: b.ID, epoch: b.Epoch, reason: fenceConnectionClosed})
		}
	}
	for id, cl := range l.closed {
		b, ok := img.Brokers[id]
		if !ok || b.Fenced || b.Epoch != cl.epoch || now.Sub(cl.at) >= grace {
			delete(l.closed, id)
		}
	}
	return out
}
