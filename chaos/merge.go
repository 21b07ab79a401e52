package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errReport prefixes every reason a file is not a report -merge can take.
var errReport = errors.New("chaos: not a report this tool wrote")

// Lines of a report, as render writes them (and as the tool wrote them before it
// named each row's campaign: the summary table without "ran at", one campaign).
var (
	reSingle   = regexp.MustCompile("^" + regexp.QuoteMeta(generatedBy) + ` on (\d{4}-\d\d-\d\d) at commit ([0-9a-z-]+): (.+), campaign seed (\d+), (\S+) in all\.$`)
	reMerged   = regexp.MustCompile("^" + regexp.QuoteMeta(generatedBy) + ", merged \\(`-merge`\\) on (\\d{4}-\\d\\d-\\d\\d) at commit ([0-9a-z-]+) from (\\d+) campaigns; each fault's summary row names the one it ran in:$")
	reCampaign = regexp.MustCompile("^- on (\\d{4}-\\d\\d-\\d\\d) at commit ([0-9a-z-]+): (.+), campaign seed (\\d+), (\\S+) in all: ([a-z0-9, -]+?)(?:; its checker lacked `([a-z`, -]+)`)?\\.$")
	reWorkload = regexp.MustCompile(`three brokers and (\d+) controller\(s\), (.+?) — with .* Timeline: (\S+) of workload, the fault \(applied, held, healed\), (\S+) more of workload`)
	reMode     = regexp.MustCompile(`^\d+ runs per fault kind$`)
	reAnoms    = regexp.MustCompile(`^(none|[a-z-]+ ×\d+(, [a-z-]+ ×\d+)*)$`)
	reName     = regexp.MustCompile(`^[a-z0-9-]+$`)
	reAbout    = regexp.MustCompile(`^- \*\*([a-z0-9-]+)\*\*: (.*)\.$`)
	reCheck    = regexp.MustCompile("^- `([a-z-]+)`: ")
	reBlock    = regexp.MustCompile(`^### ([a-z0-9-]+), seed (\d+)$`)
)

const (
	summaryV1  = "| fault | runs | runs with anomalies | anomalies | acked / sent | acks/s before | during | after | longest stall | recovery |"
	summaryV2  = "| fault | ran at | runs | runs with anomalies | anomalies | acked / sent | acks/s before | during | after | longest stall | recovery |"
	runsHeader = "| fault | seed | what it did | acked / sent | transactions committed / aborted / unknown | records consumed | anomalies |"
)

// lines walks a report line by line.
type lines struct {
	l []string
	i int
}

func (s *lines) peek() string {
	if s.i < len(s.l) {
		return s.l[s.i]
	}
	return ""
}

func (s *lines) next() (string, error) {
	if s.i >= len(s.l) {
		return "", fmt.Errorf("%w: it ends early", errReport)
	}
	s.i++
	return s.l[s.i-1], nil
}

// expect takes the next line, which must be want.
func (s *lines) expect(want string) error {
	got, err := s.next()
	if err == nil && got != want {
		err = fmt.Errorf("%w: line %d is %q, want %q", errReport, s.i, cut(got), cut(want))
	}
	return err
}

// until takes the lines up to the next blank one (and that one).
func (s *lines) until() ([]string, error) {
	var out []string
	for {
		l, err := s.next()
		if err != nil || l == "" {
			return out, err
		}
		out = append(out, l)
	}
}

func (s *lines) errf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", errReport, s.i, fmt.Sprintf(format, args...))
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// cells splits a table row into its cells.
func cells(row string) ([]string, bool) {
	if !strings.HasPrefix(row, "| ") || !strings.HasSuffix(row, " |") || len(row) < 4 {
		return nil, false
	}
	return strings.Split(row[2:len(row)-2], " | "), true
}

