package coordinator

import (
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// client is what a consumer believes: its epoch and the partitions it owns.
type client struct {
	id     string
	joined bool
	epoch  int32
	owned  TopicPartitions
	topics []string
	// full: the last response was lost, so the next heartbeat is a full request
	// (as clients do after an error), which is answered with the assignment.
	full bool
}

func fullReq(c *client) *kmsg.ConsumerGroupHeartbeatRequest {
	r := beatReq(c.id, c.epoch, c.owned)
	r.RebalanceTimeoutMillis = 5000
	r.SubscribedTopicNames = c.topics
	return r
}

// TestConsumerGroupRandomized drives a group with random joins, leaves, heartbeats
// (full and keepalive), subscription and partition-count changes, lost responses and
// session timeouts, checking after every step that no partition is owned by two
// members — neither in the coordinator's view nor in the clients' — and now and then
// that a replay of the records gives the same group. At the end every member
// heartbeats until the group is Stable on a complete, balanced assignment.
func TestConsumerGroupRandomized(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		runRandomGroup(t, seed, 400)
	}
}

func runRandomGroup(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	h := newCGHarness(t, map[string]int32{"t": 4, "u": 3})
	h.noReplay = true
	h.cfg.SessionTimeout = 10 * time.Second
	clients := make([]*client, 5)
	for i := range clients {
		clients[i] = &client{id: string(rune('a' + i))}
	}
	subs := [][]string{{"t"}, {"u"}, {"t", "u"}}
	handle := func(c *client, code int16, epoch int32, assigned TopicPartitions, hasAssignment bool) {
		switch code {
		case 0:
			c.epoch = epoch
			if hasAssignment {
				c.owned = assigned
			}
		case kerr.FencedMemberEpoch.Code:
			c.epoch, c.owned = 0, TopicPartitions{} // abandon, rejoin under the same id
		case kerr.UnknownMemberID.Code:
			c.joined, c.epoch, c.owned = false, 0, TopicPartitions{}
		default:
			t.Fatalf("seed %d: unexpected %v", seed, kerr.ErrorForCode(code))
		}
	}
	for step := 0; step < steps; step++ {
		c := clients[rng.Intn(len(clients))]
		switch op := rng.Intn(10); {
		case !c.joined || c.epoch == 0:
			if !c.joined && rng.Intn(3) != 0 {
				continue
			}
			c.topics = subs[rng.Intn(len(subs))]
			r := h.hb(joinReq(c.id, c.topics...))
			c.joined = true
			handle(c, r.ErrorCode, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
		case op < 5:
			req := beatReq(c.id, c.epoch, c.owned)
			if c.full {
				req = fullReq(c)
			}
			r := h.hb(req)
			if c.full = rng.Intn(10) == 0; c.full {
				continue // the response is lost: the client keeps its old view
			}
			handle(c, r.ErrorCode, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
		case op < 7 && !c.full:
			r := h.hb(beatReq(c.id, c.epoch, nil))
			handle(c, r.ErrorCode, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
		case op == 7:
			c.topics = subs[rng.Intn(len(subs))]
			r := h.hb(fullReq(c))
			c.full = false
			handle(c, r.ErrorCode, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
		case op == 8:
			if rng.Intn(4) == 0 {
				h.hb(beatReq(c.id, leaveGroupMemberEpoch, nil))
				c.joined, c.epoch, c.owned = false, 0, TopicPartitions{}
			} else if n := h.md.fakeMetadata["t"]; n < 8 && rng.Intn(3) == 0 {
				h.md.fakeMetadata["t"] = n + 1
			}
		default:
			// Time passes; members that heartbeat keep their sessions, and now and
			// then one goes silent past its session timeout (its client, silent
			// too, has lost its partitions).
			if rng.Intn(8) == 0 {
				h.tick(h.cfg.SessionTimeout + time.Second)
			} else {
				h.tick(time.Second)
				for _, o := range clients {
					if m := h.g.Members[o.id]; m != nil && o.joined {
						m.sessionDeadline = h.now.Add(h.cfg.SessionTimeout)
					}
				}
			}
			for _, o := range clients {
				if o.joined && h.g.Members[o.id] == nil {
					o.joined, o.epoch, o.owned = false, 0, TopicPartitions{}
				}
			}
		}
		checkExclusive(t, seed, step, h, clients)
		if step%50 == 0 {
			h.noReplay = false
			h.checkReplay()
			h.noReplay = true
		}
	}

	// Everyone still in the group heartbeats (full requests) until Stable.
	for round := 0; round < 10 && h.g.State() != "Stable" && len(h.g.Members) > 0; round++ {
		for _, c := range clients {
			if !c.joined {
				continue
			}
			var code int16
			if c.epoch == 0 {
				r := h.hb(joinReq(c.id, c.topics...))
				code = r.ErrorCode
				handle(c, code, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
			} else {
				r := h.hb(fullReq(c))
				handle(c, r.ErrorCode, r.MemberEpoch, assignedOf(r), r.Assignment != nil)
			}
			checkExclusive(t, seed, -1, h, clients)
		}
	}
	h.noReplay = false
	h.checkReplay()
	if len(h.g.Members) == 0 {
		return
	}
	if h.g.State() != "Stable" {
		t.Fatalf("seed %d: not Stable after 10 rounds: %s", seed, dumpGroup(h.g))
	}
	for _, m := range h.g.Members {
		if !equalTopicPartitions(m.Assigned, h.g.Target[m.ID]) {
			t.Fatalf("seed %d: %s stable on %v but targeted %v", seed, m.ID, m.Assigned, h.g.Target[m.ID])
		}
	}
	// Every partition of a subscribed topic is assigned.
	subscribed := map[string]bool{}
	for _, m := range h.g.Members {
		for _, tp := range m.SubscribedTopicNames {
			subscribed[tp] = true
		}
	}
	n := 0
	for tp := range subscribed {
		n += int(h.md.fakeMetadata[tp])
	}
	if len(h.g.owners) != n {
		t.Fatalf("seed %d: %d partitions owned, %d subscribed: %s", seed, len(h.g.owners), n, dumpGroup(h.g))
	}
}

func checkExclusive(t *testing.T, seed int64, step int, h *cgHarness, clients []*client) {
	t.Helper()
	server := map[topicPartition]string{}
	for _, m := range h.g.Members {
		for _, tps := range []TopicPartitions{m.Assigned, m.PendingRevocation} {
			for _, tp := range flatten(tps) {
				if o, ok := server[tp]; ok && o != m.ID {
					t.Fatalf("seed %d step %d: coordinator has %v owned by %s and %s", seed, step, tp, o, m.ID)
				}
				server[tp] = m.ID
			}
		}
	}
	seen := map[topicPartition]string{}
	for _, c := range clients {
		if !c.joined {
			continue
		}
		for _, tp := range flatten(c.owned) {
			if o, ok := seen[tp]; ok {
				t.Fatalf("seed %d step %d: clients %s and %s both own %v: %s", seed, step, o, c.id, tp, dumpGroup(h.g))
			}
			seen[tp] = c.id
		}
	}
}
