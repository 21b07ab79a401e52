package kafkatest_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/kafkatest"
	"github.com/gokafkad/gokafkad/protocol"
)

// follower returns a replica of topic-0 that is neither its leader nor the active
// controller (so pausing it moves neither).
func follower(t *testing.T, c *kafkatest.Cluster, topic string) int32 {
	t.Helper()
	leader := c.WaitLeader(topic, 0)
	active := c.WaitActiveController()
	for _, id := range c.Partition(topic, 0).Replicas {
		if id != leader && id != active {
			return id
		}
	}
	t.Fatalf("no follower of %s-0 outside leader %d and active controller %d", topic, leader, active)
	return -1
}

// without returns ids without id, sorted.
func without(ids []int32, id int32) []int32 {
	out := slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
	slices.Sort(out)
	return out
}

// fenced reports whether broker id is fenced in the metadata broker from serves.
func fenced(c *kafkatest.Cluster, from, id int32) bool {
	br, ok := c.Broker(from).Image().Brokers[id]
	return ok && br.Fenced
}

// apiVersionsFrame is an ApiVersions v0 request, correlation id 7.
func apiVersionsFrame() []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	body := req.AppendTo(nil)
	frame := []byte{0, 0, 0, 0, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 't'}
	frame = append(frame, body...)
	n := len(frame) - 4
	frame[0], frame[1], frame[2], frame[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return frame
}

// TestPauseFollowerLeavesISRAndRejoins: a paused follower stops fetching; the leader
// drops it from the ISR after replica.lag.time.max.ms while acks=all produces (one
// more producer writing all along) go on
// with the other two, its session (10 s here) not yet over, so it is not fenced. A
// client's connection to the paused broker stays open and its request gets no
// answer until Resume. Resumed, the follower catches up and is back in the ISR.
func TestPauseFollowerLeavesISRAndRejoins(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "1000",
			"broker.session.timeout.ms": "10000"}))
	// The producer knows the partition's leader before the pause, so it never asks
	// the paused broker for metadata (a client that does waits out its request
	// timeout, as against a stopped Kafka).
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	send := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	send("before")
	c.WaitISR("orders", 0, 0, 1, 2)
	f := follower(t, c, "orders")
	leader := c.WaitLeader("orders", 0)
	addr := c.Addrs()[f]

	// A client connected before the pause.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// A producer that keeps writing, acks=all, through the pause and the resume.
	stop, bgDone := make(chan struct{}), make(chan struct{})
	var acked []string
	var bgErr error
	bgCtx := ctx(t)
	go func() {
		defer close(bgDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("bg-%d", i)
			if bgErr = cl.ProduceSync(bgCtx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); bgErr != nil {
				return
			}
			acked = append(acked, v)
		}
	}()

	c.Pause(f)
	if got := c.Controls().Paused(); !slices.Equal(got, []int32{f}) {
		t.Fatalf("Paused() = %v, want [%d]", got, f)
	}
	if _, err := nc.Write(apiVersionsFrame()); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(nc)
	if _, err := br.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reading from the paused broker: %v, want a timeout (the connection open, no answer)", err)
	}

	// acks=all goes on once the leader has dropped the paused follower.
	send("during")
	c.WaitISR("orders", 0, without([]int32{0, 1, 2}, f)...)
	if fenced(c, leader, f) {
		t.Fatalf("broker %d was fenced: the ISR should have shrunk by lag, before its session ended", f)
	}
	if got := c.WaitLeader("orders", 0); got != leader {
		t.Fatalf("leader moved from %d to %d while a follower was paused", leader, got)
	}
	send("during-2")

	c.Resume(f)
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	frame, err := protocol.ReadFrame(br, 1<<20, nil)
	if err != nil {
		t.Fatalf("the answer held by the pause: %v", err)
	}
	if corr := int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]); corr != 7 {
		t.Fatalf("answer with correlation id %d", corr)
	}
	c.WaitISR("orders", 0, 0, 1, 2)
	close(stop)
	<-bgDone
	if bgErr != nil {
		t.Fatalf("the background producer: %v", bgErr)
	}
	// Every acknowledged record is on every replica.
	n := int64(3 + len(acked))
	c.WaitHighWatermark("orders", 0, n)
	c.WaitISR("orders", 0, 0, 1, 2)
	got := consume(t, c, "orders", int(n))
	for _, v := range append([]string{"before", "during", "during-2"}, acked...) {
		if !slices.Contains(got, v) {
			t.Fatalf("acknowledged %q is missing from %v", v, got)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, r := range c.Partition("orders", 0).ReplicaStates {
			ok = ok && r.LogEndOffset == n
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas after the resume: %+v, want LEO %d", c.Partition("orders", 0).ReplicaStates, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPauseLeaderIsFencedAndReplaced: a paused leader answers no produce; its
// heartbeats stop, so the controller fences it after broker.session.timeout.ms and
// elects another in-sync replica, where the client's acks=all produce then lands.
// Resumed, the old leader learns it was fenced, is unfenced once caught up and
// rejoins the ISR as a follower.
func TestPauseLeaderIsFencedAndReplaced(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2"}))
	produce(t, c, "orders", "before")
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)
	epoch := c.Partition("orders", 0).LeaderEpoch

	c.Pause(old)
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(2*time.Second), kgo.RequestTimeoutOverhead(time.Second))
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatalf("produce while the leader is paused: %v", err)
	}
	leader := c.WaitLeader("orders", 0)
	p := c.Partition("orders", 0)
	if leader == old || p.LeaderEpoch <= epoch || slices.Contains(p.ISR, old) {
		t.Fatalf("after pausing leader %d: %+v (old epoch %d)", old, p, epoch)
	}
	if !fenced(c, leader, old) {
		t.Fatalf("paused broker %d is not fenced in broker %d's metadata", old, leader)
	}

	c.Resume(old)
	c.WaitISR("orders", 0, 0, 1, 2)
	c.WaitHighWatermark("orders", 0, 2)
	if fenced(c, leader, old) {
		t.Fatalf("broker %d still fenced after rejoining the ISR", old)
	}
	if got := consume(t, c, "orders", 2); !slices.Equal(got, []string{"before", "during"}) {
		t.Fatalf("consumed %v", got)
	}
}

