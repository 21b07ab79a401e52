package main

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"time"
)

type reportInfo struct {
	base        uint64
	runs        int
	controllers int
	net         string
	short       bool
	replay      bool
	skipped     []string
	took        time.Duration
	phases      phases
	commit      string // the commit the campaign ran at (taken at its start)
	date        string // the day it started (UTC)
}

// gitCommit is HEAD's short hash, with "-dirty" when the work tree has changes to
// tracked files: what a campaign runs is that tree.
func gitCommit() string {
	rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}

// A report (RELIABILITY.md) is a doc: its fault kinds' rows, each from the campaign it
// ran in. A campaign's results make a doc (docOf); -merge reads docs back from reports
// this tool wrote (parseReport) and lays them over each other (mergeDocs); render
// writes one.

// campaign is one run of the tool.
type campaign struct {
	date   string // UTC day it started, 2006-01-02
	commit string // short hash, maybe -dirty
	mode   string // "20 runs per fault kind", the short campaign, a replay
	seed   uint64
	took   string   // its duration, as time.Duration prints it rounded to seconds
	checks []string // the anomaly kinds its checker looked for
}

// kindRows is one fault kind's part of a report.
type kindRows struct {
	name  string
	camp  *campaign
	about string
	// The summary row's cells after the fault's name and the campaign.
	runs, bad             int
	anomalies             string // "none" or "kind ×n, …"
	acked, sent           int
	before, during, after int // acks/s, rounded
	stall, recovery       string
	anomalyBlocks         []anomalyBlock
	runRows               []runRow
}

// anomalyBlock is one run's entry in the Anomalies section.
type anomalyBlock struct {
	seed uint64
	body string // what it did, its findings and the replay line (markdown, no trailing newline)
}

// runRow is one row of the Runs table.
type runRow struct {
	seed                        uint64
	what                        string
	acked, sent                 int
	committed, aborted, unknown int
	reads                       int
	anomalies                   string
}

// doc is a whole report.
type doc struct {
	controllers int
	net         string
	phases      phases
	short       bool
	replay      bool
	kinds       []*kindRows
	skipped     []string  // fault kinds this campaign could not run here
	merged      *campaign // set on a merged report: when and where the merge was made
	own         *campaign // the campaign that made the doc (docOf), named even when it ran nothing
}

