// Command bench measures gokafkad and Apache Kafka side by side on this machine and
// writes BENCHMARKS.md: produce and consume throughput with a franz-go driver and with
// Kafka's own kafka-producer-perf-test / kafka-consumer-perf-test, produce and
// end-to-end latency at half the lower peak, time from process start to the first
// acknowledged produce, and resident memory idle and under load — for a single node
// and for three brokers with replication factor 3, min.insync.replicas=2, acks=all —
// and, on three brokers, the same over TLS, compressed batches, and how cost grows
// with the number of partitions.
//
//	go run ./bench [-only LIST] [-records N] [-size BYTES] [-bin path/to/gokafkad] [-kafka=false]
//
// -only takes a comma-separated list of scenarios (all when empty):
//
//	startup      exec to first acknowledged produce, idle memory
//	single       one combined node, acks=1 and acks=all (runs startup too)
//	three        three brokers, RF 3, acks=all, then leader election after a SIGKILL
//	tls          three brokers with every listener (clients, brokers, controller) on SSL
//	compression  three brokers, franz-go batches compressed with each of -codecs
//	partitions   three brokers, one topic of each of -partition-counts partitions
//
// -records sets the record count of every run (200,000; lower it to check that a
// scenario runs, not to measure); without -out nothing is written but a raw log in a
// temporary directory.
//
// Apache Kafka's jars come from Maven Central (compat/kafka/pom.xml) into the cache
// make compat uses.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	records      = flag.Int("records", 200000, "records per produce run")
	size         = flag.Int("size", 1024, "value size in bytes")
	partitions   = flag.Int("partitions", 3, "partitions per topic")
	binFlag      = flag.String("bin", "../bin/gokafkad", "gokafkad binary")
	repoFlag     = flag.String("repo", "..", "the gokafkad repository (for compat/kafka/pom.xml)")
	cacheFlag    = flag.String("cache", "", "cache for Kafka's jars (default ~/.cache/gokafkad-compat)")
	kafkaVersion = flag.String("kafka-version", "4.4.0", "Apache Kafka version to compare with")
	withKafka    = flag.Bool("kafka", true, "measure Apache Kafka too (false: gokafkad only)")
	starts       = flag.Int("starts", 5, "start-up measurements for gokafkad")
	kafkaStarts  = flag.Int("kafka-starts", 3, "start-up measurements for Apache Kafka")
	only         = flag.String("only", "", "comma-separated scenarios to run: startup, single (with startup), three, tls, compression, partitions (default all)")
	codecsFlag   = flag.String("codecs", "lz4,zstd", "franz-go batch codecs of the compression scenario (gzip, snappy, lz4, zstd)")
	countsFlag   = flag.String("partition-counts", "10,100,1000", "partition counts of the partitions scenario")
	outFlag      = flag.String("out", "", "write BENCHMARKS.md here (and results/raw.txt next to bench/)")
	readmeFlag   = flag.String("readme", "", "update the bench block of this README")
	pprofDir     = flag.String("pprof", "", "write gokafkad CPU profiles (one per node and scenario) into this directory")
	keep         = flag.Bool("keep", false, "keep the brokers' data and logs")
)

var gokafkadBin string

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var (
	rawMu   sync.Mutex
	rawFile *os.File
)

