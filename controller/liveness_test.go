package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// livenessStep is one event of a liveness script: at ms after the start, a heartbeat
// read on a connection, a connection closed (by the broker's side or this node's),
// a reset (a new term as active controller), a re-registration or a fence applied to
// the image, or a tick of the fence loop, which must decide want.
type livenessStep struct {
	at        int // ms
	op        string
	broker    int32
	epoch     int64
	conn      uint64
	byPeer    bool
	notActive bool
	want      []string // "broker:reason" for a tick
}

func TestConnLivenessFenceDecisions(t *testing.T) {
	const session, grace = 9 * time.Second, 500 * time.Millisecond
	// Brokers 1, 2 and 3 are registered and unfenced with epochs 10, 20 and 30 and
	// heartbeat every 2 s (their last contact is the latest "hb" step, or the start).
	hb := func(at int, broker int32, epoch int64, conn uint64) livenessStep {
		return livenessStep{at: at, op: "hb", broker: broker, epoch: epoch, conn: conn}
	}
	peerClose := func(at int, broker int32, epoch int64, conn uint64) livenessStep {
		return livenessStep{at: at, op: "close", broker: broker, epoch: epoch, conn: conn, byPeer: true}
	}
	tick := func(at int, want ...string) livenessStep { return livenessStep{at: at, op: "tick", want: want} }
	cases := []struct {
		name  string
		steps []livenessStep
	}{
		{"killed broker: fenced once the grace has passed, not before", []livenessStep{
			hb(0, 1, 10, 1), peerClose(100, 1, 10, 1),
			tick(599), tick(600, "1:its controller connection closed"),
		}},
		{"closed by this node (idle timeout, SASL refusal, shutdown): session timeout only", []livenessStep{
			hb(0, 1, 10, 1), {at: 100, op: "close", broker: 1, epoch: 10, conn: 1},
			tick(1000), tick(8999), tick(9000, "1:session expired", "2:session expired", "3:session expired"),
		}},
		{"reconnect within the grace: the heartbeat on the new connection keeps it", []livenessStep{
			hb(0, 1, 10, 1), peerClose(100, 1, 10, 1), hb(150, 1, 10, 2),
			tick(600), tick(5000),
		}},
		{"new connection read before the old one's close: nothing pending", []livenessStep{
			hb(0, 1, 10, 1), hb(100, 1, 10, 2), peerClose(110, 1, 10, 1),
			tick(700),
		}},
		{"then the new connection closes too: fenced after its grace", []livenessStep{
			hb(0, 1, 10, 1), hb(100, 1, 10, 2), peerClose(110, 1, 10, 1), peerClose(200, 1, 10, 2),
			tick(699), tick(700, "1:its controller connection closed"),
		}},
		{"a close seen while not the active controller is ignored", []livenessStep{
			hb(0, 1, 10, 1), {at: 100, op: "close", broker: 1, epoch: 10, conn: 1, byPeer: true, notActive: true},
			tick(1000), tick(8999), tick(9000, "1:session expired", "2:session expired", "3:session expired"),
		}},
		{"a new term as active controller forgets earlier closes", []livenessStep{
			hb(0, 1, 10, 1), peerClose(100, 1, 10, 1), {at: 200, op: "reset"},
			tick(1000),
		}},
		{"quick restart: the new registration's epoch is not the closed one", []livenessStep{
			hb(0, 1, 10, 1), peerClose(100, 1, 10, 1), {at: 300, op: "register", broker: 1, epoch: 11},
			tick(700), tick(1000),
		}},
		{"controlled shutdown: already fenced when its connection closes", []livenessStep{
			hb(0, 1, 10, 1), {at: 50, op: "fence", broker: 1}, peerClose(100, 1, 10, 1),
			tick(700),
		}},
		{"a closed connection of an older epoch does not fence the current one", []livenessStep{
			hb(0, 1, 9, 1), peerClose(100, 1, 9, 1),
			tick(700),
		}},
		{"the decision is made once", []livenessStep{
			hb(0, 1, 10, 1), peerClose(100, 1, 10, 1),
			tick(600, "1:its controller connection closed"), {at: 600, op: "unfence", broker: 1}, tick(700),
		}},
		{"brokers are decided independently, in id order", []livenessStep{
			hb(0, 1, 10, 1), hb(0, 2, 20, 2), hb(0, 3, 30, 3),
			peerClose(100, 3, 30, 3), peerClose(200, 2, 20, 2),
			tick(600, "3:its controller connection closed"),
			{at: 600, op: "fence", broker: 3},
			tick(650), tick(700, "2:its controller connection closed"),
		}},
		{"SIGSTOP: no close, fenced at the session timeout only", []livenessStep{
			hb(0, 1, 10, 1), hb(0, 2, 20, 2), hb(0, 3, 30, 3),
			hb(2000, 2, 20, 2), hb(2000, 3, 30, 3), hb(4000, 2, 20, 2), hb(4000, 3, 30, 3),
			hb(6000, 2, 20, 2), hb(6000, 3, 30, 3), hb(8000, 2, 20, 2), hb(8000, 3, 30, 3),
			tick(8999), tick(9000, "1:session expired"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_000_000, 0)
			img := emptyImage()
			for id, e := range map[int32]int64{1: 10, 2: 20, 3: 30} {
				img.Brokers[id] = BrokerImage{ID: id, Epoch: e}
			}
			last := map[int32]time.Time{}
			var l connLiveness
			l.init()
			for _, s := range tc.steps {
				now := start.Add(time.Duration(s.at) * time.Millisecond)
				switch s.op {
				case "hb":
					l.heartbeat(s.broker, s.epoch, s.conn)
					last[s.broker] = now
				case "close":
					l.connClosed(s.broker, s.epoch, s.conn, s.byPeer, !s.notActive, now)
				case "reset":
					l.reset()
				case "register":
					b := img.Brokers[s.broker]
					b.Epoch, b.Fenced = s.epoch, true
					img.Brokers[s.broker] = b
				case "fence", "unfence":
					b := img.Brokers[s.broker]
					b.Fenced = s.op == "fence"
					img.Brokers[s.broker] = b
				case "tick":
					contact := func(id int32) time.Time {
						if t, ok := last[id]; ok {
							return t
						}
						return start
					}
					var got []string
					for _, d := range l.fenceDue(img, contact, now, session, grace) {
						if d.epoch != img.Brokers[d.broker].Epoch {
							t.Errorf("at %dms: broker %d decided at epoch %d, registered with %d", s.at, d.broker, d.epoch, img.Brokers[d.broker].Epoch)
						}
						got = append(got, fmt.Sprintf("%d:%s", d.broker, d.reason))
					}
					if !slices.Equal(got, s.want) {
						t.Errorf("at %dms: fence %q, want %q", s.at, got, s.want)
					}
				}
			}
		})
	}
}

