package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/salusgo/salus/metrics"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is a labelled list of values, e.g. one policy's JCTs. In a bar chart
// Low and High, when given (one per value), are each value's interval, drawn
// as an error bar.
type Series struct {
	Label     string
	Values    []float64
	Low, High []float64
}

// CDF draws the empirical distribution of each series on one chart, x on a log
// scale (JCTs span minutes to hours). Values are in seconds, drawn in the unit
// metrics.UnitFor gives their largest, which the x label (x, without a unit)
// gains.
func CDF(name, title, x string, series []Series) Figure {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s.Values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	u := metrics.UnitFor(hi)
	p := cdfPlot(title, x+" ("+u.Name+", log scale)", series, u.Scale)
	p.X.Scale = plot.LogScale{}
	// A log axis needs a positive range even when every value is the same.
	floor := 1e-3
	if lo <= hi {
		lo, hi = math.Max(lo*u.Scale, floor), math.Max(hi*u.Scale, floor)
		p.X.Min, p.X.Max = lo/1.2, hi*1.2
	} else {
		p.X.Min, p.X.Max = 0.1, 10
	}
	p.X.Tick.Marker = logTicks{}
	return Single(name, title, 7*vg.Inch, 4.5*vg.Inch, p)
}

// logTicks labels a log axis at 1, 2 and 5 times the powers of ten when it
// spans few decades (plot.LogTicks labels only the powers of ten, so a range
// within one decade would have no label at all), and at the powers of ten
// otherwise.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	steps := []float64{1, 2, 5}
	if hi/lo > 1000 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	if hi/lo < 10 {
		steps = []float64{1, 1.5, 2, 3, 4, 5, 6, 8}
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range steps {
			v := m * math.Pow(10, e)
			if v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ts
}

// CDFTo draws the distributions on a linear axis from 0 to maxMin minutes, as a
// published figure draws them (the paper's Fig. 7: 0 to 300 min), so that the two
// can be read side by side.
func CDFTo(name, title, x string, series []Series, maxMin float64) Figure {
	p := cdfPlot(title, x, series, 1.0/60)
	p.X.Min, p.X.Max = 0, maxMin
	return Single(name, title, 7*vg.Inch, 4.5*vg.Inch, p)
}

// cdfPlot is a chart with one step line per series (values in seconds, drawn
// times scale), its legend at the bottom right.
func cdfPlot(title, x string, series []Series, scale float64) *plot.Plot {
	p := newPlot(title, x, "fraction of jobs")
	p.Legend.Left = false
	p.Legend.Top = false
	p.Legend.XOffs = -vg.Millimeter * 2
	p.Legend.YOffs = vg.Millimeter * 2
	for i, s := range series {
		if len(s.Values) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, 2*len(s.Values))
		n := float64(len(s.Values))
		for k, v := range s.Values {
			m := math.Max(v*scale, 1e-3)
			pts = append(pts, plotter.XY{X: m, Y: float64(k) / n}, plotter.XY{X: m, Y: float64(k+1) / n})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		line.Color, line.Width = Colour(i), vg.Points(1.8)
		line.Dashes = dashes(i)
		p.Add(line)
		p.Legend.Add(s.Label, line)
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	return p
}

func dashes(i int) []vg.Length {
	switch i % 4 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	case 3:
		return []vg.Length{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}
	}
	return nil
}

// Panel is one bar chart of a row of them: a value per category, optionally in
// groups (one bar per group member at each category).
type Panel struct {
	Title, Y   string
	Categories []string
	// Groups are the bars at each category, one value per category; with one
	// group every bar gets its own colour.
	Groups []Series
	// Ref, when positive, draws a dashed reference line labelled RefLabel.
	Ref      float64
	RefLabel string
	// Format prints the value above each bar; empty means "%.1f".
	Format string
	// FirstColour is the palette index of the first group, to keep a series'
	// colour across panels that leave some series out.
	FirstColour int
	// LogY draws the values on a log axis, each as a dot (a bar's length from
	// zero means nothing on a log axis) with its error bar. Every value and
	// bound must be above zero.
	LogY bool
}

// Bars draws panels side by side as one figure, 4 inches high.
func Bars(name, title string, width vg.Length, panels ...Panel) Figure {
	return BarsSized(name, title, width, 4*vg.Inch, panels...)
}

// BarsSized is Bars of the given height.
func BarsSized(name, title string, width, height vg.Length, panels ...Panel) Figure {
	ps := make([]*plot.Plot, len(panels))
	for i, pn := range panels {
		ps[i] = barPlot(pn, width/vg.Length(len(panels)))
	}
	if len(ps) == 1 {
		return Single(name, title, width, height, ps[0])
	}
	return Row(name, title, width, height, ps...)
}

// barPlot is one panel of bars, in a tile about width wide, its bars at most 40
// points wide and narrow enough that each category's group of bars fills at most
// 80% of its category's room: the axis runs from -0.5 to n-0.5, a category each
// unit, so on data width D a group may be 0.8 D / n wide.
func barPlot(pn Panel, width vg.Length) *plot.Plot {
	p := newPlot(pn.Title, "", pn.Y)
	ng, n := max(1, len(pn.Groups)), max(1, len(pn.Categories))
	data := width - vg.Points(60) // the value axis and the gaps
	if ng > 1 || pn.Ref > 0 {
		data -= vg.Points(130) // the legend beside the panel
	}
	w := min(vg.Points(40), 0.8*data/vg.Length(n*ng))
	format := pn.Format
	if format == "" {
		format = "%.1f"
	}
	var top float64
	bottom := math.Inf(1) // the least value or bound, for a log axis
	// logY is set once the values are known; the dots and labels, drawn later,
	// read it. A log axis is drawn as a linear axis of log10(value), labelled
	// with the values (log10Ticks): gonum centres an axis label on the
	// arithmetic middle of the range, which on its own log scale lies near the
	// top, and would push the chart down to make room.
	logY := new(bool)
	for g, s := range pn.Groups {
		vals := make(plotter.Values, len(pn.Categories))
		copy(vals, s.Values)
		for k := range vals {
			if math.IsNaN(vals[k]) || vals[k] < 0 {
				vals[k] = 0
			}
			top = math.Max(top, vals[k])
			if vals[k] > 0 {
				bottom = math.Min(bottom, vals[k])
			}
		}
		offset := vg.Length(float64(g)-float64(ng-1)/2) * w
		var ws *whiskers
		if len(s.Low) == len(vals) && len(s.High) == len(vals) {
			ws = &whiskers{mid: vals, lo: s.Low, hi: s.High, offset: offset, log: logY}
			for k := range vals {
				if s.High[k] > s.Low[k] {
					top = math.Max(top, s.High[k])
					if s.Low[k] > 0 {
						bottom = math.Min(bottom, s.Low[k])
					}
				}
			}
		}
		switch {
		case pn.LogY:
			// Dots, in the colours bars would have.
			if ws == nil {
				ws = &whiskers{mid: vals, offset: offset, log: logY}
			}
			ws.dots = make([]color.Color, len(vals))
			for k := range vals {
				ws.dots[k] = Colour(g + pn.FirstColour)
				if ng == 1 {
					ws.dots[k] = Colour(k)
				}
			}
			if ng > 1 {
				p.Legend.Add(s.Label, swatch{Colour(g + pn.FirstColour)})
			}
		case ng == 1:
			// One series: each category in its own colour, as in the other charts.
			for k := range vals {
				one := make(plotter.Values, len(vals))
				one[k] = vals[k]
				addBars(p, one, w, offset, Colour(k))
			}
		default:
			p.Legend.Add(s.Label, addBars(p, vals, w, offset, Colour(g+pn.FirstColour)))
		}
		if ws != nil {
			p.Add(ws)
		}
		lbl := &labels{vals: vals, offset: offset, format: format, grouped: ng > 1, barWidth: w, log: logY}
		if ws != nil && ws.lo != nil {
			lbl.above = ws.hi // the value stands above its error bar
		}
		p.Add(lbl)
	}
	p.NominalX(pn.Categories...)
	if len(pn.Categories) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	if pn.Ref > 0 {
		ref, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: pn.Ref}, {X: float64(len(pn.Categories)) - 0.5, Y: pn.Ref}})
		ref.Color, ref.Dashes = capacityC, []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ref)
		p.Legend.Add(pn.RefLabel, ref)
		top = math.Max(top, pn.Ref)
		bottom = math.Min(bottom, pn.Ref)
	}
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	if pn.LogY && bottom > 0 && top > bottom {
		*logY = true
		decades := math.Log10(top / bottom)
		p.Y.Tick.Marker = log10Ticks{}
		p.Y.Min = math.Log10(bottom) - 0.05*decades
		p.Y.Max = math.Log10(top) + 0.12*decades // room for the labels
		return p
	}
	p.Y.Min = 0
	p.Y.Max = top * 1.25 // room for the labels
	return p
}

