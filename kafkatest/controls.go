package kafkatest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gokafkad/gokafkad/server"
)

// Controls are the cluster's controls as methods that return an error instead of
// failing the test, for callers other than the test's goroutine and for those that
// report errors their own way (a control API over HTTP). Every Cluster control of
// the same name (Kill, Pause, Cut, …) is its Controls method with the error failing
// the test. They are safe to call from any goroutine.
type Controls struct{ c *Cluster }

// Controls returns the cluster's controls that return errors (see Controls).
func (c *Cluster) Controls() *Controls { return &Controls{c: c} }

// nodeOf returns node id, or an error naming the cluster's nodes.
func (k *Controls) nodeOf(what string, id int32) (*node, error) {
	n, ok := k.c.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%s(%d): no node %d in the cluster (nodes %v)", what, id, id, k.c.ids)
	}
	return n, nil
}

// stop takes node id out of the cluster with stopFn (Kill or Close).
func (k *Controls) stop(what string, id int32, stopFn func(*server.Broker) error) error {
	n, err := k.nodeOf(what, id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	b := n.b
	n.b = nil
	n.mu.Unlock()
	if b == nil {
		return fmt.Errorf("%s(%d): the node is not running", what, id)
	}
	if err := stopFn(b); err != nil {
		return fmt.Errorf("%s(%d): %w", what, id, err)
	}
	return nil
}

// Kill is Cluster.Kill.
func (k *Controls) Kill(id int32) error {
	f := k.c.net
	return k.stop("Kill", id, func(b *server.Broker) error {
		f.mu.RLock()
		_, paused := f.paused[id]
		f.mu.RUnlock()
		if paused {
			// Its goroutines wait on its sockets: close them as the kernel does
			// for a killed process, and let it run into the errors.
			f.closeNode(id)
			f.update(func() { delete(f.paused, id) })
		}
		b.Kill()
		f.closeNode(id) // what it had left queued behind a cut dies with it
		return nil
	})
}

// Shutdown is Cluster.Shutdown.
func (k *Controls) Shutdown(id int32) error {
	if k.isPaused(id) {
		if err := k.Resume(id); err != nil {
			return err
		}
	}
	return k.stop("Shutdown", id, (*server.Broker).Close)
}

// Restart is Cluster.Restart.
func (k *Controls) Restart(id int32) error {
	n, err := k.nodeOf("Restart", id)
	if err != nil {
		return err
	}
	if n.running() != nil {
		if err := k.Shutdown(id); err != nil {
			return err
		}
	}
	if err := n.start(); err != nil {
		return fmt.Errorf("Restart(%d): %w", id, err)
	}
	return nil
}

func (k *Controls) isPaused(id int32) bool {
	k.c.net.mu.RLock()
	defer k.c.net.mu.RUnlock()
	_, ok := k.c.net.paused[id]
	return ok
}

// Pause is Cluster.Pause.
func (k *Controls) Pause(id int32) error {
	n, err := k.nodeOf("Pause", id)
	if err != nil {
		return err
	}
	if n.running() == nil {
		return fmt.Errorf("Pause(%d): the node is not running", id)
	}
	f := k.c.net
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.paused[id]; ok {
		return fmt.Errorf("Pause(%d): the node is already paused", id)
	}
	f.paused[id] = time.Now()
	f.changedLocked()
	return nil
}

// Resume is Cluster.Resume.
func (k *Controls) Resume(id int32) error {
	if _, err := k.nodeOf("Resume", id); err != nil {
		return err
	}
	f := k.c.net
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.paused[id]; !ok {
		return fmt.Errorf("Resume(%d): the node is not paused", id)
	}
	delete(f.paused, id)
	f.changedLocked()
	return nil
}

// Paused returns the paused nodes, in order.
func (k *Controls) Paused() []int32 {
	k.c.net.mu.RLock()
	defer k.c.net.mu.RUnlock()
	return slices.Sorted(maps.Keys(k.c.net.paused))
}

// party checks that id is a node of the cluster or Clients.
func (k *Controls) party(what string, id int32) error {
	if id == Clients {
		return nil
	}
	_, err := k.nodeOf(what, id)
	return err
}

// parties returns every node id and Clients.
func (k *Controls) parties() []int32 { return append(slices.Clone(k.c.ids), Clients) }

// link checks the two ends of a link.
func (k *Controls) link(what string, a, b int32) error {
	if err := k.party(what, a); err != nil {
		return err
	}
	if err := k.party(what, b); err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("%s(%d, %d): a link needs two different ends", what, a, b)
	}
	return nil
}

