// Package plots draws the pictures of a run with gonum/plot, as PNG and SVG: job
// timelines, lane memory over time, JCT distributions, bars per policy or scheme,
// inference latency against alone, and sweep curves. It reads event logs (through
// package eventlog) and figures it is given; it never runs or schedules anything.
package plots

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func init() {
	// Sans reads better than the default serif at small sizes.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// Figure is a drawing with its file name (without extension) and size.
type Figure struct {
	Name          string // file name without extension, e.g. "timeline-fifo"
	Title         string // what it shows, for people
	Width, Height vg.Length
	draw          func(draw.Canvas)
	plots         []*plot.Plot
}

// Single wraps one plot as a figure, its legend beside it (drawBeside).
func Single(name, title string, w, h vg.Length, p *plot.Plot) Figure {
	return Figure{Name: name, Title: title, Width: w, Height: h, draw: func(dc draw.Canvas) { drawBeside(p, dc) },
		plots: []*plot.Plot{p}}
}

// Row lays plots side by side, their axes aligned, as one figure; a plot with a
// legend has it beside it, in its own tile.
func Row(name, title string, w, h vg.Length, ps ...*plot.Plot) Figure {
	return Figure{Name: name, Title: title, Width: w, Height: h, plots: ps, draw: func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2,
			PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
		canvases := plot.Align([][]*plot.Plot{ps}, tiles, dc)
		for i, p := range ps {
			drawBeside(p, canvases[0][i])
		}
	}}
}

// drawBeside draws p with its legend in a column of its own at the right, level
// with the top of the data: inside the data area a legend covers bars, lines and
// job rows, and at its edge it is cut.
func drawBeside(p *plot.Plot, c draw.Canvas) {
	r := p.Legend.Rectangle(c)
	width := r.Max.X - r.Min.X
	if width <= 0 {
		p.Draw(c)
		return
	}
	legend := p.Legend
	p.Legend = plot.New().Legend // no entries: nothing drawn over the data
	defer func() { p.Legend = legend }()
	gap := vg.Millimeter * 3
	p.Draw(draw.Crop(c, 0, -(width + gap), 0, 0))
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	legend.Left, legend.Top, legend.XOffs, legend.YOffs = true, true, 0, 0
	legend.Draw(draw.Crop(c, c.Max.X-c.Min.X-width, 0, 0, -top))
}

// Draw draws the figure on c, a canvas of the figure's Width and Height.
func (f Figure) Draw(c draw.Canvas) { f.draw(c) }

// UnlabelledAxes names each axis of the figure's charts that says nothing of
// what it measures: no label, and no category names (a bar chart's categories
// label its axis).
func (f Figure) UnlabelledAxes() []string {
	var out []string
	for _, p := range f.plots {
		for _, ax := range []struct {
			name string
			a    *plot.Axis
		}{{"x", &p.X}, {"y", &p.Y}} {
			_, categories := ax.a.Tick.Marker.(plot.ConstantTicks)
			if ax.a.Label.Text == "" && !categories {
				out = append(out, fmt.Sprintf("%s: chart %q: its %s axis has no label", f.Name, p.Title.Text, ax.name))
			}
		}
	}
	return out
}

// Save writes the figure as NAME.png and NAME.svg into dir and returns the paths.
func (f Figure) Save(dir string) ([]string, error) {
	var paths []string
	for _, format := range []string{"png", "svg"} {
		path := filepath.Join(dir, f.Name+"."+format)
		if err := f.write(path, format); err != nil {
			return paths, fmt.Errorf("writing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func (f Figure) write(path, format string) error {
	c, err := draw.NewFormattedCanvas(f.Width, f.Height, format)
	if err != nil {
		return err
	}
	f.draw(draw.New(c))
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Palette is the colours of series (policies, schemes) and lane slots: the
// colour-blind-safe Okabe-Ito set, then a few more.
var Palette = []color.Color{
	rgb(0x00, 0x72, 0xB2), // blue
	rgb(0xE6, 0x9F, 0x00), // orange
	rgb(0x00, 0x9E, 0x73), // green
	rgb(0xCC, 0x79, 0xA7), // pink
	rgb(0xD5, 0x5E, 0x00), // vermillion
	rgb(0x56, 0xB4, 0xE9), // sky blue
	rgb(0x8C, 0x56, 0x4B), // brown
	rgb(0xF0, 0xE4, 0x42), // yellow
	rgb(0x6A, 0x3D, 0x9A), // purple
	rgb(0x33, 0x33, 0x33), // near black
}

// Colour returns the i-th palette colour, cycling.
func Colour(i int) color.Color { return Palette[((i%len(Palette))+len(Palette))%len(Palette)] }

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }

// pale mixes c with white: t=0 gives c, t=1 white.
func pale(c color.Color, t float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(float64(v>>8)*(1-t) + 255*t) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

var (
	grey      = rgb(0xD0, 0xD0, 0xD0)
	startupC  = rgb(0xE8, 0xC0, 0x7A)
	capacityC = rgb(0xC0, 0x00, 0x00)
)

// swatch is a legend entry drawn as a filled box.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(s.c, pts)
}

// newPlot returns a plot with the project's defaults.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Padding = vg.Points(2.5) // gonum's rows are a line of text apart: they touch
	p.X.Tick.Marker, p.Y.Tick.Marker = cleanTicks{}, cleanTicks{}
	return p
}

// cleanTicks are gonum's default ticks labelled without trailing zeros ("500",
// not "500.00").
type cleanTicks struct{}

func (cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(ts[i].Value, 'g', 10, 64), 64)
			ts[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ts
}
