package kafkatest

// The fault layer under every connection of the cluster. Each node dials and accepts
// through the server's Hooks (Dial, Accept), which put a faultConn around the TCP
// connection. A faultConn never lets bytes through that the link holds: what its node
// writes is queued and sent by a pump goroutine when the link allows (or, when nothing
// is queued and the link lets it through now, written to the socket at once without
// waiting for it, the rest queued), and what arrives is read by the node's own Read
// and handed over when the link allows (held in the connection until then) — so a cut
// or a pause holds bytes as a dropped-and-retransmitted packet would (no RST, no
// close: the other end sees its reads time out), and a delay holds them that long.
// Without a fault, then, bytes go from the writer to the socket and from the socket
// to the reader with no goroutine between them: a cluster's start is mostly such
// small round trips (Raft, registrations, fetches), each of which used to wake two
// pump goroutines.
//
// Which link a connection is on: a connection a node dials knows both ends (the
// dialing node, and the node listening on the address dialed), so links between nodes
// are applied there, both ways. A connection a node accepts is a client's unless its
// remote address is one a node's dial made (looked up when its first byte arrives, by
// which time the dial registered it); on a node's, the accepting side applies cuts and
// pauses too (so that neither its writes' errors nor its peer's close cross a cut) but
// not delays, which the dialing side adds once. Clients are one party, Clients.
//
// A paused node's own reads, writes and dials wait, ignoring their deadlines (its
// goroutines are stopped: its timers do not fire), and nothing it sent is delivered;
// its clock (Config.Now) stands still. Everyone else's deadlines run.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Clients is the party of every connection that is not one between the cluster's
// nodes (franz-go clients, admin tools, anything a test dials), in the network
// controls: Cut(kafkatest.Clients, 1) cuts broker 1 off from every client.
const Clients int32 = -1

// outside is the peer of a connection to an address that is no node of the cluster.
const outside int32 = -2

// link is the direction from→to.
type link struct{ from, to int32 }

// queueLimit is how many bytes a faultConn holds for sending before the writer blocks
// (a socket buffer; what arrives waits in the socket until read).
const queueLimit = 4 << 20

// faultNet is the state of the cluster's network: which nodes are paused, which links
// are cut or delayed, and every connection made through it.
type faultNet struct {
	mu sync.RWMutex
	// changed is closed (and replaced) at every change of the state below, waking
	// whoever waits for a link.
	changed chan struct{}
	paused  map[int32]time.Time // node → when it was paused
	cut     map[link]bool
	delay   map[link]time.Duration
	// addrs are the nodes' listening addresses ("127.0.0.1:port") → node id.
	addrs map[string]int32
	// dialed are the local addresses of connections nodes dialed → the dialer.
	dialed map[string]int32
	conns  map[*faultConn]struct{}
}

func newFaultNet() *faultNet {
	return &faultNet{changed: make(chan struct{}), paused: map[int32]time.Time{}, cut: map[link]bool{},
		delay: map[link]time.Duration{}, addrs: map[string]int32{}, dialed: map[string]int32{}, conns: map[*faultConn]struct{}{}}
}

// changedLocked wakes every waiter. Lock must be held.
func (f *faultNet) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// update runs fn under the lock and wakes every waiter.
func (f *faultNet) update(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
	f.changedLocked()
}

// register runs fn under the lock without waking anyone: for the address registries
// (addrs, dialed), which nobody waits on — a connection looks its peer up when it
// moves bytes. (Waking every waiting connection of the cluster at each dial made a
// start's dozens of dials cost a wake-up of every connection each.)
func (f *faultNet) register(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// addAddr records that node id listens on addr.
func (f *faultNet) addAddr(addr string, id int32) {
	if addr == "" {
		return
	}
	f.register(func() { f.addrs[addr] = id })
}

// now is node id's clock: time.Now, standing still while the node is paused.
func (f *faultNet) now(id int32) time.Time {
	f.mu.RLock()
	at, paused := f.paused[id]
	f.mu.RUnlock()
	if paused {
		return at
	}
	return time.Now()
}

// reachable reports whether clients can reach node id: it is not paused and the
// link from the clients to it is not cut.
func (f *faultNet) reachable(id int32) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, paused := f.paused[id]
	return !paused && !f.cut[link{Clients, id}]
}