// whiskers draws an error bar from lo to hi at each category (none where hi is
// not above lo) and, on a log axis, a dot at mid in each category's colour.
type whiskers struct {
	mid, lo, hi []float64
	offset      vg.Length
	dots        []color.Color
	log         *bool // the axis is log10 of the values
}

func (w *whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	ty = onAxis(ty, w.log)
	ls := draw.LineStyle{Color: Colour(9), Width: vg.Points(1.1)}
	tick := vg.Points(3)
	for i := range w.mid {
		x := tx(float64(i)) + w.offset
		if w.lo != nil && w.hi[i] > w.lo[i] && (w.lo[i] > 0 || !*w.log) { // a log axis has no zero
			y0, y1 := ty(w.lo[i]), ty(w.hi[i])
			c.StrokeLine2(ls, x, y0, x, y1)
			c.StrokeLine2(ls, x-tick, y0, x+tick, y0)
			c.StrokeLine2(ls, x-tick, y1, x+tick, y1)
		}
		if w.dots != nil && w.mid[i] > 0 {
			c.DrawGlyph(draw.GlyphStyle{Color: w.dots[i], Radius: vg.Points(4), Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: ty(w.mid[i])})
		}
	}
}

// onAxis is ty for values on an axis of their log10 when log is set.
func onAxis(ty func(float64) vg.Length, log *bool) func(float64) vg.Length {
	if log == nil || !*log {
		return ty
	}
	return func(v float64) vg.Length { return ty(math.Log10(v)) }
}

