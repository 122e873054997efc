package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/salusgo/salus/plots"
	"gonum.org/v1/plot/vg"
)

// metricLabel says how a metric is drawn: its axis label and the scale to it.
var metricLabel = map[string]struct {
	name, axis string
	scale      float64
}{
	"avg_jct_s":         {"average JCT", "minutes", 1.0 / 60},
	"p95_jct_s":         {"p95 JCT", "minutes", 1.0 / 60},
	"makespan_s":        {"makespan", "minutes", 1.0 / 60},
	"avg_queuing_s":     {"average queuing", "minutes", 1.0 / 60},
	"gpu_busy":          {"GPU busy", "% of the makespan", 100},
	"jain_slowdown":     {"Jain's index of slowdowns", "1 = all alike", 1},
	"max_slowdown":      {"worst slowdown", "JCT / time alone", 1},
	"avg_jct_vs_bound":  {"average JCT / lower bound", "x the bound", 1},
	"makespan_vs_bound": {"makespan / lower bound", "x the bound", 1},
}

// LogSpread is the rule for a log axis: a figure's values axis is logarithmic
// when the largest value it draws (upper bounds included) is more than
// LogSpread times the smallest (lower bounds included), and every one is above
// zero. Under it a linear axis from zero reads better; over it the smaller
// values and their intervals would be flattened against the axis.
const LogSpread = 10

// PlotOptions choose what Plot draws; the zero value draws every metric of
// every scheme.
type PlotOptions struct {
	// Metrics are the metrics to draw (of Metrics); none: all.
	Metrics []string
	// Schemes are the schemes to draw, each a policy ("srtf", every mode it ran
	// in) or a policy and mode as the tables show them ("fifo/mps"); none: all.
	Schemes []string
}

// Check says which of o's metrics and schemes the sweep does not have, and
// what it has.
func (o PlotOptions) Check(cells []Cell) error {
	for _, m := range o.Metrics {
		if !slices.Contains(Metrics, m) {
			return fmt.Errorf("--metrics %s: no such metric; choose from %s", m, strings.Join(Metrics, ", "))
		}
	}
	var have []string
	for _, c := range cells {
		for _, name := range []string{c.Policy, c.Policy + "/" + c.ModeName()} {
			if !slices.Contains(have, name) {
				have = append(have, name)
			}
		}
	}
	for _, s := range o.Schemes {
		if !slices.Contains(have, s) {
			return fmt.Errorf("--schemes %s: the sweep ran no such scheme; it ran %s", s, strings.Join(have, ", "))
		}
	}
	return nil
}

func (o PlotOptions) draws(c Cell) bool {
	return len(o.Schemes) == 0 || slices.Contains(o.Schemes, c.Policy) || slices.Contains(o.Schemes, c.Policy+"/"+c.ModeName())
}

// Drawn is one figure of a sweep: what it shows, and the files Plot wrote.
type Drawn struct {
	Figure         plots.Figure
	Title, Caption string
	Files          []string
}

