package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedTopicKeepsLastValuePerKey: a user topic with cleanup.policy=compact and
// 4 KiB segments, 10 keys overwritten 40 times each, then 200 records with keys of their
// own (so the overwritten ones leave the active segment, which is never cleaned): the
// cleaner brings a consumer from the beginning down to one record per key, each the
// key's last value at its original offset.
func TestCompactedTopicKeepsLastValuePerKey(t *testing.T) {
	b := StartBroker(t, smallSegments, Props("log.cleaner.backoff.ms", "50"))
	adm := b.Admin()
	ctx := Ctx(t, 60*time.Second)
	topic := "compacted"
	policy, ratio := "compact", "0.1"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &policy, "min.cleanable.dirty.ratio": &ratio}, topic); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	want := map[string]string{}
	wantOffset := map[string]int64{}
	produce := func(key, value string) {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(key), Value: []byte(value)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s=%s: %v", key, value, err)
		}
		want[key], wantOffset[key] = value, r.Offset
	}
	for i := 0; i < 400; i++ {
		produce(fmt.Sprintf("k%d", i%10), fmt.Sprintf("value-%04d-%s", i, "padding-padding-padding"))
	}
	for i := 0; i < 200; i++ {
		produce(fmt.Sprintf("f%d", i), fmt.Sprintf("filler-%04d-%s", i, "padding-padding-padding"))
	}
	end := listEnd(t, cl, topic)
	if end != 600 {
		t.Fatalf("log end offset %d, want 600", end)
	}
	var got []*kgo.Record
	WaitFor(t, 30*time.Second, "the cleaner to leave one record per key", func() bool {
		got = consumeFromStart(t, b.Addr(), topic, end)
		return len(got) == len(want)
	})
	for _, r := range got {
		k := string(r.Key)
		if string(r.Value) != want[k] || r.Offset != wantOffset[k] {
			t.Fatalf("key %s: value %q at %d, want %q at %d", k, r.Value, r.Offset, want[k], wantOffset[k])
		}
	}
}

// consumeFromStart reads topic from the start until the record before end.
func consumeFromStart(t *testing.T, seed, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl := NewClient(t, seed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx := Ctx(t, 30*time.Second)
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records: %v", len(out), err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestCommittedOffsetsSurviveCompaction: __consumer_offsets is compacted (4 KiB
// segments, 300 commits of one group), then the broker restarts and loads the group
// from the compacted log: the last commit is what the group has.
func TestCommittedOffsetsSurviveCompaction(t *testing.T) {
	b := StartBroker(t, smallSegments, Props("log.cleaner.backoff.ms", "50"))
	adm := b.Admin()
	ctx := Ctx(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 300; i++ {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: i, LeaderEpoch: -1})
		rs, err := adm.CommitOffsets(ctx, "g", os)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Error(); err != nil {
			t.Fatal(err)
		}
	}
	// ~28 KiB of commits; compacted, what is left is the active segment (< 4 KiB) and
	// the one record per key of the cleaned ones.
	WaitFor(t, 30*time.Second, "__consumer_offsets to be compacted", func() bool {
		var size int64
		for tp, l := range b.LogManager().Logs() {
			if tp.Topic == "__consumer_offsets" {
				size += l.Size()
			}
		}
		return size < 2*4096
	})
	b = b.Restart()
	adm = b.Admin()
	WaitFor(t, 30*time.Second, "the group's offsets after the restart", func() bool {
		fs, err := adm.FetchOffsets(ctx, "g")
		if err != nil || fs.Error() != nil {
			return false
		}
		o, ok := fs.Lookup("t", 0)
		return ok && o.At == 300
	})
}
