package controller

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipelineQuorum starts three voters (a slow tick, so that holding their messages a
// while does not cost the leader its quorum) and returns the active one.
func pipelineQuorum(t *testing.T, tick time.Duration) (*memNetwork, *Controller) {
	t.Helper()
	n := &memNetwork{nodes: map[int32]*Controller{}, down: map[int32]bool{}}
	voters := []Voter{{ID: 1}, {ID: 2}, {ID: 3}}
	dirs := map[int32]string{1: t.TempDir(), 2: t.TempDir(), 3: t.TempDir()}
	for _, v := range voters {
		c := n.open(t, v.ID, dirs, voters, func(cfg *Config) { cfg.TickInterval = tick; cfg.SessionTimeout = time.Hour })
		t.Cleanup(func() { c.Close() })
	}
	return n, waitActive(t, n, -1)
}

func registrationRequest(c *Controller, id int32) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = id, c.Image().ClusterID
	req.IncarnationID = NewTopicID()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9090+id)
	req.Listeners = append(req.Listeners, l)
	return req
}

// waitPending waits until n pipelined requests are pending on c.
func waitPending(t *testing.T, c *Controller, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.pipe.mu.Lock()
		got := c.mu.pipe.pending
		c.mu.pipe.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pipelined requests pending, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPipelinedRegistrationsAndUnfencing: while the followers' messages are held,
// the registrations of two brokers are both proposed (the second computed on the
// view holding the first's uncommitted record), and so are their unfencings; once
// the messages flow every answer is the one a serial controller gives: distinct
// epochs, the image's, unfenced.
func TestPipelinedRegistrationsAndUnfencing(t *testing.T) {
	n, c := pipelineQuorum(t, 200*time.Millisecond)
	release := func() func() {
		ch := make(chan struct{})
		n.mu.Lock()
		n.hold = ch
		n.mu.Unlock()
		return func() {
			n.mu.Lock()
			n.hold = nil
			n.mu.Unlock()
			close(ch)
		}
	}

	free := release()
	regs := make(chan *kmsg.BrokerRegistrationResponse, 2)
	for id := int32(1); id <= 2; id++ {
		req := registrationRequest(c, id)
		go func() { regs <- c.HandleBrokerRegistration(req) }()
		waitPending(t, c, int(id))
	}
	// The view holds both registrations at the epochs the committed image will.
	c.mu.Mutex.Lock()
	viewBrokers := maps.Clone(c.mu.pipe.view.Brokers)
	c.mu.Mutex.Unlock()
	free()
	epochs := map[int64]bool{}
	for range 2 {
		r := <-regs
		if r.ErrorCode != 0 {
			t.Fatalf("registration: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		epochs[r.BrokerEpoch] = true
	}
	img := c.Image()
	for id := int32(1); id <= 2; id++ {
		b := img.Brokers[id]
		if !b.Fenced || !epochs[b.Epoch] {
			t.Fatalf("broker %d in the image: %+v, answered epochs %v", id, b, epochs)
		}
	}
	if len(epochs) != 2 {
		t.Fatalf("answered epochs %v, want two", epochs)
	}
	for id := int32(1); id <= 2; id++ {
		if v, b := viewBrokers[id], img.Brokers[id]; v.Epoch != b.Epoch || v.Fenced != b.Fenced {
			t.Fatalf("broker %d in the pipeline's view %+v, committed %+v", id, v, b)
		}
	}

	free = release()
	hbs := make(chan *kmsg.BrokerHeartbeatResponse, 2)
	offset := c.Image().Offset
	for id := int32(1); id <= 2; id++ {
		e := c.Image().Brokers[id].Epoch
		go func() { hbs <- heartbeat(c, id, e, offset, false) }()
		waitPending(t, c, int(id))
	}
	free()
	for range 2 {
		r := <-hbs
		if r.ErrorCode != 0 || r.IsFenced || !r.IsCaughtUp {
			t.Fatalf("heartbeat: %+v (%v)", r, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	img = c.Image()
	for id := int32(1); id <= 2; id++ {
		if img.Brokers[id].Fenced {
			t.Fatalf("broker %d still fenced in the image", id)
		}
	}
}

// TestPipelinedRequestsFailTogether: requests pending when the active controller
// loses its quorum are all answered NOT_CONTROLLER, and so is the one of a broker
// that already had one pending (it waited for them); a new quorum takes the
// registrations again.
func TestPipelinedRequestsFailTogether(t *testing.T) {
	n, c := pipelineQuorum(t, 10*time.Millisecond)
	n.mu.Lock()
	for id := range n.nodes {
		if id != c.NodeID() {
			n.down[id] = true
		}
	}
	n.mu.Unlock()
	regs := make(chan *kmsg.BrokerRegistrationResponse, 3)
	for id := int32(1); id <= 2; id++ {
		req := registrationRequest(c, id)
		go func() { regs <- c.HandleBrokerRegistration(req) }()
		waitPending(t, c, int(id))
	}
	again := registrationRequest(c, 1)
	go func() { regs <- c.HandleBrokerRegistration(again) }()
	for range 3 {
		if r := <-regs; r.ErrorCode != kerr.NotController.Code {
			t.Fatalf("registration while the quorum was lost: %v, want NOT_CONTROLLER", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if _, ok := c.Image().Brokers[1]; ok || len(c.Image().Brokers) > 0 {
		t.Fatalf("a registration answered NOT_CONTROLLER is in the image: %+v", c.Image().Brokers)
	}
	n.mu.Lock()
	clear(n.down)
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := int32(1); id <= 2; id++ {
		for {
			active := waitActive(t, n, -1)
			r := active.HandleBrokerRegistration(registrationRequest(active, id))
			if r.ErrorCode == 0 {
				break
			}
			if r.ErrorCode != kerr.NotController.Code || ctx.Err() != nil {
				t.Fatalf("registration after the heal: %v", kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
}
