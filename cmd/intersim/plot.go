package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotAll draws, for each register count, the median relative error
// against the overlap (one line per ratio and method) and the envelope
// coverage, into dir/intersection_error_log2m<N>.png and
// dir/intersection_coverage_log2m<N>.png.
func plotAll(dir string, g grid, res results) error {
	for _, lg := range g.log2ms {
		if err := plotMetric(filepath.Join(dir, fmt.Sprintf("intersection_error_log2m%d.png", lg)), g, res, lg,
			fmt.Sprintf("Median relative error, m = %d", 1<<lg), "median |estimate − truth| / truth", true,
			func(s stats) float64 { return s.medRel }); err != nil {
			return err
		}
		if err := plotMetric(filepath.Join(dir, fmt.Sprintf("intersection_coverage_log2m%d.png", lg)), g, res, lg,
			fmt.Sprintf("Truth inside [lower, upper], m = %d", 1<<lg), "share of runs covered", false,
			func(s stats) float64 { return s.coverage }); err != nil {
			return err
		}
	}
	return nil
}

// coverageFloor is the bottom of the coverage plots.
const coverageFloor = 0.85

// palette gives each ratio a colour.
func palette(i int) color.Color {
	cs := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	return cs[i%len(cs)]
}

// plotMetric draws metric over the overlaps for one log2m.
func plotMetric(path string, g grid, res results, lg int, title, ylabel string, logY bool, metric func(stats) float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "overlap |A∩B| / |A|"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		// Coverage lives near 1: show 85%..100%, anything lower at the
		// floor.
		p.Y.Min, p.Y.Max = coverageFloor, 1.005
	}
	// Bottom corners: the curves fall to the right (error) or hug the top
	// (coverage).
	p.Legend.Top = false
	p.Legend.Left = logY
	p.Add(plotter.NewGrid())
	for ri, r := range g.ratios {
		for mi, m := range methods() {
			var pts plotter.XYs
			for _, o := range g.overlaps[1:] {
				c := res[cellKey{2, lg, r, o, 0}]
				if c == nil {
					continue
				}
				v := metric(summarise(c[mi]))
				if logY {
					v = math.Max(v, 1e-4) // log axis: keep zeros visible
				} else {
					v = math.Max(v, coverageFloor)
				}
				pts = append(pts, plotter.XY{X: o, Y: v})
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, s.Color = palette(ri), palette(ri)
			l.Width = vg.Points(1.5)
			if mi == 0 {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				s.Shape = draw.CircleGlyph{}
			} else {
				s.Shape = draw.TriangleGlyph{}
			}
			p.Add(l, s)
			p.Legend.Add(fmt.Sprintf("ratio %d, %s", r, m), l, s)
		}
	}
	return p.Save(8*vg.Inch, 6*vg.Inch, path)
}