// TestPauseControls: what cannot be paused or resumed says so; a paused node can be
// killed and restarted, or shut down (it resumes first).
func TestPauseControls(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithTopic("t", 1, 2))
	k := c.Controls()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{k.Resume(0), "Resume(0): the node is not paused"},
		{k.Pause(9), "Pause(9): no node 9"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	c.Pause(1)
	if err := k.Pause(1); err == nil || !strings.Contains(err.Error(), "already paused") {
		t.Fatalf("second Pause: %v", err)
	}
	c.Kill(1)
	if err := k.Pause(1); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Pause of a killed node: %v", err)
	}
	if got := k.Paused(); len(got) != 0 {
		t.Fatalf("Paused() = %v after the kill", got)
	}
	c.Restart(1)
	c.WaitISR("t", 0, 0, 1)
	c.Pause(1)
	c.Shutdown(1)
	c.Restart(1)
	produce(t, c, "t", "v")
	c.WaitISR("t", 0, 0, 1)
}

// TestPauseActiveController: with the active controller paused, the other two voters
// elect another; resumed, the old one follows it: it steps down and applies what the
// new one commits.
func TestPauseActiveController(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(1), kafkatest.WithSeparateControllers(3))
	old := c.WaitActiveController()
	c.Pause(old)
	if now := c.WaitActiveController(); now == old {
		t.Fatalf("the paused controller %d is still active", old)
	}
	c.Resume(old)
	// (Created after the Resume: the broker's forwarding channel may be waiting on the
	// paused controller, which answers nothing until then.)
	adm := kadm.NewClient(client(t, c))
	if resp, err := adm.CreateTopic(ctx(t), 1, 1, nil, "after"); err != nil || resp.Err != nil {
		t.Fatalf("create after the failover: %v %v", err, resp.Err)
	}
	c.WaitLeader("after", 0)
	produce(t, c, "after", "v")
	deadline := time.Now().Add(30 * time.Second)
	for c.Broker(old).Controller().IsActive() || c.Broker(old).Controller().Image().Topics["after"] == nil {
		if time.Now().After(deadline) {
			t.Fatalf("controller %d did not follow the new active one after Resume", old)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
