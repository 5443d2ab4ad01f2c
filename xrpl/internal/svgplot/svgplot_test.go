package svgplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is the part of a written chart the tests read back.
type svgDoc struct {
	XMLName   xml.Name      `xml:"svg"`
	Width     int           `xml:"width,attr"`
	Height    int           `xml:"height,attr"`
	Polylines []svgPolyline `xml:"polyline"`
	Texts     []svgText     `xml:"text"`
}

type svgPolyline struct {
	Name   string `xml:"data-name,attr"`
	Stroke string `xml:"stroke,attr"`
	Points string `xml:"points,attr"`
}

type svgText struct {
	Class string `xml:"class,attr"`
	Text  string `xml:",chardata"`
}

func parse(t *testing.T, c Chart) svgDoc {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the output is not XML: %v\n%s", err, buf.String())
	}
	return doc
}

func texts(doc svgDoc, class string) []string {
	var out []string
	for _, tx := range doc.Texts {
		if tx.Class == class {
			out = append(out, tx.Text)
		}
	}
	return out
}

// points reads a polyline's points back.
func points(t *testing.T, p svgPolyline) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, pair := range strings.Fields(p.Points) {
		xs, ys, ok := strings.Cut(pair, ",")
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad point %q", pair)
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestChartParsesWithOneLinePerSeries(t *testing.T) {
	c := Chart{
		Title: "Completion <curve> & more", XLabel: "virtual time (s)", YLabel: "fraction of nodes done",
		Series: []Series{
			{Name: "scheduler", Points: []Point{{0, 0}, {1.5, 0.5}, {3.2, 1}}},
			{Name: "fixed & co", Points: []Point{{0, 0}, {2, 0.4}, {4.1, 1}}},
			{Name: "peerset", Points: []Point{{0, 0}, {7.9, 0.2}}},
		},
	}
	doc := parse(t, c)
	if doc.Width != 720 || doc.Height != 440 {
		t.Errorf("size %dx%d, want the default 720x440", doc.Width, doc.Height)
	}
	if len(doc.Polylines) != 3 {
		t.Fatalf("%d polylines, want one per series (3)", len(doc.Polylines))
	}
	for i, p := range doc.Polylines {
		if p.Name != c.Series[i].Name {
			t.Errorf("polyline %d is named %q, want %q", i, p.Name, c.Series[i].Name)
		}
		pts := points(t, p)
		if len(pts) != len(c.Series[i].Points) {
			t.Errorf("series %q: %d points drawn, want %d", p.Name, len(pts), len(c.Series[i].Points))
		}
		for _, q := range pts {
			if q[0] < marginLeft || q[0] > float64(doc.Width-marginRight) || q[1] < marginTop || q[1] > float64(doc.Height-marginBottom) {
				t.Errorf("series %q: point %v outside the plot area", p.Name, q)
			}
		}
		// x grows, y falls as the fraction grows: the curve goes up.
		for k := 1; k < len(pts); k++ {
			if pts[k][0] <= pts[k-1][0] || pts[k][1] >= pts[k-1][1] {
				t.Errorf("series %q: point %d %v does not go right and up from %v", p.Name, k, pts[k], pts[k-1])
			}
		}
	}
	if got := texts(doc, "legend"); !slices.Equal(got, []string{"scheduler", "fixed & co", "peerset"}) {
		t.Errorf("legend %q", got)
	}
	if got := texts(doc, "title"); !slices.Equal(got, []string{c.Title}) {
		t.Errorf("title %q, want %q (escaped in the file, read back whole)", got, c.Title)
	}
	if got := texts(doc, "xlabel"); !slices.Equal(got, []string{c.XLabel}) {
		t.Errorf("x label %q", got)
	}
	if got := texts(doc, "ytick"); !slices.Equal(got, []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"}) {
		t.Errorf("y ticks %q", got)
	}
	if got := texts(doc, "xtick"); !slices.Equal(got, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}) {
		t.Errorf("x ticks %q", got)
	}
	// The last point of the longest series sits at its x on the axis.
	last := points(t, doc.Polylines[2])[1]
	wantX := marginLeft + 7.9/8*float64(720-marginLeft-marginRight)
	if math.Abs(last[0]-wantX) > 0.01 {
		t.Errorf("x of (7.9, 0.2) is %v, want %v", last[0], wantX)
	}
}

func TestChartRejectsNoDataAndBadPoints(t *testing.T) {
	var buf bytes.Buffer
	if err := (Chart{Series: []Series{{Name: "empty"}}}).Write(&buf); !errors.Is(err, ErrNoData) {
		t.Errorf("empty chart: %v, want ErrNoData", err)
	}
	for _, p := range []Point{{math.NaN(), 0}, {0, math.Inf(1)}, {-1, 0}} {
		err := (Chart{Series: []Series{{Name: "s", Points: []Point{p}}}}).Write(&buf)
		if err == nil || !strings.Contains(err.Error(), `series "s"`) {
			t.Errorf("point %v: error %v, want one naming the series", p, err)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		top  float64
		want []float64
		end  float64
	}{
		{top: 1, want: []float64{0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9, 1}, end: 1},
		{top: 7.3, want: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8}, end: 8},
		{top: 12, want: []float64{0, 2, 4, 6, 8, 10, 12}, end: 12},
		{top: 45, want: []float64{0, 5, 10, 15, 20, 25, 30, 35, 40, 45}, end: 45},
		{top: 0, want: []float64{0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9, 1}, end: 1},
	} {
		got, end := Ticks(c.top)
		if !slices.Equal(got, c.want) || end != c.end {
			t.Errorf("Ticks(%v) = %v, %v; want %v, %v", c.top, got, end, c.want, c.end)
		}
	}
}
