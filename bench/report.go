package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// figure is one measured quantity for both brokers: a single value or a short vector
// (p50 / p99 / p99.9), measured once per round.
type figure struct {
	group, name, unit string
	lowerBetter       bool
	headline          bool
	vals              map[string][][]float64 // per broker, one vector per round

	// dim, metric and x place the figure on a plot (dim "" for none): its median and
	// spread are the point at x of the metric's curve of the dimension.
	dim, metric string
	x           float64

	// Targets (issue 15), 0 for none: targetRatio is the gokafkad ÷ Kafka ratio it should
	// reach (at least, or at most when lower is better), targetAbs gokafkad's own figure.
	targetRatio, targetAbs float64

	profile *profileTop // gokafkad's CPU profile during the measurement, when it trails
}

type report struct {
	mu     sync.Mutex
	groups []string
	figs   []*figure
	notes  []string // lines under the tables
	kfake  []float64
	// test are the test-clusters scenario's figures (testclusters.go), each with
	// gokafkad's values and kfake's or Kafka's.
	test    []*figure
	partial string // what was left out of the run, "" for a full run

	plotLinks map[string]string // group → the markdown of its plot

	discard bool      // a profiling run: values are not recorded
	touched []*figure // figures set since track, nil when not tracking
	track   bool
}

// startTracking begins collecting the figures set until stopTracking.
func (r *report) startTracking() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.track, r.touched = true, nil
}

func (r *report) stopTracking() []*figure {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.touched
	r.track, r.touched = false, nil
	return t
}

func (r *report) get(group, name, unit string, lowerBetter, headline bool) *figure {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.figs {
		if f.group == group && f.name == name {
			return f
		}
	}
	known := false
	for _, g := range r.groups {
		known = known || g == group
	}
	if !known {
		r.groups = append(r.groups, group)
	}
	f := &figure{group: group, name: name, unit: unit, lowerBetter: lowerBetter, headline: headline, vals: map[string][][]float64{}}
	r.figs = append(r.figs, f)
	return f
}

// set records a broker's value(s) for a figure in this round and prints it.
func (r *report) set(group, name, unit string, lowerBetter, headline bool, broker string, v ...float64) {
	f := r.get(group, name, unit, lowerBetter, headline)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.discard {
		progress("%-8s %s: %s %s (profiling run, not counted)", broker, name, fmtVals(v), unit)
		raw("PROFILING RUN %s | %s | %s | %s %s", group, name, broker, fmtVals(v), unit)
		return
	}
	f.vals[broker] = append(f.vals[broker], v)
	n := len(f.vals[broker])
	progress("%-8s %s: %s %s (#%d)", broker, name, fmtVals(v), unit, n)
	raw("RESULT %s | %s | %s | %s %s | #%d", group, name, broker, fmtVals(v), unit, n)
	if r.track {
		for _, t := range r.touched {
			if t == f {
				return
			}
		}
		r.touched = append(r.touched, f)
	}
}

// med is the per-element median of a broker's rounds (nil when not measured).
func (f *figure) med(broker string) []float64 {
	return f.stat(broker, func(xs []float64) float64 {
		n := len(xs)
		if n%2 == 1 {
			return xs[n/2]
		}
		return (xs[n/2-1] + xs[n/2]) / 2
	})
}

func (f *figure) min(broker string) []float64 {
	return f.stat(broker, func(xs []float64) float64 { return xs[0] })
}

func (f *figure) max(broker string) []float64 {
	return f.stat(broker, func(xs []float64) float64 { return xs[len(xs)-1] })
}

// stat applies of to each element's sorted values across rounds.
func (f *figure) stat(broker string, of func(sorted []float64) float64) []float64 {
	rounds := f.vals[broker]
	if len(rounds) == 0 {
		return nil
	}
	out := make([]float64, len(rounds[0]))
	for i := range out {
		var xs []float64
		for _, v := range rounds {
			if i < len(v) {
				xs = append(xs, v[i])
			}
		}
		sort.Float64s(xs)
		out[i] = of(xs)
	}
	return out
}