// holds reports whether bytes from→to are held now (a cut, or either end paused),
// and otherwise how long after it was sent a byte is due; changed is closed at the
// next change of that.
func (f *faultNet) holds(from, to int32) (held bool, delay time.Duration, changed chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	changed = f.changed
	if _, ok := f.paused[from]; ok {
		return true, 0, changed
	}
	if _, ok := f.paused[to]; ok {
		return true, 0, changed
	}
	if f.cut[link{from, to}] {
		return true, 0, changed
	}
	return false, f.delay[link{from, to}], changed
}

// dialer is node id's Hooks.Dial.
func (f *faultNet) dialer(id int32) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		// A paused node does not dial; a cut link (either way: the SYN or its answer
		// is lost) makes the dial hang until its timeout; a delay costs a round trip.
		for {
			f.mu.RLock()
			ch := f.changed
			_, paused := f.paused[id]
			to, ok := f.addrs[addr]
			if !ok {
				to = outside
			}
			blocked := paused || f.cut[link{id, to}] || f.cut[link{to, id}]
			rtt := f.delay[link{id, to}] + f.delay[link{to, id}]
			f.mu.RUnlock()
			if !blocked {
				if rtt > 0 {
					t := time.NewTimer(rtt)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
						return nil, dialTimeoutErr(addr, ctx.Err())
					}
				}
				break
			}
			if paused {
				<-ch
				continue
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, dialTimeoutErr(addr, ctx.Err())
			}
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		local := nc.LocalAddr().String()
		f.register(func() { f.dialed[local] = id })
		return newFaultConn(f, nc, id, local, func() (int32, bool) {
			if to, ok := f.addrs[addr]; ok {
				return to, true
			}
			return outside, true
		}), nil
	}
}

func dialTimeoutErr(addr string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		err = os.ErrDeadlineExceeded
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(addr), Err: err}
}

type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// acceptor is node id's Hooks.Accept.
func (f *faultNet) acceptor(id int32) func(string, net.Conn) net.Conn {
	return func(_ string, nc net.Conn) net.Conn {
		remote := nc.RemoteAddr().String()
		return newFaultConn(f, nc, id, "", func() (int32, bool) {
			if from, ok := f.dialed[remote]; ok {
				return from, false // a node's: its dialing side adds the delays
			}
			return Clients, true
		})
	}
}

// closeNode closes every connection of node id at once, as its process ending would
// (used when a paused node is killed: its goroutines are stuck waiting).
func (f *faultNet) closeNode(id int32) {
	f.mu.RLock()
	var cs []*faultConn
	for c := range f.conns {
		if c.local == id {
			cs = append(cs, c)
		}
	}
	f.mu.RUnlock()
	for _, c := range cs {
		c.kill()
	}
}

// closeAll closes every connection still open (the cluster's teardown).
func (f *faultNet) closeAll() {
	f.mu.RLock()
	cs := make([]*faultConn, 0, len(f.conns))
	for c := range f.conns {
		cs = append(cs, c)
	}
	f.mu.RUnlock()
	for _, c := range cs {
		c.kill()
	}
}

// chunk is bytes in flight (or, with err set, the end of the stream).
type chunk struct {
	b   []byte
	err error
	at  time.Time
}