// TestBrokerConnectionClosedFencesThroughTheFenceLoop: on a real controller (fake
// clock, hour-long session), a broker whose heartbeat connection closed from its side
// loses its leaderships once the grace has passed on the clock, as at a session
// timeout; one whose connection this node closed keeps them.
func TestBrokerConnectionClosedFencesThroughTheFenceLoop(t *testing.T) {
	c, clk, epochs := lifecycleController(t, 3)
	topic := createAssigned(t, c, "t", 1, 2, 3)
	c.BrokerHeartbeatConnection(1, epochs[1], 7)
	c.BrokerHeartbeatConnection(2, epochs[2], 8)
	c.BrokerConnectionClosed(2, epochs[2], 8, false) // closed by this node
	c.BrokerConnectionClosed(1, epochs[1], 7, true)

	clk.add(closeGrace - time.Millisecond)
	c.fenceExpired()
	if b := c.Image().Brokers[1]; b.Fenced {
		t.Fatal("broker 1 fenced before the grace ended")
	}
	clk.add(time.Millisecond)
	c.fenceExpired()
	img := c.Image()
	if !img.Brokers[1].Fenced || img.Brokers[2].Fenced {
		t.Fatalf("after the grace: broker 1 fenced %v (want true), broker 2 fenced %v (want false)",
			img.Brokers[1].Fenced, img.Brokers[2].Fenced)
	}
	p := img.Topics["t"].Partitions[0]
	if p.Leader != 2 || slices.Contains(p.ISR, 1) || p.LeaderEpoch <= topic.Partitions[0].LeaderEpoch {
		t.Fatalf("partition after fencing broker 1: leader %d epoch %d isr %v", p.Leader, p.LeaderEpoch, p.ISR)
	}
}
