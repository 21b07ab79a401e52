package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafkad/gokafkad/kafkatest"
)

// The test-clusters scenario: what a test pays for a cluster. In process, a kafkatest
// cluster (memory logs) beside franz-go's kfake, each started with one topic of one
// partition on every broker, its first acks=all produce acknowledged and the cluster
// closed, inside the bench's process; and `gokafkad dev --brokers 3` from exec to its
// first acks=all produce to a topic of replication factor 3, beside Apache Kafka's
// three-broker deployment from the start of its controller to the same (measured
// when the three scenario starts it: startThreeSecured).

const kfakeKind = "kfake"

// inprocStarts is how many in-process starts one round makes of each kind; the round's
// figure is their median.
const inprocStarts = 20

// Rows of the test-clusters table.
const (
	rowInproc1 = "in-process cluster, 1 broker: start, first acks=all produce, close (median of 20 starts a round)"
	rowInproc3 = "in-process cluster, 3 brokers (RF 3 for gokafkad): start, first acks=all produce, close (median of 20 starts a round)"
	rowDev3    = "three brokers from exec to the first acks=all produce to a new topic of RF 3: `gokafkad dev --brokers 3` beside Kafka's controller and three brokers"
)

func (b *bench) testClusters() error {
	for r := 1; r <= *rounds; r++ {
		for _, n := range []int{1, 3} {
			row := rowInproc1
			if n == 3 {
				row = rowInproc3
			}
			for _, kind := range []string{gokafkad, kfakeKind} {
				d, err := inprocStartMedian(kind, n)
				if err != nil {
					return fmt.Errorf("%s in-process start of %d: %w", kind, n, err)
				}
				b.rep.setTest(row, kind, ms(d))
			}
		}
		var durs []time.Duration
		for range *starts {
			d, err := devStart(b.dir("gokafkad-dev"))
			if err != nil {
				return err
			}
			raw("gokafkad dev --brokers 3: first acks=all produce after %.1f ms", ms(d))
			durs = append(durs, d)
		}
		slices.Sort(durs)
		b.rep.setTest(rowDev3, gokafkad, ms(durs[len(durs)/2]))
	}
	return nil
}

// inprocStartMedian is the median of inprocStarts starts of an in-process cluster of
// kind with n brokers.
func inprocStartMedian(kind string, n int) (time.Duration, error) {
	var took []time.Duration
	for range inprocStarts {
		d, err := inprocStart(kind, n)
		if err != nil {
			return 0, err
		}
		took = append(took, d)
	}
	slices.Sort(took)
	return took[len(took)/2], nil
}

// inprocStart starts one in-process cluster, produces its first record with acks=all
// and closes it, and returns how long that took.
func inprocStart(kind string, n int) (_ time.Duration, err error) {
	tb := &benchTB{}
	defer tb.cleanup()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(benchFatal)
			if !ok {
				panic(r)
			}
			err = errors.New(string(f))
		}
	}()
	t0 := time.Now()
	var seeds []string
	switch kind {
	case gokafkad:
		c := kafkatest.NewCluster(tb, kafkatest.WithBrokers(n), kafkatest.WithTopic("t", 1, int16(n)), kafkatest.WithMemoryLogs())
		seeds = c.Addrs()
	case kfakeKind:
		c, err := kfake.NewCluster(kfake.NumBrokers(n), kfake.SeedTopics(1, "t"))
		if err != nil {
			return 0, err
		}
		tb.Cleanup(c.Close)
		seeds = c.ListenAddrs()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	cancel()
	cl.Close()
	tb.cleanup()
	if err != nil {
		return 0, fmt.Errorf("first produce: %w", err)
	}
	return time.Since(t0), nil
}

// devStart runs `gokafkad dev --brokers 3` and returns the time from exec to the first
// acks=all produce to a new topic of replication factor 3, as startThreeSecured
// measures Kafka's three brokers.
func devStart(dir string) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	port, err := freePorts(3)
	if err != nil {
		return 0, err
	}
	// Its data in a temporary directory of its own, removed when it stops, as a
	// user runs it.
	cmd := exec.Command(gokafkadBin, "dev", "--brokers", "3", "--port", strconv.Itoa(port), "--http", "127.0.0.1:0")
	cmd.Dir = dir
	c := &cluster{kind: gokafkad, dir: dir}
	for i := range 3 {
		c.seeds = append(c.seeds, net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
	}
	t0 := time.Now()
	n, err := launch(cmd)
	if err != nil {
		return 0, err
	}
	c.brokers = []*node{n}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The port first (as startToFirstAck), so that the client's reconnect backoff
	// does not count.
	for {
		conn, err := net.DialTimeout("tcp", c.seeds[0], 50*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-n.done:
			return 0, fmt.Errorf("gokafkad dev exited at start (log %s)", n.log)
		default:
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("gokafkad dev did not listen: %v", err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := firstAcksAll(ctx, c, "bench-ready"); err != nil {
		return 0, fmt.Errorf("gokafkad dev: %w", err)
	}
	return time.Since(t0), nil
}

// firstAcksAll creates topic (one partition, replication factor 3) and produces to it
// with acks=all until a record is acknowledged. Its retries wait 1 ms, doubling up to
// 20 ms (createTopicN's 100 ms would be most of a fast start; a fixed 1 ms would spin
// beside a JVM's seconds of start-up, slowing what it measures).
func firstAcksAll(ctx context.Context, c *cluster, topic string) error {
	backoff := func(n int) time.Duration { return min(time.Millisecond<<min(n, 5), 20*time.Millisecond) }
	cl, err := kgo.NewClient(c.clientOpts(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(backoff))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for try := 0; ; try++ {
		r, err := adm.CreateTopic(ctx, 1, 3, nil, topic)
		if err == nil {
			err = r.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create %s on %s: %v", topic, c.kind, err)
		}
		time.Sleep(backoff(try)) // brokers still registering
	}
	for {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("ready")}).FirstErr()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("three brokers did not take acks=all writes: %v", err)
		}
	}
}

// freePorts finds n consecutive free loopback ports (gokafkad dev puts broker i on
// port+i) and returns the first.
func freePorts(n int) (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := p+n-1 <= 65535
		for i := 1; i < n && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+i)))
			if ok = err == nil; ok {
				lns = append(lns, l)
			}
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports", n)
}

// benchTB is the kafkatest.TB of one in-process start: its cleanups and temporary
// directories end with the start; Fatalf panics with a benchFatal, which inprocStart
// recovers into an error.
type benchTB struct{ cleanups []func() }

type benchFatal string

func (t *benchTB) Helper()          {}
func (t *benchTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *benchTB) Fatalf(format string, args ...any) {
	panic(benchFatal(fmt.Sprintf(format, args...)))
}

func (t *benchTB) TempDir() string {
	dir, err := os.MkdirTemp("", "gokafkad-bench-kafkatest-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *benchTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