func fmtVal(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1000:
		return commas(v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func commas(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func fmtVals(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmtVal(x))
	}
	return strings.Join(parts, " / ")
}

// ratio is gokafkad ÷ Kafka (of the medians) for each element.
func (f *figure) ratio() string {
	g, k := f.med(gokafkad), f.med(kafka)
	if len(g) == 0 || len(g) != len(k) {
		return ""
	}
	var parts []string
	for i := range g {
		if k[i] == 0 || g[i] == 0 {
			parts = append(parts, "–")
			continue
		}
		parts = append(parts, fmtRatio(g[i]/k[i]))
	}
	return strings.Join(parts, " / ")
}

// fmtRatio shows a ratio with two significant digits (0.0049×, 0.31×, 5.5×).
func fmtRatio(r float64) string {
	switch {
	case r < 0.01:
		return fmt.Sprintf("%.4f×", r)
	case r < 0.1:
		return fmt.Sprintf("%.3f×", r)
	case r < 10:
		return fmt.Sprintf("%.2f×", r)
	default:
		return fmt.Sprintf("%.0f×", r)
	}
}

// cell is the median of a broker's rounds and, when there were several, their spread
// (min–max) under it.
func (f *figure) cell(broker string) string {
	v := f.med(broker)
	if v == nil {
		return "not run"
	}
	show := fmtVals
	unit := " " + f.unit
	if f.unit == "files" {
		show = func(v []float64) string { return commas(v[0]) }
		unit = ""
	}
	out := show(v) + unit
	if n := len(f.vals[broker]); n > 1 {
		lo, hi := f.min(broker), f.max(broker)
		var parts []string
		for i := range lo {
			parts = append(parts, show(lo[i:i+1])+"–"+show(hi[i:i+1]))
		}
		out += fmt.Sprintf("<br><sub>%s (%d rounds)</sub>", strings.Join(parts, " / "), n)
	}
	return out
}

// has reports whether any figure of group was measured.
func (r *report) has(group string) bool {
	for _, f := range r.figs {
		if f.group == group && len(f.vals) > 0 {
			return true
		}
	}
	return false
}

func (f *figure) better() string {
	if f.lowerBetter {
		return "lower is better"
	}
	return "higher is better"
}

func (r *report) table(sb *strings.Builder, figs []*figure, withGroup bool) {
	sb.WriteString("| measure | gokafkad | Apache Kafka " + *kafkaVersion + " | gokafkad ÷ Kafka |\n|---|---:|---:|---:|\n")
	for _, f := range figs {
		name := f.name
		if withGroup {
			name = shortGroup(f.group) + ": " + name
		}
		fmt.Fprintf(sb, "| %s (%s) | %s | %s | %s |\n", name, f.better(), f.cell(gokafkad), f.cell(kafka), f.ratio())
	}
}

func shortGroup(g string) string {
	if i := strings.Index(g, " ("); i > 0 {
		return g[:i]
	}
	return g
}

// markdown renders BENCHMARKS.md.
func (r *report) markdown(took time.Duration) string {
	var sb strings.Builder
	sb.WriteString(`# Benchmarks: gokafkad and Apache Kafka side by side

Generated by ` + "`make bench`" + ` (bench/); do not edit by hand. The raw output of this run
(every tool's own summary and every driver line) is in
[bench/results/raw.txt](bench/results/raw.txt).

`)
	fmt.Fprintf(&sb, "Run on %s, %s, took %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), took.Round(time.Second))
	if r.partial != "" {
		sb.WriteString("**A partial run: " + r.partial + ".** Sections of a full `make bench` are missing, and what is here was not measured beside them.\n\n")
	}
	sb.WriteString(`## How

- Both brokers run on this machine as separate processes, started by the bench with the
  same settings (their own defaults, plus: ` + fmt.Sprintf("%d", *partitions) + ` partitions per topic, replication
  factors that fit the deployment, ` + "`group.initial.rebalance.delay.ms=0`" + `). Apache Kafka
  runs with ` + "`kafka-server-start.sh`" + `'s JVM settings (1 GB heap, G1).
- Each measurement runs in ` + plural(*rounds, "round") + ` (` + "`-rounds`" + `), each round against gokafkad, then
  against Kafka, back to back, on a fresh topic; both deployments stay up during a
  scenario, the other one idle. A cell is the median of the rounds, with their spread
  (min–max) under it, and the ratio is of the medians, so that one round's outlier does
  not decide it. Before the first measurement each deployment gets an unmeasured warm-up
  (half the record count produced and consumed), so the JVM's compilers have done their
  first work; kafka-producer-perf-test also leaves its first tenth out (` + "`--warmup-records`" + `).
- ` + fmt.Sprintf("%d records of %d random bytes", *records, *size) + `, no compression. Two clients: a franz-go
  driver (bench/franz.go; franz-go's defaults apart from acks and compression) and
  Kafka's own ` + "`kafka-producer-perf-test` / `kafka-consumer-perf-test`" + ` (the Java client's
  defaults: ` + "`linger.ms=5`, `batch.size=16384`" + `). kafka-producer-perf-test's peak runs send
  half the record count (it is the slowest client, and its figure settles within that).
- Peak runs send as fast as the client can, the franz-go driver for at most ` + runTime.String() + `
  (` + "`-run-time`" + `; a broker that slow is measured on the records sent until then). The latency runs send at half the lower of
  the two brokers' median peaks (records/s, per client), so both brokers get the same load and
  neither is saturated (about ` + latencyTime.String() + ` a round, ` + "`-latency-time`" + `, at least 10,000 records); end-to-end latency is from the franz-go producer's send to a
  franz-go consumer's receipt of the same record (same process, same clock).
- MB is 10^6 bytes (Kafka's tools print MiB; converted). Latencies are milliseconds;
  kafka-producer-perf-test reports whole milliseconds for its percentiles, so sub-ms
  figures show as 0 or 1 there: read the franz-go rows for fine latency.
- Start-up is from exec to the first acknowledged produce (acks=all, to a topic
  auto-created with the default one partition);
  Kafka's ` + "`kafka-storage format`" + ` runs before and is not counted. Resident memory is
  VmRSS of the broker process (the largest of the three brokers in the cluster scenario).
- Broker CPU time per GB is user + system time of the broker processes (all three in
  the cluster scenario, the controller not counted) during the franz-go peak run,
  divided by the bytes produced: how much of the machine each byte costs.
- Resident memory under load is the peak over every round; start-up is the median of its
  own starts, and the control-plane times (creation, election) are one measurement each.
- The ratio column is gokafkad ÷ Kafka: above 1 means gokafkad has more of it; each row
  says whether more is better.
`)
	if r.has(groupTLS) {
		sb.WriteString(`- TLS: the three-broker deployment with every listener on SSL, as Kafka users secure a
  cluster — clients, the brokers' replication (` + "`inter.broker.listener.name=SSL`" + `) and the
  controller quorum — with the same server.properties for both brokers: a PKCS#12 keystore
  and a PEM truststore, made by the bench at run time (security/certgen: an ECDSA P-256 CA
  and one broker certificate for 127.0.0.1; nothing is committed), server certificates
  only (` + "`ssl.client.auth=none`" + `, the default), each broker's default protocols and cipher
  suites (what they negotiated is under the tables). Only the franz-go
  driver runs here (it trusts the CA). Neither broker can use sendfile on a TLS
  connection (the kernel does not encrypt): Kafka copies each fetch response through
  its SSL engine, gokafkad reads it into a pooled buffer and writes it through
  crypto/tls; both encrypt replication traffic too.
`)
	}
	if r.has(groupCompression) {
		sb.WriteString(`- Compressed batches: the franz-go producer compresses its batches (franz-go's default
  levels) on the plain three-broker deployment, with values that compress as application
  events do (lines of JSON with recurring keys and words, random ids and trace ids; the
  same bytes every run) instead of the random bytes elsewhere. MB/s and CPU per GB
  count the uncompressed values. Both brokers decompress each batch to validate its
  records (as Kafka's LogValidator does) and store it as it came; the consumer
  decompresses. Under the tables: the topic's segment files on one broker (which has a
  replica of every partition) over the bytes produced.
`)
	}
	if r.has(groupPartitions) {
		sb.WriteString(`- Partitions: for each count, a fresh three-broker deployment of one broker, then of the
  other (never both running, so neither pays for the other's idle replication), warmed
  up as above, then one topic of that many partitions with replication factor 3, created
  and timed until every partition has a leader in metadata and until every broker lists a log for each of
  its replicas (DescribeLogDirs; once), then in each round the franz-go peak
  produce spread over all its partitions, then the first records read back from the start. Here the rounds
  of one broker run in a row (Kafka's first, so gokafkad can be profiled while it still runs). Open files are the entries of
  ` + "`/proc/<pid>/fd`" + ` after the produce (segments, indexes, sockets, and for the JVM its jars), the
  largest of the three brokers.
`)
	}
	if r.has(groupConnections) {
		sb.WriteString(`- Producer connections: on the plain three-broker deployment, that many franz-go
  producers at once, each its own client (its own connections to the brokers and its own
  producer id), together sending the peak run's records to one topic of ` + fmt.Sprintf("%d", *partitions) + ` partitions.
`)
	}
	if r.has(groupSizes) {
		sb.WriteString(`- Record size: on the plain three-broker deployment, franz-go's peak produce of random
  values of each size, as many records as make the peak run's bytes (` + fmt.Sprintf("%d × %d", *records, *size) + `).
`)
	}
	if r.has(groupGroups) {
		sb.WriteString(`- Consumer groups: on the plain three-broker deployment, ` + fmt.Sprintf("%d", *groupCons) + ` franz-go consumers at once
  (one client each) spread evenly over that many groups, each group reading the whole of a
  topic of ` + fmt.Sprintf("%d", *groupCons) + ` partitions filled beforehand with ` + fmt.Sprintf("%d × %d", *groupRecords, *size) + ` bytes: one group shares the
  partitions out, a hundred read the topic a hundred times. MB/s counts what every
  consumer received from the first client's creation to the last group's last record
  (joins and rebalances included); memory is the largest broker's peak meanwhile.
`)
	}
	sb.WriteString(`- Plots show each dimension's medians for both brokers with the rounds' spread as error
  bars, against the scaled quantity on a logarithmic axis; their numbers are the tables' (and raw.txt's).
`)
	sb.WriteString("\n")
	for _, g := range r.groups {
		sb.WriteString("## " + g + "\n\n")
		var figs []*figure
		for _, f := range r.figs {
			if f.group == g {
				figs = append(figs, f)
			}
		}
		r.table(&sb, figs, false)
		sb.WriteString("\n")
		if img := r.plotLinks[g]; img != "" {
			sb.WriteString(img + "\n\n")
		}
	}
	if g := r.find(groupSingle, "produce acks=1, franz-go"); g != nil && g.med(gokafkad) != nil && len(r.kfake) > 0 {
		kf := &figure{vals: map[string][][]float64{}}
		for _, v := range r.kfake {
			kf.vals["kfake"] = append(kf.vals["kfake"], []float64{v})
		}
		kf.unit = "MB/s"
		sb.WriteString("## gokafkad and franz-go's kfake\n\n")
		sb.WriteString("The same franz-go producer (acks=1) against gokafkad (single node, Kafka-format segments on disk) and kfake (in memory, in the bench process).\n\n")
		sb.WriteString("| measure | gokafkad | kfake | gokafkad ÷ kfake |\n|---|---:|---:|---:|\n")
		fmt.Fprintf(&sb, "| produce acks=1, franz-go (higher is better) | %s | %s | %s |\n\n", g.cell(gokafkad), kf.cell("kfake"), fmtRatio(g.med(gokafkad)[0]/kf.med("kfake")[0]))
	}
	r.testTable(&sb)
	r.trailing(&sb)
	for _, n := range r.notes {
		sb.WriteString(n + "\n\n")
	}
	return sb.String()
}

func (r *report) find(group, name string) *figure {
	for _, f := range r.figs {
		if f.group == group && f.name == name {
			return f
		}
	}
	return nil
}

// behind lists the elements of a figure where gokafkad's median did worse than Kafka's,
// or missed the figure's target.
func (f *figure) behind() []string {
	g, k := f.med(gokafkad), f.med(kafka)
	labels := []string{""}
	if len(g) == 3 {
		labels = []string{"p50", "p99", "p99.9"}
	}
	var out []string
	for i := range g {
		what := shortGroup(f.group) + ": " + f.name
		if labels[min(i, len(labels)-1)] != "" {
			what += " (" + labels[i] + ")"
		}
		if len(k) == len(g) && g[i] > 0 && k[i] > 0 {
			ratio := g[i] / k[i]
			worse := ratio < 1
			if f.lowerBetter {
				worse = ratio > 1
			}
			switch {
			case worse:
				out = append(out, fmt.Sprintf("%s: %s against %s %s (%s).", what, fmtVal(g[i]), fmtVal(k[i]), f.unit, fmtRatio(ratio)))
			case f.targetRatio > 0 && !f.lowerBetter && ratio < f.targetRatio:
				out = append(out, fmt.Sprintf("%s: %s against %s %s, %s where the target is ≥ %s (%.0f %% short).",
					what, fmtVal(g[i]), fmtVal(k[i]), f.unit, fmtRatio(ratio), fmtRatio(f.targetRatio), 100*(1-ratio/f.targetRatio)))
			case f.targetRatio > 0 && f.lowerBetter && ratio > f.targetRatio:
				out = append(out, fmt.Sprintf("%s: %s against %s %s, %s where the target is ≤ %s (%.0f %% over).",
					what, fmtVal(g[i]), fmtVal(k[i]), f.unit, fmtRatio(ratio), fmtRatio(f.targetRatio), 100*(ratio/f.targetRatio-1)))
			}
		}
		if f.targetAbs > 0 {
			if f.lowerBetter && g[i] > f.targetAbs {
				out = append(out, fmt.Sprintf("%s: gokafkad %s %s where the target is ≤ %s %s (%.0f %% over).", what, fmtVal(g[i]), f.unit, fmtVal(f.targetAbs), f.unit, 100*(g[i]/f.targetAbs-1)))
			}
			if !f.lowerBetter && g[i] < f.targetAbs {
				out = append(out, fmt.Sprintf("%s: gokafkad %s %s where the target is ≥ %s %s (%.0f %% short).", what, fmtVal(g[i]), f.unit, fmtVal(f.targetAbs), f.unit, 100*(1-g[i]/f.targetAbs)))
			}
		}
	}
	return out
}

// profileable reports whether a CPU profile of gokafkad during the figure's measurement
// says something about it: throughput, CPU time and latency do; memory, descriptors
// and control-plane times (a topic's creation, an election) are not CPU-bound work of
// the measured section.
func (f *figure) profileable() bool {
	return (f.unit == "MB/s" || f.unit == "s" || f.unit == "ms") && !strings.Contains(f.name, "topic created") &&
		!strings.Contains(f.name, "leader killed") && f.group != groupStart
}

// profileTop is the top of gokafkad's CPU profile (every broker's, merged) taken while
// one measurement was repeated for the rows it explains.
type profileTop struct {
	label     string        // the measurement
	windows   int           // measured sections profiled
	brokers   int           // processes profiled in each
	dur       time.Duration // their total wall time
	flat, cum string        // go tool pprof -top, and -top -cum of gokafkad's own functions
	err       string        // why there is no profile
}

// trailing writes the section "Where gokafkad trails": every row behind Kafka or a
// target, and the CPU profiles taken for them.
func (r *report) trailing(sb *strings.Builder) {
	sb.WriteString("## Where gokafkad trails\n\n")
	var profiles []*profileTop
	index := map[*profileTop]int{}
	var lines []string
	for _, f := range r.figs {
		for _, b := range f.behind() {
			ref := ""
			switch {
			case f.profile != nil:
				if _, ok := index[f.profile]; !ok {
					profiles = append(profiles, f.profile)
					index[f.profile] = len(profiles)
				}
				ref = fmt.Sprintf(" CPU profile: [P%d](#p%d).", index[f.profile], index[f.profile])
			case !f.profileable():
				ref = " (No CPU profile: not a figure of CPU-bound work.)"
			case !*explain:
				ref = " (No CPU profile: -explain=false.)"
			case *pprofDir != "":
				ref = " (No CPU profile here: -pprof profiles whole runs into " + *pprofDir + " instead.)"
			default:
				ref = " (No CPU profile was taken.)"
			}
			lines = append(lines, "- "+b+ref)
		}
	}
	if len(lines) == 0 {
		sb.WriteString("Nowhere in this run.\n\n")
		return
	}
	sb.WriteString("Every row where gokafkad's median is behind Kafka's, or misses a target of issue 15 " +
		"(three brokers at 3–10 partitions: ≥ 8× Kafka's produce throughput and ≤ 1.0 broker CPU-s per GB; " +
		"at 1,000 partitions and more: ≥ 5× its produce throughput; consumers never behind).\n\n")
	for _, l := range lines {
		sb.WriteString(l + "\n")
	}
	sb.WriteString("\n")
	if len(profiles) == 0 {
		return
	}
	sb.WriteString("### gokafkad's CPU profiles behind those rows\n\n" +
		"Right after the rounds of a measurement that trails, the bench runs it again on gokafkad alone (not counted), " +
		"repeated until at least " + profileTime.String() + " of measured sections, each section bracketed by a CPU-profile window in every broker " +
		"(`GOKAFKAD_CPUPROFILE_WINDOWS`), then merges the brokers' windows with `go tool pprof`. " +
		"Flat is time in the function itself, cum with what it calls; the second table keeps gokafkad's own functions only.\n\n")
	for i, p := range profiles {
		fmt.Fprintf(sb, "<a id=\"p%d\"></a>\n#### P%d. %s\n\n", i+1, i+1, p.label)
		if p.err != "" {
			sb.WriteString("No profile: " + p.err + "\n\n")
			continue
		}
		sections, brokers := "measured sections", fmt.Sprintf("%d brokers' profiles merged", p.brokers)
		if p.windows == 1 {
			sections = "measured section"
		}
		if p.brokers == 1 {
			brokers = "one broker"
		}
		fmt.Fprintf(sb, "%d %s, %s of wall time, %s (on %d cores: total samples up to %d× the wall time).\n\n",
			p.windows, sections, p.dur.Round(time.Millisecond), brokers, runtime.NumCPU(), runtime.NumCPU())
		sb.WriteString("```text\n" + p.flat + "\n```\n\n")
		if p.cum != "" {
			sb.WriteString("```text\n" + p.cum + "\n```\n\n")
		}
	}
}

// headline renders the README's summary table.
func (r *report) headline() string {
	var figs []*figure
	for _, f := range r.figs {
		if f.headline {
			figs = append(figs, f)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "One `make bench` run, %s, %s:\n\n", time.Now().UTC().Format("2006-01-02"), machine())
	r.table(&sb, figs, true)
	return sb.String()
}

// machine describes where the run happened.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(l[strings.Index(l, ":")+1:])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.TrimPrefix(strings.Split(string(b), "\n")[0], "MemTotal:"), "%f", &kb)
		mem = fmt.Sprintf(", %.0f GiB", kb/(1<<20))
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	java, _ := exec.Command("java", "-version").CombinedOutput()
	jv := strings.Split(strings.TrimSpace(string(java)), "\n")[0]
	return fmt.Sprintf("%s × %d%s, Linux %s, %s, %s", model, runtime.NumCPU(), mem, strings.TrimSpace(string(kernel)), runtime.Version(), jv)
}

// replaceBlock rewrites the text between the begin and end markers of a generated block.
func replaceBlock(path, name, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	begin := "<!-- " + name + ":begin"
	end := "<!-- " + name + ":end -->"
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s block", path, name)
	}
	i += strings.Index(s[i:], "-->") + len("-->")
	return os.WriteFile(path, []byte(s[:i]+"\n"+body+s[j:]), 0o644)
}

// plural is "1 round", "3 rounds".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// setTest records a value of kind (gokafkad, kfake or kafka) for a row of the
// test-clusters table, in milliseconds.
func (r *report) setTest(name, kind string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var f *figure
	for _, t := range r.test {
		if t.name == name {
			f = t
		}
	}
	if f == nil {
		f = &figure{group: groupTestClusters, name: name, unit: "ms", lowerBetter: true, vals: map[string][][]float64{}}
		r.test = append(r.test, f)
	}
	f.vals[kind] = append(f.vals[kind], []float64{v})
	progress("%-8s %s: %s ms (#%d)", kind, name, fmtVal(v), len(f.vals[kind]))
	raw("RESULT %s | %s | %s | %s ms | #%d", groupTestClusters, name, kind, fmtVal(v), len(f.vals[kind]))
}

// testTable renders the test-clusters table: gokafkad beside kfake (in process) or
// Apache Kafka (processes).
func (r *report) testTable(sb *strings.Builder) {
	if len(r.test) == 0 {
		return
	}
	sb.WriteString("## " + groupTestClusters + "\n\n")
	sb.WriteString("What a test pays for a cluster. In process: `kafkatest.NewCluster` (memory logs, one topic of one partition replicated to every broker) " +
		"and franz-go's `kfake.NewCluster` (in memory, no replication) in the bench's process, each followed by a franz-go client's first acks=all " +
		"produce and the cluster's close. `gokafkad dev --brokers 3` (one process, three combined nodes) from exec to the first acks=all produce " +
		"to a new topic of replication factor 3, beside Apache Kafka's controller and three brokers (four JVMs, started by the three scenario) " +
		"from the controller's exec to the same (the topic's creation and the produce retried every few milliseconds while brokers register).\n\n")
	sb.WriteString("| measure | gokafkad | other | other | gokafkad ÷ other |\n|---|---:|---|---:|---:|\n")
	for _, f := range r.test {
		other, label := kfakeKind, "kfake"
		if f.name == rowDev3 {
			other, label = kafka, "Apache Kafka "+*kafkaVersion
		}
		ratio := "–"
		if g, o := f.med(gokafkad), f.med(other); g != nil && o != nil && o[0] > 0 {
			ratio = fmtRatio(g[0] / o[0])
		}
		cell := f.cell(other)
		if other == kafka && f.med(kafka) == nil {
			cell = "not run (the three scenario measures it)"
		}
		fmt.Fprintf(sb, "| %s (lower is better) | %s | %s | %s | %s |\n", f.name, f.cell(gokafkad), label, cell, ratio)
	}
	sb.WriteString("\n")
}
