package server

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The two bounds of share-group memory, over the wire: a share partition holds at
// most group.share.partition.max.record.locks records in flight (a fetch acquires
// no more until the start moves), and a broker keeps at most
// group.share.max.share.sessions share sessions (SHARE_SESSION_LIMIT_REACHED).
func TestShareGroupMemoryBounds(t *testing.T) {
	b := startShareBroker(t, map[string]string{
		"group.share.partition.max.record.locks": "100",
		"group.share.max.share.sessions":         "1",
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("mb"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := shareTestTopic(t, cl, "mb", 1)
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "a", 0, 0, id, 1)))

	// A second member's session is over the limit; the first one's is not replaced.
	if r := shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "b", 0, 0, id, 1)); r.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	produceN(t, cl, "mb", 0, 250)
	req := shareFetchReq("g", "a", 1, 5000, id, 1)
	req.MaxRecords, req.BatchSize = 1000, 1000
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, req)); !slices.Equal(got, []string{"0-99/1"}) {
		t.Fatalf("acquired %v, want the first 100 only", got)
	}
	// Nothing more while the window is full.
	req = shareFetchReq("g", "a", 2, 0, id, 1)
	req.MaxRecords = 1000
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, req)); len(got) != 0 {
		t.Fatalf("acquired %v past the bound", got)
	}
	// Accepting the first 50 lets 50 more in.
	req = shareFetchReq("g", "a", 3, 5000, id, 1, ackBatchOf(0, 49, 1))
	req.MaxRecords = 1000
	if got := acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, req)); !slices.Equal(got, []string{"100-149/1"}) {
		t.Fatalf("acquired %v after accepting 50", got)
	}
	// Closing a's session makes room for b's.
	acquiredOf(t, shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "a", -1, 0, id, 1)))
	if r := shareReq[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("g", "b", 0, 0, id, 1)); r.ErrorCode != 0 {
		t.Fatalf("b after a closed: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