// Cut is Cluster.Cut.
func (k *Controls) Cut(a, b int32) error {
	if err := k.link("Cut", a, b); err != nil {
		return err
	}
	k.c.net.update(func() { k.c.net.cut[link{a, b}], k.c.net.cut[link{b, a}] = true, true })
	return nil
}

// CutOneWay is Cluster.CutOneWay.
func (k *Controls) CutOneWay(from, to int32) error {
	if err := k.link("CutOneWay", from, to); err != nil {
		return err
	}
	k.c.net.update(func() { k.c.net.cut[link{from, to}] = true })
	return nil
}

// Isolate is Cluster.Isolate.
func (k *Controls) Isolate(id int32) error {
	if err := k.party("Isolate", id); err != nil {
		return err
	}
	k.c.net.update(func() {
		for _, o := range k.parties() {
			if o != id {
				k.c.net.cut[link{id, o}], k.c.net.cut[link{o, id}] = true, true
			}
		}
	})
	return nil
}

// Delay is Cluster.Delay.
func (k *Controls) Delay(a, b int32, d time.Duration) error {
	if err := k.link("Delay", a, b); err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("Delay(%d, %d, %v): negative", a, b, d)
	}
	k.c.net.update(func() { k.c.net.setDelayLocked(a, b, d); k.c.net.setDelayLocked(b, a, d) })
	return nil
}

// DelayOneWay is Cluster.DelayOneWay.
func (k *Controls) DelayOneWay(from, to int32, d time.Duration) error {
	if err := k.link("DelayOneWay", from, to); err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("DelayOneWay(%d, %d, %v): negative", from, to, d)
	}
	k.c.net.update(func() { k.c.net.setDelayLocked(from, to, d) })
	return nil
}

// Heal is Cluster.Heal.
func (k *Controls) Heal(ids ...int32) error {
	for _, id := range ids {
		if err := k.party("Heal", id); err != nil {
			return err
		}
	}
	f := k.c.net
	f.update(func() {
		if len(ids) == 0 {
			clear(f.cut)
			clear(f.delay)
			return
		}
		for l := range f.cut {
			if slices.Contains(ids, l.from) || slices.Contains(ids, l.to) {
				delete(f.cut, l)
			}
		}
		for l := range f.delay {
			if slices.Contains(ids, l.from) || slices.Contains(ids, l.to) {
				delete(f.delay, l)
			}
		}
	})
	return nil
}

// Links returns the network's faults: every cut link and every added delay, by
// direction.
func (k *Controls) Links() []LinkFault {
	f := k.c.net
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []LinkFault
	for l := range f.cut {
		out = append(out, LinkFault{From: l.from, To: l.to, Cut: true, Delay: f.delay[l]})
	}
	for l, d := range f.delay {
		if !f.cut[l] {
			out = append(out, LinkFault{From: l.from, To: l.to, Delay: d})
		}
	}
	slices.SortFunc(out, func(a, b LinkFault) int {
		if a.From != b.From {
			return int(a.From - b.From)
		}
		return int(a.To - b.To)
	})
	return out
}

// LinkFault is the fault on the link from From to To (node ids, or Clients).
type LinkFault struct {
	From, To int32
	// Cut: nothing from From reaches To.
	Cut bool
	// Delay is added to everything From sends To.
	Delay time.Duration
}

// setDelayLocked sets the delay from→to (0 removes it). Lock must be held.
func (f *faultNet) setDelayLocked(from, to int32, d time.Duration) {
	if d == 0 {
		delete(f.delay, link{from, to})
		return
	}
	f.delay[link{from, to}] = d
}

