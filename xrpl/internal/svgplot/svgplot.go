// Package svgplot draws line charts as SVG: axes with ticks, one polyline
// per series, and a legend. It is the project's own small writer, so that
// the experiments' figures need no plotting library (it imports only the
// standard library).
package svgplot

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one (x, y) point of a series.
type Point struct{ X, Y float64 }

// Series is one line of a chart. Its points are drawn in order.
type Series struct {
	Name   string
	Points []Point
}

// Chart is a line chart. The zero value of every field but Series has a
// default; a chart needs at least one point.
type Chart struct {
	Title, XLabel, YLabel string
	// Width and Height are the picture's size in pixels; 0 means 720 by
	// 440.
	Width, Height int
	// XMax and YMax, if positive, fix the axes' upper ends (rounded up to
	// a tick); otherwise they come from the data. Both axes start at 0. A
	// point beyond an axis's end is drawn at the edge.
	XMax, YMax float64
	Series     []Series
}

// ErrNoData is returned by Write for a chart without a single point.
var ErrNoData = errors.New("svgplot: no data to plot")

// palette colours the series in order, then wraps around.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// layout is where the plot area sits in the picture.
const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 40
	marginBottom = 55
)

// Write writes c to w as a standalone SVG document. It fails with ErrNoData,
// for a non-finite or negative coordinate, or with w's error.
func (c Chart) Write(w io.Writer) error {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 720
	}
	if height <= 0 {
		height = 440
	}
	xMax, yMax, points := c.XMax, c.YMax, 0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) || p.X < 0 || p.Y < 0 {
				return fmt.Errorf("svgplot: series %q has point (%g, %g): coordinates must be finite and not negative", s.Name, p.X, p.Y)
			}
			points++
			if c.XMax <= 0 {
				xMax = max(xMax, p.X)
			}
			if c.YMax <= 0 {
				yMax = max(yMax, p.Y)
			}
		}
	}
	if points == 0 {
		return ErrNoData
	}
	xTicks, xTop := Ticks(xMax)
	yTicks, yTop := Ticks(yMax)
	plotW := float64(width - marginLeft - marginRight)
	plotH := float64(height - marginTop - marginBottom)
	sx := func(x float64) float64 { return marginLeft + x/xTop*plotW }
	sy := func(y float64) float64 { return marginTop + plotH - y/yTop*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	if c.Title != "" {
		fmt.Fprintf(&b, `<text class="title" x="%d" y="22" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, html.EscapeString(c.Title))
	}
	// Grid and ticks.
	for _, t := range xTicks {
		x := num(sx(t))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", x, num(sy(0)), x, num(sy(yTop)))
		fmt.Fprintf(&b, `<text class="xtick" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", x, num(sy(0)+18), label(t))
	}
	for _, t := range yTicks {
		y := num(sy(t))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", num(sx(0)), y, num(sx(xTop)), y)
		fmt.Fprintf(&b, `<text class="ytick" x="%s" y="%s" text-anchor="end">%s</text>`+"\n", num(sx(0)-6), num(sy(t)+4), label(t))
	}
	// Axes.
	fmt.Fprintf(&b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", num(sx(0)), num(sy(0)), num(sx(xTop)), num(sy(0)))
	fmt.Fprintf(&b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", num(sx(0)), num(sy(0)), num(sx(0)), num(sy(yTop)))
	if c.XLabel != "" {
		fmt.Fprintf(&b, `<text class="xlabel" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(sx(xTop/2)), height-12, html.EscapeString(c.XLabel))
	}
	if c.YLabel != "" {
		fmt.Fprintf(&b, `<text class="ylabel" x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", num(sy(yTop/2)), num(sy(yTop/2)), html.EscapeString(c.YLabel))
	}
	// Series, then the legend in the plot's top left corner.
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, num(sx(min(p.X, xTop)))+","+num(sy(min(p.Y, yTop))))
		}
		fmt.Fprintf(&b, `<polyline class="series" data-name="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n",
			html.EscapeString(s.Name), palette[i%len(palette)], strings.Join(pts, " "))
	}
	for i, s := range c.Series {
		y := marginTop + 14 + 18*i
		x := marginLeft + 12
		fmt.Fprintf(&b, `<line class="legend-line" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x, y-4, x+24, y-4, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text>`+"\n", x+30, y, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Ticks returns round tick values from 0 to at least top (1, 2 or 5 times a
// power of ten apart, five to ten steps from 0), and the last tick, which is
// where the axis ends. A top of 0 or less gives the ticks of 1.
func Ticks(top float64) ([]float64, float64) {
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * mag
		if top/step <= 10 && top/step >= 4 || m == 10 {
			break
		}
	}
	n := int(math.Ceil(top/step - 1e-9))
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks, ticks[n]
}

// num renders a coordinate with two decimals at most.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// label renders a tick value without float noise.
func label(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
