package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"
)

// memNetwork connects in-process controllers; a node can be cut off.
type memNetwork struct {
	mu    sync.Mutex
	nodes map[int32]*Controller
	down  map[int32]bool
	// hold, when set, holds every message until it is closed.
	hold chan struct{}
}

type memTransport struct {
	net  *memNetwork
	from int32
}

func (t memTransport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		to := NodeIDOfRaft(m.To)
		t.net.mu.Lock()
		c := t.net.nodes[to]
		cut := t.net.down[to] || t.net.down[t.from]
		hold := t.net.hold
		t.net.mu.Unlock()
		if c == nil || cut {
			continue
		}
		go func(m raftpb.Message) {
			if hold != nil {
				<-hold
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = c.Step(ctx, m)
		}(m)
	}
}

func (n *memNetwork) open(t *testing.T, id int32, dirs map[int32]string, voters []Voter, mod ...func(*Config)) *Controller {
	t.Helper()
	cfg := Config{NodeID: id, Dir: dirs[id], Voters: voters, Transport: memTransport{n, id},
		TickInterval: 10 * time.Millisecond, Logger: zerolog.Nop()}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.nodes[id] = c
	n.down[id] = false
	n.mu.Unlock()
	return c
}

func waitActive(t *testing.T, n *memNetwork, not int32) *Controller {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		n.mu.Lock()
		for id, c := range n.nodes {
			if id != not && !n.down[id] && c.IsActive() && c.Image().ClusterID != "" {
				n.mu.Unlock()
				return c
			}
		}
		n.mu.Unlock()
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("no active controller")
			return nil
		}
	}
}

// TestThreeVoterFailover: three voters elect one active controller; when it is cut
// off, another takes over with every committed record; the old one, restarted from
// its directory, catches up.
func TestThreeVoterFailover(t *testing.T) {
	n := &memNetwork{nodes: map[int32]*Controller{}, down: map[int32]bool{}}
	voters := []Voter{{ID: 1}, {ID: 2}, {ID: 3}}
	dirs := map[int32]string{1: t.TempDir(), 2: t.TempDir(), 3: t.TempDir()}
	for _, v := range voters {
		c := n.open(t, v.ID, dirs, voters)
		t.Cleanup(func() { c.Close() })
	}
	first := waitActive(t, n, -1)
	for id := int32(1); id <= 3; id++ {
		if _, err := first.RegisterBroker(id, "h", 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	createAssigned(t, first, "before", 1, 2, 3)
	cid := first.Image().ClusterID

	// Cut the active controller off and stop it; another takes over.
	old := first.NodeID()
	n.mu.Lock()
	n.down[old] = true
	n.mu.Unlock()
	first.Close()
	second := waitActive(t, n, old)
	if second.Image().Topics["before"] == nil || second.Image().ClusterID != cid {
		t.Fatal("new active controller lost committed records")
	}
	createAssigned(t, second, "after", 1, 2, 3)

	// A write on a non-active voter is refused with NOT_CONTROLLER.
	for id, c := range n.nodes {
		if id != old && c != second {
			if err := c.Commit([]Record{{ProducerIDs: &ProducerIDsRecord{NextProducerID: 5}}}); err == nil || commitErrorCode(err) != kerr.NotController.Code {
				t.Errorf("write on follower %d: %v", id, err)
			}
		}
	}

	// The old one comes back from its directory and catches up.
	re := n.open(t, old, dirs, voters)
	t.Cleanup(func() { re.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := re.waitUntil(ctx, func() bool { return re.Image().Topics["after"] != nil }); err != nil {
		t.Fatalf("restarted voter did not catch up: %v", err)
	}
	if re.Image().Topics["before"].ID != second.Image().Topics["before"].ID {
		t.Fatal("restarted voter disagrees on topic ids")
	}
}

// TestLaggingVoterCatchesUpFromSnapshot: a voter cut off while the others compact
// their logs gets the leader's snapshot (MsgSnap) and then the entries after it.
func TestLaggingVoterCatchesUpFromSnapshot(t *testing.T) {
	n := &memNetwork{nodes: map[int32]*Controller{}, down: map[int32]bool{}}
	voters := []Voter{{ID: 1}, {ID: 2}, {ID: 3}}
	dirs := map[int32]string{1: t.TempDir(), 2: t.TempDir(), 3: t.TempDir()}
	small := func(c *Config) { c.SnapshotEntries, c.SnapshotKeep = 5, 2 }
	for _, v := range voters {
		c := n.open(t, v.ID, dirs, voters, small)
		t.Cleanup(func() { c.Close() })
	}
	leader := waitActive(t, n, -1)
	for id := int32(1); id <= 3; id++ {
		if _, err := leader.RegisterBroker(id, "h", 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	var lagging int32
	for _, v := range voters {
		if v.ID != leader.NodeID() {
			lagging = v.ID
			break
		}
	}
	n.mu.Lock()
	n.down[lagging] = true
	n.mu.Unlock()
	for i := 0; i < 20; i++ {
		createAssigned(t, leader, fmt.Sprintf("t%02d", i), 1, 2, 3)
	}
	if first, _ := leader.ms.FirstIndex(); first <= 2 {
		t.Fatalf("leader did not compact its log (first index %d)", first)
	}
	n.mu.Lock()
	n.down[lagging] = false
	lag := n.nodes[lagging]
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lag.waitUntil(ctx, func() bool { return lag.Image().Topics["t19"] != nil }); err != nil {
		t.Fatalf("lagging voter did not catch up: %v", err)
	}
	if lag.Image().Topics["t00"].ID != leader.Image().Topics["t00"].ID || lag.Image().Brokers[3].Epoch != leader.Image().Brokers[3].Epoch {
		t.Fatal("lagging voter's image differs")
	}
	// What it received survives its restart.
	lag.Close()
	re := n.open(t, lagging, dirs, voters, small)
	t.Cleanup(func() { re.Close() })
	if err := re.waitUntil(ctx, func() bool { return re.Image().Topics["t19"] != nil && re.Image().Topics["t00"] != nil }); err != nil {
		t.Fatalf("restarted voter lost the snapshot: %v", err)
	}
}
