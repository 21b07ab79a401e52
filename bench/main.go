// Command bench measures gokafkad on this machine: produce and consume throughput with
// franz-go (random values, no compression), produce latency, time from process start
// to the first acknowledged produce, and resident memory idle and under load. It runs
// the same producer against franz-go's in-memory kfake for comparison.
//
//	go run ./bench [-records N] [-size BYTES] [-bin path/to/gokafkad]
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	records = flag.Int("records", 200000, "records per produce run")
	size    = flag.Int("size", 1024, "value size in bytes")
	bin     = flag.String("bin", "bin/gokafkad", "gokafkad binary")
	starts  = flag.Int("starts", 5, "start-up measurements")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name  string
	value string
}

func run() error {
	var out []result
	add := func(n, v string) {
		out = append(out, result{n, v})
		fmt.Printf("%-44s %s\n", n, v)
	}
	fmt.Printf("machine: %d cores; records=%d value=%dB, no compression\n\n", numCPU(), *records, *size)

	// Start-up: process start to first acknowledged produce.
	var startDurs []time.Duration
	var idleRSS int64
	for i := 0; i < *starts; i++ {
		p, d, err := startAndProduce()
		if err != nil {
			return err
		}
		startDurs = append(startDurs, d)
		if i == *starts-1 {
			idleRSS = rssKB(p.cmd.Process.Pid)
		}
		p.stop()
	}
	sort.Slice(startDurs, func(i, j int) bool { return startDurs[i] < startDurs[j] })
	add("start to first ack (median of "+strconv.Itoa(*starts)+")", fmt.Sprintf("%.1f ms", ms(startDurs[len(startDurs)/2])))
	add("idle RSS after first produce", fmt.Sprintf("%.1f MB", float64(idleRSS)/1024))

	p, _, err := startAndProduce()
	if err != nil {
		return err
	}
	defer p.stop()
	for _, acks := range []struct {
		name string
		acks kgo.Acks
	}{{"1", kgo.LeaderAck()}, {"all", kgo.AllISRAcks()}} {
		var peak atomic.Int64
		stop := sampleRSS(p.cmd.Process.Pid, &peak)
		r, err := produce(p.addr, "bench-acks-"+acks.name, acks.acks)
		stop()
		if err != nil {
			return err
		}
		add("gokafkad produce acks="+acks.name, r.String())
		add("gokafkad RSS peak during produce acks="+acks.name, fmt.Sprintf("%.1f MB", float64(peak.Load())/1024))
	}
	cr, err := consume(p.addr, "bench-acks-1")
	if err != nil {
		return err
	}
	add("gokafkad consume", cr)

	// Three brokers (and one controller): replication factor 3, min.insync.replicas=2,
	// acks=all, idempotent producer.
	cl3, err := startCluster3()
	if err != nil {
		return err
	}
	r3, err := produce(cl3.seeds, "bench-rf3", kgo.AllISRAcks())
	if err != nil {
		cl3.stop()
		return err
	}
	add("gokafkad 3 brokers RF3 min ISR 2 acks=all", r3.String())
	usable, election, err := cl3.controlPlane()
	cl3.stop()
	if err != nil {
		return err
	}
	add("topic created → led on every broker", fmt.Sprintf("%.1f ms", ms(usable)))
	add("leader killed → new leader in metadata", fmt.Sprintf("%.0f ms (broker.session.timeout.ms 9000 + heartbeat 2000)", ms(election)))

	// kfake, in memory, same producer.
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bench-acks-1"))
	if err != nil {
		return err
	}
	r, err := produce(kf.ListenAddrs()[0], "bench-acks-1", kgo.LeaderAck())
	kf.Close()
	if err != nil {
		return err
	}
	add("kfake (in memory) produce acks=1", r.String())
	return nil
}

