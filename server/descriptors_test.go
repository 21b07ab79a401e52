package server

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countFDs is the number of this process's open descriptors (Linux: /proc/self/fd).
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestBrokerDescriptorsPerPartition: a broker with many partitions stays within a
// descriptor per partition (issue 15: 5,000 partitions on a broker used to exhaust
// the default 20,000-descriptor limit, four to five per partition). One broker, a
// topic of N partitions created with kadm, records produced to a sample of them and
// read back; the process's descriptors grow by at most 1.2 per partition plus a
// constant (the client's connections, the checkpoints being written). N is 1,000
// (GOKAFKAD_FD_PARTITIONS=5000 for the figure).
func TestBrokerDescriptorsPerPartition(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	n := 1000
	if s := os.Getenv("GOKAFKAD_FD_PARTITIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("GOKAFKAD_FD_PARTITIONS=%q", s)
		}
		n = v
	}
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Creating partitions costs more than linearly today (issue 15's other costs):
	// 1,000 take seconds, 5,000 minutes on a busy machine.
	budget := time.Minute + time.Duration(n)*100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	// A first topic brings up the client's connections and the broker's steady
	// descriptors (checkpoint files, metadata log) before the baseline is taken.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "warm"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "warm", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := countFDs(t)

	start := time.Now()
	// A creation slower than the request timeout is retried by kadm and then answered
	// TOPIC_ALREADY_EXISTS: the topic is there all the same.
	if _, err := adm.CreateTopic(ctx, int32(n), 1, nil, "many"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create %d partitions: %v", n, err)
	}
	waitFor(t, budget, "every partition's log created", func() bool { return len(b.LogManager().Logs()) >= n+1 })
	created := time.Since(start)
	atRest := countFDs(t)
	t.Logf("%d partitions created and led in %v: %d descriptors before, %d after (%.2f per partition)",
		n, created.Round(time.Millisecond), before, atRest, float64(atRest-before)/float64(n))
	pctx, pcancel := context.WithTimeout(context.Background(), budget)
	defer pcancel()
	// A sample of partitions, spread over the topic, gets records.
	var recs []*kgo.Record
	for p := 0; p < n; p += max(n/50, 1) {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: "many", Partition: int32(p), Value: []byte("value-" + strconv.Itoa(i))})
		}
	}
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %d partitions: %v", len(recs)/10, err)
	}
	after := countFDs(t)
	per := float64(after-before) / float64(n)
	t.Logf("after producing to %d of them: %d descriptors (%.2f per partition)", len(recs)/10, after, per)
	const slack = 50
	for _, got := range []int{atRest, after} {
		if limit := before + n*12/10 + slack; got > limit {
			t.Fatalf("%d descriptors for %d partitions (%.2f per partition; was %d before), want at most %d",
				got, n, float64(got-before)/float64(n), before, limit)
		}
	}
}
