package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsV11: v11's earliest pending upload (-6, KIP-1023) and v9's latest
// tiered (-5), as kmsg encodes them over a socket, answer offset, timestamp and leader
// epoch -1 with no error, as Kafka 4.4 does with remote storage off; earliest and
// latest still answer the log start and the high watermark, through kadm too.
func TestListOffsetsV11(t *testing.T) {
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("v11"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	c := dialRaw(t, b.Addr(), "v11")
	for _, tc := range []struct {
		version         int16
		timestamp       int64
		offset          int64
		epochIsMinusOne bool
	}{
		{11, -6, -1, true},
		{9, -5, -1, true},
		{11, -5, -1, true},
		{11, -2, 0, false},
		{11, -1, 3, false},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = tc.version
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "v11"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = tc.timestamp
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d %d: %+v", tc.version, tc.timestamp, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != tc.offset || p.Timestamp != -1 || (p.LeaderEpoch == -1) != tc.epochIsMinusOne {
			t.Errorf("v%d timestamp %d: %+v, want offset %d", tc.version, tc.timestamp, p, tc.offset)
		}
	}

	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "v11")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup("v11", 0); !ok || o.Err != nil || o.Offset != 3 {
		t.Fatalf("kadm end offset: %+v", o)
	}
}