// raw appends to results/raw.txt: every tool's output and every result line.
func raw(format string, args ...any) {
	rawMu.Lock()
	defer rawMu.Unlock()
	if rawFile != nil {
		fmt.Fprintf(rawFile, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
	}
}

func progress(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func run() error {
	scenarios, err := parseOnly(*only)
	if err != nil {
		return err
	}
	codecs, err := parseCodecs(*codecsFlag)
	if err != nil {
		return err
	}
	counts, err := parseCounts(*countsFlag)
	if err != nil {
		return err
	}

	if gokafkadBin, err = filepath.Abs(*binFlag); err != nil {
		return err
	}
	repo, err := filepath.Abs(*repoFlag)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gokafkad-bench")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(work)
	} else {
		progress("work directory: %s", work)
	}
	rawPath := filepath.Join(work, "raw.txt")
	if *outFlag != "" {
		rawPath = filepath.Join(repo, "bench", "results", "raw.txt")
		if err := os.MkdirAll(filepath.Dir(rawPath), 0o755); err != nil {
			return err
		}
	}
	if rawFile, err = os.Create(rawPath); err != nil {
		return err
	}
	defer rawFile.Close()
	if *pprofDir != "" {
		if *pprofDir, err = filepath.Abs(*pprofDir); err != nil {
			return err
		}
		if err := os.MkdirAll(*pprofDir, 0o755); err != nil {
			return err
		}
	}

	ctx := context.Background()
	kinds := []string{gokafkad}
	if *withKafka {
		cache := *cacheFlag
		if cache == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				return err
			}
			cache = filepath.Join(base, "gokafkad-compat")
		}
		if err := fetchKafka(ctx, repo, cache, *kafkaVersion); err != nil {
			return err
		}
		kinds = append(kinds, kafka)
	}
	raw("machine: %s", machine())
	raw("settings: records=%d size=%d partitions=%d", *records, *size, *partitions)
	progress("%s\nrecords=%d value=%dB partitions=%d, no compression\n", machine(), *records, *size, *partitions)

	b := &bench{rep: &report{}, kinds: kinds, work: work}
	began := time.Now()
	if scenarios["single"] || scenarios["startup"] {
		if err := b.startup(); err != nil {
			return err
		}
	}
	if scenarios["single"] {
		if err := b.single(); err != nil {
			return err
		}
		if err := b.kfake(); err != nil {
			return err
		}
	}
	if scenarios["three"] || scenarios["compression"] {
		if !scenarios["compression"] {
			codecs = nil
		}
		if err := b.three(scenarios["three"], codecs); err != nil {
			return err
		}
	}
	if scenarios["tls"] {
		if err := b.tls(); err != nil {
			return err
		}
	}
	if scenarios["partitions"] {
		if err := b.partitionCounts(counts); err != nil {
			return err
		}
	}
	if *outFlag != "" {
		if err := os.WriteFile(*outFlag, []byte(b.rep.markdown(time.Since(began))), 0o644); err != nil {
			return err
		}
		progress("wrote %s and %s", *outFlag, rawPath)
	}
	if *readmeFlag != "" {
		if err := replaceBlock(*readmeFlag, "bench", b.rep.headline()); err != nil {
			return err
		}
		progress("updated %s", *readmeFlag)
	}
	return nil
}

type bench struct {
	rep   *report
	kinds []string
	work  string
	seq   int
}

func (b *bench) launcher(kind, scenario string) launcher {
	l := launcher{kind: kind}
	if kind == gokafkad && *pprofDir != "" {
		l.profile = filepath.Join(*pprofDir, scenario)
	}
	return l
}

func (b *bench) dir(name string) string {
	b.seq++
	return filepath.Join(b.work, fmt.Sprintf("%02d-%s", b.seq, name))
}

const (
	groupStart  = "Start-up and memory (one combined node)"
	groupSingle = "Single node (one combined broker and controller, replication factor 1)"
	groupThree  = "Three brokers (and one controller), replication factor 3, min.insync.replicas=2, acks=all, idempotent producer"
)