// faultConn is one TCP connection of a node, through the fault layer (see the top of
// this file).
type faultConn struct {
	inner net.Conn
	// raw is inner's file descriptor, for writes that must not block (nil: every
	// write goes through out and the pump).
	raw syscall.RawConn
	f   *faultNet
	// local is the node whose connection this is.
	local int32
	// dialedAs is the local address a node's dial registered ("" when accepted).
	dialedAs string
	// peerFn resolves the other end (a node, Clients, or outside) and whether this
	// side adds the link's delays, under f.mu's read lock; see peerLocked.
	peerFn func() (int32, bool)

	mu sync.Mutex
	// wake is closed when anything below changes; made by the first waiter after
	// the last close (nil: nobody waits), so a change nobody waits for costs nothing.
	wake      chan struct{}
	peer      int32
	delayHere bool
	resolved  bool
	in, out   []chunk
	// inLen and outLen are the bytes in in and out.
	inLen, outLen int
	rdl, wdl      time.Time
	// reading is set while a Read waits on the socket itself (see Read).
	reading bool
	// writing is set while a Write sends its bytes to the socket itself (out was
	// empty and the link let them through at once); the pump waits meanwhile, so
	// the bytes stay in order.
	writing bool
	closed  bool // Close was called: reads and writes fail; out still drains
	dead    bool // the socket is closed: nothing more moves
	outErr  error
}

func newFaultConn(f *faultNet, nc net.Conn, local int32, dialedAs string, peerFn func() (int32, bool)) *faultConn {
	c := &faultConn{inner: nc, f: f, local: local, dialedAs: dialedAs, peerFn: peerFn, peer: outside}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	f.mu.Lock()
	f.conns[c] = struct{}{}
	f.mu.Unlock()
	go c.writePump()
	return c
}

// signalLocked wakes whoever waits on this connection. c.mu must be held.
func (c *faultConn) signalLocked() {
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// peerLocked is the other end: for a dialed connection the node listening on the
// address (looked up until known), for an accepted one Clients or the node that
// dialed it — decided once, when the first byte has arrived. c.mu must be held.
func (c *faultConn) peerLocked() int32 {
	if !c.resolved {
		c.f.mu.RLock()
		c.peer, c.delayHere = c.peerFn()
		c.f.mu.RUnlock()
		c.resolved = c.dialedAs == "" || c.peer != outside
	}
	return c.peer
}

// dueLocked reports whether bytes sent at at from→to may be delivered now; if not,
// until (zero: none) is when to look again, besides at the next change of the
// network, which netChanged announces. c.mu must be held.
func (c *faultConn) dueLocked(from, to int32, at time.Time) (ok bool, until time.Time, netChanged chan struct{}) {
	held, delay, changed := c.f.holds(from, to)
	if held {
		return false, time.Time{}, changed
	}
	if !c.delayHere {
		delay = 0
	}
	if due := at.Add(delay); delay > 0 && time.Now().Before(due) {
		return false, due, changed
	}
	return true, time.Time{}, changed
}

// waitLocked blocks until this connection or the network (netChanged) changes, or
// until (when not zero). Called with c.mu held; returns with it held.
func (c *faultConn) waitLocked(until time.Time, netChanged chan struct{}) {
	if c.wake == nil {
		c.wake = make(chan struct{})
	}
	wake := c.wake
	c.mu.Unlock()
	defer c.mu.Lock()
	var timer <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-wake:
	case <-netChanged:
	case <-timer:
	}
}

// paused reports whether this connection's own node is paused, and the channel the
// next change of the network closes.
func (c *faultConn) paused() (bool, chan struct{}) {
	c.f.mu.RLock()
	defer c.f.mu.RUnlock()
	_, ok := c.f.paused[c.local]
	return ok, c.f.changed
}

// writePump sends out's bytes to the socket as the link allows; after Close, once out
// is empty, it closes the socket.
func (c *faultConn) writePump() {
	defer c.kill()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.dead {
		if c.writing {
			c.waitLocked(time.Time{}, nil)
			continue
		}
		if len(c.out) == 0 {
			if c.closed {
				return
			}
			c.waitLocked(time.Time{}, nil)
			continue
		}
		ok, until, changed := c.dueLocked(c.local, c.peerLocked(), c.out[0].at)
		if !ok {
			c.waitLocked(until, changed)
			continue
		}
		ch := c.out[0]
		c.mu.Unlock()
		_, err := c.inner.Write(ch.b)
		c.mu.Lock()
		c.out = c.out[1:]
		c.outLen -= len(ch.b)
		c.signalLocked()
		if err != nil {
			c.outErr = err
			return
		}
	}
}

