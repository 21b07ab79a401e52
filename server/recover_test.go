package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPanicInRequestIsRecovered makes handlers panic on a real broker, over real
// sockets: in the read loop (a request whose response has a top-level error code is
// answered UNKNOWN_SERVER_ERROR, one without is answered by closing the connection)
// and in a parked fetch's completion on the purgatory's timer goroutine. The broker
// counts each and keeps serving other clients. Before recovery existed, the first
// panic ended the process.
func TestPanicInRequestIsRecovered(t *testing.T) {
	testRequestHook = func(r *request) {
		if r.hdr.ClientID == "boom" {
			panic("test: handler panic")
		}
	}
	testDelayedHook = func(r *request) {
		if r.hdr.ClientID == "boom-later" {
			panic("test: delayed completion panic")
		}
	}
	t.Cleanup(func() { testRequestHook, testDelayedHook = nil, nil })
	b := startTestBroker(t, nil)

	// ListGroups has a top-level error code: answered.
	c := dialRaw(t, b.Addr(), "boom")
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	resp := c.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if resp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("ListGroups after a panic: error %d, want UNKNOWN_SERVER_ERROR", resp.ErrorCode)
	}
	// The connection goes on serving: the next request is read and answered.
	resp = c.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if resp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("second ListGroups: error %d, want UNKNOWN_SERVER_ERROR", resp.ErrorCode)
	}

	// Metadata has none: the connection is closed.
	c2 := dialRaw(t, b.Addr(), "boom")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c2.send(md)
	if !c2.closedByBroker(5 * time.Second) {
		t.Fatal("Metadata after a panic: connection still open, want it closed")
	}

	// A fetch parked in the purgatory whose completion panics (on the timer's
	// goroutine): answered UNKNOWN_SERVER_ERROR at the top level (v7+).
	produceConsume(t, b.Addr(), "t", 1, 20*time.Second)
	c3 := dialRaw(t, b.Addr(), "boom-later")
	f := kmsg.NewPtrFetchRequest()
	f.Version = 12
	f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = -1, 100, 1<<20, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 1, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fr := c3.roundTrip(f).(*kmsg.FetchResponse)
	if fr.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("parked fetch after a panic: error %d, want UNKNOWN_SERVER_ERROR", fr.ErrorCode)
	}

	if n := b.RecoveredPanics(); n != 4 {
		t.Fatalf("RecoveredPanics = %d, want 4", n)
	}
	// Honest clients are still served.
	produceConsume(t, b.Addr(), "t2", 10, 20*time.Second)
}