// startup measures exec to first acknowledged produce, and resident memory a few
// seconds after the last start.
func (b *bench) startup() error {
	counts := map[string]int{gokafkad: *starts, kafka: *kafkaStarts}
	durs := map[string][]time.Duration{}
	// One broker's starts in a row: a JVM's exit leaves work behind (page cache
	// writeback, freeing a gigabyte of heap) that would land on the next start.
	for _, kind := range b.kinds {
		for i := 0; i < counts[kind]; i++ {
			c, d, err := startToFirstAck(b.launcher(kind, "startup"), b.dir(kind+"-start"))
			if err != nil {
				return err
			}
			raw("%s start %d: first ack after %.1f ms", kind, i+1, ms(d))
			durs[kind] = append(durs[kind], d)
			if i == counts[kind]-1 {
				// Idle: give the process a moment to settle after its first request.
				time.Sleep(3 * time.Second)
				b.rep.set(groupStart, "resident memory, idle after the first produce", "MB", true, true, kind, rssMB(c.brokers[0].pid()))
			}
			c.stop()
		}
	}
	for _, kind := range b.kinds {
		d := durs[kind]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		name := fmt.Sprintf("process start to first acknowledged produce (median of %d starts)", *starts)
		if *withKafka {
			name = fmt.Sprintf("process start to first acknowledged produce (median of %d starts of gokafkad, %d of Kafka)", *starts, *kafkaStarts)
		}
		b.rep.set(groupStart, name, "ms", true, true, kind, ms(d[len(d)/2]))
	}
	return nil
}

// startAll starts one deployment per broker kind.
func (b *bench) startAll(scenario string, start func(launcher, string) (*cluster, error)) (map[string]*cluster, error) {
	cs := map[string]*cluster{}
	for _, kind := range b.kinds {
		c, err := b.startOne(kind, scenario, start)
		if err != nil {
			stopAll(cs)
			return nil, err
		}
		cs[kind] = c
	}
	return cs, nil
}

// startOne starts a deployment of one broker kind and warms it up.
func (b *bench) startOne(kind, scenario string, start func(launcher, string) (*cluster, error)) (*cluster, error) {
	progress("starting %s (%s)", kind, scenario)
	c, err := start(b.launcher(kind, scenario), b.dir(kind+"-"+scenario))
	if err != nil {
		return nil, err
	}
	// Warm up (not measured): a JVM compiles its hot paths in the first seconds of
	// load, and the first measurement should not pay for that.
	t := "bench-warmup"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err = createTopic(ctx, c, t, int16(len(c.brokers)))
	cancel()
	if err == nil {
		_, err = franzProduce(c, t, kgo.AllISRAcks(), *records/2, 0)
	}
	if err == nil {
		_, err = franzConsume(c, t, *records/2+1)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("%s warm-up: %w", kind, err)
	}
	return c, nil
}

func stopAll(cs map[string]*cluster) {
	for _, c := range cs {
		c.stop()
	}
}

// loadRSS tracks each broker kind's peak resident memory across a scenario's runs.
type loadRSS map[string]float64

func (l loadRSS) during(c *cluster, f func() error) error {
	s := sampleRSS(c.pids())
	err := f()
	if p := s.stop(); p > l[c.kind] {
		l[c.kind] = p
	}
	return err
}

// each runs one measurement against every broker kind in turn, each on a fresh topic,
// tracking resident memory while it runs.
func (b *bench) each(cs map[string]*cluster, rss loadRSS, what string, rf int16, f func(c *cluster, topic string) error) error {
	for _, kind := range b.kinds {
		c := cs[kind]
		t := fmt.Sprintf("%s-%d", what, b.seq)
		b.seq++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := createTopic(ctx, c, t, rf)
		cancel()
		if err == nil {
			err = rss.during(c, func() error { return f(c, t) })
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", kind, what, err)
		}
	}
	return nil
}

// halfLowest is half the lowest of the brokers' peaks.
func halfLowest(peaks map[string]float64) float64 {
	lo := 0.0
	for _, v := range peaks {
		if lo == 0 || v < lo {
			lo = v
		}
	}
	return lo / 2
}