// kill closes the socket now, dropping what is queued.
func (c *faultConn) kill() {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead, c.closed = true, true
	c.signalLocked()
	c.mu.Unlock()
	c.f.mu.Lock()
	delete(c.f.conns, c)
	if c.dialedAs != "" && c.f.dialed[c.dialedAs] == c.local {
		delete(c.f.dialed, c.dialedAs)
	}
	c.f.mu.Unlock()
	c.inner.Close()
}

func (c *faultConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.inner.LocalAddr(), Addr: c.inner.RemoteAddr(), Err: err}
}

// Read hands over what arrived once the link lets it through. With nothing held, the
// caller reads the socket itself (one reader at a time) and looks at the link when
// bytes (or the socket's end) arrive: they are handed over at once when it lets them
// through, else held in in until it does — so a cut, a pause or a delay holds what
// arrived after it as before, without a goroutine copying every connection's bytes
// (what has not been read waits in the socket's buffer, as a stopped process's does).
func (c *faultConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.closed {
			return 0, c.opErr("read", net.ErrClosed)
		}
		var until time.Time
		paused, changed := c.paused()
		if !paused && len(c.in) > 0 {
			var ok bool
			if ok, until, changed = c.dueLocked(c.peerLocked(), c.local, c.in[0].at); ok {
				ch := &c.in[0]
				if ch.err != nil {
					return 0, ch.err
				}
				n := copy(p, ch.b)
				ch.b = ch.b[n:]
				c.inLen -= n
				if len(ch.b) == 0 {
					c.in = c.in[1:]
				}
				return n, nil
			}
		}
		if !paused && len(c.in) == 0 && !c.reading && !c.dead {
			if n, err, done := c.readNowLocked(p); done {
				return n, err
			}
			continue
		}
		if !paused && !c.rdl.IsZero() {
			if !time.Now().Before(c.rdl) {
				return 0, c.opErr("read", os.ErrDeadlineExceeded)
			}
			if until.IsZero() || c.rdl.Before(until) {
				until = c.rdl
			}
		}
		c.waitLocked(until, changed)
	}
}

// readNowLocked reads the socket once, with the read deadline, and hands over what
// arrived if the link lets it through now (done); otherwise it is held in in (not
// done: Read looks again). A deadline that passes while the node is paused, or after
// the deadline was moved, is not the caller's timeout (not done). c.mu must be held;
// it is released while reading.
func (c *faultConn) readNowLocked(p []byte) (int, error, bool) {
	c.reading = true
	dl := c.rdl
	// Set under c.mu: the deadline setters and Close move it while c.reading.
	c.inner.SetReadDeadline(dl)
	c.mu.Unlock()
	n, err := c.inner.Read(p)
	at := time.Now()
	c.mu.Lock()
	c.reading = false
	c.signalLocked() // a second reader may go on
	if c.closed {
		return 0, c.opErr("read", net.ErrClosed), true
	}
	paused, _ := c.paused()
	if n == 0 && err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if paused || !c.rdl.Equal(dl) {
			return 0, nil, false
		}
		return 0, c.opErr("read", os.ErrDeadlineExceeded), true
	}
	if n == 0 && err == nil {
		return 0, nil, false
	}
	ok := false
	if !paused {
		ok, _, _ = c.dueLocked(c.peerLocked(), c.local, at)
	}
	if ok {
		if n > 0 {
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				c.in = append(c.in, chunk{err: err, at: at}) // the end, for the next Read
			}
			return n, nil, true
		}
		return 0, err, true
	}
	if n > 0 {
		c.in = append(c.in, chunk{b: slices.Clone(p[:n]), at: at})
		c.inLen += n
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.in = append(c.in, chunk{err: err, at: at})
	}
	return 0, nil, false
}

