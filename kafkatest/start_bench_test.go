package kafkatest_test

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// The start-up benchmarks measure what a test pays for a cluster: NewCluster with a
// seed topic of one partition with a replica on every broker, the first acks=all
// produce to it acknowledged, and the cluster closed.
func BenchmarkStart1Broker(b *testing.B)  { benchmarkStarts(b, 1) }
func BenchmarkStart3Brokers(b *testing.B) { benchmarkStarts(b, 3) }

func benchmarkStarts(b *testing.B, brokers int) {
	b.Run("disk", func(b *testing.B) { benchmarkStart(b, brokers) })
	b.Run("memory", func(b *testing.B) { benchmarkStart(b, brokers, kafkatest.WithMemoryLogs()) })
}

func benchmarkStart(b *testing.B, brokers int, opts ...kafkatest.Option) {
	b.ReportAllocs()
	var took []time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		iter := &iterTB{B: b}
		startAndProduce(iter, brokers, opts...)
		iter.cleanup()
		took = append(took, time.Since(t0))
	}
	// The median as well as the mean (ns/op): one slow start (a slow fsync, a lost
	// first Raft message) moves the mean far more than a user notices it.
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
	// The process's CPU time (every goroutine, user and system) per start: what a
	// start costs on a machine that is not also busy with something else.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(took)), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startAndProduce(tb *iterTB, brokers int, opts ...kafkatest.Option) {
	c := kafkatest.NewCluster(tb, append([]kafkatest.Option{kafkatest.WithBrokers(brokers), kafkatest.WithTopic("t", 1, int16(brokers))}, opts...)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		tb.Fatalf("first produce: %v", err)
	}
}

// iterTB is a kafkatest.TB whose cleanups and temporary directories end with one
// benchmark iteration rather than with the whole benchmark, so clusters do not pile up.
type iterTB struct {
	*testing.B
	cleanups []func()
}

func (t *iterTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *iterTB) TempDir() string {
	dir, err := os.MkdirTemp("", "kafkatest-bench-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *iterTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