// docOf turns a campaign's results into a doc.
func docOf(results []result, in reportInfo) *doc {
	mode := fmt.Sprintf("%d runs per fault kind", in.runs)
	if in.short {
		mode = fmt.Sprintf("the short campaign (`-short`: %d runs each of two fault kinds)", in.runs)
	}
	if in.replay {
		mode = "a replay of one run"
	}
	camp := &campaign{date: in.date, commit: in.commit, mode: mode, seed: in.base, took: in.took.Round(time.Second).String(),
		checks: slices.Clone(anomalyKinds)}
	d := &doc{controllers: in.controllers, net: in.net, phases: in.phases, short: in.short, replay: in.replay, skipped: in.skipped, own: camp}
	byFault := map[string]*kindRows{}
	type sums struct {
		before, during, after float64
		stall, recovery       time.Duration
		all                   *findings
	}
	acc := map[string]*sums{}
	for _, r := range results {
		k := byFault[r.fault]
		if k == nil {
			f, _ := faultNamed(r.fault)
			k = &kindRows{name: r.fault, camp: camp, about: f.about}
			byFault[r.fault] = k
			acc[r.fault] = &sums{all: newFindings()}
			d.kinds = append(d.kinds, k)
		}
		s := acc[r.fault]
		k.runs++
		if r.f.total() > 0 {
			k.bad++
		}
		for kind, c := range r.f.count {
			s.all.count[kind] += c
		}
		k.acked += r.acked
		k.sent += r.writes
		s.before += r.before
		s.during += r.during
		s.after += r.after
		s.stall = max(s.stall, r.stall)
		s.recovery = max(s.recovery, r.recovery)

		an := r.f.summary()
		if an == "" {
			an = "none"
		} else {
			var b strings.Builder
			fmt.Fprintf(&b, "%s. %s.\n\n", r.what, an)
			for _, kind := range anomalyKinds {
				for _, e := range r.f.examples[kind] {
					fmt.Fprintf(&b, "- `%s`: %s\n", kind, e)
				}
				if c := r.f.count[kind]; c > len(r.f.examples[kind]) {
					fmt.Fprintf(&b, "- … %d more `%s`\n", c-len(r.f.examples[kind]), kind)
				}
			}
			fmt.Fprintf(&b, "\nReplay: `go run ./chaos -replay %s:%d%s`", r.fault, r.seed, shortFlag(in.short))
			k.anomalyBlocks = append(k.anomalyBlocks, anomalyBlock{seed: r.seed, body: b.String()})
		}
		what := r.what
		if what == "" {
			what = "(did not get to the fault)"
		}
		k.runRows = append(k.runRows, runRow{seed: r.seed, what: oneLine(what), acked: r.acked, sent: r.writes,
			committed: r.txns[txnCommitted], aborted: r.txns[txnAborted], unknown: r.txns[txnUnknown], reads: r.reads, anomalies: an})
	}
	for _, k := range d.kinds {
		s, n := acc[k.name], float64(k.runs)
		k.anomalies = s.all.summary()
		if k.anomalies == "" {
			k.anomalies = "none"
		}
		k.before, k.during, k.after = roundInt(s.before/n), roundInt(s.during/n), roundInt(s.after/n)
		k.stall, k.recovery = s.stall.Round(10*time.Millisecond).String(), s.recovery.Round(10*time.Millisecond).String()
	}
	return d
}

// roundInt rounds as %.0f prints.
func roundInt(f float64) int { return int(math.RoundToEven(f)) }

// oneLine keeps a table cell on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// report renders RELIABILITY.md for one campaign's results.
func report(results []result, in reportInfo) string { return render(docOf(results, in)) }

// generatedBy opens the line naming the campaign(s).
const generatedBy = "Generated by `make chaos` (`go run ./chaos`, see chaos/main.go)"

// campaignLine is how the report names a campaign.
func campaignLine(c *campaign) string {
	return fmt.Sprintf("on %s at commit %s: %s, campaign seed %d, %s in all", c.date, c.commit, c.mode, c.seed, c.took)
}

// campaigns is d's campaigns in the order their kinds first appear.
func (d *doc) campaigns() []*campaign {
	var cs []*campaign
	for _, k := range d.kinds {
		if !slices.Contains(cs, k.camp) {
			cs = append(cs, k.camp)
		}
	}
	return cs
}

// describeWorkload is the paragraph on the clusters, the workload and the timeline.
func describeWorkload(controllers int, net string, ph phases) string {
	return fmt.Sprintf("Each run starts a fresh cluster of real gokafkad processes — three brokers and %d controller(s), %s — "+
		"with two topics of three partitions, replication factor 3, `min.insync.replicas=2`, unclean election off, "+
		"`broker.session.timeout.ms=%d`, `replica.lag.time.max.ms=%d`. The workload (franz-go): %d idempotent producers with acks=all "+
		"writing unique values round robin to `%s` (one every %v each, at most %d unanswered per partition, a produce timeout of %v and franz-go's request timeout overhead cut to %v, so a silent leader makes them retry elsewhere), %d transactional producers "+
		"(acks=all, transactions of 1–4 records over `%s`'s partitions, about 70%% committed, the rest aborted; "+
		"`transaction.timeout.ms=%d`), two consumers in a group reading both topics read_committed, and two consumers "+
		"assigned every partition from the start, one read_uncommitted, one read_committed. "+
		"Timeline: %v of workload, the fault (applied, held, healed), %v more of workload, then the producers stop "+
		"(every write answered), the partitions must get their three replicas back in sync, every partition is read "+
		"from its start to its high watermark at both isolation levels (once the last stable offset equals the high "+
		"watermark), and the brokers are stopped and their segment files compared.",
		controllers, net, sessionTimeout.Milliseconds(), replicaLag.Milliseconds(), idempotentProducers, topicA,
		writeInterval, maxInFlight, produceTimeout, requestOverhead, txnProducers, topicT, txnTimeout.Milliseconds(), ph.warmup, ph.recovery)
}