// pair parses "a / b" (and "a / b / c").
func ints(cell string, n int) ([]int, bool) {
	parts := strings.Split(cell, " / ")
	if len(parts) != n {
		return nil, false
	}
	out := make([]int, n)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func parseCampaign(date, commit, mode, seed, took string) (*campaign, error) {
	n, err := strconv.ParseUint(seed, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: campaign seed %q", errReport, seed)
	}
	if _, err := time.ParseDuration(took); err != nil {
		return nil, fmt.Errorf("%w: campaign duration %q", errReport, took)
	}
	if !reMode.MatchString(mode) {
		return nil, fmt.Errorf("%w: a campaign of %s (only full campaigns, N runs per fault kind, merge)", errReport, mode)
	}
	return &campaign{date: date, commit: commit, mode: mode, seed: n, took: took}, nil
}

// parseReport reads back a report render (or the tool before it named campaigns in
// the summary) wrote, refusing anything else: a line out of place, a figure that
// does not parse, a summary that does not add up to its runs, or a workload other
// than this tool's (its description must be the one this tool writes).
func parseReport(text string) (*doc, error) {
	s := &lines{l: strings.Split(text, "\n")}
	d := &doc{}
	if err := s.expect("# Reliability: the fault campaign"); err != nil {
		return nil, err
	}
	if err := s.expect(""); err != nil {
		return nil, err
	}
	gen, err := s.next()
	if err != nil {
		return nil, err
	}
	var camps []*campaign
	campOf := map[string]*campaign{} // fault kind → its campaign (merged reports)
	lacked := map[*campaign][]string{}
	if m := reSingle.FindStringSubmatch(gen); m != nil {
		c, err := parseCampaign(m[1], m[2], m[3], m[4], m[5])
		if err != nil {
			return nil, err
		}
		camps = append(camps, c)
	} else if m := reMerged.FindStringSubmatch(gen); m != nil {
		n, _ := strconv.Atoi(m[3])
		d.merged = &campaign{date: m[1], commit: m[2]}
		if err := s.expect(""); err != nil {
			return nil, err
		}
		for range n {
			l, err := s.next()
			if err != nil {
				return nil, err
			}
			cm := reCampaign.FindStringSubmatch(l)
			if cm == nil {
				return nil, s.errf("not a campaign line: %q", cut(l))
			}
			c, err := parseCampaign(cm[1], cm[2], cm[3], cm[4], cm[5])
			if err != nil {
				return nil, err
			}
			for _, k := range strings.Split(cm[6], ", ") {
				if _, dup := campOf[k]; dup || !reName.MatchString(k) {
					return nil, s.errf("fault kind %q listed twice or misspelt", k)
				}
				campOf[k] = c
			}
			if cm[7] != "" {
				lacked[c] = strings.Split(cm[7], "`, `")
			}
			camps = append(camps, c)
		}
	} else {
		return nil, s.errf("not the line naming the campaign: %q", cut(gen))
	}
	if err := s.expect(""); err != nil {
		return nil, err
	}

	// The workload: this tool's, with the campaign's controllers, network and phases.
	desc, err := s.next()
	if err != nil {
		return nil, err
	}
	m := reWorkload.FindStringSubmatch(desc)
	if m == nil {
		return nil, s.errf("not the workload's description")
	}
	d.controllers, _ = strconv.Atoi(m[1])
	d.net = m[2]
	w, err1 := time.ParseDuration(m[3])
	r, err2 := time.ParseDuration(m[4])
	if err1 != nil || err2 != nil {
		return nil, s.errf("phases %q, %q", m[3], m[4])
	}
	d.phases = phases{warmup: w, recovery: r}
	if desc != describeWorkload(d.controllers, d.net, d.phases) {
		return nil, s.errf("its workload is not this tool's (a constant changed since it ran): %q", cut(desc))
	}
	for _, l := range []string{"", "## Summary", ""} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	if l, err := s.next(); err != nil || !strings.HasPrefix(l, "Availability is ") {
		return nil, s.errf("no availability paragraph")
	}
	if err := s.expect(""); err != nil {
		return nil, err
	}
	header, err := s.next()
	if err != nil {
		return nil, err
	}
	v2 := header == summaryV2
	if !v2 && header != summaryV1 {
		return nil, s.errf("not the summary table's header: %q", cut(header))
	}
	if _, err := s.next(); err != nil { // |---|…
		return nil, err
	}
	rows, err := s.until()
	if err != nil {
		return nil, err
	}
	byName := map[string]*kindRows{}
	for _, row := range rows {
		c, ok := cells(row)
		want := 10
		if v2 {
			want = 11
		}
		if !ok || len(c) != want {
			return nil, s.errf("summary row %q: want %d cells", cut(row), want)
		}
		k := &kindRows{name: c[0]}
		if !reName.MatchString(k.name) || byName[k.name] != nil {
			return nil, s.errf("summary row for %q: misspelt or twice", k.name)
		}
		switch {
		case d.merged != nil:
			k.camp = campOf[k.name]
			if k.camp == nil {
				return nil, s.errf("%s is in no campaign's list", k.name)
			}
		default:
			k.camp = camps[0]
		}
		if v2 {
			if c[1] != k.camp.commit+", "+k.camp.date {
				return nil, s.errf("%s ran at %q, its campaign at %s, %s", k.name, c[1], k.camp.commit, k.camp.date)
			}
			c = append(c[:1], c[2:]...)
		}
		var bad bool
		n, err := strconv.Atoi(c[1])
		bad = bad || err != nil || n <= 0
		k.runs = n
		n, err = strconv.Atoi(c[2])
		bad = bad || err != nil || n < 0 || n > k.runs
		k.bad = n
		k.anomalies = c[3]
		bad = bad || !reAnoms.MatchString(k.anomalies) || (k.anomalies == "none") != (k.bad == 0)
		as, ok := ints(c[4], 2)
		bad = bad || !ok
		if ok {
			k.acked, k.sent = as[0], as[1]
		}
		for i, dst := range []*int{&k.before, &k.during, &k.after} {
			v, err := strconv.Atoi(c[5+i])
			bad = bad || err != nil
			*dst = v
		}
		k.stall, k.recovery = c[8], c[9]
		_, err1 := time.ParseDuration(k.stall)
		_, err2 := time.ParseDuration(k.recovery)
		if bad || err1 != nil || err2 != nil {
			return nil, s.errf("summary row %q does not parse", cut(row))
		}
		byName[k.name] = k
		d.kinds = append(d.kinds, k)
	}
	if len(d.kinds) == 0 {
		return nil, s.errf("no fault kind in the summary")
	}
	if d.merged != nil && len(campOf) != len(d.kinds) {
		return nil, s.errf("the campaigns list %d fault kinds, the summary %d", len(campOf), len(d.kinds))
	}

	// "Reading the figures", perhaps "Not run here", then the faults' descriptions.
	if l, err := s.next(); err != nil || !strings.HasPrefix(l, "Reading the figures: ") {
		return nil, s.errf("no 'Reading the figures' paragraph")
	}
	if err := s.expect(""); err != nil {
		return nil, err
	}
	if strings.HasPrefix(s.peek(), "Not run") {
		l, _ := s.next()
		_, names, ok := strings.Cut(l, "): ")
		if !ok || !strings.HasSuffix(names, ".") {
			return nil, s.errf("not the list of kinds not run: %q", cut(l))
		}
		d.skipped = strings.Split(strings.TrimSuffix(names, "."), ", ")
		if err := s.expect(""); err != nil {
			return nil, err
		}
	}
	for _, l := range []string{"## What each fault does", ""} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	abouts, err := s.until()
	if err != nil {
		return nil, err
	}
	for _, l := range abouts {
		m := reAbout.FindStringSubmatch(l)
		if m == nil {
			return nil, s.errf("not a fault's description: %q", cut(l))
		}
		if k := byName[m[1]]; k != nil { // others were not run (skipped)
			k.about = m[2]
		}
	}
	for _, k := range d.kinds {
		if k.about == "" {
			return nil, s.errf("%s has no description", k.name)
		}
	}

	for _, l := range []string{"## What the checker looks for", ""} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	checks, err := s.until()
	if err != nil {
		return nil, err
	}
	var kinds []string
	for _, l := range checks {
		m := reCheck.FindStringSubmatch(l)
		if m == nil {
			return nil, s.errf("not a checker line: %q", cut(l))
		}
		kinds = append(kinds, m[1])
	}
	for _, c := range camps {
		c.checks = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return slices.Contains(lacked[c], k) })
	}

	for _, l := range []string{"## Anomalies", ""} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	if s.peek() == "None found." {
		s.next()
		for s.peek() == "" && s.i < len(s.l) {
			s.next()
		}
	} else {
		for strings.HasPrefix(s.peek(), "### ") {
			h, _ := s.next()
			m := reBlock.FindStringSubmatch(h)
			if m == nil || byName[m[1]] == nil {
				return nil, s.errf("anomaly heading %q names no fault kind of the summary", cut(h))
			}
			seed, err := strconv.ParseUint(m[2], 10, 64)
			if err != nil {
				return nil, s.errf("seed %q", m[2])
			}
			var body []string
			for s.i < len(s.l) && !strings.HasPrefix(s.peek(), "### ") && s.peek() != "## Runs" {
				l, _ := s.next()
				body = append(body, l)
			}
			text := strings.Trim(strings.Join(body, "\n"), "\n")
			if text == "" {
				return nil, s.errf("anomaly %s seed %d has no text", m[1], seed)
			}
			byName[m[1]].anomalyBlocks = append(byName[m[1]].anomalyBlocks, anomalyBlock{seed: seed, body: text})
		}
	}

	for _, l := range []string{"## Runs", ""} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	if l, err := s.next(); err != nil || !strings.HasPrefix(l, "Replay one with ") {
		return nil, s.errf("no replay line above the runs")
	}
	for _, l := range []string{"", runsHeader} {
		if err := s.expect(l); err != nil {
			return nil, err
		}
	}
	if _, err := s.next(); err != nil {
		return nil, err
	}
	for s.i < len(s.l) && s.peek() != "" {
		row, _ := s.next()
		c, ok := cells(row)
		if !ok || len(c) < 7 {
			return nil, s.errf("runs row %q: want 7 cells", cut(row))
		}
		k := byName[c[0]]
		if k == nil {
			return nil, s.errf("a run of %q, which the summary does not have", c[0])
		}
		n := len(c)
		rr := runRow{what: strings.Join(c[2:n-4], " | "), anomalies: c[n-1]}
		seed, err := strconv.ParseUint(c[1], 10, 64)
		as, ok1 := ints(c[n-4], 2)
		ts, ok2 := ints(c[n-3], 3)
		reads, err2 := strconv.Atoi(c[n-2])
		if err != nil || !ok1 || !ok2 || err2 != nil || !reAnoms.MatchString(rr.anomalies) {
			return nil, s.errf("runs row %q does not parse", cut(row))
		}
		rr.seed, rr.acked, rr.sent = seed, as[0], as[1]
		rr.committed, rr.aborted, rr.unknown, rr.reads = ts[0], ts[1], ts[2], reads
		k.runRows = append(k.runRows, rr)
	}
	for s.i < len(s.l) {
		if l, _ := s.next(); l != "" {
			return nil, s.errf("text after the runs table: %q", cut(l))
		}
	}

	// Each summary row must add up to its runs.
	for _, k := range d.kinds {
		var bad, acked, sent int
		for _, r := range k.runRows {
			if r.anomalies != "none" {
				bad++
			}
			acked += r.acked
			sent += r.sent
		}
		if len(k.runRows) != k.runs || bad != k.bad || len(k.anomalyBlocks) != k.bad || acked != k.acked || sent != k.sent {
			return nil, fmt.Errorf("%w: %s: the summary says %d runs, %d with anomalies, %d / %d acked; the runs table has %d runs, %d with anomalies (%d described), %d / %d acked",
				errReport, k.name, k.runs, k.bad, k.acked, k.sent, len(k.runRows), bad, len(k.anomalyBlocks), acked, sent)
		}
	}
	return d, nil
}

