package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdlePartitionMemory: what an idle partition costs a broker in heap (issue 15:
// bounded per-partition memory). One broker, topics of 10 partitions created and each
// partition written once; the live heap after a GC, per partition, must stay small.
// 1,000 partitions by default; GOKAFKAD_HEAP_PARTITIONS=10000 for the figure,
// GOKAFKAD_HEAP_PROFILE=path writes the heap profile.
func TestIdlePartitionMemory(t *testing.T) {
	n := envInt(t, "GOKAFKAD_HEAP_PARTITIONS", 1000)
	if os.Getenv("GOKAFKAD_HEAP_PROFILE") != "" {
		defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
		runtime.MemProfileRate = 64 // every allocation of the partitions counted
	}
	topics := max(n/10, 1)
	b := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(n)*20*time.Millisecond)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "warm"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "warm", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("mem-%05d", i)
	}
	for i := 0; i < topics; i += 100 {
		res, err := adm.CreateTopics(ctx, 10, 1, nil, names[i:min(i+100, topics)]...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			// On a loaded machine kgo may retry a CreateTopics whose first try the
			// broker carried out after the client gave up on it: the topic exists.
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				t.Fatalf("create %s: %v", r.Topic, r.Err)
			}
		}
	}
	waitFor(t, time.Minute+time.Duration(n)*20*time.Millisecond, "every partition's log", func() bool { return len(b.LogManager().Logs()) >= topics*10+1 })
	created := liveHeap()
	recs := make([]*kgo.Record, 0, topics*10)
	for _, name := range names {
		for p := range 10 {
			recs = append(recs, &kgo.Record{Topic: name, Partition: int32(p), Value: []byte("value")})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	written := liveHeap()
	parts := float64(topics * 10)
	t.Logf("%d partitions: live heap %d KiB before, +%.0f B per partition created, +%.0f B per partition written once",
		topics*10, before>>10, float64(created-before)/parts, float64(written-before)/parts)
	if path := os.Getenv("GOKAFKAD_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	const maxPerPartition = 64 << 10 // generous: the figure is logged; this catches a regression by a multiple
	if per := float64(written-before) / parts; per > maxPerPartition {
		t.Fatalf("%.0f bytes of heap per idle partition, want at most %d", per, maxPerPartition)
	}
}

// liveHeap is the heap in use after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