// Write queues p (blocking while the queue is full, or while the node is paused).
func (c *faultConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case c.closed:
			return 0, c.opErr("write", net.ErrClosed)
		case c.outErr != nil:
			return 0, c.outErr
		}
		paused, changed := c.paused()
		if !paused && c.outLen == 0 && !c.writing && c.raw != nil {
			if ok, _, _ := c.dueLocked(c.local, c.peerLocked(), time.Now()); ok {
				return c.writeNowLocked(p)
			}
		}
		if !paused && (c.outLen == 0 || c.outLen+len(p) <= queueLimit) {
			c.out = append(c.out, chunk{b: slices.Clone(p), at: time.Now()})
			c.outLen += len(p)
			c.signalLocked()
			return len(p), nil
		}
		var until time.Time
		if !paused && !c.wdl.IsZero() {
			if !time.Now().Before(c.wdl) {
				return 0, c.opErr("write", os.ErrDeadlineExceeded)
			}
			until = c.wdl
		}
		c.waitLocked(until, changed)
	}
}

// writeNowLocked is Write when nothing is queued and the link lets bytes through now:
// p goes to the socket from the caller's goroutine, without waiting (what the
// socket's buffer does not take is queued for the pump, as any write), which spares
// the pump's wake-up and a copy — most writes of a cluster without faults. c.mu must
// be held; it is released during the write.
func (c *faultConn) writeNowLocked(p []byte) (int, error) {
	c.writing = true
	c.mu.Unlock()
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), p)
			if werr != syscall.EINTR {
				return true // done, whatever was written: never wait for the socket here
			}
		}
	})
	n = max(n, 0)
	if werr == syscall.EAGAIN {
		werr = nil
	}
	if err == nil && werr != nil {
		err = c.opErr("write", werr)
	}
	c.mu.Lock()
	c.writing = false
	if err != nil {
		c.outErr = err
		c.signalLocked()
		c.mu.Unlock()
		c.kill()
		c.mu.Lock()
		return n, err
	}
	if n < len(p) {
		c.out = append(c.out, chunk{b: slices.Clone(p[n:]), at: time.Now()})
		c.outLen += len(p) - n
	}
	c.signalLocked()
	return len(p), nil
}

// Close makes reads and writes fail; what was written is still delivered (as the
// kernel sends a closed socket's buffer), then the socket closes.
func (c *faultConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.signalLocked()
		if c.reading {
			c.inner.SetReadDeadline(time.Unix(1, 0)) // a Read waiting on the socket returns
		}
	}
	return nil
}

func (c *faultConn) LocalAddr() net.Addr  { return c.inner.LocalAddr() }
func (c *faultConn) RemoteAddr() net.Addr { return c.inner.RemoteAddr() }

// The deadline setters wake the connection's waiters only when a deadline comes
// closer (a later or no deadline is found by the waiter when it next looks): a
// request's deadline is set on every read and write, and most move it later.

func (c *faultConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake := closer(c.rdl, t) || closer(c.wdl, t)
	c.rdl, c.wdl = t, t
	if c.reading {
		c.inner.SetReadDeadline(t)
	}
	if wake {
		c.signalLocked()
	}
	return nil
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake := closer(c.rdl, t)
	c.rdl = t
	if c.reading {
		c.inner.SetReadDeadline(t)
	}
	if wake {
		c.signalLocked()
	}
	return nil
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake := closer(c.wdl, t)
	c.wdl = t
	if wake {
		c.signalLocked()
	}
	return nil
}

// closer reports whether deadline t comes before old (zero: none).
func closer(old, t time.Time) bool {
	return !t.IsZero() && (old.IsZero() || t.Before(old))
}

func (c *faultConn) String() string {
	return fmt.Sprintf("node %d %s→%s", c.local, c.inner.LocalAddr(), c.inner.RemoteAddr())
}
