package integration

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
	"github.com/gokafkad/gokafkad/protocol"
	"github.com/gokafkad/gokafkad/storage"
)

// TestCompressionTypeReplicated: with compression.type=zstd on an RF 3 topic, the
// leader stores an lz4 producer's batches as zstd and every follower holds the
// leader's bytes exactly; a consumer reads the records as produced.
func TestCompressionTypeReplicated(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3), kafkatest.WithTopic("ct", 1, 3),
		kafkatest.WithTopicConfig("ct", map[string]string{"compression.type": "zstd"}))
	const n = 50
	pr := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("ct"),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	ctx := Ctx(t, 30*time.Second)
	for i := range n {
		if err := pr.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d %s", i, bytes.Repeat([]byte("y"), 100))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	tp := storage.TopicPartition{Topic: "ct", Partition: 0}
	logBytes := func(id int32) []byte {
		p := c.Broker(id).ReplicaManager().Partition(tp)
		if p == nil || p.Log.LogEndOffset() < n {
			return nil
		}
		res, err := p.Log.Read(0, 16<<20, n, true)
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		buf := make([]byte, res.Slice.Len)
		if _, err := res.Slice.File.ReadAt(buf, res.Slice.Pos); err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		return buf
	}
	var leader []byte
	WaitFor(t, 30*time.Second, "every replica to hold the records", func() bool {
		var all [][]byte
		for _, id := range c.BrokerIDs() {
			b := logBytes(id)
			if b == nil {
				return false
			}
			all = append(all, b)
		}
		for _, b := range all[1:] {
			if !bytes.Equal(b, all[0]) {
				return false
			}
		}
		leader = all[0]
		return true
	})
	batches := 0
	if err := protocol.IterateBatches(leader, func(b protocol.Batch) error {
		batches++
		if b.Compression() != protocol.CodecZstd {
			return fmt.Errorf("batch at %d stored with codec %d, want zstd", b.BaseOffset(), b.Compression())
		}
		return b.CheckCRC()
	}); err != nil {
		t.Fatal(err)
	}
	if batches == 0 {
		t.Fatal("no batches stored")
	}

	cons := NewClient(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("ct"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(got), n)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if want := fmt.Sprintf("v%d %s", i, bytes.Repeat([]byte("y"), 100)); string(r.Value) != want {
			t.Fatalf("record %d = %q", i, r.Value)
		}
	}
}
