package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestListOffsetsByTimestamp(t *testing.T) {
	b := StartBroker(t)
	adm := b.Admin()
	ctx := Ctx(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ts"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// Offsets 0..9 with timestamps base+0s, +10s, ... ; offset 5 carries the largest.
	for i := range 10 {
		ts := base.Add(time.Duration(i) * 10 * time.Second)
		if i == 5 {
			ts = base.Add(30 * time.Minute)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ts", Value: []byte{byte(i)}, Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	lookup := func(name string, ms int64, wantOffset int64) {
		t.Helper()
		offs, err := adm.ListOffsetsAfterMilli(ctx, ms, "ts")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("ts", 0)
		if o.Err != nil || o.Offset != wantOffset {
			t.Errorf("%s: offset %d (%v), want %d", name, o.Offset, o.Err, wantOffset)
		}
	}
	lookup("before everything", base.Add(-time.Minute).UnixMilli(), 0)
	lookup("exactly the third record's timestamp", base.Add(20*time.Second).UnixMilli(), 2)
	lookup("between records", base.Add(25*time.Second).UnixMilli(), 3)
	lookup("after the last ordinary timestamp finds the late-stamped offset 5", base.Add(95*time.Second).UnixMilli(), 5)
	// kadm answers "after everything" with the end offset, as Kafka's -1 then latest.
	lookup("after everything", base.Add(2*time.Hour).UnixMilli(), 10)

	// Earliest, latest and max-timestamp, through raw requests.
	for _, tc := range []struct {
		name   string
		ts     int64
		offset int64
	}{{"earliest", -2, 0}, {"latest", -1, 10}, {"max timestamp", -3, 5}} {
		got := listOffsetAt(t, cl, "ts", tc.ts)
		if got != tc.offset {
			t.Errorf("%s: offset %d, want %d", tc.name, got, tc.offset)
		}
	}
}
