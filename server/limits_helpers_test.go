package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startTestBroker starts a single combined node on loopback ports with props set,
// closed when the test ends.
func startTestBroker(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	cfg := DefaultConfig(t.TempDir())
	if len(props) > 0 {
		var err error
		if cfg, err = cfg.WithProps(props); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// rawClient is a bare TCP connection speaking Kafka frames, for requests no stock
// client sends.
type rawClient struct {
	t        testing.TB
	nc       net.Conn
	clientID string
	corr     int32
}

func dialRaw(t testing.TB, addr, clientID string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, clientID: clientID}
}

// send writes req as one frame and returns its correlation id.
func (c *rawClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.clientID))
	b := f.AppendRequest(nil, req, c.corr)
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// readInto reads one response frame into resp (whose version must be set), within
// the connection's read deadline.
func (c *rawClient) readInto(resp kmsg.Response) error {
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.nc, b); err != nil {
		return err
	}
	b = b[4:] // correlation id
	if resp.IsFlexible() && resp.Key() != 18 {
		b = b[1:] // empty tagged fields of the v1 header
	}
	return resp.ReadFrom(b)
}

// roundTrip sends req and reads its response.
func (c *rawClient) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := c.readInto(resp); err != nil {
		c.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// closedByBroker reports whether the broker closed the connection (a read ends with
// EOF or a reset within the timeout).
func (c *rawClient) closedByBroker(timeout time.Duration) bool {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var b [1]byte
	for {
		_, err := c.nc.Read(b[:])
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, msg)
		case <-tick.C:
		}
	}
}

// produceConsume checks that an honest client is served: it produces n records to
// topic and reads them back, within timeout.
func produceConsume(t testing.TB, addr, topic string, n int, timeout time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("honest produce: %v", err)
		}
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("honest consume: got %d of %d records: %v", got, n, err)
		}
		got += fs.NumRecords()
	}
}
