package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotBenchReport draws ops/s per workload and mode as grouped bars on a
// log scale (native is tens of times faster than any trapped mode, so a
// linear axis would flatten the modes the seeds are about). The format
// follows the file's extension: .svg, .png, .pdf, ...
func plotBenchReport(rep *benchReport, file string) error {
	ext := strings.TrimPrefix(filepath.Ext(file), ".")
	if ext == "" {
		return fmt.Errorf("--plot %q: name a file ending in .svg or .png", file)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("sentry bench: ops/s, median of %d, %d thread(s)", rep.Repeats, rep.Threads)
	// Bars hold log10(ops/s) on a linear axis labelled in ops/s: gonum's
	// log scale cannot draw bars, which start at 0.
	p.Y.Label.Text = "ops/s (log scale)"
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ticks []plot.Tick
		for k := math.Floor(min); k <= math.Ceil(max); k++ {
			ticks = append(ticks, plot.Tick{Value: k, Label: humanOps(math.Pow(10, k))})
		}
		return ticks
	})
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(40)

	type series struct {
		name  string
		value func(*benchWorkloadResult) float64
		color color.RGBA
	}
	all := []series{
		{"native", func(w *benchWorkloadResult) float64 { return w.Native.MedianOpsPerSec }, color.RGBA{80, 80, 80, 255}},
		{"stock", func(w *benchWorkloadResult) float64 { return w.Stock.MedianOpsPerSec }, color.RGBA{214, 96, 77, 255}},
		{"patched", func(w *benchWorkloadResult) float64 { return w.Patched.MedianOpsPerSec }, color.RGBA{67, 147, 195, 255}},
	}
	if len(rep.Platforms) > 0 {
		all[1].name, all[2].name = rep.Platforms[0]+" stock", rep.Platforms[0]+" patched"
	}
	platColors := []color.RGBA{{178, 24, 43, 255}, {33, 102, 172, 255}}
	for _, plat := range rep.Platforms[min(1, len(rep.Platforms)):] {
		plat := plat
		all = append(all,
			series{plat + " stock", func(w *benchWorkloadResult) float64 { return w.Platforms[plat].Stock.MedianOpsPerSec }, platColors[0]},
			series{plat + " patched", func(w *benchWorkloadResult) float64 { return w.Platforms[plat].Patched.MedianOpsPerSec }, platColors[1]})
	}
	peerColors := []color.RGBA{{146, 197, 222, 255}, {244, 165, 130, 255}}
	for i, peer := range rep.Peers {
		peer := peer
		all = append(all, series{peer, func(w *benchWorkloadResult) float64 {
			if r := w.Peers[peer]; r != nil {
				return r.MedianOpsPerSec
			}
			return 0
		}, peerColors[i%len(peerColors)]})
	}
	names := make([]string, len(rep.Workloads))
	for i, w := range rep.Workloads {
		names[i] = w.Workload
	}
	width := vg.Points(10)
	top := 0.0
	for i, s := range all {
		vals := make(plotter.Values, len(rep.Workloads))
		for j, w := range rep.Workloads {
			// A missing value (0) is drawn as 1 op/s, an empty bar.
			vals[j] = math.Log10(max(s.value(w), 1))
			top = max(top, vals[j])
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(all)-1)/2)
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	p.NominalX(names...)
	// A decade of head room keeps the legend clear of the tallest bars.
	p.Y.Min, p.Y.Max = 0, math.Ceil(top)+1
	p.X.Padding = vg.Points(30)
	w := vg.Length(len(rep.Workloads)*(len(all)+2))*width*2 + 3*vg.Inch
	if err := p.Save(w, 4*vg.Inch, file); err != nil {
		return fmt.Errorf("--plot %s: %w", file, err)
	}
	return nil
}

// humanOps writes a tick value as 1, 10, 100, 1k, ... 10M.
func humanOps(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
