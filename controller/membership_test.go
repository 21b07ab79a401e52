package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func voterIDs(vs []Voter) []int32 {
	var ids []int32
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	return ids
}

func dynamic(standalone bool, id int32) func(*Config) {
	return func(c *Config) {
		c.Dynamic, c.Standalone = true, standalone
		c.Self = Voter{Addr: fmt.Sprintf("n%d:9093", id), DirID: [16]byte{byte(id)}}
	}
}

func waitVoters(t *testing.T, c *Controller, want ...int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.waitUntil(ctx, func() bool { return slices.Equal(voterIDs(c.Voters()), want) }); err != nil {
		t.Fatalf("node %d: voters %v, want %v", c.NodeID(), voterIDs(c.Voters()), want)
	}
}

func wantVoterErr(t *testing.T, what string, e *VoterChangeError, code int16) {
	t.Helper()
	if e == nil || e.Code != code {
		t.Fatalf("%s: %v, want %s", what, e, kerr.ErrorForCode(code))
	}
}

// TestDynamicQuorum: a quorum started with one controller (standalone) grows to three
// with AddVoter, refuses what Kafka refuses, survives losing its leader, keeps its
// voters across a restart, and shrinks with RemoveVoter.
func TestDynamicQuorum(t *testing.T) {
	n := &memNetwork{nodes: map[int32]*Controller{}, down: map[int32]bool{}}
	dirs := map[int32]string{1: t.TempDir(), 2: t.TempDir(), 3: t.TempDir()}
	c1 := n.open(t, 1, dirs, nil, dynamic(true, 1))
	t.Cleanup(func() { c1.Close() })
	if !c1.IsActive() || c1.Image().FeatureLevel(FeatureKRaftVersion) != 1 {
		t.Fatalf("standalone controller: active %v, kraft.version %d", c1.IsActive(), c1.Image().FeatureLevel(FeatureKRaftVersion))
	}
	waitVoters(t, c1, 1)
	if v := c1.Voters()[0]; v.Addr != "n1:9093" || v.DirID != ([16]byte{1}) {
		t.Fatalf("bootstrap voter %+v", v)
	}
	c2 := n.open(t, 2, dirs, nil, dynamic(false, 2))
	t.Cleanup(func() { c2.Close() })
	c3 := n.open(t, 3, dirs, nil, dynamic(false, 3))
	t.Cleanup(func() { c3.Close() })
	if len(c2.Voters()) != 0 || c2.IsActive() {
		t.Fatalf("observer: voters %v, active %v", c2.Voters(), c2.IsActive())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e := c1.AddVoter(ctx, 2, [16]byte{2}, "n2:9093"); e != nil {
		t.Fatalf("add voter 2: %v", e)
	}
	waitVoters(t, c2, 1, 2)
	if c2.Image().ClusterID != c1.Image().ClusterID {
		t.Fatal("new voter has another cluster id")
	}
	wantVoterErr(t, "add voter 2 again", c1.AddVoter(ctx, 2, [16]byte{2}, "n2:9093"), kerr.DuplicateVoter.Code)
	wantVoterErr(t, "add voter on a follower", c2.AddVoter(ctx, 3, [16]byte{3}, "n3:9093"), kerr.NotLeaderForPartition.Code)
	wantVoterErr(t, "remove an unknown voter", c1.RemoveVoter(ctx, 9, [16]byte{}), kerr.VoterNotFound.Code)
	wantVoterErr(t, "remove voter 2 of another directory", c1.RemoveVoter(ctx, 2, [16]byte{7}), kerr.VoterNotFound.Code)

	// A controller that never answers does not catch up: REQUEST_TIMED_OUT, and it is
	// no learner afterwards. While that change is pending, another one times out too.
	pending := make(chan *VoterChangeError, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		pending <- c1.AddVoter(ctx, 5, [16]byte{5}, "n5:9093")
	}()
	if err := c1.waitUntil(ctx, func() bool { return len(c1.Learners()) == 1 }); err != nil {
		t.Fatal("voter 5 never became a learner")
	}
	wantVoterErr(t, "add voter while one is pending", c1.AddVoter(ctx, 3, [16]byte{3}, "n3:9093"), kerr.RequestTimedOut.Code)
	wantVoterErr(t, "add a voter that never catches up", <-pending, kerr.RequestTimedOut.Code)
	if err := c1.waitUntil(ctx, func() bool { return len(c1.Learners()) == 0 }); err != nil {
		t.Fatalf("learners after an aborted add: %v", c1.Learners())
	}

	if e := c1.AddVoter(ctx, 3, [16]byte{3}, "n3:9093"); e != nil {
		t.Fatalf("add voter 3: %v", e)
	}
	for _, c := range []*Controller{c1, c2, c3} {
		waitVoters(t, c, 1, 2, 3)
	}

	// The leader goes away: the other two elect one and metadata still changes.
	n.mu.Lock()
	n.down[1] = true
	n.mu.Unlock()
	c1.Close()
	second := waitActive(t, n, 1)
	if err := second.Commit([]Record{{ProducerIDs: &ProducerIDsRecord{BrokerID: 7, NextProducerID: 5000}}}); err != nil {
		t.Fatalf("write after losing the leader: %v", err)
	}

	// It comes back from its directory with the voters it had and catches up.
	re := n.open(t, 1, dirs, nil, dynamic(true, 1))
	t.Cleanup(func() { re.Close() })
	waitVoters(t, re, 1, 2, 3)
	if err := re.waitUntil(ctx, func() bool { return re.Image().NextProducerID == 5000 }); err != nil {
		t.Fatal("restarted voter did not catch up")
	}

	// Remove it again: two voters are left, on every member.
	active := waitActive(t, n, -1)
	if e := active.RemoveVoter(ctx, 1, [16]byte{1}); e != nil {
		t.Fatalf("remove voter 1: %v", e)
	}
	for _, c := range []*Controller{c2, c3} {
		waitVoters(t, c, 2, 3)
	}
	active = waitActive(t, n, 1)
	if err := active.Commit([]Record{{ProducerIDs: &ProducerIDsRecord{BrokerID: 7, NextProducerID: 6000}}}); err != nil {
		t.Fatalf("write after removing a voter: %v", err)
	}
}

// TestStaticQuorumRefusesVoterChanges: a quorum of controller.quorum.voters runs
// kraft.version 0, and AddVoter / RemoveVoter are UNSUPPORTED_VERSION, as Kafka.
func TestStaticQuorumRefusesVoterChanges(t *testing.T) {
	n := &memNetwork{nodes: map[int32]*Controller{}, down: map[int32]bool{}}
	c := n.open(t, 1, map[int32]string{1: t.TempDir()}, nil)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	wantVoterErr(t, "add", c.AddVoter(ctx, 2, [16]byte{}, "h:1"), kerr.UnsupportedVersion.Code)
	wantVoterErr(t, "remove", c.RemoveVoter(ctx, 1, [16]byte{}), kerr.UnsupportedVersion.Code)
	if got := c.Image().FeatureLevel(FeatureKRaftVersion); got != 0 {
		t.Fatalf("kraft.version %d", got)
	}
}
