package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions sends ApiVersions on c and reports whether it was answered within d.
func apiVersions(c *rawClient, d time.Duration) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	c.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	c.nc.SetReadDeadline(time.Now().Add(d))
	return c.readInto(resp) == nil
}

// TestMaxConnectionsPerIP: over max.connections.per.ip (or its override for the
// address) a connection is closed as soon as it is accepted, as Kafka's
// TooManyConnectionsException; once one closes, a new one is served.
func TestMaxConnectionsPerIP(t *testing.T) {
	for _, props := range []map[string]string{
		{"max.connections.per.ip": "3"},
		{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:3,localhost:3"},
	} {
		b := startTestBroker(t, props)
		var cs []*rawClient
		for range 3 {
			c := dialRaw(t, b.Addr(), "c")
			if !apiVersions(c, 5*time.Second) {
				t.Fatalf("%v: a connection within the limit was not served", props)
			}
			cs = append(cs, c)
		}
		over := dialRaw(t, b.Addr(), "over")
		if !over.closedByBroker(5 * time.Second) {
			t.Fatalf("%v: the fourth connection from 127.0.0.1 was not closed", props)
		}
		cs[0].nc.Close()
		waitFor(t, 5*time.Second, "a connection to be served after one closed", func() bool {
			return apiVersions(dialRaw(t, b.Addr(), "again"), 2*time.Second)
		})
	}
}

// TestMaxConnectionsWaits: at max.connections (broker-wide or the listener's own
// listener.name.<listener>.max.connections) a new connection waits, unanswered, until
// another closes, as Kafka's acceptor blocks.
func TestMaxConnectionsWaits(t *testing.T) {
	for _, props := range []map[string]string{
		{"max.connections": "2"},
		{"listener.name.plaintext.max.connections": "2"},
	} {
		b := startTestBroker(t, props)
		c1, c2 := dialRaw(t, b.Addr(), "c1"), dialRaw(t, b.Addr(), "c2")
		if !apiVersions(c1, 5*time.Second) || !apiVersions(c2, 5*time.Second) {
			t.Fatalf("%v: connections within the limit were not served", props)
		}
		c3 := dialRaw(t, b.Addr(), "c3")
		if apiVersions(c3, 500*time.Millisecond) {
			t.Fatalf("%v: a third connection was served at max.connections=2", props)
		}
		c1.nc.Close()
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		c3.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := c3.readInto(resp); err != nil {
			t.Fatalf("%v: the waiting connection was not served once another closed: %v", props, err)
		}
	}
}

// TestMaxConnectionCreationRate: connections beyond max.connection.creation.rate per
// second are delayed, not refused.
func TestMaxConnectionCreationRate(t *testing.T) {
	b := startTestBroker(t, map[string]string{"max.connection.creation.rate": "5"})
	start := time.Now()
	for i := range 15 {
		c := dialRaw(t, b.Addr(), "c")
		if !apiVersions(c, 5*time.Second) {
			t.Fatalf("connection %d was not served", i)
		}
		c.nc.Close()
	}
	// 5 at once (a second's worth), then 5 a second: 10 more take 2 s.
	if d := time.Since(start); d < 1500*time.Millisecond || d > 5*time.Second {
		t.Fatalf("15 connections at 5 a second took %v, want about 2 s", d)
	}
}

// TestParkedFetchBoundedAndReleased: a fetch's max wait is bounded by
// connections.max.idle.ms (it asked for 24 days, it waits about a second), and a
// parked fetch leaves the purgatory as soon as its connection closes.
func TestParkedFetchBoundedAndReleased(t *testing.T) {
	b := startTestBroker(t, map[string]string{"connections.max.idle.ms": "1000"})
	produceConsume(t, b.Addr(), "t", 1, 20*time.Second)
	fetch := func() *kmsg.FetchRequest {
		f := kmsg.NewPtrFetchRequest()
		f.Version = 12
		f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = -1, 1<<31-1, 1<<20, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 1, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		return f
	}
	c := dialRaw(t, b.Addr(), "waiter")
	start := time.Now()
	if fr := c.roundTrip(fetch()).(*kmsg.FetchResponse); fr.ErrorCode != 0 {
		t.Fatalf("fetch error %d", fr.ErrorCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a fetch asking to wait 24 days was answered after %v, want about connections.max.idle.ms", d)
	}

	c2 := dialRaw(t, b.Addr(), "leaver")
	c2.send(fetch())
	waitFor(t, 5*time.Second, "the fetch to park", func() bool { return b.rm.Purgatory.Watched() == 1 })
	c2.nc.Close()
	waitFor(t, 500*time.Millisecond, "the closed connection's fetch to leave the purgatory", func() bool {
		return b.rm.Purgatory.Watched() == 0
	})
}

// TestQueuedMaxRequests: with queued.max.requests=1, a request is not handled while
// another one is (on any connection); it is once the first finishes.
func TestQueuedMaxRequests(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	testRequestHook = func(r *request) {
		if r.hdr.ClientID == "slow" {
			entered <- struct{}{}
			<-release
		}
	}
	t.Cleanup(func() { testRequestHook = nil })
	b := startTestBroker(t, map[string]string{"queued.max.requests": "1"})
	slow, other := dialRaw(t, b.Addr(), "slow"), dialRaw(t, b.Addr(), "other")
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	slow.send(lg)
	<-entered
	if apiVersions(other, 300*time.Millisecond) {
		close(release)
		t.Fatal("a request was handled while queued.max.requests=1 was taken")
	}
	close(release)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	other.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := other.readInto(resp); err != nil {
		t.Fatalf("the waiting request was not handled once the slot was free: %v", err)
	}
}
