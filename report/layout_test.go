package report

import (
	"fmt"
	stdimage "image"
	"image/color"
	"math"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/workload"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// box is a laid-out rectangle on a figure, in points from its bottom left: its
// corners in order (a turned text's are turned) and their bounds.
type box struct {
	xs, ys         [4]float64
	x0, y0, x1, y1 float64
	what           string
}

// overlaps says whether the two rectangles share more than slack of depth: no
// axis of either separates them (the separating axis theorem).
func (b box) overlaps(o box, slack float64) bool {
	for _, r := range []box{b, o} {
		for i := range 4 {
			j := (i + 1) % 4
			nx, ny := r.ys[j]-r.ys[i], r.xs[i]-r.xs[j] // normal of edge i
			n := math.Hypot(nx, ny)
			if n == 0 {
				continue
			}
			nx, ny = nx/n, ny/n
			bmin, bmax := b.project(nx, ny)
			omin, omax := o.project(nx, ny)
			if bmax-slack <= omin || omax-slack <= bmin {
				return false
			}
		}
	}
	return true
}

func (b box) project(nx, ny float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range 4 {
		v := b.xs[i]*nx + b.ys[i]*ny
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func (b box) String() string {
	return fmt.Sprintf("%s at (%.1f,%.1f)-(%.1f,%.1f)", b.what, b.x0, b.y0, b.x1, b.y1)
}

// affine is x' = a*x + c*y + e, y' = b*x + d*y + f.
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) then(n affine) affine { // m applied after n: points go through n first
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func (m affine) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

// layout is a vg.Canvas that draws nothing and records where every text and
// every coloured fill lands, with gonum's own font metrics: the geometry the PNG
// and SVG files get.
type layout struct {
	stack  []affine
	colour color.Color
	texts  []box
	fills  []box
}

func newLayout() *layout { return &layout{stack: []affine{{a: 1, d: 1}}} }

func (l *layout) top() *affine { return &l.stack[len(l.stack)-1] }

func (l *layout) SetLineWidth(vg.Length)             {}
func (l *layout) SetLineDash([]vg.Length, vg.Length) {}
func (l *layout) SetColor(c color.Color)             { l.colour = c }
func (l *layout) Rotate(rad float64) {
	s, c := math.Sincos(rad)
	*l.top() = l.top().then(affine{a: c, b: s, c: -s, d: c})
}
func (l *layout) Translate(pt vg.Point) {
	*l.top() = l.top().then(affine{a: 1, d: 1, e: float64(pt.X), f: float64(pt.Y)})
}
func (l *layout) Scale(x, y float64)                     { *l.top() = l.top().then(affine{a: x, d: y}) }
func (l *layout) Push()                                  { l.stack = append(l.stack, *l.top()) }
func (l *layout) Pop()                                   { l.stack = l.stack[:len(l.stack)-1] }
func (l *layout) Stroke(vg.Path)                         {}
func (l *layout) DrawImage(vg.Rectangle, stdimage.Image) {}

// rect is the rectangle (x0,y0)-(x1,y1) as the canvas's transform places it.
func (l *layout) rect(x0, y0, x1, y1 float64, what string) box {
	b := box{x0: math.Inf(1), y0: math.Inf(1), x1: math.Inf(-1), y1: math.Inf(-1), what: what}
	for i, c := range [4][2]float64{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}} {
		x, y := l.top().apply(c[0], c[1])
		b.xs[i], b.ys[i] = x, y
		b.x0, b.x1, b.y0, b.y1 = min(b.x0, x), max(b.x1, x), min(b.y0, y), max(b.y1, y)
	}
	return b
}

func (l *layout) Fill(p vg.Path) {
	if _, _, _, a := l.colour.RGBA(); a == 0 || isWhite(l.colour) {
		return // the background
	}
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, c := range p {
		if c.Type == vg.MoveComp || c.Type == vg.LineComp {
			x, y := float64(c.Pos.X), float64(c.Pos.Y)
			x0, x1, y0, y1 = min(x0, x), max(x1, x), min(y0, y), max(y1, y)
		}
	}
	if x0 <= x1 {
		l.fills = append(l.fills, l.rect(x0, y0, x1, y1, "a filled shape"))
	}
}

func (l *layout) FillString(f font.Face, pt vg.Point, text string) {
	ext := f.Extents()
	l.texts = append(l.texts, l.rect(float64(pt.X), float64(pt.Y-ext.Descent), float64(pt.X+f.Width(text)), float64(pt.Y+ext.Ascent),
		fmt.Sprintf("text %q", text)))
}

func isWhite(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r == 0xffff && g == 0xffff && b == 0xffff
}

// checkLayout draws f and reports every text that runs off the figure, overlaps
// another text, or covers a coloured shape (a bar, a job's row, a memory band):
// what a legend inside the data area, crowded bar labels or a cut legend give.
func checkLayout(t *testing.T, f plots.Figure) (texts []box) {
	t.Helper()
	l := newLayout()
	f.Draw(draw.NewCanvas(l, f.Width, f.Height))
	w, h := float64(f.Width), float64(f.Height)
	// Points: a text's box is its font's whole line (ascent and descent), more
	// than its glyphs' ink.
	const slack = 1.5
	for i, a := range l.texts {
		if a.x0 < -slack || a.y0 < -slack || a.x1 > w+slack || a.y1 > h+slack {
			t.Errorf("%s: %v runs off the figure (%.0f x %.0f)", f.Name, a, w, h)
		}
		for _, b := range l.texts[i+1:] {
			if a.overlaps(b, slack) {
				t.Errorf("%s: %v overlaps %v", f.Name, a, b)
			}
		}
		for _, b := range l.fills {
			if a.overlaps(b, slack) {
				t.Errorf("%s: %v covers %v", f.Name, a, b)
				break
			}
		}
	}
	return l.texts
}

// hasText says whether a text of the figure reads s.
func hasText(texts []box, s string) bool {
	for _, b := range texts {
		if b.what == fmt.Sprintf("text %q", s) {
			return true
		}
	}
	return false
}

// Every figure of a training report and of --suite all's (every suite's
// pictures) is laid out so that it can be read: no text off the figure, on
// another text or over the data, and every chart's axes labelled.
func TestEveryFigureCanBeRead(t *testing.T) {
	_, w := trainingReport(t)
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Paper, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	all, err := eval.RunAll(eval.Options{Device: dev, Modes: core.DefaultModeParams(), Training: eval.TrainingOptions{Trace: tr},
		Tuning: eval.TuningOptions{Jobs: 50}, Inference: eval.InferenceOptions{Requests: 100}})
	if err != nil {
		t.Fatal(err)
	}
	wa, err := Write(Options{Dir: t.TempDir(), Results: all, Args: []string{"salus", "eval", "--suite", "all"}})
	if err != nil {
		t.Fatal(err)
	}
	figs := append(w.Figures, wa.Figures...)
	if len(figs) < 15 {
		t.Fatalf("only %d figures drawn", len(figs))
	}
	for _, f := range figs {
		texts := checkLayout(t, f)
		if strings.Contains(f.Name, "timeline") && !hasText(texts, "job") && !hasText(texts, "job (arrival order)") {
			t.Errorf("%s: the job axis is not labelled", f.Name)
		}
	}
}
