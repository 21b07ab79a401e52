package main

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// results builds a campaign's results by hand: runs of each fault, the second run of
// the first fault with anomalies.
func fakeResults(faultNames ...string) []result {
	var rs []result
	for fi, name := range faultNames {
		for i := range 3 {
			r := result{fault: name, seed: uint64(1000*fi + i), what: "did " + name + " | with a pipe", f: newFindings(),
				writes: 100 + i, acked: 100 + i, txns: [4]int{0, 7, 3, 1}, reads: 500, before: 390.4, during: 120.5, after: 388,
				stall: 1234 * time.Millisecond, recovery: 20 * time.Millisecond}
			if fi == 0 && i == 1 {
				r.acked--
				r.f.add(lostWrite, "%q acknowledged at %s offset %d is not in the final log", "i0-1", "chaos-a/0", 7)
				for range examplesPerKind + 2 {
					r.f.add(duplicate, "%q is in chaos-a/1 at offsets [3 4]", "i1-2")
				}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

func fakeInfo(seed uint64, commit string) reportInfo {
	return reportInfo{base: seed, runs: 3, controllers: 3, net: "a network namespace per node", took: 95 * time.Second,
		phases: phases{warmup: 3 * time.Second, recovery: 6 * time.Second}, commit: commit, date: "2026-12-02",
		skipped: []string{"disk-full"}}
}

// A report the tool writes reads back to the same report, merged or not.
func TestReportRoundTrip(t *testing.T) {
	one := report(fakeResults("kill-leader", "clock-forward"), fakeInfo(42, "abc1234"))
	d, err := parseReport(one)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(d); got != one {
		t.Fatalf("round trip differs:\n%s", firstDiff(one, got))
	}

	// Merged: the second campaign's clock-forward replaces the first's, and adds a kind.
	other := docOf(fakeResults("clock-forward", "clock-backward"), fakeInfo(43, "def5678"))
	other.kinds[0].runRows[0].what = "the newer run"
	m, err := mergeDocs("0123abc", "2026-12-03", d, other)
	if err != nil {
		t.Fatal(err)
	}
	merged := render(m)
	for _, want := range []string{
		"merged (`-merge`) on 2026-12-03 at commit 0123abc from 2 campaigns",
		"| kill-leader | abc1234, 2026-12-02 | 3 | 1 | lost-write ×1, duplicate ×7 |",
		"| clock-forward | def5678, 2026-12-02 | 3 |",
		"| clock-backward | def5678, 2026-12-02 | 3 |",
		"| clock-forward | 0 | the newer run |",
		"### kill-leader, seed 1\n",
	} {
		if !strings.Contains(merged, want) {
			t.Errorf("merged report lacks %q", want)
		}
	}
	if strings.Contains(merged, "| clock-forward | abc1234") || strings.Count(merged, "### clock-forward") != 1 {
		t.Error("the first campaign's clock-forward survived the merge")
	}
	back, err := parseReport(merged)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(back); got != merged {
		t.Fatalf("merged round trip differs:\n%s", firstDiff(merged, got))
	}
}

// A report of the tool before it named each row's campaign (the lead's 18 kinds at
// dace435 are in this format) merges; its campaign lacked the timestamp checks, and
// the merged report says so.
func TestMergeV1Report(t *testing.T) {
	text, err := os.ReadFile("testdata/reliability-v1.md")
	if err != nil {
		t.Fatal(err)
	}
	old, err := parseReport(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(old.kinds) != 2 || old.kinds[0].name != "kill-leader" || old.kinds[0].runs != 20 || old.kinds[0].camp.commit != "3b050f3" {
		t.Fatalf("parsed %d kinds, first %+v", len(old.kinds), old.kinds[0])
	}
	clock := docOf(fakeResults("clock-forward"), fakeInfo(43, "def5678"))
	m, err := mergeDocs("0123abc", "2026-12-03", old, clock)
	if err != nil {
		t.Fatal(err)
	}
	out := render(m)
	for _, want := range []string{
		"- on 2026-12-02 at commit 3b050f3: 20 runs per fault kind, campaign seed 1796167498219650370, 1h52m25s in all: kill-leader, torn-tail; its checker lacked `wrong-timestamp`, `timestamp-lookup`.",
		"| kill-leader | 3b050f3, 2026-12-02 | 20 | 0 | none | 98648 / 98648 | 391 | 318 | 390 | 2.25s | 30ms |",
		"(Not checked by the campaign at 3b050f3.)",
		"| torn-tail | 1950738073296789000 | killed broker 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merged report lacks %q", want)
		}
	}
	// The tool's order: the 18 kinds, then the clock ones.
	if strings.Index(out, "| torn-tail | 3b050f3") > strings.Index(out, "| clock-forward | def5678") {
		t.Error("clock-forward listed before torn-tail")
	}
	back, err := parseReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(back); got != out {
		t.Fatalf("round trip differs:\n%s", firstDiff(out, got))
	}
}

// What the tool did not write, or does not add up, is refused.
func TestParseReportStrict(t *testing.T) {
	good := report(fakeResults("kill-leader"), fakeInfo(42, "abc1234"))
	for name, edit := range map[string]func(string) string{
		"summary acked":     func(s string) string { return strings.Replace(s, "| 302 / 303 |", "| 303 / 303 |", 1) },
		"a run row dropped": func(s string) string { return strings.Replace(s, "| kill-leader | 2 | ", "| kill-leader | x | ", 1) },
		"workload constant": func(s string) string {
			return strings.Replace(s, "`replica.lag.time.max.ms=3000`", "`replica.lag.time.max.ms=4000`", 1)
		},
		"a replay":        func(s string) string { return strings.Replace(s, "3 runs per fault kind", "a replay of one run", 1) },
		"text at the end": func(s string) string { return s + "\nmore\n" },
		"anomaly text gone": func(s string) string {
			i := strings.Index(s, "### ")
			j := strings.Index(s, "## Runs")
			return s[:i] + s[j:]
		},
		"unknown ran at": func(s string) string {
			return strings.Replace(s, "| abc1234, 2026-12-02 |", "| abc1235, 2026-12-02 |", 1)
		},
		"a stall not a time": func(s string) string { return strings.Replace(s, "| 1.23s |", "| 1.23 |", 1) },
	} {
		bad := edit(good)
		if bad == good {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := parseReport(bad); !errors.Is(err, errReport) {
			t.Errorf("%s: parseReport = %v, want errReport", name, err)
		}
	}
	if _, err := parseReport(good); err != nil {
		t.Fatal(err)
	}
}

// firstDiff shows where two texts part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + al[i] + "\n  vs " + bl[i]
		}
	}
	return "one is a prefix of the other"
}

// The format before "ran at" (what the tool at dace435 writes), with anomalies: one
// more blank line before the runs, no campaign column.
func TestParseV1Anomalies(t *testing.T) {
	v2 := report(fakeResults("kill-leader"), fakeInfo(42, "abc1234"))
	v1 := strings.Replace(v2, summaryV2, summaryV1, 1)
	v1 = strings.Replace(v1, "|---|---|---:|", "|---|---:|", 1)
	v1 = strings.ReplaceAll(v1, " | abc1234, 2026-12-02 | ", " | ")
	v1 = strings.Replace(v1, "\n## Runs", "\n\n## Runs", 1)
	d, err := parseReport(v1)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(d); got != v2 {
		t.Fatalf("v1 report renders otherwise than its v2 form:\n%s", firstDiff(v2, got))
	}
}
