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
var scenarioNames = []string{"startup", "single", "three", "tls", "compression", "partitions"}

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

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-partition-counts: %q is not a partition count", f)
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
)

// latencyRecords is how many records a latency run at rate sends: about 20 seconds'
// worth, at least 10,000, at most -records.
func latencyRecords(rate float64) int { return min(*records, max(int(rate*20), 10000)) }

// gbProduced is the -records × -size bytes of a peak run, in GB.
func gbProduced() float64 { return float64(*records) * float64(*size) / 1e9 }

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
	peak := map[string]float64{}
	err = b.each(cs, rss, "tls-produce", 3, func(c *cluster, t string) error {
		cpu0 := cpuSeconds(c.pids())
		r, err := franzProduce(c, t, kgo.AllISRAcks(), *records, 0)
		if err != nil {
			return err
		}
		cpu := cpuSeconds(c.pids()) - cpu0
		raw("%s TLS produce franz-go peak: %s", c.kind, r)
		peak[c.kind] = r.recsPerSec
		b.rep.set(groupTLS, "produce", "MB/s", false, true, c.kind, r.mbps)
		b.rep.set(groupTLS, "produce: broker CPU time per GB produced", "s", true, false, c.kind, cpu/gbProduced())
		return nil
	})
	if err != nil {
		return err
	}
	rate := halfLowest(peak)
	name := fmt.Sprintf("p50 / p99 / p99.9 at %s rec/s (half the lower peak)", commas(rate))
	err = b.each(cs, rss, "tls-rate", 3, func(c *cluster, t string) error {
		r, err := franzProduce(c, t, kgo.AllISRAcks(), latencyRecords(rate), rate)
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
		if _, err := franzProduce(c, t, kgo.AllISRAcks(), *records, 0); err != nil {
			return err
		}
		mbps, err := franzConsume(c, t, *records+1)
		if err != nil {
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
			cpu0 := cpuSeconds(c.pids())
			r, err := franzProduceValues(c, t, kgo.AllISRAcks(), *records, 0, values, cd.codec)
			if err != nil {
				return err
			}
			cpu := cpuSeconds(c.pids()) - cpu0
			raw("%s %s produce franz-go peak: %s", c.kind, cd.name, r)
			b.rep.set(groupCompression, "produce, "+cd.name, "MB/s", false, false, c.kind, r.mbps)
			b.rep.set(groupCompression, "produce, "+cd.name+": broker CPU time per GB produced", "s", true, false, c.kind, cpu/gbProduced())
			if stored := logBytes(c, t); stored > 0 {
				pct := 100 * float64(stored) / (gbProduced() * 1e9)
				raw("%s %s: %d log bytes on broker 1, %.1f %% of the bytes produced", c.kind, cd.name, stored, pct)
				onDisk = append(onDisk, fmt.Sprintf("%s %s %.1f %%", cd.name, kindName(c.kind), pct))
			}
			mbps, err := franzConsume(c, t, *records+1)
			if err != nil {
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
// partitions does not take the CPU): the time to create one topic of that many
// partitions with replication factor 3 until every partition has a leader, franz-go's
// peak produce to it and the brokers' CPU time per GB, per broker the resident memory
// (peak while producing) and the open files after it, and consuming it from the start.
func (b *bench) partitionCounts(counts []int) error {
	name := func(what string, n int) string { return fmt.Sprintf("%s partitions: %s", commas(float64(n)), what) }
	// Rows by measure, then count.
	type row struct {
		what, unit  string
		lowerBetter bool
	}
	rows := []row{
		{"produce", "MB/s", false},
		{"broker CPU time per GB produced", "s", true},
		{"consume from the start", "MB/s", false},
		{"topic created → every partition has a leader", "ms", true},
		{"resident memory per broker under load (largest peak)", "MB", true},
		{"open files per broker after the produce (largest)", "files", true},
	}
	for _, r := range rows {
		for _, n := range counts {
			b.rep.get(groupPartitions, name(r.what, n), r.unit, r.lowerBetter, false)
		}
	}
	for _, n := range counts {
		for _, kind := range b.kinds {
			scenario := fmt.Sprintf("partitions-%d", n)
			c, err := b.startOne(kind, scenario, startThree)
			if err != nil {
				return err
			}
			err = b.measurePartitions(c, n, func(what string, v float64) {
				for _, r := range rows {
					if r.what == what {
						b.rep.set(groupPartitions, name(what, n), r.unit, r.lowerBetter, false, kind, v)
					}
				}
			})
			c.stop()
			if err != nil {
				return fmt.Errorf("%s %d partitions: %w", kind, n, err)
			}
		}
	}
	return nil
}

func (b *bench) measurePartitions(c *cluster, n int, set func(what string, v float64)) error {
	topic := fmt.Sprintf("bench-partitions-%d", n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := createTopicN(ctx, c, topic, n, 3); err != nil {
		return err
	}
	created := time.Since(start)
	s := sampleRSS(c.pids())
	cpu0 := cpuSeconds(c.pids())
	r, err := franzProduce(c, topic, kgo.AllISRAcks(), *records, 0)
	cpu := cpuSeconds(c.pids()) - cpu0
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
	set("broker CPU time per GB produced", cpu/gbProduced())
	set("topic created → every partition has a leader", ms(created))
	set("resident memory per broker under load (largest peak)", peak)
	set("open files per broker after the produce (largest)", float64(files))
	mbps, err := franzConsume(c, topic, *records+1)
	if err != nil {
		return err
	}
	set("consume from the start", mbps)
	return nil
}