// log10Ticks label an axis of log10(value) with the values, as logTicks
// label a log axis.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

func addBars(p *plot.Plot, vals plotter.Values, w, offset vg.Length, c color.Color) *plotter.BarChart {
	bc, err := plotter.NewBarChart(vals, w)
	if err != nil { // only for negative or NaN values, which callers remove
		panic(err)
	}
	bc.LineStyle.Width = 0
	bc.Offset, bc.Color = offset, c
	p.Add(bc)
	return bc
}

// labels prints each bar's value above it: level when the labels fit side by
// side, upright (turned a quarter) when a label is wider than the room between
// its bar and the next.
type labels struct {
	vals     plotter.Values
	above    []float64 // when given, each label stands above the larger of its value and this
	log      *bool     // the axis is log10 of the values
	offset   vg.Length
	format   string
	grouped  bool      // bars of a group stand barWidth apart; else a category apart
	barWidth vg.Length // the width of a bar
}

func (l *labels) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	ty = onAxis(ty, l.log)
	sty := draw.TextStyle{Color: Colour(9), Font: p.X.Tick.Label.Font, XAlign: draw.XCenter, YAlign: draw.YBottom, Handler: p.TextHandler}
	sty.Font.Size = vg.Points(7)
	room := l.barWidth
	if !l.grouped {
		room = tx(1) - tx(0)
	}
	widest := vg.Length(0)
	for _, v := range l.vals {
		widest = max(widest, sty.Width(fmt.Sprintf(l.format, v)))
	}
	if widest > room-vg.Points(1) {
		sty.Rotation, sty.XAlign, sty.YAlign = math.Pi/2, draw.XLeft, draw.YCenter
	}
	for i, v := range l.vals {
		if v <= 0 {
			continue
		}
		y := v
		if l.above != nil && l.above[i] > y {
			y = l.above[i]
		}
		pt := vg.Point{X: tx(float64(i)) + l.offset, Y: ty(y) + vg.Points(1)}
		c.FillText(sty, pt, fmt.Sprintf(l.format, v))
	}
}

// slug makes a file-name-safe name from a title's first words.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-.")
}

// Slug is slug for callers naming files the way this package does.
func Slug(s string) string { return slug(s) }

