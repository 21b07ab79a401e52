package kafkatest_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
	"github.com/gokafkad/gokafkad/protocol"
)

// rawConn is a client connection that sends ApiVersions and reads the answer.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// ask sends an ApiVersions request and waits up to wait for its answer.
func (r *rawConn) ask(wait time.Duration) error {
	r.t.Helper()
	if _, err := r.nc.Write(apiVersionsFrame()); err != nil {
		r.t.Fatal(err)
	}
	return r.answer(wait)
}

// answer waits up to wait for the next answer.
func (r *rawConn) answer(wait time.Duration) error {
	r.nc.SetReadDeadline(time.Now().Add(wait))
	_, err := protocol.ReadFrame(r.br, 1<<20, nil)
	return err
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// TestIsolateLeader: the isolated leader keeps running with its sockets open, but
// nothing reaches it or leaves it — not its heartbeats, so it is fenced and another
// replica leads; not its clients' requests, which time out. Healed, it learns it was
// fenced and rejoins the ISR.
func TestIsolateLeader(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2"}))
	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(2*time.Second), kgo.RequestTimeoutOverhead(time.Second))
	send := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	send("before")
	c.WaitISR("orders", 0, 0, 1, 2)
	old := c.WaitLeader("orders", 0)
	raw := dialRaw(t, c.Addrs()[old])
	if err := raw.ask(30 * time.Second); err != nil {
		t.Fatalf("before the cut: %v", err)
	}

	c.Isolate(old)
	if err := raw.ask(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("a request to the isolated broker: %v, want a timeout", err)
	}
	send("during")
	leader := c.WaitLeader("orders", 0)
	if leader == old || !fenced(c, leader, old) {
		t.Fatalf("leader %d after isolating %d (fenced: %v)", leader, old, fenced(c, leader, old))
	}
	if !c.Running(old) {
		t.Fatal("the isolated broker stopped")
	}
	if got := c.Controls().Links(); len(got) != 6 {
		t.Fatalf("Links() = %+v, want %d's three links cut both ways", got, old)
	}

	c.Heal(old)
	if got := c.Controls().Links(); len(got) != 0 {
		t.Fatalf("Links() = %+v after Heal", got)
	}
	// The request held by the cut is answered now, on the same connection.
	if err := raw.answer(30 * time.Second); err != nil {
		t.Fatalf("the held request after Heal: %v", err)
	}
	c.WaitISR("orders", 0, 0, 1, 2)
	c.WaitHighWatermark("orders", 0, 2)
	if got := consume(t, c, "orders", 2); !slices.Equal(got, []string{"before", "during"}) {
		t.Fatalf("consumed %v", got)
	}
}

// TestCutFollowerFromLeader: a follower cut from its leader only (it still reaches the
// controller, so it is not fenced) drops out of the ISR after replica.lag.time.max.ms;
// acks=all produces go on; healed, it catches up and rejoins.
func TestCutFollowerFromLeader(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithSeparateControllers(1),
		kafkatest.WithTopic("orders", 1, 3),
		kafkatest.WithBrokerConfig(map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "1000"}))
	produce(t, c, "orders", "before")
	c.WaitISR("orders", 0, 0, 1, 2)
	leader := c.WaitLeader("orders", 0)
	f := (leader + 1) % 3

	c.Cut(f, leader)
	produce(t, c, "orders", "during")
	c.WaitISR("orders", 0, without([]int32{0, 1, 2}, f)...)
	if fenced(c, leader, f) {
		t.Fatalf("broker %d was fenced: it still reaches the controller", f)
	}
	c.Heal()
	c.WaitISR("orders", 0, 0, 1, 2)
	c.WaitHighWatermark("orders", 0, 2)
	if r := c.Partition("orders", 0).ReplicaStates[slices.Index(c.Partition("orders", 0).Replicas, f)]; r.LogEndOffset != 2 {
		t.Fatalf("follower %+v after Heal, want LEO 2", r)
	}
}

// TestCutOneWayFromBrokerToClients: with only the broker → clients direction cut, a
// produce reaches the leader and is written, but its answer never reaches the client,
// which times out; the other way round nothing arrives at all.
func TestCutOneWayFromBrokerToClients(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithTopic("t", 1, 1))
	cl := client(t, c, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("warm")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	c.CutOneWay(0, kafkatest.Clients)
	pctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "t", Value: []byte("unanswered")}).FirstErr(); err == nil {
		t.Fatal("a produce was answered through a cut")
	}
	c.WaitHighWatermark("t", 0, 2) // written all the same

	c.Heal()
	c.CutOneWay(kafkatest.Clients, 0)
	raw := dialRaw(t, c.Addrs()[0])
	if err := raw.ask(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("a request through a cut: %v, want a timeout", err)
	}
	if hw := c.Partition("t", 0).ReplicaStates[0].HighWatermark; hw > 3 {
		t.Fatalf("high watermark %d", hw)
	}
	c.Heal(kafkatest.Clients)
	if err := raw.answer(30 * time.Second); err != nil {
		t.Fatalf("the held request after Heal: %v", err)
	}
}

// TestDelay: an added delay is paid each way — a client's request and answer take
// twice the delay more; a follower's fetch and its answer too, so an acks=all produce
// waits at least twice the delay on the follower (it is in the ISR).
func TestDelay(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(2), kafkatest.WithCombinedVoters(1), kafkatest.WithTopic("t", 1, 2))
	produce(t, c, "t", "warm")
	c.WaitISR("t", 0, 0, 1)
	leader := c.WaitLeader("t", 0)
	raw := dialRaw(t, c.Addrs()[leader])

	const d = 150 * time.Millisecond
	c.Delay(kafkatest.Clients, leader, d)
	start := time.Now()
	if err := raw.ask(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*d {
		t.Fatalf("a round trip took %v with %v added each way", took, d)
	}
	c.Delay(kafkatest.Clients, leader, 0)
	c.DelayOneWay(leader, kafkatest.Clients, d) // the answers only
	start = time.Now()
	if err := raw.ask(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("a round trip took %v with %v added to the answer", took, d)
	}
	if got := c.Controls().Links(); len(got) != 1 || got[0] != (kafkatest.LinkFault{From: leader, To: kafkatest.Clients, Delay: d}) {
		t.Fatalf("Links() = %+v", got)
	}
	c.DelayOneWay(leader, kafkatest.Clients, 0)

	cl := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.Delay(0, 1, d)
	start = time.Now()
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*d {
		t.Fatalf("an acks=all produce took %v with %v between leader and follower", took, d)
	}
	c.Heal()
	c.WaitHighWatermark("t", 0, 3)
}

// TestNetworkControlsRefuse: links need two known, different ends.
func TestNetworkControlsRefuse(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	k := c.Controls()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{k.Cut(0, 0), "Cut(0, 0): a link needs two different ends"},
		{k.Cut(0, 5), "no node 5"},
		{k.Isolate(7), "no node 7"},
		{k.Delay(0, kafkatest.Clients, -time.Second), "negative"},
		{k.Heal(4), "no node 4"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
}
