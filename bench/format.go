package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/salusgo/salus/plots"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// columns are the table's, CSV's and Markdown's headers.
var columns = []string{"jobs", "scheme", "iterations", "events", "wall s", "iters/s", "events/s", "µs/job", "switches", "ns/switch", "max RSS MiB", "alloc MiB"}

// cells is a result's row as text: the figures of a run that ended, or what
// happened instead in the wall column.
func cells(r Result) []string {
	row := []string{strconv.Itoa(r.Jobs), r.Scheme}
	if r.OK() {
		return append(row, strconv.FormatInt(r.Iterations, 10), strconv.FormatInt(r.Events, 10), fmt.Sprintf("%.3f", r.WallS),
			si(r.ItersPerS), si(r.EventsPerS), fmt.Sprintf("%.1f", r.USPerJob), strconv.FormatInt(r.Switches, 10), perSwitch(r), mib(r.MaxRSSMiB), fmt.Sprintf("%.0f", r.AllocMiB))
	}
	return append(row, "", "", r.Outcome(), "", "", "", "", "", "", "")
}

// seconds is a limit as people write it: 120s, 0.5s, 1ms.
func seconds(s float64) string {
	if s >= 1e-3 {
		return strconv.FormatFloat(s, 'f', -1, 64) + "s"
	}
	return time.Duration(s * float64(time.Second)).String()
}

// si is a rate with a k or M suffix.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// perSwitch is the wall time per switch of lanes side by side, or - where
// Result.NSPerSwitch is none.
func perSwitch(r Result) string {
	if r.NSPerSwitch == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.NSPerSwitch)
}

func mib(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

// Outcome is how the run ended, in a few words: its wall seconds, "over 120s",
// "skipped: ..." or "failed: ...".
func (r Result) Outcome() string {
	switch r.Status {
	case StatusOK:
		return fmt.Sprintf("%.3fs", r.WallS)
	case StatusTimedOut:
		return "over " + seconds(r.TimeoutS)
	case StatusSkipped:
		return "skipped: " + r.Error
	}
	return "failed: " + r.Error
}

// Table writes the results as an aligned text table.
func Table(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(columns, "\t")+"\t")
	for _, r := range rs {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t")+"\t")
	}
	return tw.Flush()
}

// Markdown writes the results as a GitHub table, to paste into a README.
func Markdown(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(columns, " | ") + " |\n|")
	for i := range columns {
		if i == 1 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, r := range rs {
		b.WriteString("| " + strings.Join(cells(r), " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes the results as a JSON array.
func JSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

// CSV writes the results with one column per JSON field.
func CSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"jobs", "scheme", "mode", "policy", "load", "seed", "status", "error", "timeout_s", "iterations", "events",
		"gen_s", "wall_s", "iters_per_s", "events_per_s", "us_per_job", "switches", "ns_per_switch", "makespan_s", "alloc_mib", "heap_mib", "max_rss_mib"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range rs {
		_ = cw.Write([]string{strconv.Itoa(r.Jobs), r.Scheme, r.Mode, r.Policy, f(r.Load), strconv.FormatInt(r.Seed, 10), r.Status, r.Error,
			f(r.TimeoutS), strconv.FormatInt(r.Iterations, 10), strconv.FormatInt(r.Events, 10), f(r.GenS), f(r.WallS), f(r.ItersPerS),
			f(r.EventsPerS), f(r.USPerJob), strconv.FormatInt(r.Switches, 10), f(r.NSPerSwitch), f(r.MakespanS), f(r.AllocMiB), f(r.HeapMiB), f(r.MaxRSSMiB)})
	}
	cw.Flush()
	return cw.Error()
}

// Figure is the chart of µs per job against jobs (both axes logarithmic), a line
// per scheme: flat is linear growth, rising is worse. Cells that did not end are
// left out of it.
func Figure(rs []Result) plots.Figure {
	p := plot.New()
	p.Title.Text = "Simulator cost per job as the trace grows"
	p.X.Label.Text = "jobs in the trace"
	p.Y.Label.Text = "wall µs per job"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	var order []string
	pts := map[string]plotter.XYs{}
	for _, r := range rs {
		if !r.OK() || r.USPerJob <= 0 {
			continue
		}
		if _, ok := pts[r.Scheme]; !ok {
			order = append(order, r.Scheme)
		}
		pts[r.Scheme] = append(pts[r.Scheme], plotter.XY{X: float64(r.Jobs), Y: r.USPerJob})
	}
	for i, s := range order {
		line, points, err := plotter.NewLinePoints(pts[s])
		if err != nil {
			continue
		}
		line.Color, line.Width = plots.Colour(i), vg.Points(1.6)
		points.Color, points.Shape = plots.Colour(i), glyphs[i%len(glyphs)]
		if i >= len(glyphs) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(line, points)
		p.Legend.Add(s, line, points)
	}
	if len(order) == 0 { // an empty log scale has no range: draw an empty chart
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
	} else {
		// Pad the ranges by a factor (a lone point, or equal values, would
		// otherwise be padded by ±1, to zero or below on a log scale).
		p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*1.5
	}
	return plots.Single("bench-us-per-job", p.Title.Text, 16*vg.Centimeter, 11*vg.Centimeter, p)
}

// glyphs tell the lines apart where two colours are close.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// logTicks mark every 1..9 of each decade, labelling 1, 2 and 5 (gonum's label
// the powers of ten only, often one or none on a chart).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for d := math.Pow10(int(math.Floor(math.Log10(lo)))); d <= hi; d *= 10 {
		for k := 1; k < 10; k++ {
			v := d * float64(k)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 || k == 2 || k == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
