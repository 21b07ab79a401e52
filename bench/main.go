// Command bench measures gokafkad and Apache Kafka side by side on this machine and
// writes BENCHMARKS.md: produce and consume throughput with a franz-go driver and with
// Kafka's own kafka-producer-perf-test / kafka-consumer-perf-test, produce and
// end-to-end latency at half the lower peak, time from process start to the first
// acknowledged produce, and resident memory idle and under load — for a single node
// and for three brokers with replication factor 3, min.insync.replicas=2, acks=all —
// and, on three brokers, the same over TLS, compressed batches, and how cost grows
// with the number of partitions, of producer connections and with the record size
// (plotted into bench/results/*.png beside raw.txt).
//
//	go run ./bench [-only LIST] [-rounds N] [-records N] [-size BYTES] [-bin path/to/gokafkad] [-kafka=false]
//
// -only takes a comma-separated list of scenarios (all when empty):
//
//	startup       exec to first acknowledged produce, idle memory
//	single        one combined node, acks=1 and acks=all (runs startup too)
//	three         three brokers, RF 3, acks=all, then leader election after a SIGKILL
//	tls           three brokers with every listener (clients, brokers, controller) on SSL
//	compression   three brokers, franz-go batches compressed with each of -codecs
//	connections   three brokers, as many franz-go producers at once as each of -connections
//	record-sizes  three brokers, values of each of -record-sizes bytes
//	partitions    three brokers, one topic of each of -partition-counts partitions
//	consumer-groups three brokers, -group-consumers franz-go consumers in each of -groups
//	              groups reading one topic from the start
//	test-clusters in-process kafkatest clusters (1 and 3 brokers) beside kfake, and
//	              gokafkad dev --brokers 3 to its first acks=all produce beside Kafka's
//	              three brokers (measured by the three scenario)
//
// Every measurement runs -rounds times (3), alternately on gokafkad and Kafka; the report
// gives the median and the spread. Where gokafkad's median trails Kafka's or misses a
// target of issue 15, the bench repeats that measurement on gokafkad alone with a CPU
// profile of each broker (GOKAFKAD_CPUPROFILE_WINDOWS) and prints the profile's top in
// the section "Where gokafkad trails" (-explain=false skips it).
//
// -records sets the record count of every run (200,000; lower it, with -rounds 1 or 2,
// to check that a scenario runs, not to measure); -run-time and -latency-time bound
// the peak and latency runs. Without -out nothing is written but a raw log in a
// temporary directory; a report of a run with -only or -kafka=false says it is partial.
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
	"strings"
	"sync"
	"syscall"
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
	only         = flag.String("only", "", "comma-separated scenarios to run: startup, single (with startup), test-clusters, three, tls, compression, connections, record-sizes, partitions (default all)")
	codecsFlag   = flag.String("codecs", "lz4,zstd", "franz-go batch codecs of the compression scenario (gzip, snappy, lz4, zstd)")
	countsFlag   = flag.String("partition-counts", "10,100,1000", "partition counts of the partitions scenario")
	connsFlag    = flag.String("connections", "1,4,16,64", "producer clients at once of the connections scenario")
	groupsFlag   = flag.String("groups", "1,100", "consumer group counts of the consumer-groups scenario (its consumers spread evenly over them)")
	groupCons    = flag.Int("group-consumers", 100, "franz-go consumers at once of the consumer-groups scenario (and the partitions of its topic)")
	groupRecords = flag.Int("group-records", 20000, "records of -size bytes the consumer-groups scenario's topic holds (every group reads them all)")
	sizesFlag    = flag.String("record-sizes", "100,1024,10240,102400", "value sizes in bytes of the record-sizes scenario")
	rounds       = flag.Int("rounds", 3, "rounds of every measurement (the report gives their median and spread)")
	runTime      = flag.Duration("run-time", 10*time.Second, "longest a franz-go peak produce run sends")
	latencyTime  = flag.Duration("latency-time", 5*time.Second, "about how long a rate-limited latency run sends")
	explain      = flag.Bool("explain", true, "profile gokafkad (CPU, every broker) during each measurement where it trails, for the report")
	profileTime  = flag.Duration("profile-time", 2*time.Second, "least measured time a trailing measurement's profile covers (repeated until then, at most 10 times)")
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
	counts, err := parseInts("-partition-counts", *countsFlag)
	if err != nil {
		return err
	}
	conns, err := parseInts("-connections", *connsFlag)
	if err != nil {
		return err
	}
	groups, err := parseInts("-groups", *groupsFlag)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if g > *groupCons {
			return fmt.Errorf("-groups %d: more groups than -group-consumers (%d)", g, *groupCons)
		}
	}
	sizes, err := parseInts("-record-sizes", *sizesFlag)
	if err != nil {
		return err
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: at least 1", *rounds)
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
	// The report links its raw output and plots as bench/results/..., beside it.
	results := filepath.Join(work, "results")
	if *outFlag != "" {
		out, err := filepath.Abs(*outFlag)
		if err != nil {
			return err
		}
		results = filepath.Join(filepath.Dir(out), "bench", "results")
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	rawPath := filepath.Join(results, "raw.txt")
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
	raw("settings: records=%d size=%d partitions=%d rounds=%d", *records, *size, *partitions, *rounds)
	progress("%s\nrecords=%d value=%dB partitions=%d rounds=%d, no compression\n", machine(), *records, *size, *partitions, *rounds)

	began := time.Now()
	b := &bench{rep: &report{}, kinds: kinds, work: work}
	var partial []string
	if *only != "" {
		partial = append(partial, "only the scenarios "+*only+" (-only)")
	}
	if !*withKafka {
		partial = append(partial, "gokafkad alone (-kafka=false)")
	}
	b.rep.partial = strings.Join(partial, ", ")
	scenarioTime := func(name string, t0 time.Time) {
		raw("scenario %s took %s", name, time.Since(t0).Round(time.Second))
		progress("-- %s took %s (%s so far)", name, time.Since(t0).Round(time.Second), time.Since(began).Round(time.Second))
	}
	if scenarios["single"] || scenarios["startup"] {
		t0 := time.Now()
		if err := b.startup(); err != nil {
			return err
		}
		scenarioTime("startup", t0)
	}
	if scenarios["single"] {
		t0 := time.Now()
		if err := b.single(); err != nil {
			return err
		}
		if err := b.kfake(); err != nil {
			return err
		}
		scenarioTime("single", t0)
	}
	if scenarios["test-clusters"] {
		t0 := time.Now()
		if err := b.testClusters(); err != nil {
			return err
		}
		scenarioTime("test-clusters", t0)
	}
	if scenarios["three"] || scenarios["compression"] || scenarios["connections"] || scenarios["record-sizes"] || scenarios["consumer-groups"] {
		t0 := time.Now()
		if !scenarios["compression"] {
			codecs = nil
		}
		if !scenarios["connections"] {
			conns = nil
		}
		if !scenarios["record-sizes"] {
			sizes = nil
		}
		if !scenarios["consumer-groups"] {
			groups = nil
		}
		if err := b.three(scenarios["three"], codecs, conns, sizes, groups); err != nil {
			return err
		}
		scenarioTime("three-broker scenarios", t0)
	}
	if scenarios["tls"] {
		t0 := time.Now()
		if err := b.tls(); err != nil {
			return err
		}
		scenarioTime("tls", t0)
	}
	if scenarios["partitions"] {
		t0 := time.Now()
		if err := b.partitionCounts(counts); err != nil {
			return err
		}
		scenarioTime("partitions", t0)
	}
	if *outFlag != "" {
		links, err := b.rep.plots(results, "bench/results")
		if err != nil {
			return err
		}
		b.rep.plotLinks = links
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
	round int // the round being run, from 1 (0 outside rounds)

	// While profiling a trailing measurement on gokafkad: the windows' files and
	// their total wall time.
	profiling   bool
	windowFiles []string
	windowTime  time.Duration

	// peakSystem is the system (kernel) share of the CPU time the last peak returned.
	peakSystem float64
}

func (b *bench) launcher(kind, scenario string) launcher {
	l := launcher{kind: kind}
	if kind == gokafkad && *pprofDir != "" {
		l.profile = filepath.Join(*pprofDir, scenario)
	}
	// The whole-run profile of -pprof holds the profiler: windows would fail.
	l.windows = kind == gokafkad && *explain && *pprofDir == ""
	return l
}

// keep records a value a later measurement derives from (a peak that sets the latency
// runs' rate), except in a profiling run.
func (b *bench) keep(m map[string][]float64, kind string, v float64) {
	if !b.profiling {
		m[kind] = append(m[kind], v)
	}
}

// firstRound reports whether this is the first round (notes are written once).
func (b *bench) firstRound() bool { return b.round <= 1 && !b.profiling }

func (b *bench) dir(name string) string {
	b.seq++
	return filepath.Join(b.work, fmt.Sprintf("%02d-%s", b.seq, name))
}

const (
	groupStart  = "Start-up and memory (one combined node)"
	groupSingle = "Single node (one combined broker and controller, replication factor 1)"
	groupThree  = "Three brokers (and one controller), replication factor 3, min.insync.replicas=2, acks=all, idempotent producer"
	// groupTestClusters is the test-clusters scenario's table (testclusters.go).
	groupTestClusters = "Test clusters: start-up beside kfake and Apache Kafka"
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
		var r produceResult
		if r, err = franzProduce(c, t, kgo.AllISRAcks(), *records/2, 0); err == nil {
			_, err = franzConsume(c, t, r.records+1)
		}
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
	if l == nil {
		return f()
	}
	s := sampleRSS(c.pids())
	err := f()
	if p := s.stop(); p > l[c.kind] {
		l[c.kind] = p
	}
	return err
}

// each runs one measurement -rounds times against every broker kind in turn (gokafkad,
// Kafka, gokafkad, …), each time on a fresh topic, tracking resident memory while it
// runs; then, where gokafkad trails in a figure it set, profiles gokafkad repeating it.
func (b *bench) each(cs map[string]*cluster, rss loadRSS, what string, rf int16, f func(c *cluster, topic string) error) error {
	b.rep.startTracking()
	for r := 1; r <= *rounds; r++ {
		b.round = r
		for _, kind := range b.kinds {
			if err := b.once(cs[kind], rss, what, rf, f); err != nil {
				b.rep.stopTracking()
				return err
			}
		}
	}
	b.round = 0
	figs := b.rep.stopTracking()
	return b.explain(cs[gokafkad], figs, what, func(c *cluster) error { return b.once(c, nil, what, rf, f) })
}

// once runs f on a fresh topic of c.
func (b *bench) once(c *cluster, rss loadRSS, what string, rf int16, f func(c *cluster, topic string) error) error {
	t := fmt.Sprintf("%s-%d", what, b.seq)
	b.seq++
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := createTopic(ctx, c, t, rf)
	cancel()
	if err == nil {
		err = rss.during(c, func() error { return f(c, t) })
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.kind, what, err)
	}
	// Rounds of every measurement would otherwise fill the disk (three replicas of
	// every run's bytes); Kafka deletes the files a minute later (file.delete.delay.ms).
	deleteTopic(c, t)
	return nil
}

// halfLowest is half the lowest of the brokers' median peaks.
func halfLowest(peaks map[string][]float64) float64 {
	lo := 0.0
	for _, v := range peaks {
		f := &figure{vals: map[string][][]float64{}}
		for _, x := range v {
			f.vals[""] = append(f.vals[""], []float64{x})
		}
		if m := f.med(""); m != nil && (lo == 0 || m[0] < lo) {
			lo = m[0]
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
	if group == groupThree {
		// Issue 15's targets for three brokers at 3–10 partitions.
		b.rep.get(group, prefix+", franz-go", "MB/s", false, headline).targetRatio = 8
		b.rep.get(group, prefix+", franz-go: broker CPU time per GB produced", "s", true, false).targetAbs = 1
	}
	franzPeak, perfPeak := map[string][]float64{}, map[string][]float64{}
	err := b.each(cs, rss, "franz-acks"+acksName, rf, func(c *cluster, t string) error {
		r, cpu, err := b.peak(c, func() (produceResult, error) { return franzProduce(c, t, acks, *records, 0) })
		if err != nil {
			return err
		}
		raw("%s %s franz-go peak: %s", c.kind, prefix, r)
		b.keep(franzPeak, c.kind, r.recsPerSec)
		b.rep.set(group, prefix+", franz-go", "MB/s", false, headline, c.kind, r.mbps)
		b.rep.set(group, prefix+", franz-go: broker CPU time per GB produced", "s", true, false, c.kind, cpu/r.gb())
		// The kernel's share: mostly the copy of every replica's bytes into the page
		// cache, which grows with the host's memory state for both brokers (DESIGN.md,
		// Performance shape).
		b.rep.set(group, prefix+", franz-go: of which system (kernel) time", "s", true, false, c.kind, b.peakSystem/r.gb())
		return nil
	})
	if err != nil {
		return err
	}
	err = b.each(cs, rss, "perf-acks"+acksName, rf, func(c *cluster, t string) error {
		var r perfResult
		err := b.window(c, func() (err error) {
			r, err = producerPerfTest(ctx, c, t, acksName, idempotent, max(*records/2, 1000), 0)
			return err
		})
		if err != nil {
			return err
		}
		b.keep(perfPeak, c.kind, r.recsPerSec)
		b.rep.set(group, prefix+", kafka-producer-perf-test", "MB/s", false, headline && group == groupThree, c.kind, r.recsPerSec*float64(*size)/1e6)
		return nil
	})
	if err != nil {
		return err
	}
	// Latency at half the lower peak, for about -latency-time a run.
	rate := halfLowest(franzPeak)
	name := fmt.Sprintf("p50 / p99 / p99.9%s at %s rec/s (half the lower peak), franz-go", acksLabel, commas(rate))
	err = b.each(cs, rss, "franz-rate-acks"+acksName, rf, func(c *cluster, t string) error {
		var r produceResult
		err := b.window(c, func() (err error) {
			r, err = franzProduce(c, t, acks, latencyRecords(rate), rate)
			return err
		})
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
		var r perfResult
		err := b.window(c, func() (err error) {
			r, err = producerPerfTest(ctx, c, t, acksName, idempotent, latencyRecords(rate), rate)
			return err
		})
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
		p, err := franzProduce(c, t, kgo.AllISRAcks(), *records, 0)
		if err != nil {
			return err
		}
		var mbps float64
		if err := b.window(c, func() (err error) { mbps, err = franzConsume(c, t, p.records+1); return err }); err != nil {
			return err
		}
		b.rep.set(group, "consume from the start, franz-go", "MB/s", false, headline, c.kind, mbps)
		if err := b.window(c, func() (err error) { mbps, err = consumerPerfTest(context.Background(), c, t, p.records); return err }); err != nil {
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

// three runs, on one pair of three-broker deployments, the three-broker scenario (when
// rows), the compression scenario (for each of codecs), the connections scenario (for
// each of conns) and the record-sizes scenario (for each of sizes); the leader-election
// measurement, which kills a broker, comes last.
func (b *bench) three(rows bool, codecs []codec, conns, sizes, groups []int) error {
	cs, err := b.startAll("three", startThree)
	if err != nil {
		return err
	}
	defer stopAll(cs)
	for _, kind := range b.kinds {
		b.rep.set(groupThree, "processes started → first acks=all produce to a new topic (controller and three brokers)", "ms", true, false, kind, ms(cs[kind].ready))
		if kind == kafka {
			b.rep.setTest(rowDev3, kafka, ms(cs[kind].ready))
		}
	}
	if !rows {
		if err := b.compression(cs, codecs); err != nil {
			return err
		}
		if err := b.connections(cs, conns); err != nil {
			return err
		}
		if err := b.recordSizes(cs, sizes); err != nil {
			return err
		}
		return b.consumerGroups(cs, groups)
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
	if err := b.connections(cs, conns); err != nil {
		return err
	}
	if err := b.recordSizes(cs, sizes); err != nil {
		return err
	}
	if err := b.consumerGroups(cs, groups); err != nil {
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

// kfake runs the franz-go producer against franz-go's in-memory kfake, -rounds times.
func (b *bench) kfake() error {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(*partitions), "bench-kfake"))
	if err != nil {
		return err
	}
	defer kf.Close()
	for range *rounds {
		r, err := franzProduce(&cluster{kind: "kfake", seeds: kf.ListenAddrs()}, "bench-kfake", kgo.LeaderAck(), *records, 0)
		if err != nil {
			return err
		}
		raw("kfake produce acks=1 franz-go peak: %s", r)
		progress("kfake    produce acks=1, franz-go: %s MB/s", fmtVal(r.mbps))
		b.rep.kfake = append(b.rep.kfake, r.mbps)
	}
	return nil
}

// peak runs a peak produce in a profile window and returns, with its result, the CPU
// time the brokers used meanwhile.
func (b *bench) peak(c *cluster, produce func() (produceResult, error)) (produceResult, float64, error) {
	var r produceResult
	var cpu float64
	err := b.window(c, func() (err error) {
		u0, s0 := cpuTimes(c.pids())
		r, err = produce()
		u1, s1 := cpuTimes(c.pids())
		cpu, b.peakSystem = u1-u0+s1-s0, s1-s0
		return err
	})
	return r, cpu, err
}

// window runs a measured section; in a profiling run of gokafkad, each broker writes a
// CPU profile of exactly that section (GOKAFKAD_CPUPROFILE_WINDOWS, opened by SIGUSR1
// and closed by SIGUSR2).
func (b *bench) window(c *cluster, section func() error) error {
	if !b.profiling || c.kind != gokafkad {
		return section()
	}
	var paths []string
	for _, n := range c.brokers {
		if n.profPrefix == "" {
			return section()
		}
		n.windows++
		path := fmt.Sprintf("%s-%d.pprof", n.profPrefix, n.windows)
		if err := syscall.Kill(n.pid(), syscall.SIGUSR1); err != nil {
			return err
		}
		paths = append(paths, path)
	}
	for _, p := range paths {
		if err := waitForFile(p + ".part"); err != nil {
			return err
		}
	}
	t0 := time.Now()
	err := section()
	b.windowTime += time.Since(t0)
	for _, n := range c.brokers {
		_ = syscall.Kill(n.pid(), syscall.SIGUSR2)
	}
	for _, p := range paths {
		if werr := waitForFile(p); werr != nil && err == nil {
			err = werr
		}
	}
	b.windowFiles = append(b.windowFiles, paths...)
	return err
}

func waitForFile(path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("profile window %s did not appear", path)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// explain profiles gokafkad when it trails (behind Kafka, or short of a target) in a
// profileable figure of figs: run repeats the measurement on c, not counted, until the
// profile windows cover -profile-time, and the top of the merged profile is attached to
// those figures. A failure here is reported in the section, not fatal.
func (b *bench) explain(c *cluster, figs []*figure, what string, run func(c *cluster) error) error {
	if c == nil || !*explain || *pprofDir != "" {
		return nil
	}
	var trailing []*figure
	var names []string
	for _, f := range figs {
		if f.profileable() && len(f.behind()) > 0 {
			trailing = append(trailing, f)
			names = append(names, f.name)
		}
	}
	if len(trailing) == 0 {
		return nil
	}
	p := &profileTop{label: shortGroup(trailing[0].group) + ": " + strings.Join(names, "; ")}
	for _, f := range trailing {
		f.profile = p
	}
	progress("profiling gokafkad while it repeats %s (it trails)", what)
	b.profiling, b.windowFiles, b.windowTime = true, nil, 0
	b.rep.mu.Lock()
	b.rep.discard = true
	b.rep.mu.Unlock()
	defer func() {
		b.profiling = false
		b.rep.mu.Lock()
		b.rep.discard = false
		b.rep.mu.Unlock()
	}()
	for i := 0; i < 10 && (i == 0 || b.windowTime < *profileTime); i++ {
		if err := run(c); err != nil {
			p.err = "the profiling run failed: " + err.Error()
			raw("profiling %s: %v", what, err)
			return nil
		}
	}
	p.brokers = len(c.brokers)
	p.windows = len(b.windowFiles) / max(p.brokers, 1)
	p.dur = b.windowTime
	var err error
	if p.flat, p.cum, err = pprofTop(b.windowFiles); err != nil {
		p.err = err.Error()
	}
	raw("profile of gokafkad during %s (%d windows, %s):\n%s\n%s", what, p.windows, p.dur, p.flat, p.cum)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
