package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafkad/gokafkad/protocol"
)

// TestProduceV13: v13 (KIP-516), as kmsg encodes it over a socket, names topics by ID
// and is answered with IDs; an ID the broker does not know is UNKNOWN_TOPIC_ID, each
// unknown ID answered on its own (two are not one partition named twice); the record
// lands in the topic the ID names. franz-go produces and consumes with it.
func TestProduceV13(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("v13"),
		kgo.ConsumeTopics("v13"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("kgo")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	id := [16]byte(b.Image().Topics["v13"].ID)

	c := dialRaw(t, b.Addr(), "v13")
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 13, -1, 5000
	for _, tid := range [][16]byte{id, {1}, {2}} {
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, protocol.CodecNone, [][]byte{nil}, [][]byte{[]byte("raw")})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := c.roundTrip(req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics answered, want 3: %+v", len(resp.Topics), resp.Topics)
	}
	for i, want := range []error{nil, kerr.UnknownTopicID, kerr.UnknownTopicID} {
		rt := resp.Topics[i]
		if rt.TopicID != req.Topics[i].TopicID || len(rt.Partitions) != 1 {
			t.Fatalf("topic %d answered as %+v", i, rt)
		}
		if err := kerr.ErrorForCode(rt.Partitions[0].ErrorCode); err != want {
			t.Errorf("topic %d: %v, want %v", i, err, want)
		}
	}
	if p := resp.Topics[0].Partitions[0]; p.BaseOffset != 1 {
		t.Errorf("raw v13 record written at %d, want 1", p.BaseOffset)
	}

	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "kgo" || got[1] != "raw" {
		t.Fatalf("read %q, want kgo then raw", got)
	}
}
