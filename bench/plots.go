package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A plotted dimension: the figures of one group that carry it, drawn as panels (by
// default produce throughput and broker CPU time per GB) against the scaled quantity.
type dimension struct {
	name, group, title, xLabel string
	tick                       func(x float64) string
	panels                     []panelMetric // nil: producePanels
}

// panelMetric is one panel of a dimension's plot: the figures of that metric.
type panelMetric struct{ metric, title, unit string }

var producePanels = []panelMetric{
	{metricProduce, "produce throughput (higher is better)", "MB/s"},
	{metricCPU, "broker CPU time per GB produced (lower is better)", "CPU-s per GB"},
}

var dimensions = []dimension{
	{dimPartitions, groupPartitions, "Three brokers, RF 3, acks=all: one topic of N partitions",
		"partitions (log scale)", func(x float64) string { return commas(x) }, nil},
	{dimConnections, groupConnections, "Three brokers, RF 3, acks=all: N producers at once",
		"producer clients (log scale)", func(x float64) string { return commas(x) }, nil},
	{dimSizes, groupSizes, "Three brokers, RF 3, acks=all: records of N bytes",
		"record size (log scale)", func(x float64) string { return fmtBytes(int(x)) }, nil},
	{dimGroups, groupGroups, "Three brokers, RF 3: the same consumers in N groups, each group reading the topic",
		"consumer groups (log scale)", func(x float64) string { return commas(x) }, []panelMetric{
			{metricConsume, "consume throughput, all groups together (higher is better)", "MB/s"},
			{metricRSS, "broker resident memory, largest peak (lower is better)", "MB"},
		}},
}

var brokerColors = map[string]color.Color{
	gokafkad: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	kafka:    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// plots draws a PNG for each dimension with measured figures into dir and returns, by
// group, the markdown that embeds it (link is dir as the report reaches it).
func (r *report) plots(dir, link string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range dimensions {
		var panels []*plot.Plot
		var shown []string
		metrics := d.panels
		if metrics == nil {
			metrics = producePanels
		}
		for _, m := range metrics {
			p, ok, err := r.panel(d, m.metric, m.title, m.unit)
			if err != nil {
				return nil, err
			}
			if ok {
				panels = append(panels, p)
				shown = append(shown, m.title[:strings.Index(m.title, " (")])
			}
		}
		if len(panels) == 0 {
			continue
		}
		const w, h = 16 * vg.Centimeter, 9 * vg.Centimeter
		c := vgimg.NewWith(vgimg.UseWH(w*vg.Length(len(panels)), h), vgimg.UseDPI(96))
		dc := draw.New(c)
		// A white background: the PNG is transparent otherwise, unreadable on a dark page.
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter, PadTop: vg.Millimeter * 3,
			PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
		canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
		for i, p := range panels {
			p.Draw(canvases[0][i])
		}
		name := d.name + ".png"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		out[d.group] = fmt.Sprintf("![%s: %s, gokafkad and Apache Kafka](%s/%s)", d.title, strings.Join(shown, " and "), link, name)
	}
	return out, nil
}

// panel is one metric of a dimension: a line per broker through the medians, error
// bars from the rounds' min to max (ok false when nothing was measured).
func (r *report) panel(d dimension, metric, title, unit string) (*plot.Plot, bool, error) {
	var figs []*figure
	for _, f := range r.figs {
		if f.dim == d.name && f.metric == metric {
			figs = append(figs, f)
		}
	}
	sort.Slice(figs, func(i, j int) bool { return figs[i].x < figs[j].x })
	p := plot.New()
	p.Title.Text = d.title + "\n" + title
	p.X.Label.Text = d.xLabel
	p.Y.Label.Text = unit
	p.X.Scale = plot.LogScale{}
	p.Y.Min = 0
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var ticks plot.ConstantTicks
	any := false
	for _, kind := range []string{gokafkad, kafka} {
		var pts struct {
			plotter.XYs
			plotter.YErrors
		}
		for _, f := range figs {
			med := f.med(kind)
			if med == nil {
				continue
			}
			lo, hi := f.min(kind), f.max(kind)
			pts.XYs = append(pts.XYs, plotter.XY{X: f.x, Y: med[0]})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{med[0] - lo[0], hi[0] - med[0]})
			p.Y.Max = max(p.Y.Max, hi[0]*1.3) // headroom for the legend
		}
		if len(pts.XYs) == 0 {
			continue
		}
		any = true
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, false, err
		}
		line.Color, points.Color = brokerColors[kind], brokerColors[kind]
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, false, err
		}
		bars.Color = brokerColors[kind]
		p.Add(line, points, bars)
		p.Legend.Add(kindName(kind), line, points)
	}
	for _, f := range figs {
		ticks = append(ticks, plot.Tick{Value: f.x, Label: d.tick(f.x)})
	}
	p.X.Tick.Marker = ticks
	if len(figs) > 0 {
		// Room either side of the outer points on the log axis.
		p.X.Min, p.X.Max = figs[0].x/1.5, figs[len(figs)-1].x*1.5
	}
	return p, any, nil
}

// pprofTop merges CPU profiles of gokafkad with go tool pprof and returns its top
// functions by flat time, and gokafkad's own functions by cumulative time.
func pprofTop(files []string) (flat, cum string, err error) {
	if len(files) == 0 {
		return "", "", fmt.Errorf("no profile windows were written")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", "", fmt.Errorf("go tool pprof: %v", err)
	}
	run := func(extra ...string) (string, error) {
		args := append([]string{"tool", "pprof", "-top", "-nodecount=15"}, extra...)
		args = append(append(args, gokafkadBin), files...)
		out, err := exec.Command(goBin, args...).Output()
		if err != nil {
			msg := err.Error()
			if ee, ok := err.(*exec.ExitError); ok {
				msg = strings.TrimSpace(string(ee.Stderr))
			}
			return "", fmt.Errorf("go tool pprof: %s", msg)
		}
		// Keep the totals and the table; the file, build id and date change every run.
		var keep []string
		skip := false
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			switch {
			case strings.HasPrefix(l, "File:"), strings.HasPrefix(l, "Build ID:"), strings.HasPrefix(l, "Type:"), strings.HasPrefix(l, "Time:"):
				continue
			case strings.HasPrefix(l, "Active filters:"):
				skip = true
				continue
			case skip && strings.HasPrefix(l, "   "):
				continue
			}
			skip = false
			if strings.HasPrefix(l, "Duration:") {
				// The durations of the merged windows add up (three brokers each);
				// the report gives the wall time instead.
				if i := strings.Index(l, "Total samples = "); i >= 0 {
					l = strings.TrimSpace(l[i:])
					if j := strings.Index(l, " ("); j >= 0 {
						l = l[:j]
					}
				}
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n"), nil
	}
	if flat, err = run(); err != nil {
		return "", "", err
	}
	cum, err = run("-cum", "-show=^github.com/gokafkad/gokafkad/")
	return flat, cum, err
}

// niceTicks labels about five round values (1, 2 or 5 × 10^k apart) of an axis.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: fmtVal(lo)}}
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		label := strconv.FormatFloat(v, 'f', -1, 64)
		if v >= 1000 {
			label = commas(v)
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
		if minor := v + step/2; minor < hi {
			ts = append(ts, plot.Tick{Value: minor})
		}
	}
	return ts
}