// checkerKinds is what each anomaly kind means, in report order.
var checkerKinds = []struct{ kind, what string }{
	{lostWrite, "a write acknowledged (acks=all) missing from the final read_uncommitted read, or a non-transactional one invisible to read_committed"},
	{lostCommitted, "a record of a transaction whose commit was acknowledged, invisible to the final read_committed read"},
	{duplicate, "one value at two offsets (each value is written once: a duplicate is a producer retry the broker did not deduplicate)"},
	{inconsistent, "a value acknowledged at one offset and found at another, or a consumer that read a value at an offset holding another in the final log"},
	{readLost, "a consumer read a record at an offset the final log has nothing at (read, then truncated away)"},
	{phantom, "a record nobody wrote, or in another partition than it was sent to"},
	{abortedRead, "a record of an aborted transaction seen by a read_committed consumer or the final read_committed read"},
	{partialTxn, "a transaction whose commit was not confirmed, with some but not all of its records visible"},
	{nonmonotonic, "a consumer's offsets in a partition going back (group consumers: within one assignment; a rebalance may rewind to the committed offset)"},
	{pollSkip, "an assigned consumer jumping over a record the final read at its isolation level shows between two it read"},
	{wrongTimestamp, "an acknowledged record whose timestamp in the final read is not the CreateTime its producer gave it (the topics use CreateTime)"},
	{timestampLookup, "ListOffsets by timestamp (read_uncommitted, to each partition's leader, for timestamps of random records, one millisecond either side, the ends and MAX_TIMESTAMP) answering other than the final log: the earliest offset whose record's timestamp is at or after the one asked for, however the timestamps are ordered (a clock stepped back makes them go back), or a record with the largest timestamp"},
	{replicaDivergence, "two brokers' segment files differing in a record batch below the high watermark, or a replica ending below it"},
	{crash, "a gokafkad process found dead that the fault had not killed (checked by the faults that could make one die, and for every node before the final stop), with its last log lines"},
	{harness, "the run could not be finished (the cluster did not heal within 60 s, a final read stalled); the run counts as failed"},
}

// lacks is the anomaly kinds this tool checks that c's checker did not.
func (c *campaign) lacks() []string {
	var out []string
	for _, k := range anomalyKinds {
		if !slices.Contains(c.checks, k) {
			out = append(out, k)
		}
	}
	return out
}

