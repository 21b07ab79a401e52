package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReq builds a Fetch for topic's partitions at offsets. franz-go sends it at the
// highest version both sides know (topic ids from v13), so it names the topic both ways.
func fetchReq(b *Broker, topic string, sessionID, epoch int32, maxWait int32, offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, 1, 1<<20
	req.SessionID, req.SessionEpoch = sessionID, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, b.Controller().Image().Topics[topic].ID
		for p, o := range offsets {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, o, 1<<20
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func doFetch(t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest, timeout time.Duration) *kmsg.FetchResponse {
	t.Helper()
	resp, err := req.RequestWith(Ctx(t, timeout), cl.Broker(1))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp
}

// answered lists the partitions in a fetch response with how many bytes of records.
func answered(resp *kmsg.FetchResponse) map[int32]int {
	out := map[int32]int{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = len(p.RecordBatches)
		}
	}
	return out
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 10*time.Second), 1, 1, nil, "lp"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl.ForceMetadataRefresh()

	// No data: the fetch waits out max wait and returns empty.
	start := time.Now()
	resp := doFetch(t, cl, fetchReq(b, "lp", 0, -1, 300, map[int32]int64{0: 0}), 10*time.Second)
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("empty fetch returned after %v, before its 300 ms max wait", el)
	}
	if n := answered(resp)[0]; n != 0 {
		t.Fatalf("empty fetch carried %d bytes", n)
	}

	// A fetch with a 60 s max wait is woken by a produce (the test would time out at
	// 15 s otherwise).
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		r, err := fetchReq(b, "lp", 0, -1, 60000, map[int32]int64{0: 0}).RequestWith(Ctx(t, 15*time.Second), cl.Broker(1))
		if err != nil {
			r = nil
		}
		done <- r
	}()
	WaitFor(t, 5*time.Second, "the fetch to be parked in the purgatory", func() bool { return b.ReplicaManager().Purgatory.Watched() == 1 })
	produceSeq(t, cl, "lp", 0, 1)
	r := <-done
	if r == nil {
		t.Fatal("long-poll fetch failed")
	}
	if n := answered(r)[0]; n == 0 {
		t.Fatal("woken fetch carried no records")
	}
}

func TestFetchSessions(t *testing.T) {
	b := StartBroker(t)
	if _, err := b.Admin().CreateTopic(Ctx(t, 10*time.Second), 2, 1, nil, "fs"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl.ForceMetadataRefresh()
	ctx := Ctx(t, 10*time.Second)
	for p := int32(0); p < 2; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fs", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Epoch 0 opens a session: a full answer.
	full := doFetch(t, cl, fetchReq(b, "fs", 0, 0, 0, map[int32]int64{0: 0, 1: 0}), 10*time.Second)
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch: error %v, session id %d; want a new session", kerr.ErrorForCode(full.ErrorCode), full.SessionID)
	}
	if got := answered(full); len(got) != 2 || got[0] == 0 || got[1] == 0 {
		t.Fatalf("full fetch answered %v, want both partitions with records", got)
	}
	id := full.SessionID

	// Epoch 1 moves both fetch positions past the data: the HWs did not change, so the
	// answer is empty.
	inc := doFetch(t, cl, fetchReq(b, "fs", id, 1, 0, map[int32]int64{0: 1, 1: 1}), 10*time.Second)
	if inc.ErrorCode != 0 || len(answered(inc)) != 0 {
		t.Fatalf("incremental fetch with nothing new: error %v, partitions %v; want none", kerr.ErrorForCode(inc.ErrorCode), answered(inc))
	}
	// New data on partition 1 only: epoch 2 names no partitions and gets just that one.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fs", Partition: 1, Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	inc = doFetch(t, cl, fetchReq(b, "fs", id, 2, 0, nil), 10*time.Second)
	if got := answered(inc); len(got) != 1 || got[1] == 0 {
		t.Fatalf("incremental fetch after a produce to partition 1 answered %v, want only partition 1 with records", got)
	}

	// Wrong epoch, unknown session, closed session.
	if r := doFetch(t, cl, fetchReq(b, "fs", id, 7, 0, nil), 10*time.Second); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("wrong epoch: %v, want INVALID_FETCH_SESSION_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := doFetch(t, cl, fetchReq(b, "fs", id+1, 1, 0, nil), 10*time.Second); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := doFetch(t, cl, fetchReq(b, "fs", id, -1, 0, map[int32]int64{0: 0}), 10*time.Second); r.ErrorCode != 0 || r.SessionID != 0 {
		t.Fatalf("closing fetch: error %v session %d, want a sessionless answer", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
	if r := doFetch(t, cl, fetchReq(b, "fs", id, 3, 0, nil), 10*time.Second); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
}