// Curve is a line of points with an error bar at each: from Low to High when
// they are given, else Err either side.
type Curve struct {
	Label     string
	X, Y, Err []float64
	Low, High []float64
}

type curvePoints Curve

func (c curvePoints) Len() int                    { return len(c.X) }
func (c curvePoints) XY(i int) (float64, float64) { return c.X[i], c.Y[i] }
func (c curvePoints) YError(i int) (float64, float64) {
	if c.Low != nil {
		return c.Y[i] - c.Low[i], c.High[i] - c.Y[i]
	}
	return c.Err[i], c.Err[i]
}

// bounds is the curve's i-th interval.
func (c Curve) bounds(i int) (lo, hi float64) {
	if c.Low != nil {
		return c.Low[i], c.High[i]
	}
	return c.Y[i] - c.Err[i], c.Y[i] + c.Err[i]
}

// Lines draws curves with error bars on one chart, y from zero.
func Lines(name, title, x, y string, curves []Curve) Figure {
	return LinesOn(name, title, x, y, curves, false)
}

// LinesOn is Lines, y on a log axis when logY (every value and bound must be
// above zero).
func LinesOn(name, title, x, y string, curves []Curve, logY bool) Figure {
	p := newPlot(title, x, y)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Millimeter * 2
	var top float64
	bottom := math.Inf(1)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		for _, x := range c.X {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		for k := range c.Y {
			l, h := c.bounds(k)
			top = math.Max(top, math.Max(c.Y[k], h))
			bottom = math.Min(bottom, math.Min(c.Y[k], l))
		}
	}
	// A log axis is a linear axis of log10(value) labelled with the values
	// (see barPlot).
	logY = logY && bottom > 0 && top > bottom
	for i, c := range curves {
		if len(c.X) == 0 {
			continue
		}
		// Dodge the curves sideways a little so error bars at one x stay apart.
		shift := (float64(i) - float64(len(curves)-1)/2) * 0.008 * (hi - lo)
		c.X = append([]float64(nil), c.X...)
		for k := range c.X {
			c.X[k] += shift
		}
		if logY {
			y, l, h := make([]float64, len(c.Y)), make([]float64, len(c.Y)), make([]float64, len(c.Y))
			for k := range c.Y {
				lk, hk := c.bounds(k)
				y[k], l[k], h[k] = math.Log10(c.Y[k]), math.Log10(lk), math.Log10(hk)
			}
			c.Y, c.Low, c.High = y, l, h
		}
		pts := curvePoints(c)
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			continue
		}
		line.Color, line.Width, line.Dashes = Colour(i), vg.Points(1.6), dashes(i)
		points.Color, points.Shape = Colour(i), draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			continue
		}
		bars.Color, bars.Width = Colour(i), vg.Points(1.2)
		p.Add(line, points, bars)
		p.Legend.Add(c.Label, line, points)
	}
	p.Add(plotter.NewGrid())
	if logY {
		decades := math.Log10(top / bottom)
		p.Y.Tick.Marker = log10Ticks{}
		p.Y.Min, p.Y.Max = math.Log10(bottom)-0.05*decades, math.Log10(top)+0.1*decades
	} else {
		p.Y.Min, p.Y.Max = 0, top*1.35 // room for the legend
	}
	return Single(name, title, 7*vg.Inch, 4.5*vg.Inch, p)
}

// Mark is a point drawn on a chart beside its series: a published figure's
// value, for example, read from the paper.
type Mark struct {
	Label string
	X, Y  float64
}

// CDFMarked is CDFTo with marks drawn on it (X in minutes, as the axis), each
// a glyph with its label in the legend.
func CDFMarked(name, title, x string, series []Series, maxMin float64, marks []Mark) Figure {
	p := cdfPlot(title, x, series, 1.0/60)
	p.X.Min, p.X.Max = 0, maxMin
	for i, m := range marks {
		s, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			continue
		}
		s.GlyphStyle = draw.GlyphStyle{Color: Colour(9), Radius: vg.Points(4), Shape: markShapes[i%len(markShapes)]}
		p.Add(s)
		p.Legend.Add(m.Label, s)
	}
	return Single(name, title, 7*vg.Inch, 4.5*vg.Inch, p)
}

// markShapes tell marks apart.
var markShapes = []draw.GlyphDrawer{draw.CrossGlyph{}, draw.PlusGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}}