// render writes d as RELIABILITY.md.
func render(d *doc) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	camps := d.campaigns()
	p("# Reliability: the fault campaign\n\n")
	if d.merged == nil {
		c := d.own
		if len(camps) > 0 {
			c = camps[0]
		}
		if c == nil {
			c = &campaign{}
		}
		p("%s %s.\n\n", generatedBy, campaignLine(c))
	} else {
		p("%s, merged (`-merge`) %s from %d campaigns; each fault's summary row names the one it ran in:\n\n", generatedBy,
			fmt.Sprintf("on %s at commit %s", d.merged.date, d.merged.commit), len(camps))
		for _, c := range camps {
			var names []string
			for _, k := range d.kinds {
				if k.camp == c {
					names = append(names, k.name)
				}
			}
			p("- %s: %s", campaignLine(c), strings.Join(names, ", "))
			if l := c.lacks(); len(l) > 0 {
				p("; its checker lacked `%s`", strings.Join(l, "`, `"))
			}
			p(".\n")
		}
		p("\n")
	}
	p("%s\n\n", describeWorkload(d.controllers, d.net, d.phases))

	p("## Summary\n\n")
	p("Availability is the idempotent producers' acknowledged writes per second (mean over the runs) before the fault, "+
		"while it holds, and in the %v after the heal; the stall is the longest time a partition of `%s` went without an "+
		"acknowledgement, from the fault to the end of the workload (the worst partition of the worst run: what the "+
		"fault cost the partitions it hit; the others keep their pace); recovery is the time from the heal to the "+
		"first acknowledgement of the slowest partition (worst run).\n\n", d.phases.recovery, topicA)
	p("| fault | ran at | runs | runs with anomalies | anomalies | acked / sent | acks/s before | during | after | longest stall | recovery |\n")
	p("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range d.kinds {
		p("| %s | %s, %s | %d | %d | %s | %d / %d | %d | %d | %d | %s | %s |\n", k.name, k.camp.commit, k.camp.date, k.runs, k.bad,
			k.anomalies, k.acked, k.sent, k.before, k.during, k.after, k.stall, k.recovery)
	}
	p("\nReading the figures: with acks=all a write waits for every replica in the ISR, so a follower that stops " +
		"fetching (paused, killed, cut off) stalls the partitions it follows until the leader drops it from the ISR " +
		"(`replica.lag.time.max.ms`) or its connection closes; a partition whose ISR falls below " +
		"`min.insync.replicas` refuses writes (NOT_ENOUGH_REPLICAS, which producers retry) until a replica catches up. " +
		"A silent peer (paused, or cut off by a partition) is noticed only through timeouts — the producers' request " +
		"timeout, the session timeout at the controller — and a connection that lived through a partition resumes at " +
		"its next TCP retransmission after the heal, which is why recovery after a partition takes seconds.\n")
	if len(d.skipped) > 0 {
		p("\nNot run here (they need network namespaces, a mount or CAP_SYS_TIME, i.e. root): %s.\n", strings.Join(d.skipped, ", "))
	}

	p("\n## What each fault does\n\n")
	for _, k := range d.kinds {
		p("- **%s**: %s.\n", k.name, k.about)
	}
	for _, name := range d.skipped {
		if f, ok := faultNamed(name); ok {
			p("- **%s**: %s.\n", f.name, f.about)
		}
	}

	p("\n## What the checker looks for\n\n")
	for _, k := range checkerKinds {
		p("- `%s`: %s.", k.kind, k.what)
		var without []string
		for _, c := range camps {
			if !slices.Contains(c.checks, k.kind) {
				without = append(without, c.commit)
			}
		}
		switch len(without) {
		case 0:
		case 1:
			p(" (Not checked by the campaign at %s.)", without[0])
		default:
			p(" (Not checked by the campaigns at %s.)", strings.Join(without, ", "))
		}
		p("\n")
	}

	p("\n## Anomalies\n\n")
	none := true
	for _, k := range d.kinds {
		for _, a := range k.anomalyBlocks {
			none = false
			p("### %s, seed %d\n\n%s\n\n", k.name, a.seed, a.body)
		}
	}
	if none {
		p("None found.\n\n")
	}

	p("## Runs\n\n")
	p("Replay one with `go run ./chaos -replay <fault>:<seed>%s` (or `make chaos CHAOSARGS='-replay <fault>:<seed>%s'`).\n\n", shortFlag(d.short), shortFlag(d.short))
	p("| fault | seed | what it did | acked / sent | transactions committed / aborted / unknown | records consumed | anomalies |\n")
	p("|---|---:|---|---:|---:|---:|---|\n")
	for _, k := range d.kinds {
		for _, r := range k.runRows {
			p("| %s | %d | %s | %d / %d | %d / %d / %d | %d | %s |\n", k.name, r.seed, r.what, r.acked, r.sent,
				r.committed, r.aborted, r.unknown, r.reads, r.anomalies)
		}
	}
	return b.String()
}

// shortFlag is the flag a replay of a short campaign's run needs.
func shortFlag(short bool) string {
	if short {
		return " -short"
	}
	return ""
}
