package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchV18: v18, as kmsg encodes it over a socket, reads records by topic ID as
// v17 does; the partition's HighWatermark field (KIP-1166) is not read on the broker
// listener, as in Kafka 4.4, so a low one changes nothing.
func TestFetchV18(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("v18"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	id := [16]byte(b.Image().Topics["v18"].ID)

	c := dialRaw(t, b.Addr(), "v18")
	for _, hw := range []int64{9223372036854775807, 0} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 18, 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.HighWatermark = 1<<20, hw
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v18 (high watermark %d): %+v", hw, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if resp.Topics[0].TopicID != id || p.ErrorCode != 0 || p.HighWatermark != 2 || len(p.RecordBatches) == 0 {
			t.Fatalf("v18 partition (high watermark %d): error %d, HW %d, %d record bytes", hw, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
}