// mergeDocs lays docs over each other: a fault kind of a later one replaces the
// earlier one's (its rows, runs and anomalies: all of a kind comes from one
// campaign). They must describe one workload on one kind of cluster. The result
// lists the kinds in the tool's order (then kinds the tool no longer has), is stamped
// with the commit and day of the merge, and has the last doc's skipped kinds that no
// doc ran.
func mergeDocs(commit, date string, docs ...*doc) (*doc, error) {
	if len(docs) == 0 {
		return nil, errors.New("chaos: nothing to merge")
	}
	first := docs[0]
	out := &doc{controllers: first.controllers, net: first.net, phases: first.phases}
	byName := map[string]*kindRows{}
	var seen []string
	for i, d := range docs {
		if d.short || d.replay {
			return nil, fmt.Errorf("chaos: merge: report %d is a short campaign or a replay", i+1)
		}
		if d.controllers != first.controllers || d.net != first.net || d.phases != first.phases {
			return nil, fmt.Errorf("chaos: merge: report %d ran %d controller(s) on %s with phases %v/%v, report 1 %d on %s with %v/%v",
				i+1, d.controllers, d.net, d.phases.warmup, d.phases.recovery, first.controllers, first.net, first.phases.warmup, first.phases.recovery)
		}
		for _, k := range d.kinds {
			if byName[k.name] == nil {
				seen = append(seen, k.name)
			}
			byName[k.name] = k
		}
	}
	for _, f := range faults {
		if k := byName[f.name]; k != nil {
			out.kinds = append(out.kinds, k)
		}
	}
	for _, name := range seen {
		if _, known := faultNamed(name); !known {
			out.kinds = append(out.kinds, byName[name])
		}
	}
	for _, name := range docs[len(docs)-1].skipped {
		if byName[name] == nil {
			out.skipped = append(out.skipped, name)
		}
	}
	if len(out.campaigns()) > 1 {
		out.merged = &campaign{commit: commit, date: date}
	}
	return out, nil
}
