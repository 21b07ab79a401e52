package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestartLoadsManyPartitions: a broker with 500 partitions and
// num.recovery.threads.per.data.dir 1 or 4, killed (no clean shutdown: every log is
// recovered) and started again, then stopped cleanly and started again, serves every
// acknowledged record of every partition both times and takes further writes at the
// next offsets; DescribeConfigs reports the thread count as a static, read-only
// config.
func TestRestartLoadsManyPartitions(t *testing.T) {
	const n = 500
	records := func(p int) int { return 1 + p%3 }
	for _, threads := range []string{"1", "4"} {
		t.Run("threads="+threads, func(t *testing.T) {
			b := StartBroker(t, Props("num.recovery.threads.per.data.dir", threads))
			ctx := Ctx(t, 3*time.Minute)
			if _, err := b.Admin().CreateTopic(ctx, n, 1, nil, "many"); err != nil {
				t.Fatal(err)
			}
			produce := func(b *Broker, round int) {
				t.Helper()
				cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
				defer cl.Close()
				var recs []*kgo.Record
				for p := range n {
					for i := range records(p) {
						recs = append(recs, &kgo.Record{Topic: "many", Partition: int32(p), Value: fmt.Appendf(nil, "r%d-%d", round, i)})
					}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatalf("produce round %d: %v", round, err)
				}
			}
			// endOffsetsAre waits until every partition's end offset is rounds times
			// what a round writes (the restarted broker leads them again).
			endOffsetsAre := func(b *Broker, rounds int) {
				t.Helper()
				adm := b.Admin()
				WaitFor(t, 90*time.Second, "every partition's end offset after the restart", func() bool {
					offs, err := adm.ListEndOffsets(ctx, "many")
					if err != nil {
						return false
					}
					bad := 0
					offs.Each(func(o kadm.ListedOffset) {
						if o.Err != nil || o.Offset != int64(rounds*records(int(o.Partition))) {
							bad++
						}
					})
					return len(offs["many"]) == n && bad == 0
				})
			}
			produce(b, 0)

			addr, cfg := b.Addr(), b.cfg
			b.Broker.Kill()
			cfg.Listen = addr
			start := time.Now()
			b = startBroker(t, cfg)
			t.Logf("started after kill -9 in %v", time.Since(start))
			endOffsetsAre(b, 1)
			produce(b, 1)

			start = time.Now()
			b = b.Restart()
			t.Logf("restarted after a clean stop in %v", time.Since(start))
			endOffsetsAre(b, 2)

			rcs, err := b.Admin().DescribeBrokerConfigs(ctx, 1)
			if err != nil || len(rcs) != 1 {
				t.Fatal(err, rcs)
			}
			for _, c := range rcs[0].Configs {
				if c.Key == "num.recovery.threads.per.data.dir" {
					if c.MaybeValue() != threads || c.Source.String() != "STATIC_BROKER_CONFIG" {
						t.Errorf("DescribeConfigs: %s=%s (%s)", c.Key, c.MaybeValue(), c.Source)
					}
					return
				}
			}
			t.Error("DescribeConfigs does not list num.recovery.threads.per.data.dir")
		})
	}
}
