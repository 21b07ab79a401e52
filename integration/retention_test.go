package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/server"
	"github.com/gokafkad/gokafkad/storage"
)

// smallSegments makes every log roll at 4 KiB (below Kafka's 1 MiB minimum for
// segment.bytes, which only a test may want) and checks retention every 50 ms.
func smallSegments(c *server.Config) {
	Props("log.retention.check.interval.ms", "50")(c)
	c.LogConfigHook = func(lc *storage.LogConfig) { lc.SegmentBytes = 4096 }
}

// earliest returns partition 0's log start offset as ListOffsets(-2) reports it.
func earliest(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	offs, err := adm.ListStartOffsets(Ctx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Offset
}

func TestRetentionMovesLogStartOffset(t *testing.T) {
	for _, tc := range []struct{ name, key, value string }{
		{"retention.ms", "retention.ms", "1"},
		{"retention.bytes", "retention.bytes", "8192"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := StartBroker(t, smallSegments)
			adm := b.Admin()
			ctx := Ctx(t, 30*time.Second)
			topic := "ret-" + tc.key
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
			produceSeq(t, cl, topic, 0, 400) // ~16 KiB in several 4 KiB segments
			if got := earliest(t, adm, topic); got != 0 {
				t.Fatalf("log start offset %d before retention applies, want 0", got)
			}
			rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.key, Value: &tc.value}}, topic)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := rs.On(topic, nil); r.Err != nil {
				t.Fatal(r.Err)
			}
			WaitFor(t, 10*time.Second, "retention to delete old segments", func() bool { return earliest(t, adm, topic) > 0 })
			start := earliest(t, adm, topic)
			// What is left is readable from the new start, and nothing before it. (With
			// retention.ms every segment expires, the active one too: Kafka rolls a new
			// one and the log is empty.)
			if start < 400 {
				recs := consumeN(t, b.Addr(), topic, int(400-start))
				if recs[0].Offset != start {
					t.Fatalf("first record read at offset %d, want the log start offset %d", recs[0].Offset, start)
				}
			}
			if end := listEnd(t, cl, topic); end != 400 {
				t.Fatalf("log end offset %d after retention, want 400", end)
			}
		})
	}
}