// Figures draws each chosen metric of the chosen schemes. Over several loads:
// the metric against load, one curve per scheme (and capacity and trace when
// the grid has several), with the 95% intervals as error bars. At one load
// (where curves would stand in one vertical line): a bar per scheme with its
// interval as an error bar. The values axis is logarithmic by LogSpread's rule.
func Figures(cells []Summary, o PlotOptions) ([]Drawn, error) {
	cs := make([]Cell, len(cells))
	for i, c := range cells {
		cs[i] = c.Cell
	}
	if err := o.Check(cs); err != nil {
		return nil, err
	}
	var chosen []Summary
	modes, caps, traces, loads := map[string]bool{}, map[float64]bool{}, map[string]bool{}, map[float64]bool{}
	seeds := 0
	for _, c := range cells {
		if o.draws(c.Cell) {
			chosen = append(chosen, c)
			modes[c.ModeName()], caps[c.CapacityMiB], traces[c.TraceName()], loads[c.Load] = true, true, true, true
			seeds = max(seeds, c.Runs)
		}
	}
	label := func(c Cell) string {
		l := c.Policy
		if len(modes) > 1 {
			l += "/" + c.ModeName()
		}
		if len(caps) > 1 {
			l += fmt.Sprintf(" %.0f GiB", c.CapacityMiB/1024)
		}
		if len(traces) > 1 {
			l += " " + c.TraceName()
		}
		return l
	}
	metrics := o.Metrics
	if len(metrics) == 0 {
		metrics = Metrics
	}
	over := fmt.Sprint(seeds) + " seeds"
	if seeds == 1 {
		over = "one seed"
	}
	var out []Drawn
	for _, m := range metrics {
		ml, ok := metricLabel[m]
		if !ok {
			ml.name, ml.axis, ml.scale = m, m, 1
		}
		name := "sweep-" + strings.TrimSuffix(m, "_s")
		var labels []string
		var ys, lows, highs []float64
		var curves []plots.Curve
		index := map[string]int{}
		for _, c := range chosen {
			st, ok := c.Metrics[m]
			if !ok || st.N == 0 {
				continue
			}
			l := label(c.Cell)
			y, lo, hi := st.Mean*ml.scale, st.Low*ml.scale, st.High*ml.scale
			labels, ys, lows, highs = append(labels, l), append(ys, y), append(lows, lo), append(highs, hi)
			i, seen := index[l]
			if !seen {
				i = len(curves)
				index[l] = i
				curves = append(curves, plots.Curve{Label: l})
			}
			cv := &curves[i]
			cv.X, cv.Y, cv.Low, cv.High = append(cv.X, c.Load), append(cv.Y, y), append(cv.Low, lo), append(cv.High, hi)
		}
		if len(ys) == 0 {
			continue
		}
		logY := spreads(lows, highs, ys)
		axis := ml.name + " (" + ml.axis
		if logY {
			axis += ", log scale"
		}
		axis += ")"
		if len(loads) == 1 {
			var load float64
			for l := range loads {
				load = l
			}
			title := fmt.Sprintf("%s at load %g: mean, 95%% CI, %s", ml.name, load, over)
			fig := plots.BarsSized(name, title, barWidth(len(labels)), 5*vg.Inch, plots.Panel{Title: title, Y: axis, Categories: labels,
				Groups: []plots.Series{{Values: ys, Low: lows, High: highs}}, Format: format(ys), LogY: logY})
			out = append(out, Drawn{Figure: fig, Title: fmt.Sprintf("%s at load %g", ml.name, load),
				Caption: "Mean over seeds, one bar per scheme, with its 95% confidence interval (BCa bootstrap) as an error bar" + logNote(logY)})
			continue
		}
		title := fmt.Sprintf("%s against load: mean, 95%% CI, %s", ml.name, over)
		fig := plots.LinesOn(name, title, "offered load (arrival-rate multiplier)", axis, curves, logY)
		out = append(out, Drawn{Figure: fig, Title: ml.name + " against load",
			Caption: "Mean over seeds against the arrival-rate multiplier, one curve per scheme, with 95% confidence intervals (BCa bootstrap) as error bars" + logNote(logY)})
	}
	return out, nil
}

// spreads applies LogSpread's rule to the values and bounds.
func spreads(xs ...[]float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range xs {
		for _, x := range s {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	return lo > 0 && hi > LogSpread*lo
}

func logNote(logY bool) string {
	if logY {
		return fmt.Sprintf("; the axis is logarithmic, as the values span more than %dx, each mean a dot.", LogSpread)
	}
	return "."
}

// barWidth gives each bar room for its label: 7 inches up to 8 bars, wider
// beyond.
func barWidth(n int) vg.Length {
	return max(7*vg.Inch, vg.Length(n)*0.75*vg.Inch+2*vg.Inch)
}

// format prints bar values to three significant digits, whole numbers from
// 1000 up.
func format(ys []float64) string {
	if slices.Max(ys) >= 1000 {
		return "%.0f"
	}
	return "%.3g"
}

// Plot draws Figures and writes each as NAME.png and NAME.svg into dir.
func Plot(dir string, cells []Summary, o PlotOptions) ([]Drawn, error) {
	figs, err := Figures(cells, o)
	if err != nil {
		return nil, err
	}
	for i := range figs {
		fs, err := figs[i].Figure.Save(dir)
		figs[i].Files = fs
		if err != nil {
			return figs, err
		}
	}
	return figs, nil
}

// Column is a metric as the sweep's tables (text and HTML) show it.
type Column struct {
	Key, Head string
	Scale     float64
	Prec      int
}

// Columns are the tables' metric columns, in Metrics' order.
var Columns = []Column{
	{"avg_jct_s", "avg JCT (min)", 1.0 / 60, 1}, {"p95_jct_s", "p95 JCT (min)", 1.0 / 60, 1},
	{"makespan_s", "makespan (min)", 1.0 / 60, 0}, {"avg_queuing_s", "avg queuing (min)", 1.0 / 60, 1},
	{"gpu_busy", "GPU busy (%)", 100, 0}, {"jain_slowdown", "Jain (slowdowns)", 1, 3}, {"max_slowdown", "worst slowdown", 1, 1},
	{"avg_jct_vs_bound", "avg JCT vs bound", 1, 2}, {"makespan_vs_bound", "makespan vs bound", 1, 2},
}

// Show is s as the column shows it: "mean [low, high]", the mean alone for
// one seed, "-" when the cell has no value.
func (c Column) Show(s Stat) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 || s.High <= s.Low {
		return fmt.Sprintf("%.*f", c.Prec, s.Mean*c.Scale)
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f]", c.Prec, s.Mean*c.Scale, c.Prec, s.Low*c.Scale, c.Prec, s.High*c.Scale)
}
