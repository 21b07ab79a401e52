package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceN produces n records to topic (partition chosen by key) and fails the test on
// any error.
func produceN(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx := Ctx(t, 30*time.Second)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{
			Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}},
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeN reads n records of topic from the start and returns them.
func consumeN(t *testing.T, seed, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := NewClient(t, seed, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx := Ctx(t, 30*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s[%d]: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func TestProduceConsumeEveryCodecAndAcks(t *testing.T) {
	b := StartBroker(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	acks := map[string]kgo.Acks{"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks()}
	for cname, codec := range codecs {
		for aname, ack := range acks {
			t.Run(cname+"/acks="+aname, func(t *testing.T) {
				topic := "t-" + cname + "-" + aname
				opts := []kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(ack), kgo.AllowAutoTopicCreation()}
				if aname != "all" {
					opts = append(opts, kgo.DisableIdempotentWrite())
				}
				cl := b.Client(opts...)
				produceN(t, cl, topic, 100)
				recs := consumeN(t, b.Addr(), topic, 100)
				seen := map[string]bool{}
				for _, r := range recs {
					if want := "v" + string(r.Key[1:]); string(r.Value) != want {
						t.Fatalf("record %q has value %q, want %q", r.Key, r.Value, want)
					}
					if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
						t.Fatalf("record %q lost its header: %v", r.Key, r.Headers)
					}
					seen[string(r.Key)] = true
				}
				if len(seen) != 100 {
					t.Fatalf("got %d distinct records, want 100", len(seen))
				}
			})
		}
	}
}

// min.insync.replicas above a topic's replica count is capped at that count, as in
// Kafka 4 (Partition.effectiveMinIsr): a one-replica topic with min.insync.replicas=2
// still takes acks=all writes.
func TestAcksAllWithMinISRAboveReplicationFactor(t *testing.T) {
	b := StartBroker(t)
	ctx := Ctx(t, 20*time.Second)
	if _, err := b.Admin().CreateTopic(ctx, 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "capped-min-isr"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "capped-min-isr", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all on one replica with min.insync.replicas=2: %v, want it written as Kafka 4 does", err)
	}
}
