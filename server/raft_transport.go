package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/gokafkad/gokafkad/controller"
	"github.com/gokafkad/gokafkad/replication"
)

// raftTransport carries Raft messages to the other voters over their controller
// listeners: one TCP connection per peer, written by one goroutine that drains a
// bounded queue. Each message is a frame with the private key raftMessageKey (see
// controller_apis.go); nothing is answered. When the queue is full or the peer
// cannot be reached, messages are dropped and Raft is told (ReportUnreachable,
// ReportSnapshot): it retries on its own schedule.
type raftTransport struct {
	self    int32
	peersMu sync.Mutex // Send and SetPeers (both on the Ready loop, but Open too)
	peers   map[uint64]*raftPeer
	log     zerolog.Logger
	// ctl is set once controller.Open returns; a new quorum's first campaign can send
	// (and fail to reach a peer) before that.
	ctl  atomic.Pointer[controller.Controller]
	quit chan struct{}
	dial replication.DialFunc // nil: plain TCP
	// bootstrap is controller.quorum.bootstrap.servers (a dynamic quorum), where an
	// observer looks up the voters it must answer (discoverPeers, dynamic_quorum.go).
	bootstrap     []string
	discovering   atomic.Bool
	lastDiscovery atomic.Int64 // monotime reading of the last round
}

type raftPeer struct {
	t    *raftTransport
	id   int32
	addr string
	// q holds pointers: a queue of 4096 messages by value would be 600 KB a peer,
	// zeroed at every start.
	q chan *raftpb.Message
	// gone is closed when the peer left the quorum (SetPeers).
	gone chan struct{}
}

func newRaftTransport(self int32, voters []controller.Voter, d replication.DialFunc, log zerolog.Logger) *raftTransport {
	t := &raftTransport{self: self, peers: map[uint64]*raftPeer{}, log: log, quit: make(chan struct{}), dial: d}
	for _, v := range voters {
		if v.ID == self {
			continue
		}
		t.addPeer(v)
	}
	return t
}

func (t *raftTransport) addPeer(v controller.Voter) {
	p := &raftPeer{t: t, id: v.ID, addr: v.Addr, q: make(chan *raftpb.Message, 4096), gone: make(chan struct{})}
	t.peers[uint64(v.ID)+1] = p
	go p.loop()
}

// SetPeers makes the peers those of a dynamic quorum's membership
// (controller.PeerSetter): new members get a connection, gone ones (or moved
// ones) lose theirs.
func (t *raftTransport) SetPeers(peers []controller.Voter) {
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	want := map[uint64]controller.Voter{}
	for _, v := range peers {
		want[uint64(v.ID)+1] = v
	}
	for id, p := range t.peers {
		if v, ok := want[id]; !ok || v.Addr != p.addr {
			close(p.gone)
			delete(t.peers, id)
		}
	}
	for id, v := range want {
		if _, ok := t.peers[id]; !ok && v.ID != t.self && v.Addr != "" {
			t.addPeer(v)
		}
	}
}

// Send queues msgs for their peers without blocking.
func (t *raftTransport) Send(msgs []raftpb.Message) {
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	for i := range msgs {
		p := t.peers[msgs[i].To]
		if p == nil {
			t.discoverPeers()
			continue
		}
		m := msgs[i]
		select {
		case p.q <- &m:
		default:
			t.report(p, m, false)
		}
	}
}

func (t *raftTransport) report(p *raftPeer, m raftpb.Message, ok bool) {
	ctl := t.ctl.Load()
	if ctl == nil {
		return
	}
	if m.Type == raftpb.MsgSnap {
		ctl.ReportSnapshot(p.id, ok)
	}
	if !ok {
		ctl.ReportUnreachable(p.id)
	}
}

func (t *raftTransport) close() { close(t.quit) }

func (p *raftPeer) loop() {
	var nc net.Conn
	var bw *bufio.Writer
	var buf []byte
	var corr int32
	clientID := fmt.Sprintf("raft-%d", p.t.self)
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	for {
		var m raftpb.Message
		select {
		case <-p.t.quit:
			return
		case <-p.gone:
			return
		case mp := <-p.q:
			m = *mp
		}
		if nc == nil {
			c, err := dial(context.Background(), p.t.dial, p.addr, 500*time.Millisecond)
			if err != nil {
				p.t.report(p, m, false)
				continue
			}
			// Messages larger than the buffer (appends of big entries, snapshots)
			// are written through it directly; it only gathers the small ones
			// (heartbeats, votes, acknowledgements) queued together. 16 KiB, not
			// 64: every voter allocates one per peer at each start.
			nc, bw = c, bufio.NewWriterSize(c, 16<<10)
		}
		body, err := m.Marshal()
		if err != nil {
			continue
		}
		corr++
		buf = appendRaftFrame(buf[:0], corr, clientID, body)
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err = bw.Write(buf)
		if err == nil && len(p.q) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			p.t.log.Debug().Err(err).Int32("peer", p.id).Msg("raft message not delivered")
			nc.Close()
			nc = nil
			p.t.report(p, m, false)
			continue
		}
		if m.Type == raftpb.MsgSnap {
			p.t.report(p, m, true)
		}
	}
}

// appendRaftFrame appends a frame: size, request header v1 (raftMessageKey, version
// 0, corr, client id), then the protobuf message.
func appendRaftFrame(dst []byte, corr int32, clientID string, body []byte) []byte {
	n := 2 + 2 + 4 + 2 + len(clientID) + len(body)
	dst = append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	dst = append(dst, byte(raftMessageKey>>8), byte(raftMessageKey&0xff), 0, 0)
	dst = append(dst, byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr))
	dst = append(dst, byte(len(clientID)>>8), byte(len(clientID)))
	dst = append(dst, clientID...)
	return append(dst, body...)
}