// clearLocked removes every fault: pauses, cuts and delays. Lock must be held.
func (f *faultNet) clearLocked() {
	clear(f.paused)
	clear(f.cut)
	clear(f.delay)
}

// Pause stops node id making progress with its sockets open, as SIGSTOP stops a
// process: it reads no request and answers none, its replica fetchers, heartbeats
// and Raft messages stop, and its clock stands still, so none of its timers fire
// (nothing times out for it while it is stopped); other nodes and clients keep their
// connections to it and see their requests time out, not closed connections. The
// controller fences it once its heartbeats have been missing for
// broker.session.timeout.ms (2 s by default here), moving its leaderships; a leader's
// ISR drops it after replica.lag.time.max.ms. Resume lets it carry on. Pausing a
// stopped or paused node fails the test.
//
// In process, the pause is made at the node's sockets and clock (see Cluster.Cut for
// the network layer): what it had read before the pause may still be handled, and
// its answers are held until Resume.
func (c *Cluster) Pause(id int32) {
	c.t.Helper()
	c.must(c.Controls().Pause(id))
}

// Resume lets paused node id carry on from where it stopped, as SIGCONT does: what it
// was sent meanwhile is read, what it wrote is delivered, and its clock jumps to now,
// so its timers that came due fire. A broker paused past broker.session.timeout.ms was
// fenced meanwhile and rejoins as Kafka's does: its heartbeats resume, the controller
// unfences it once it has caught up with the metadata, and it rejoins the ISRs by
// fetching. Resuming a node that is not paused fails the test.
func (c *Cluster) Resume(id int32) {
	c.t.Helper()
	c.must(c.Controls().Resume(id))
}

// Cut partitions the network between a and b (node ids, or Clients for every client
// connection), both ways: the bytes of their open connections stop flowing — held,
// not refused, so a connection hangs and its reads time out as under a real partition,
// with no reset and no close — and new connections between nodes hang until their
// dial timeout (a client's new connection opens, as the kernel accepts it, but carries
// nothing). Heal restores the link; what was held is then delivered. Links between the
// nodes include the controller ones (heartbeats, metadata, Raft) and the replica
// fetchers'; a combined node's broker and controller share a process and are never
// cut from each other. A node restarted while cut off from the controllers cannot
// register: Restart then fails after initial.broker.registration.timeout.ms.
func (c *Cluster) Cut(a, b int32) {
	c.t.Helper()
	c.must(c.Controls().Cut(a, b))
}

// CutOneWay cuts the link from → to only: what from sends never reaches to, while to's
// bytes still reach from. (Over TCP this stalls what from sends; to's answers to
// requests it already had still arrive.)
func (c *Cluster) CutOneWay(from, to int32) {
	c.t.Helper()
	c.must(c.Controls().CutOneWay(from, to))
}

// Isolate cuts id (a node, or Clients) from every other node and from the clients,
// both ways, as Cut does link by link. Heal(id) undoes it.
func (c *Cluster) Isolate(id int32) {
	c.t.Helper()
	c.must(c.Controls().Isolate(id))
}

// Delay adds d to everything a and b (node ids, or Clients) send each other, both ways
// (a request and its answer take 2d more); a new connection between them takes 2d
// longer to open. Bytes keep their order; d = 0 removes the delay.
func (c *Cluster) Delay(a, b int32, d time.Duration) {
	c.t.Helper()
	c.must(c.Controls().Delay(a, b, d))
}

// DelayOneWay adds d to what from sends to only (d = 0 removes it).
func (c *Cluster) DelayOneWay(from, to int32, d time.Duration) {
	c.t.Helper()
	c.must(c.Controls().DelayOneWay(from, to, d))
}

// Heal removes the cuts and delays of every link that touches one of ids (node ids,
// or Clients), or, with no ids, of the whole network. Paused nodes stay paused.
func (c *Cluster) Heal(ids ...int32) {
	c.t.Helper()
	c.must(c.Controls().Heal(ids...))
}
