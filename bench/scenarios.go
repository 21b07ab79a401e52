package main

import (
	"context"
	"crypto/tls"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The scenarios -only selects from.
var scenarioNames = []string{"startup", "single", "test-clusters", "three", "tls", "compression", "connections", "record-sizes", "partitions", "consumer-groups"}

// parseOnly is the set of scenarios -only names (every one when empty).
func parseOnly(s string) (map[string]bool, error) {
	set := map[string]bool{}
	if strings.TrimSpace(s) == "" {
		for _, n := range scenarioNames {
			set[n] = true
		}
		return set, nil
	}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		known := false
		for _, k := range scenarioNames {
			known = known || k == n
		}
		if !known {
			return nil, fmt.Errorf("-only: unknown scenario %q (known: %s)", n, strings.Join(scenarioNames, ", "))
		}
		set[n] = true
	}
	return set, nil
}

// codec is a franz-go batch compression the compression scenario measures.
type codec struct {
	name  string
	codec kgo.CompressionCodec
}

func parseCodecs(s string) ([]codec, error) {
	known := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	var out []codec
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		c, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("-codecs: unknown codec %q (known: gzip, snappy, lz4, zstd)", n)
		}
		out = append(out, codec{n, c})
	}
	return out, nil
}

// parseInts is a comma-separated list of positive integers (flag names the flag).
func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}

const (
	groupTLS = "Three brokers over TLS (SSL listeners for clients, between brokers and to the controller), " +
		"replication factor 3, min.insync.replicas=2, acks=all, idempotent producer, franz-go"
	groupCompression = "Compressed batches (three brokers, replication factor 3, min.insync.replicas=2, acks=all, franz-go, JSON-like values)"
	groupPartitions  = "Partitions (three brokers, replication factor 3, min.insync.replicas=2, acks=all, one topic, franz-go)"
	groupConnections = "Producer connections (three brokers, replication factor 3, min.insync.replicas=2, acks=all, franz-go, one client per producer)"
	groupSizes       = "Record size (three brokers, replication factor 3, min.insync.replicas=2, acks=all, franz-go, the same bytes per run)"
	groupGroups      = "Consumer groups (three brokers, replication factor 3, franz-go consumers reading one topic from the start)"
)

// The plotted dimensions, and the metrics of each plot.
const (
	dimPartitions  = "partitions"
	dimConnections = "connections"
	dimSizes       = "record-sizes"
	dimGroups      = "consumer-groups"

	metricProduce = "produce"
	metricCPU     = "cpu"
	metricConsume = "consume"
	metricRSS     = "rss"
)

// latencyRecords is how many records a latency run at rate sends: about -latency-time's
// worth, at least 10,000, at most -records.
func latencyRecords(rate float64) int {
	return min(*records, max(int(rate*latencyTime.Seconds()), 10000))
}

// tls runs the three-broker RF 3 scenario with every listener on SSL: franz-go's peak
// produce and the brokers' CPU time per GB, produce and end-to-end latency at half the
// lower peak, and consume from the start.
func (b *bench) tls() error {
	certs, err := makeBenchCerts(filepath.Join(b.work, "certs"))
	if err != nil {
		return err
	}
	cs, err := b.startAll("tls", startThreeTLS(certs))
	if err != nil {
		return err
	}
	defer stopAll(cs)
	var negotiated []string
	for _, kind := range b.kinds {
		v, err := negotiatedTLS(cs[kind])
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		raw("%s TLS: %s", kind, v)
		negotiated = append(negotiated, fmt.Sprintf("%s %s", kindName(kind), v))
	}
	b.rep.notes = append(b.rep.notes, "Over TLS the bench's client negotiated with "+strings.Join(negotiated, ", and with ")+".")
	rss := loadRSS{}
	peak := map[string][]float64{}
	err = b.each(cs, rss, "tls-produce", 3, func(c *cluster, t string) error {
		r, cpu, err := b.peak(c, func() (produceResult, error) { return franzProduce(c, t, kgo.AllISRAcks(), *records, 0) })
		if err != nil {
			return err
		}
		raw("%s TLS produce franz-go peak: %s", c.kind, r)
		b.keep(peak, c.kind, r.recsPerSec)
		b.rep.set(groupTLS, "produce", "MB/s", false, true, c.kind, r.mbps)
		b.rep.set(groupTLS, "produce: broker CPU time per GB produced", "s", true, false, c.kind, cpu/r.gb())
		return nil
	})
	if err != nil {
		return err
	}
	rate := halfLowest(peak)
	name := fmt.Sprintf("p50 / p99 / p99.9 at %s rec/s (half the lower peak)", commas(rate))
	err = b.each(cs, rss, "tls-rate", 3, func(c *cluster, t string) error {
		var r produceResult
		err := b.window(c, func() (err error) {
			r, err = franzProduce(c, t, kgo.AllISRAcks(), latencyRecords(rate), rate)
			return err
		})
		if err != nil {
			return err
		}
		raw("%s TLS produce franz-go at %.0f rec/s: %s", c.kind, rate, r)
		b.rep.set(groupTLS, "produce latency "+name, "ms", true, false, c.kind, r.lat.pct(.5), r.lat.pct(.99), r.lat.pct(.999))
		b.rep.set(groupTLS, "end-to-end latency "+name, "ms", true, false, c.kind, r.e2e.pct(.5), r.e2e.pct(.99), r.e2e.pct(.999))
		return nil
	})
	if err != nil {
		return err
	}
	err = b.each(cs, rss, "tls-consume", 3, func(c *cluster, t string) error {
		p, err := franzProduce(c, t, kgo.AllISRAcks(), *records, 0)
		if err != nil {
			return err
		}
		var mbps float64
		if err := b.window(c, func() (err error) { mbps, err = franzConsume(c, t, p.records+1); return err }); err != nil {
			return err
		}
		b.rep.set(groupTLS, "consume from the start", "MB/s", false, false, c.kind, mbps)
		return nil
	})
	if err != nil {
		return err
	}
	for _, kind := range b.kinds {
		b.rep.set(groupTLS, "resident memory per broker under load (largest peak)", "MB", true, false, kind, rss[kind])
	}
	return nil
}

