package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Suite is a sequence of steps run against one broker at a time; later steps may use
// what earlier ones made (a topic, a group), so a suite keeps its order.
type Suite struct {
	// Name is the client or tool family, used for the suite's scratch directory.
	Name string
	// Skip, when it returns a reason, marks every step not run (the client could not be
	// installed here); the reason is written into COMPATIBILITY.md.
	Skip func(x *X) string
	// Steps returns the suite's steps for one broker; state shared by the steps lives
	// in the closure.
	Steps func(x *X) []Step
}

// Step is one row of the compatibility table.
type Step struct {
	Client  string // the tool or client, e.g. "kafka-topics", "kcat", "kafkajs"
	Feature string // what the step checks
	// Expect names the gokafkad issue that makes this step fail there for now
	// ("#5 transactions"): failing on gokafkad is then expected, passing is an error.
	Expect string
	// Note is said in COMPATIBILITY.md's notes for the row (a client's known limit).
	Note string
	// Only names the one broker the row applies to ("gokafkad" for gokafkad's own
	// features, such as gokafkad dev's control API); on the others it is n/a, counted
	// neither passed nor failed. Say why in Note.
	Only    string
	Timeout time.Duration // default 2 minutes
	Run     func(x *X) error
}

// Outcome is what one step did on one broker.
type Outcome struct {
	Err     error
	Skipped string
	// NA: the row does not apply to this broker (Step.Only).
	NA   bool
	Took time.Duration
	Log  string
}

// status of an outcome for a step, as shown in the table.
type status int

const (
	statusPass status = iota
	statusFail
	statusXFail // failed on gokafkad as expected (Step.Expect)
	statusXPass // passed on gokafkad although Step.Expect says it should fail
	statusSkip
	statusNotRun
	statusNA // the row does not apply to this broker (Step.Only)
)

func (s status) cell() string {
	switch s {
	case statusPass:
		return "✅ pass"
	case statusFail:
		return "❌ FAIL"
	case statusXFail:
		return "⏳ expected fail"
	case statusXPass:
		return "❗ unexpected pass"
	case statusSkip:
		return "➖ not run"
	case statusNA:
		return "n/a"
	}
	return ""
}

func (s status) short() string {
	return [...]string{"ok", "FAIL", "xfail", "XPASS", "skip", "-", "n/a"}[s]
}

type rowKey struct{ client, feature string }

type row struct {
	step     Step
	outcomes map[string]Outcome // by broker name
}

// Results collects outcomes by row, in the order rows were first seen.
type Results struct {
	brokers []*Broker
	order   []rowKey
	rows    map[rowKey]*row
}

// NewResults returns an empty table with one column per broker.
func NewResults(brokers []*Broker) *Results {
	return &Results{brokers: brokers, rows: map[rowKey]*row{}}
}

