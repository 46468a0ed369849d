// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command plot draws the figures of `make bench-scale` into one PNG: a grid
// of panels, each a metric against cluster size with one line per side. It
// reads the panels from the JSON that cmd/bench -scale writes
// (_output/bench-scale/plot.json), so that the plotting library stays in
// this module and out of the apiserver's module graph.
//
//	plot -in _output/bench-scale/plot.json -out _output/bench-scale/scale.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Figure is what cmd/bench -scale writes: panels in reading order.
type Figure struct {
	Title  string  `json:"title"`
	Panels []Panel `json:"panels"`
}

// Panel is one metric against one x axis, one line per series.
type Panel struct {
	Title  string   `json:"title"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	Series []Series `json:"series"`
}

// Series is one side's points, in order of x.
type Series struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
}

const columns = 3

func main() {
	in := flag.String("in", "_output/bench-scale/plot.json", "panels written by cmd/bench -scale")
	out := flag.String("out", "_output/bench-scale/scale.png", "PNG to write (a plot the docs show is copied into docs/ by hand, with the run it comes from)")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var f Figure
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(f.Panels) == 0 {
		return fmt.Errorf("%s: no panels", in)
	}
	rows := (len(f.Panels) + columns - 1) / columns
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, columns)
	}
	for i, panel := range f.Panels {
		p, err := draw1(panel)
		if err != nil {
			return fmt.Errorf("%s: panel %q: %w", in, panel.Title, err)
		}
		plots[i/columns][i%columns] = p
	}
	img := vgimg.New(vg.Length(columns)*4*vg.Inch, vg.Length(rows)*3*vg.Inch+0.4*vg.Inch)
	dc := draw.New(img)
	title := draw.TextStyle{Color: plot.New().Title.TextStyle.Color, Font: plot.New().Title.TextStyle.Font, Handler: plot.New().Title.TextStyle.Handler}
	title.Font.Size = vg.Points(14)
	title.XAlign = draw.XCenter
	dc.FillText(title, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 0.3*vg.Inch}, f.Title)
	dc.Max.Y -= 0.4 * vg.Inch
	tiles := draw.Tiles{Rows: rows, Cols: columns, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c, p := range plots[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// draw1 makes one panel: a line with points per series, log-scaled x (the
// steps grow tenfold).
func draw1(panel Panel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = panel.Title
	p.X.Label.Text = panel.X
	p.Y.Label.Text = panel.Y
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	var lines []any
	for _, s := range panel.Series {
		xys := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			if pt[0] <= 0 {
				return nil, fmt.Errorf("series %q: x %v is not positive (the x axis is logarithmic)", s.Name, pt[0])
			}
			xys = append(xys, plotter.XY{X: pt[0], Y: pt[1]})
		}
		lines = append(lines, s.Name, xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return nil, err
	}
	return p, nil
}
