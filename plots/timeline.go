package plots

import (
	"fmt"
	"image/color"

	"github.com/salusgo/salus/metrics"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Timeline draws one row per job, first arrival at the top: grey from arrival to
// end (waiting), tan for its start-up, and its running stretches in the colour of
// their lane's slot. Stretches closer than the picture's resolution are merged.
//
// Times are in the run's unit (metrics.UnitFor its end); rows are labelled with
// the jobs' names when there are at most 40 jobs, else with every tenth index.
func Timeline(l *RunLog, name, title string) Figure {
	end := l.EndS()
	u := metrics.UnitFor(end)
	n := len(l.Jobs)
	ylabel := "job (arrival order)"
	if n <= namedJobs {
		ylabel = "job"
	}
	p := newPlot(title, "time ("+u.Name+")", ylabel)
	tl := &timeline{log: l, gap: end / 1500, scale: u.Scale}
	p.Add(tl)
	p.Y.Min, p.Y.Max = -float64(n), 1
	p.Y.Tick.Marker = jobTicks{log: l}
	p.X.Min, p.X.Max = 0, end*u.Scale*1.02
	p.Legend.Add("waiting", swatch{grey})
	p.Legend.Add("start-up", swatch{startupC})
	for s := 0; s < min(l.Slots, 4); s++ {
		p.Legend.Add(fmt.Sprintf("running, lane slot %d", s), swatch{Colour(s)})
	}
	if l.Slots > 4 {
		p.Legend.Add(fmt.Sprintf("... %d slots in all", l.Slots), swatch{Colour(4)})
	}
	// A row per job: a named row is a line of its label's text high.
	h := vg.Length(2.5+0.075*float64(n)) * vg.Inch
	if n <= namedJobs {
		h = vg.Length(1.5+0.16*float64(n)) * vg.Inch
	}
	return Single(name, title, 10*vg.Inch, min(h, 16*vg.Inch), p)
}

// namedJobs is how many jobs a timeline labels by name, one row each.
const namedJobs = 40

// jobTicks labels the rows (at y = -i for job i+1): every job by its name when
// there are few, else every tenth by its index.
type jobTicks struct{ log *RunLog }

func (j jobTicks) Ticks(lo, hi float64) []plot.Tick {
	n := len(j.log.Jobs)
	var ts []plot.Tick
	if n <= namedJobs {
		for i, job := range j.log.Jobs {
			ts = append(ts, plot.Tick{Value: -float64(i), Label: job.ID})
		}
		return ts
	}
	step := max(1, n/10)
	if step > 5 {
		step = (step + 4) / 5 * 5
	}
	for i := 0; i < n; i++ {
		if (i+1)%step == 0 || i == 0 {
			ts = append(ts, plot.Tick{Value: -float64(i), Label: fmt.Sprint(i + 1)})
		}
	}
	return ts
}

type timeline struct {
	log   *RunLog
	gap   float64
	scale float64 // seconds to the axis's unit
}

// Plot draws the rows, times in the axis's unit.
func (t *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	box := func(from, to, y, half float64, clr color.Color) {
		x0, x1 := tx(from*t.scale), tx(to*t.scale)
		if x1-x0 < 0.3 { // keep very short stretches visible
			x1 = x0 + 0.3
		}
		y0, y1 := ty(y-half), ty(y+half)
		c.FillPolygon(clr, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}))
	}
	for i, j := range t.log.Jobs {
		y := -float64(i)
		end := j.EndS
		if end == 0 {
			end = t.log.EndS()
		}
		box(j.ArrivalS, end, y, 0.45, grey)
		if j.StartupToS > j.StartupFromS {
			box(j.StartupFromS, j.StartupToS, y, 0.45, startupC)
		}
		for _, s := range Merge(j.Stretches, t.gap) {
			box(s.FromS, s.ToS, y, 0.45, Colour(s.Slot))
		}
	}
}

// DataRange is set by Timeline through the axes.
func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, t.log.EndS() * t.scale, -float64(len(t.log.Jobs)), 1
}
