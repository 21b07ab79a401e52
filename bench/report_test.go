package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func rounds3(r *report, group, name, unit string, lowerBetter bool, g, k []float64) *figure {
	for i := range g {
		r.set(group, name, unit, lowerBetter, false, gokafkad, g[i])
		r.set(group, name, unit, lowerBetter, false, kafka, k[i])
	}
	return r.find(group, name)
}

// TestReportRounds: a cell is the median of the rounds with their spread, the ratio is
// of the medians, and one round's outlier decides neither.
func TestReportRounds(t *testing.T) {
	r := &report{}
	f := rounds3(r, groupThree, "produce latency p99", "ms", true, []float64{15, 350, 14}, []float64{98, 100, 99})
	if got := f.med(gokafkad)[0]; got != 15 {
		t.Errorf("median %v, want 15", got)
	}
	if got := f.cell(gokafkad); got != "15.0 ms<br><sub>14.0–350 (3 rounds)</sub>" {
		t.Errorf("cell %q", got)
	}
	if got := f.ratio(); got != "0.15×" {
		t.Errorf("ratio %q", got)
	}
	if b := f.behind(); len(b) != 0 {
		t.Errorf("an outlier round made gokafkad trail: %v", b)
	}
	even := &figure{vals: map[string][][]float64{gokafkad: {{1, 10}, {3, 30}}}}
	if m := even.med(gokafkad); m[0] != 2 || m[1] != 20 {
		t.Errorf("median of two rounds %v, want [2 20]", m)
	}
}

// TestReportTrails: rows behind Kafka, or short of a target, are listed in "Where
// gokafkad trails" with their profile's top, and a row with no CPU profile says why.
func TestReportTrails(t *testing.T) {
	r := &report{}
	cons := rounds3(r, groupSingle, "consume from the start, franz-go", "MB/s", false, []float64{1100, 1131, 1200}, []float64{1487, 1400, 1500})
	prod := r.get(groupThree, "produce, franz-go", "MB/s", false, true)
	prod.targetRatio = 8
	rounds3(r, groupThree, "produce, franz-go", "MB/s", false, []float64{600, 656, 700}, []float64{109, 109, 109})
	rounds3(r, groupThree, "resident memory", "MB", true, []float64{50, 50, 50}, []float64{40, 40, 40})
	cons.profile = &profileTop{label: "Single node: consume", windows: 4, flat: "      flat  flat%\n  10ms 50%  syscall.Syscall6"}
	var sb strings.Builder
	r.trailing(&sb)
	out := sb.String()
	for _, want := range []string{
		"- Single node: consume from the start, franz-go: 1,131 against 1,487 MB/s (0.76×). CPU profile: [P1](#p1).",
		"- Three brokers: produce, franz-go: 656 against 109 MB/s, 6.02× where the target is ≥ 8.00× (25 % short). (No CPU profile was taken.)",
		"- Three brokers: resident memory: 50.0 against 40.0 MB (1.25×). (No CPU profile: not a figure of CPU-bound work.)",
		"#### P1. Single node: consume",
		"syscall.Syscall6",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestReportPlots: each dimension with figures becomes a PNG beside the report, linked
// under its group.
func TestReportPlots(t *testing.T) {
	r := &report{}
	for _, n := range []float64{10, 100, 1000} {
		for _, m := range []string{metricProduce, metricCPU} {
			f := r.get(groupPartitions, m+commas(n), "MB/s", false, false)
			f.dim, f.metric, f.x = dimPartitions, m, n
			rounds3(r, groupPartitions, f.name, "MB/s", false, []float64{n, n + 1, n + 2}, []float64{n / 2, n / 3, n / 4})
		}
	}
	dir := t.TempDir()
	links, err := r.plots(dir, "bench/results")
	if err != nil {
		t.Fatal(err)
	}
	if got := links[groupPartitions]; !strings.Contains(got, "(bench/results/partitions.png)") {
		t.Errorf("link %q", got)
	}
	if len(links) != 1 {
		t.Errorf("plots for dimensions without figures: %v", links)
	}
	f, err := os.Open(filepath.Join(dir, "partitions.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 200 {
		t.Errorf("plot is %v", b)
	}
}

// TestReportGroupsPlot: the consumer-groups dimension draws its own panels (consume
// throughput and memory), named in the link's text.
func TestReportGroupsPlot(t *testing.T) {
	r := &report{}
	for _, g := range []float64{1, 100} {
		for _, m := range []string{metricConsume, metricRSS} {
			f := r.get(groupGroups, m+commas(g), "MB/s", false, false)
			f.dim, f.metric, f.x = dimGroups, m, g
			rounds3(r, groupGroups, f.name, "MB/s", false, []float64{g, g + 1, g + 2}, []float64{g / 2, g / 3, g / 4})
		}
	}
	links, err := r.plots(t.TempDir(), "bench/results")
	if err != nil {
		t.Fatal(err)
	}
	got := links[groupGroups]
	for _, want := range []string{"consume throughput, all groups together and broker resident memory, largest peak", "(bench/results/consumer-groups.png)"} {
		if !strings.Contains(got, want) {
			t.Errorf("link %q lacks %q", got, want)
		}
	}
}
