// Package kfakebench measures kafkatest's start-up beside franz-go's kfake, in a
// module of its own so that kfake stays out of gokafkad's dependencies:
//
//	cd kafkatest/kfakebench && go test -run '^$' -bench . -count 5
//
// Each iteration starts a cluster with one topic of one partition (replicated to
// every broker where there is replication), produces one record with acks=all through
// a franz-go client, and closes both.
package kfakebench

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
)

func BenchmarkStart1Broker(b *testing.B)  { benchmarkStarts(b, 1) }
func BenchmarkStart3Brokers(b *testing.B) { benchmarkStarts(b, 3) }

func benchmarkStarts(b *testing.B, brokers int) {
	b.Run("gokafkad-memory", func(b *testing.B) {
		loop(b, func(tb *iterTB) []string {
			c := kafkatest.NewCluster(tb, kafkatest.WithBrokers(brokers), kafkatest.WithTopic("t", 1, int16(brokers)), kafkatest.WithMemoryLogs())
			return c.Addrs()
		})
	})
	b.Run("gokafkad-disk", func(b *testing.B) {
		loop(b, func(tb *iterTB) []string {
			c := kafkatest.NewCluster(tb, kafkatest.WithBrokers(brokers), kafkatest.WithTopic("t", 1, int16(brokers)))
			return c.Addrs()
		})
	})
	b.Run("kfake", func(b *testing.B) {
		loop(b, func(tb *iterTB) []string {
			c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(1, "t"))
			if err != nil {
				tb.Fatalf("kfake: %v", err)
			}
			tb.Cleanup(c.Close)
			return c.ListenAddrs()
		})
	})
}

// loop runs start (which returns the bootstrap servers) and the first acks=all produce
// per iteration, cleaning up before the next.
func loop(b *testing.B, start func(*iterTB) []string) {
	b.ReportAllocs()
	var took []time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		tb := &iterTB{B: b}
		addrs := start(tb)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			b.Fatalf("first produce: %v", err)
		}
		cancel()
		cl.Close()
		tb.cleanup()
		took = append(took, time.Since(t0))
	}
	// The median as well as the mean (ns/op): one slow start (a lost first Raft
	// message, a slow fsync) moves the mean far more than a user notices it.
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

// iterTB is a kafkatest.TB whose cleanups and temporary directories end with one
// iteration, so clusters do not pile up over a benchmark.
type iterTB struct {
	*testing.B
	cleanups []func()
}

func (t *iterTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *iterTB) TempDir() string {
	dir, err := os.MkdirTemp("", "kfakebench-")
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