// throughputAndLatency runs, for one acks setting, the peak and rate-limited runs of
// both clients against every broker kind.
func (b *bench) throughputAndLatency(group string, cs map[string]*cluster, rss loadRSS, acksName string, rf int16, headline bool) error {
	ctx := context.Background()
	acks := kgo.AllISRAcks()
	if acksName == "1" {
		acks = kgo.LeaderAck()
	}
	idempotent := acksName == "all"
	acksLabel := " acks=" + acksName
	if group == groupThree {
		acksLabel = "" // the group's title says acks=all
	}
	prefix := "produce" + acksLabel
	franzPeak, perfPeak := map[string]float64{}, map[string]float64{}
	err := b.each(cs, rss, "franz-acks"+acksName, rf, func(c *cluster, t string) error {
		cpu0 := cpuSeconds(c.pids())
		r, err := franzProduce(c, t, acks, *records, 0)
		if err != nil {
			return err
		}
		cpu := cpuSeconds(c.pids()) - cpu0
		raw("%s %s franz-go peak: %s", c.kind, prefix, r)
		franzPeak[c.kind] = r.recsPerSec
		b.rep.set(group, prefix+", franz-go", "MB/s", false, headline, c.kind, r.mbps)
		b.rep.set(group, prefix+", franz-go: broker CPU time per GB produced", "s", true, false, c.kind, cpu/gbProduced())
		if c.kind == gokafkad && acksName == "1" && group == groupSingle {
			b.rep.kfake[0] = r.mbps
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = b.each(cs, rss, "perf-acks"+acksName, rf, func(c *cluster, t string) error {
		r, err := producerPerfTest(ctx, c, t, acksName, idempotent, *records, 0)
		if err != nil {
			return err
		}
		perfPeak[c.kind] = r.recsPerSec
		b.rep.set(group, prefix+", kafka-producer-perf-test", "MB/s", false, headline && group == groupThree, c.kind, r.recsPerSec*float64(*size)/1e6)
		return nil
	})
	if err != nil {
		return err
	}
	// Latency at half the lower peak, for at most about 20 seconds a run.
	rate := halfLowest(franzPeak)
	name := fmt.Sprintf("p50 / p99 / p99.9%s at %s rec/s (half the lower peak), franz-go", acksLabel, commas(rate))
	err = b.each(cs, rss, "franz-rate-acks"+acksName, rf, func(c *cluster, t string) error {
		r, err := franzProduce(c, t, acks, latencyRecords(rate), rate)
		if err != nil {
			return err
		}
		raw("%s %s franz-go at %.0f rec/s: %s", c.kind, prefix, rate, r)
		b.rep.set(group, "produce latency "+name, "ms", true, headline, c.kind, r.lat.pct(.5), r.lat.pct(.99), r.lat.pct(.999))
		b.rep.set(group, "end-to-end latency "+name, "ms", true, false, c.kind, r.e2e.pct(.5), r.e2e.pct(.99), r.e2e.pct(.999))
		return nil
	})
	if err != nil {
		return err
	}
	rate = halfLowest(perfPeak)
	name = fmt.Sprintf("produce latency p50 / p99 / p99.9%s at %s rec/s (half the lower peak), kafka-producer-perf-test", acksLabel, commas(rate))
	return b.each(cs, rss, "perf-rate-acks"+acksName, rf, func(c *cluster, t string) error {
		r, err := producerPerfTest(ctx, c, t, acksName, idempotent, latencyRecords(rate), rate)
		if err != nil {
			return err
		}
		b.rep.set(group, name, "ms", true, false, c.kind, r.p50, r.p99, r.p999)
		return nil
	})
}

// consume fills a topic, then reads it back from the start with both consumers.
func (b *bench) consume(group string, cs map[string]*cluster, rss loadRSS, rf int16, headline bool) error {
	return b.each(cs, rss, "consume", rf, func(c *cluster, t string) error {
		if _, err := franzProduce(c, t, kgo.AllISRAcks(), *records, 0); err != nil {
			return err
		}
		mbps, err := franzConsume(c, t, *records+1)
		if err != nil {
			return err
		}
		b.rep.set(group, "consume from the start, franz-go", "MB/s", false, headline, c.kind, mbps)
		if mbps, err = consumerPerfTest(context.Background(), c, t, *records); err != nil {
			return err
		}
		b.rep.set(group, "consume from the start, kafka-consumer-perf-test", "MB/s", false, false, c.kind, mbps)
		return nil
	})
}

func (b *bench) single() error {
	cs, err := b.startAll("single", func(l launcher, dir string) (*cluster, error) {
		c, err := startSingle(l, dir)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := createTopic(ctx, c, "bench-ready", 1); err != nil {
			c.stop()
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		return err
	}
	defer stopAll(cs)
	rss := loadRSS{}
	for _, acks := range []string{"1", "all"} {
		if err := b.throughputAndLatency(groupSingle, cs, rss, acks, 1, acks == "1"); err != nil {
			return err
		}
	}
	if err := b.consume(groupSingle, cs, rss, 1, true); err != nil {
		return err
	}
	for _, kind := range b.kinds {
		b.rep.set(groupSingle, "resident memory under load (peak)", "MB", true, true, kind, rss[kind])
	}
	return nil
}

// three runs the three-broker scenario (when rows) and the compression scenario (for
// each of codecs) on one pair of three-broker deployments; the leader-election
// measurement, which kills a broker, comes last.
func (b *bench) three(rows bool, codecs []codec) error {
	cs, err := b.startAll("three", startThree)
	if err != nil {
		return err
	}
	defer stopAll(cs)
	if !rows {
		return b.compression(cs, codecs)
	}
	idle := map[string]float64{}
	for _, kind := range b.kinds {
		for _, pid := range cs[kind].pids() {
			idle[kind] = max(idle[kind], rssMB(pid))
		}
	}
	rss := loadRSS{}
	if err := b.throughputAndLatency(groupThree, cs, rss, "all", 3, true); err != nil {
		return err
	}
	if err := b.consume(groupThree, cs, rss, 3, false); err != nil {
		return err
	}
	for _, kind := range b.kinds {
		b.rep.set(groupThree, "resident memory per broker, idle (largest)", "MB", true, false, kind, idle[kind])
		b.rep.set(groupThree, "resident memory per broker under load (largest peak)", "MB", true, false, kind, rss[kind])
	}
	if err := b.compression(cs, codecs); err != nil {
		return err
	}
	for _, kind := range b.kinds {
		usable, election, err := controlPlane(cs[kind])
		if err != nil {
			return fmt.Errorf("%s control plane: %w", kind, err)
		}
		b.rep.set(groupThree, "topic created → a leader on every broker", "ms", true, false, kind, ms(usable))
		b.rep.set(groupThree, "leader killed (SIGKILL) → new leader in metadata", "ms", true, false, kind, ms(election))
	}
	b.rep.notes = append(b.rep.notes, "A new leader after a SIGKILL waits for the controller to fence the dead broker: "+
		"broker.session.timeout.ms (9 s) after its last heartbeat, which came up to broker.heartbeat.interval.ms (2 s) "+
		"before the kill, so either broker shows 7–9 s and one run's difference is mostly that phase.")
	return nil
}

// kfake runs the franz-go producer against franz-go's in-memory kfake.
func (b *bench) kfake() error {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(*partitions), "bench-kfake"))
	if err != nil {
		return err
	}
	defer kf.Close()
	r, err := franzProduce(&cluster{kind: "kfake", seeds: kf.ListenAddrs()}, "bench-kfake", kgo.LeaderAck(), *records, 0)
	if err != nil {
		return err
	}
	raw("kfake produce acks=1 franz-go peak: %s", r)
	progress("kfake    produce acks=1, franz-go: %s MB/s", fmtVal(r.mbps))
	b.rep.kfake[1] = r.mbps
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