type proc struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	os.RemoveAll(p.dir)
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startAndProduce starts gokafkad and returns once one record is acknowledged, with
// the time that took from exec. The client does not linger (franz-go waits 10 ms by
// default to batch), so the figure is the broker's.
func startAndProduce() (*proc, time.Duration, error) {
	dir, err := os.MkdirTemp("", "gokafkad-bench")
	if err != nil {
		return nil, 0, err
	}
	port, cport := freePort(), freePort()
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.voters=1@127.0.0.1:%d
log.dirs=%s
`, port, cport, port, cport, filepath.Join(dir, "data"))
	if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(props), 0o644); err != nil {
		return nil, 0, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	cmd := exec.Command(*bin, filepath.Join(dir, "server.properties"))
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	p := &proc{cmd: cmd, addr: addr, dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Wait for the port first so the client's own reconnect backoff does not count.
	for {
		c, err := net.DialTimeout("tcp", addr, 50*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if ctx.Err() != nil {
			p.stop()
			return nil, 0, fmt.Errorf("gokafkad did not listen: %v", err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "first", Value: []byte("x")}).FirstErr(); err != nil {
		p.stop()
		return nil, 0, err
	}
	return p, time.Since(t0), nil
}

type prodResult struct {
	mbps          float64
	recsPerSec    float64
	p50, p99, max time.Duration
}

func (r prodResult) String() string {
	return fmt.Sprintf("%7.1f MB/s %9.0f rec/s  p50 %.2f ms  p99 %.2f ms", r.mbps, r.recsPerSec, ms(r.p50), ms(r.p99))
}

func produce(addr, topic string, acks kgo.Acks) (prodResult, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(100000), kgo.DefaultProduceTopic(topic)}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return prodResult{}, err
	}
	defer cl.Close()
	ctx := context.Background()
	// Warm up: metadata and connections.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		return prodResult{}, err
	}
	values := make([][]byte, 1024)
	for i := range values {
		values[i] = make([]byte, *size)
		rand.Read(values[i])
	}
	lat := make([]time.Duration, *records)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	wg.Add(*records)
	start := time.Now()
	for i := 0; i < *records; i++ {
		t := time.Now()
		i := i
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(t)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if e, _ := firstErr.Load().(error); e != nil {
		return prodResult{}, e
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := float64(*records)
	return prodResult{
		mbps:       n * float64(*size) / el.Seconds() / 1e6,
		recsPerSec: n / el.Seconds(),
		p50:        lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1],
	}, nil
}

func consume(addr, topic string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := *records + 1
	got, bytes := 0, 0
	start := time.Now()
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return "", fmt.Errorf("consumed %d of %d: %v", got, want, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return "", errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) { got++; bytes += len(r.Value) })
	}
	el := time.Since(start)
	return fmt.Sprintf("%7.1f MB/s %9.0f rec/s", float64(bytes)/el.Seconds()/1e6, float64(got)/el.Seconds()), nil
}

func sampleRSS(pid int, peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if r := rssKB(pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cluster3 is one controller and three brokers as processes.
type cluster3 struct {
	procs []*exec.Cmd
	dir   string
	seeds string
}

func (c *cluster3) stop() {
	for _, p := range c.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		p.Wait()
	}
	os.RemoveAll(c.dir)
}

// startCluster3 starts node 100 as the controller and brokers 1..3, with
// default.replication.factor=3 and min.insync.replicas=2, and waits until a
// replicated topic can be written.
func startCluster3() (*cluster3, error) {
	dir, err := os.MkdirTemp("", "gokafkad-bench3")
	if err != nil {
		return nil, err
	}
	c := &cluster3{dir: dir}
	cport := freePort()
	voters := fmt.Sprintf("100@127.0.0.1:%d", cport)
	var seeds []string
	start := func(id int, props string) error {
		path := filepath.Join(dir, fmt.Sprintf("node-%d.properties", id))
		common := fmt.Sprintf("node.id=%d\ncontroller.quorum.voters=%s\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\nlog.dirs=%s\ndefault.replication.factor=3\nmin.insync.replicas=2\n",
			id, voters, filepath.Join(dir, fmt.Sprintf("data-%d", id)))
		if err := os.WriteFile(path, []byte(common+props), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(*bin, path)
		if err := cmd.Start(); err != nil {
			return err
		}
		c.procs = append(c.procs, cmd)
		return nil
	}
	if err := start(100, fmt.Sprintf("process.roles=controller\nlisteners=CONTROLLER://127.0.0.1:%d\n", cport)); err != nil {
		c.stop()
		return nil, err
	}
	for id := 1; id <= 3; id++ {
		port := freePort()
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", port))
		if err := start(id, fmt.Sprintf("process.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:%d\nadvertised.listeners=PLAINTEXT://127.0.0.1:%d\n", port, port)); err != nil {
			c.stop()
			return nil, err
		}
	}
	c.seeds = strings.Join(seeds, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.AllowAutoTopicCreation())
	if err != nil {
		c.stop()
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bench-rf3", Value: []byte("warm")}).FirstErr()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			c.stop()
			return nil, fmt.Errorf("3-broker cluster did not take writes: %v", err)
		}
	}
}

// controlPlane measures, on the running cluster, how long a created topic takes to have
// a leader in every broker's metadata, and how long after a SIGKILL of a partition's
// leader another broker reports a new leader (Kafka's defaults: fencing after
// broker.session.timeout.ms of silence).
func (c *cluster3) controlPlane() (usable, election time.Duration, err error) {
	seeds := strings.Split(c.seeds, ",")
	var per []*kgo.Client
	for _, s := range seeds {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s))
		if err != nil {
			return 0, 0, err
		}
		defer cl.Close()
		per = append(per, cl)
	}
	leaderOn := func(cl *kgo.Client, topic string) int32 {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return -1
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
			return -1
		}
		return resp.Topics[0].Partitions[0].Leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := kadm.NewClient(per[0]).CreateTopic(ctx, 1, 3, nil, "bench-usable"); err != nil {
		return 0, 0, err
	}
	for _, cl := range per {
		for leaderOn(cl, "bench-usable") < 0 {
			if ctx.Err() != nil {
				return 0, 0, ctx.Err()
			}
		}
	}
	usable = time.Since(start)

	old := leaderOn(per[0], "bench-usable")
	if old < 1 || old > 3 {
		return usable, 0, fmt.Errorf("no leader for bench-usable")
	}
	c.procs[old].Process.Kill() // procs[0] is the controller, procs[i] broker i
	killed := time.Now()
	other := per[old%3] // a broker that stays up
	for {
		if l := leaderOn(other, "bench-usable"); l >= 1 && l != old {
			return usable, time.Since(killed), nil
		}
		if ctx.Err() != nil {
			return usable, 0, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
}
