// Package layoutcheck checks that a figure of package plots can be read: it
// draws the figure on a canvas that records where every text and every coloured
// shape lands, with gonum's own font metrics (the geometry of the PNG and SVG
// files), and names each text that runs off the figure, overlaps another text,
// or covers the data. It is what a test of any package that draws runs over its
// figures; the checks pin that legends stand beside the data, that bar labels
// and tick labels stand apart, and that nothing is cut at an edge.
package layoutcheck

import (
	"fmt"
	stdimage "image"
	"image/color"
	"math"

	"github.com/salusgo/salus/plots"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// box is a laid-out rectangle on a figure, in points from its bottom left: its
// corners in order (a turned text's are turned) and their bounds.
type box struct {
	xs, ys         [4]float64
	x0, y0, x1, y1 float64
	text           string // a text's, else empty
	what           string // "text \"...\"" or "a filled shape"
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
	b := l.rect(float64(pt.X), float64(pt.Y-ext.Descent), float64(pt.X+f.Width(text)), float64(pt.Y+ext.Ascent), fmt.Sprintf("text %q", text))
	b.text = text
	l.texts = append(l.texts, b)
}

func isWhite(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r == 0xffff && g == 0xffff && b == 0xffff
}

// Text is a text of a figure and where it landed (points from the bottom left).
type Text struct {
	Text           string
	X0, Y0, X1, Y1 float64
}

// Check draws f and returns a line for every text that runs off the figure,
// overlaps another text, or covers a coloured shape (a bar, a job's row, a
// memory band), and for every axis without a label; and every text drawn.
func Check(f plots.Figure) (problems []string, texts []Text) {
	problems = f.UnlabelledAxes()
	l := newLayout()
	f.Draw(draw.NewCanvas(l, f.Width, f.Height))
	w, h := float64(f.Width), float64(f.Height)
	// Points: a text's box is its font's whole line (ascent and descent), more
	// than its glyphs' ink.
	const slack = 1.5
	for i, a := range l.texts {
		texts = append(texts, Text{Text: a.text, X0: a.x0, Y0: a.y0, X1: a.x1, Y1: a.y1})
		if a.x0 < -slack || a.y0 < -slack || a.x1 > w+slack || a.y1 > h+slack {
			problems = append(problems, fmt.Sprintf("%s: %v runs off the figure (%.0f x %.0f)", f.Name, a, w, h))
		}
		for _, b := range l.texts[i+1:] {
			if a.overlaps(b, slack) {
				problems = append(problems, fmt.Sprintf("%s: %v overlaps %v", f.Name, a, b))
			}
		}
		for _, b := range l.fills {
			if a.overlaps(b, slack) {
				problems = append(problems, fmt.Sprintf("%s: %v covers %v", f.Name, a, b))
				break
			}
		}
	}
	return problems, texts
}

// Has says whether one of texts reads s.
func Has(texts []Text, s string) bool {
	for _, t := range texts {
		if t.Text == s {
			return true
		}
	}
	return false
}