// Add records one outcome and prints it.
func (r *Results) Add(b *Broker, st Step, o Outcome) {
	k := rowKey{st.Client, st.Feature}
	rw := r.rows[k]
	if rw == nil {
		rw = &row{step: st, outcomes: map[string]Outcome{}}
		r.rows[k] = rw
		r.order = append(r.order, k)
	}
	rw.outcomes[b.Name] = o
	s := r.status(b, rw)
	msg := ""
	if o.Err != nil {
		msg = ": " + firstLine(o.Err.Error())
	} else if o.Skipped != "" {
		msg = ": " + o.Skipped
	}
	fmt.Fprintf(os.Stdout, "%-6s %-9s %-26s %-44s %6.1fs%s\n", s.short(), b.Name, st.Client, st.Feature, o.Took.Seconds(), msg)
	if o.Err != nil && (s == statusFail || *verbose) {
		for _, l := range lastLines(o.Log, 15) {
			fmt.Fprintf(os.Stdout, "         | %s\n", l)
		}
	}
	if b.LogDir != "" {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(st.Client + "_" + st.Feature)
		_ = os.WriteFile(b.LogDir+"/"+name+".log", []byte(o.Log+errText(o.Err)), 0o644)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "\nERROR: " + err.Error() + "\n"
}

func (r *Results) status(b *Broker, rw *row) status {
	o, ok := rw.outcomes[b.Name]
	if !ok {
		return statusNotRun
	}
	if o.Skipped != "" {
		return statusSkip
	}
	if o.NA {
		return statusNA
	}
	expect := rw.step.Expect != "" && b.Name == "gokafkad"
	switch {
	case o.Err == nil && expect:
		return statusXPass
	case o.Err == nil:
		return statusPass
	case expect:
		return statusXFail
	}
	return statusFail
}

// Summary prints counts per broker and returns how many outcomes fail the run.
func (r *Results) Summary(w io.Writer) int {
	bad := 0
	fmt.Fprintln(w)
	for _, b := range r.brokers {
		counts := map[status]int{}
		for _, k := range r.order {
			s := r.status(b, r.rows[k])
			counts[s]++
			if s == statusFail || s == statusXPass {
				bad++
				// Why, too: CI keeps the tail of a long log, and this is its tail.
				why := ""
				if err := r.rows[k].outcomes[b.Name].Err; err != nil {
					why = ": " + clip(firstLine(err.Error()), 400)
				}
				fmt.Fprintf(w, "%s on %s: %s %s%s\n", s.short(), b.Name, k.client, k.feature, why)
			}
		}
		na := ""
		if counts[statusNA] > 0 {
			na = fmt.Sprintf(", %d n/a", counts[statusNA])
		}
		fmt.Fprintf(w, "%s: %d passed, %d failed, %d expected failures, %d unexpected passes, %d not run%s\n",
			b.Name, counts[statusPass], counts[statusFail], counts[statusXFail], counts[statusXPass], counts[statusSkip], na)
	}
	pass, fail := 0, 0
	for _, k := range r.order {
		for _, b := range r.brokers {
			switch r.status(b, r.rows[k]) {
			case statusPass, statusXFail:
				pass++
			case statusFail, statusXPass:
				fail++
			}
		}
	}
	// The closing line CI reads.
	fmt.Fprintf(w, "compat: %d passed, %d failed\n", pass, fail)
	return bad
}

// WriteMarkdown writes COMPATIBILITY.md.
func (r *Results) WriteMarkdown(path string, env *Env, took time.Duration) error {
	var sb strings.Builder
	sb.WriteString("# Compatibility\n\n")
	sb.WriteString("<!-- Generated by `make compat` (compat/, go run . -out ../COMPATIBILITY.md). Do not edit by hand. -->\n\n")
	sb.WriteString("Stock Kafka tools and clients run against gokafkad and against the reference Apache Kafka\n")
	sb.WriteString("broker (KRaft, one combined node) in the same run. Each step checks what the tool printed\n")
	sb.WriteString("or what the client read back, not only an exit code. A row marked ⏳ is a known gap of\n")
	sb.WriteString("gokafkad, named by its issue; `make compat` fails if such a row starts passing (so the\n")
	sb.WriteString("mark is removed) or if any other row fails on either broker. A row marked n/a is a feature of\n")
	sb.WriteString("gokafkad alone (`gokafkad dev`'s control API) and counts neither passed nor failed there.\n\n")

	fmt.Fprintf(&sb, "Run of %s, %s; %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), took.Round(time.Second), r.countsLine())

	sb.WriteString("## Versions\n\n| component | version |\n|---|---|\n")
	for _, v := range env.Versions() {
		fmt.Fprintf(&sb, "| %s | %s |\n", v[0], v[1])
	}
	sb.WriteString("\n## Results\n\n")
	sb.WriteString("| client / tool | feature |")
	for _, b := range r.brokers {
		fmt.Fprintf(&sb, " %s |", b.Title)
	}
	sb.WriteString(" notes |\n|---|---|")
	for range r.brokers {
		sb.WriteString("---|")
	}
	sb.WriteString("---|\n")
	for _, k := range r.order {
		rw := r.rows[k]
		fmt.Fprintf(&sb, "| %s | %s |", k.client, mdEscape(k.feature))
		var notes []string
		if rw.step.Expect != "" {
			notes = append(notes, "gokafkad lacks "+rw.step.Expect)
		}
		if rw.step.Note != "" {
			notes = append(notes, rw.step.Note)
		}
		for _, b := range r.brokers {
			s := r.status(b, rw)
			fmt.Fprintf(&sb, " %s |", s.cell())
			o := rw.outcomes[b.Name]
			switch {
			case s == statusSkip:
				notes = append(notes, o.Skipped)
			case s == statusFail && o.Err != nil:
				notes = append(notes, b.Name+": "+trunc(firstLine(o.Err.Error()), 160))
			}
		}
		fmt.Fprintf(&sb, " %s |\n", mdEscape(strings.Join(dedup(notes), "; ")))
	}
	if skipped := r.skipReasons(); len(skipped) > 0 {
		sb.WriteString("\n## Not run here\n\n")
		for _, s := range skipped {
			fmt.Fprintf(&sb, "- %s\n", s)
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func (r *Results) countsLine() string {
	var parts []string
	for _, b := range r.brokers {
		c := map[status]int{}
		for _, k := range r.order {
			c[r.status(b, r.rows[k])]++
		}
		p := fmt.Sprintf("%s: %d pass, %d fail", b.Name, c[statusPass], c[statusFail]+c[statusXPass])
		if c[statusXFail] > 0 {
			p += fmt.Sprintf(", %d expected fail", c[statusXFail])
		}
		if c[statusSkip] > 0 {
			p += fmt.Sprintf(", %d not run", c[statusSkip])
		}
		if c[statusNA] > 0 {
			p += fmt.Sprintf(", %d n/a (gokafkad only)", c[statusNA])
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func (r *Results) skipReasons() []string {
	seen := map[string]bool{}
	for _, rw := range r.rows {
		for _, o := range rw.outcomes {
			if o.Skipped != "" {
				seen[rw.step.Client+": "+o.Skipped] = true
			}
		}
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func dedup(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// ReadmeBlock is the README's summary of the run: cases passed per client or tool on
// each broker.
func (r *Results) ReadmeBlock() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "One `make compat` run, %s: %s.\n\n", time.Now().UTC().Format("2006-01-02"), r.countsLine())
	sb.WriteString("| client / tool | cases |")
	for _, b := range r.brokers {
		fmt.Fprintf(&sb, " %s |", b.Title)
	}
	sb.WriteString("\n|---|---:|")
	for range r.brokers {
		sb.WriteString("---:|")
	}
	sb.WriteString("\n")
	var clients []string
	cases := map[string]int{}
	passed := map[string]map[string]int{}
	na := map[string]map[string]int{}
	for _, k := range r.order {
		if cases[k.client] == 0 {
			clients = append(clients, k.client)
			passed[k.client], na[k.client] = map[string]int{}, map[string]int{}
		}
		cases[k.client]++
		for _, b := range r.brokers {
			switch r.status(b, r.rows[k]) {
			case statusPass, statusXFail:
				passed[k.client][b.Name]++
			case statusNA:
				na[k.client][b.Name]++
			}
		}
	}
	for _, c := range clients {
		fmt.Fprintf(&sb, "| %s | %d |", c, cases[c])
		for _, b := range r.brokers {
			if na[c][b.Name] == cases[c] {
				sb.WriteString(" n/a |")
				continue
			}
			fmt.Fprintf(&sb, " %d passed |", passed[c][b.Name])
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// replaceBlock rewrites the text between a generated block's begin and end markers.
func replaceBlock(path, name, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i := strings.Index(s, "<!-- "+name+":begin")
	j := strings.Index(s, "<!-- "+name+":end -->")
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s block", path, name)
	}
	i += strings.Index(s[i:], "-->") + len("-->")
	return os.WriteFile(path, []byte(s[:i]+"\n"+body+s[j:]), 0o644)
}

// clip cuts s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " […]"
}