// negotiatedTLS is the protocol version and cipher suite a handshake with the first
// broker settles on.
func negotiatedTLS(c *cluster) (string, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: c.tls.Clone()}
	conn, err := d.Dial("tcp", c.seeds[0])
	if err != nil {
		return "", err
	}
	defer conn.Close()
	st := conn.(*tls.Conn).ConnectionState()
	return tls.VersionName(st.Version) + " " + tls.CipherSuiteName(st.CipherSuite), nil
}

func kindName(kind string) string {
	if kind == kafka {
		return "Apache Kafka"
	}
	return kind
}

// compression produces -records JSON-like values of -size bytes with each codec on a
// running three-broker deployment and reads them back; how much each broker stored
// goes into a note (both keep the producer's batches, so it should match).
func (b *bench) compression(cs map[string]*cluster, codecs []codec) error {
	if len(codecs) == 0 {
		return nil
	}
	values := compressibleValues()
	rss := loadRSS{}
	var onDisk []string
	defer func() {
		if len(onDisk) > 0 {
			b.rep.notes = append(b.rep.notes, "Compressed batches on disk (the topic's segment files on one broker ÷ the bytes produced): "+strings.Join(onDisk, ", ")+".")
		}
	}()
	for _, cd := range codecs {
		err := b.each(cs, rss, "compress-"+cd.name, 3, func(c *cluster, t string) error {
			r, cpu, err := b.peak(c, func() (produceResult, error) {
				return franzProduceValues(c, t, kgo.AllISRAcks(), *records, 0, values, cd.codec)
			})
			if err != nil {
				return err
			}
			raw("%s %s produce franz-go peak: %s", c.kind, cd.name, r)
			b.rep.set(groupCompression, "produce, "+cd.name, "MB/s", false, false, c.kind, r.mbps)
			b.rep.set(groupCompression, "produce, "+cd.name+": broker CPU time per GB produced", "s", true, false, c.kind, cpu/r.gb())
			if stored := logBytes(c, t); stored > 0 {
				pct := 100 * float64(stored) / float64(r.bytes)
				raw("%s %s: %d log bytes on broker 1, %.1f %% of the bytes produced", c.kind, cd.name, stored, pct)
				if b.firstRound() {
					onDisk = append(onDisk, fmt.Sprintf("%s %s %.1f %%", cd.name, kindName(c.kind), pct))
				}
			}
			var mbps float64
			if err := b.window(c, func() (err error) { mbps, err = franzConsume(c, t, r.records+1); return err }); err != nil {
				return err
			}
			b.rep.set(groupCompression, "consume from the start, "+cd.name, "MB/s", false, false, c.kind, mbps)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// compressibleValues are 1,024 values of -size bytes that compress as application
// events do: lines of JSON with the same keys, a few dozen words and services, and
// random ids, timestamps and trace ids (generated with a fixed seed, so every run
// sends the same bytes).
func compressibleValues() [][]byte {
	r := mrand.New(mrand.NewPCG(15, 10))
	levels := []string{"INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR"}
	services := []string{"checkout", "cart", "payments", "search", "inventory", "shipping", "accounts", "recommendations"}
	words := strings.Fields("order item added removed cart checkout payment authorized declined retry shipped " +
		"delivered refund requested user session started ended search query results page viewed clicked " +
		"product price updated stock reserved released timeout upstream cache hit miss")
	values := make([][]byte, 1024)
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range values {
		var v []byte
		for len(v) < *size {
			v = fmt.Appendf(v, `{"ts":%d,"level":"%s","service":"%s","host":"%s-%d","trace":"%016x","user":%d,"msg":"%s %s %s","latency_ms":%d}`+"\n",
				base+r.Int64N(3_600_000), levels[r.IntN(len(levels))], services[r.IntN(len(services))],
				services[r.IntN(len(services))], r.IntN(12), r.Uint64(), r.IntN(200_000),
				words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(900))
		}
		values[i] = v[:max(*size, 8)]
	}
	return values
}

// logBytes is the size of the topic's segment files (.log) on broker 1, which holds a
// replica of every partition.
func logBytes(c *cluster, topic string) int64 {
	dirs, _ := filepath.Glob(filepath.Join(c.dir, "node-1", "data", topic+"-*"))
	var total int64
	for _, d := range dirs {
		segs, _ := filepath.Glob(filepath.Join(d, "*.log"))
		for _, s := range segs {
			if fi, err := os.Stat(s); err == nil {
				total += fi.Size()
			}
		}
	}
	return total
}

// partitionCounts measures, for each count, a fresh three-broker deployment of each
// kind in turn (only one running at a time, so the other's idle replication of many
// partitions does not take the CPU; Kafka first, so that gokafkad can be profiled
// while it still runs where it trails): the time to create one topic of that many
// partitions with replication factor 3 until every partition has a leader, then in
// each of -rounds rounds franz-go's peak produce to it and the brokers' CPU time per
// GB, per broker the resident memory (peak while producing) and the open files after
// it, and consuming the topic's first records from the start. The rounds start once
// every replica's log exists (timed too), not when the leaders do.
func (b *bench) partitionCounts(counts []int) error {
	name := func(what string, n int) string { return fmt.Sprintf("%s partitions: %s", commas(float64(n)), what) }
	// Rows by measure, then count.
	type row struct {
		what, unit  string
		lowerBetter bool
		metric      string
	}
	rows := []row{
		{"produce", "MB/s", false, metricProduce},
		{"broker CPU time per GB produced", "s", true, metricCPU},
		{"consume from the start", "MB/s", false, ""},
		{"topic created → every partition has a leader", "ms", true, ""},
		{"topic created → every replica's log exists (DescribeLogDirs)", "ms", true, ""},
		{"resident memory per broker under load (largest peak)", "MB", true, ""},
		{"open files per broker after the produce (largest)", "files", true, ""},
	}
	for _, r := range rows {
		for _, n := range counts {
			f := b.rep.get(groupPartitions, name(r.what, n), r.unit, r.lowerBetter, false)
			if r.metric != "" {
				f.dim, f.metric, f.x = dimPartitions, r.metric, float64(n)
			}
			// Issue 15's targets: at 3–10 partitions ≥ 8× Kafka's throughput and ≤ 1.0
			// broker CPU-s per GB, at 1,000 partitions and more ≥ 5× its throughput.
			switch {
			case n <= 10 && r.metric == metricProduce:
				f.targetRatio = 8
			case n <= 10 && r.metric == metricCPU:
				f.targetAbs = 1
			case n >= 1000 && r.metric == metricProduce:
				f.targetRatio = 5
			}
		}
	}
	var kinds []string
	for i := len(b.kinds) - 1; i >= 0; i-- {
		kinds = append(kinds, b.kinds[i])
	}
	for _, n := range counts {
		for _, kind := range kinds {
			scenario := fmt.Sprintf("partitions-%d", n)
			c, err := b.startOne(kind, scenario, startThree)
			if err != nil {
				return err
			}
			set := func(what string, v float64) {
				for _, r := range rows {
					if r.what == what {
						b.rep.set(groupPartitions, name(what, n), r.unit, r.lowerBetter, false, kind, v)
					}
				}
			}
			err = b.partitionRounds(c, n, set)
			c.stop()
			if err != nil {
				return fmt.Errorf("%s %d partitions: %w", kind, n, err)
			}
		}
	}
	return nil
}

// partitionRounds creates the topic of n partitions on c, runs the rounds, and on
// gokafkad profiles a round where it trails.
func (b *bench) partitionRounds(c *cluster, n int, set func(what string, v float64)) error {
	topic := fmt.Sprintf("bench-partitions-%d", n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := createTopicN(ctx, c, topic, n, 3); err != nil {
		return err
	}
	set("topic created → every partition has a leader", ms(time.Since(start)))
	// The rounds measure the topic in use, not its followers still creating logs.
	if err := waitReplicaLogs(ctx, c, topic, n, 3); err != nil {
		return err
	}
	set("topic created → every replica's log exists (DescribeLogDirs)", ms(time.Since(start)))
	b.rep.startTracking()
	for r := 1; r <= *rounds; r++ {
		b.round = r
		if err := b.partitionRound(c, topic, n, set); err != nil {
			b.rep.stopTracking()
			return err
		}
	}
	b.round = 0
	figs := b.rep.stopTracking()
	if c.kind != gokafkad {
		return nil
	}
	return b.explain(c, figs, fmt.Sprintf("%d partitions", n), func(c *cluster) error { return b.partitionRound(c, topic, n, set) })
}

// partitionRound is one round's peak produce to the topic and read back from its start.
func (b *bench) partitionRound(c *cluster, topic string, n int, set func(what string, v float64)) error {
	s := sampleRSS(c.pids())
	r, cpu, err := b.peak(c, func() (produceResult, error) { return franzProduce(c, topic, kgo.AllISRAcks(), *records, 0) })
	peak := s.stop()
	if err != nil {
		return err
	}
	raw("%s %d partitions produce franz-go peak: %s", c.kind, n, r)
	files := 0
	for _, pid := range c.pids() {
		files = max(files, openFiles(pid))
	}
	set("produce", r.mbps)
	set("broker CPU time per GB produced", cpu/r.gb())
	set("resident memory per broker under load (largest peak)", peak)
	set("open files per broker after the produce (largest)", float64(files))
	var mbps float64
	if err := b.window(c, func() (err error) { mbps, err = franzConsume(c, topic, r.records+1); return err }); err != nil {
		return err
	}
	set("consume from the start", mbps)
	return nil
}

// connections runs, on the running three-broker deployments, for each count that many
// franz-go producers at once (one client each), together sending -records records of
// -size bytes to a topic of -partitions partitions: their throughput, the brokers' CPU
// time per GB, and the largest broker's resident memory meanwhile.
func (b *bench) connections(cs map[string]*cluster, conns []int) error {
	labels := map[int]string{}
	for _, n := range conns {
		labels[n] = fmt.Sprintf("%s producers", commas(float64(n)))
		if n == 1 {
			labels[n] = "1 producer"
		}
	}
	// Rows by measure, then count.
	for _, n := range conns {
		f := b.rep.get(groupConnections, labels[n]+": produce", "MB/s", false, false)
		f.dim, f.metric, f.x = dimConnections, metricProduce, float64(n)
	}
	for _, n := range conns {
		f := b.rep.get(groupConnections, labels[n]+": broker CPU time per GB produced", "s", true, false)
		f.dim, f.metric, f.x = dimConnections, metricCPU, float64(n)
	}
	for _, n := range conns {
		b.rep.get(groupConnections, labels[n]+": resident memory per broker under load (largest peak)", "MB", true, false)
	}
	for _, n := range conns {
		label := labels[n]
		prod := b.rep.get(groupConnections, label+": produce", "MB/s", false, false)
		cpuF := b.rep.get(groupConnections, label+": broker CPU time per GB produced", "s", true, false)
		rss := loadRSS{}
		err := b.each(cs, rss, fmt.Sprintf("conns-%d", n), 3, func(c *cluster, t string) error {
			r, cpu, err := b.peak(c, func() (produceResult, error) { return franzProduceClients(c, t, *records, n) })
			if err != nil {
				return err
			}
			raw("%s %d producers franz-go peak: %s", c.kind, n, r)
			b.rep.set(groupConnections, prod.name, "MB/s", false, false, c.kind, r.mbps)
			b.rep.set(groupConnections, cpuF.name, "s", true, false, c.kind, cpu/r.gb())
			return nil
		})
		if err != nil {
			return err
		}
		for _, kind := range b.kinds {
			b.rep.set(groupConnections, label+": resident memory per broker under load (largest peak)", "MB", true, false, kind, rss[kind])
		}
	}
	return nil
}

// recordSizes runs, on the running three-broker deployments, franz-go's peak produce of
// random values of each size, as many as make -records × -size bytes.
func (b *bench) recordSizes(cs map[string]*cluster, sizes []int) error {
	for _, sz := range sizes { // rows by measure, then size
		f := b.rep.get(groupSizes, fmtBytes(sz)+" records: produce", "MB/s", false, false)
		f.dim, f.metric, f.x = dimSizes, metricProduce, float64(sz)
	}
	for _, sz := range sizes {
		f := b.rep.get(groupSizes, fmtBytes(sz)+" records: broker CPU time per GB produced", "s", true, false)
		f.dim, f.metric, f.x = dimSizes, metricCPU, float64(sz)
	}
	for _, sz := range sizes {
		label := fmtBytes(sz) + " records"
		prod := b.rep.get(groupSizes, label+": produce", "MB/s", false, false)
		cpuF := b.rep.get(groupSizes, label+": broker CPU time per GB produced", "s", true, false)
		values := randomValuesOf(sz)
		n := max(1, *records**size/sz)
		err := b.each(cs, nil, fmt.Sprintf("size-%d", sz), 3, func(c *cluster, t string) error {
			r, cpu, err := b.peak(c, func() (produceResult, error) {
				return franzProduceValues(c, t, kgo.AllISRAcks(), n, 0, values, kgo.NoCompression())
			})
			if err != nil {
				return err
			}
			raw("%s %d-byte records franz-go peak: %s", c.kind, sz, r)
			b.rep.set(groupSizes, prod.name, "MB/s", false, false, c.kind, r.mbps)
			b.rep.set(groupSizes, cpuF.name, "s", true, false, c.kind, cpu/r.gb())
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fmtBytes is a size as people write it: 100 B, 1 KiB, 10 KiB, 1 MiB (or exact bytes).
func fmtBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%s B", commas(float64(n)))
	}
}

// consumerGroups runs, on the running three-broker deployments, for each count of
// groups, -group-consumers franz-go consumers at once (one client each) spread evenly
// over that many groups, every group reading the whole of a topic of -group-consumers
// partitions filled beforehand with -group-records records of -size bytes: the bytes
// all consumers received over the time from the first client's creation to the last
// group's last record (joins and rebalances included), and the largest broker's
// resident memory meanwhile.
func (b *bench) consumerGroups(cs map[string]*cluster, groups []int) error {
	labels := map[int]string{}
	for _, g := range groups {
		labels[g] = fmt.Sprintf("%s consumers in %s groups", commas(float64(*groupCons)), commas(float64(g)))
		if g == 1 {
			labels[g] = fmt.Sprintf("%s consumers in 1 group", commas(float64(*groupCons)))
		}
	}
	consumeName := func(g int) string { return labels[g] + ": consume, all groups together" }
	rssName := func(g int) string { return labels[g] + ": resident memory per broker under load (largest peak)" }
	for _, g := range groups { // rows by measure, then count
		f := b.rep.get(groupGroups, consumeName(g), "MB/s", false, false)
		f.dim, f.metric, f.x = dimGroups, metricConsume, float64(g)
	}
	for _, g := range groups {
		f := b.rep.get(groupGroups, rssName(g), "MB", true, false)
		f.dim, f.metric, f.x = dimGroups, metricRSS, float64(g)
	}
	values := randomValues()
	for _, g := range groups {
		for r := 1; r <= *rounds; r++ {
			b.round = r
			for _, kind := range b.kinds {
				c := cs[kind]
				t := fmt.Sprintf("groups-%d-%d", g, b.seq)
				b.seq++
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := createTopicN(ctx, c, t, *groupCons, 3)
				cancel()
				if err == nil {
					_, err = franzProduceValues(c, t, kgo.AllISRAcks(), *groupRecords, 0, values, kgo.NoCompression())
				}
				var mbps float64
				rss := loadRSS{}
				if err == nil {
					err = rss.during(c, func() (err error) {
						mbps, err = franzGroupConsume(c, t, g, *groupCons, *groupRecords)
						return err
					})
				}
				if err != nil {
					return fmt.Errorf("%s %s: %w", kind, labels[g], err)
				}
				raw("%s %s: %.1f MB/s, largest broker RSS %.1f MB", kind, labels[g], mbps, rss[kind])
				b.rep.set(groupGroups, consumeName(g), "MB/s", false, false, kind, mbps)
				b.rep.set(groupGroups, rssName(g), "MB", true, false, kind, rss[kind])
				deleteTopic(c, t)
			}
		}
		b.round = 0
	}
	return nil
}
