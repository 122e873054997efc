package plots

import (
	"fmt"
	"sort"

	"github.com/salusgo/salus/metrics"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Memory draws device memory over time: for each lane slot, its jobs' persistent
// memory (solid) with their largest ephemeral peak stacked on it (pale), the
// memory allocated to lanes (black step line) and the device's capacity (red).
func Memory(l *RunLog, name, title string) Figure {
	times, states := memorySteps(l)
	end := l.EndS()
	u := metrics.UnitFor(end)
	p := newPlot(title, "time ("+u.Name+")", "memory (GiB)")
	if len(times) > 0 {
		p.Add(&stack{times: times, states: states, end: end, scale: u.Scale})
		alloc := make(plotter.XYs, 0, 2*len(times)+1)
		for i, t := range times {
			var sum float64
			for _, m := range states[i] {
				sum += m.LaneMiB
			}
			if i > 0 {
				alloc = append(alloc, plotter.XY{X: t * u.Scale, Y: alloc[len(alloc)-1].Y})
			}
			alloc = append(alloc, plotter.XY{X: t * u.Scale, Y: sum / 1024})
		}
		alloc = append(alloc, plotter.XY{X: end * u.Scale, Y: alloc[len(alloc)-1].Y})
		line, _ := plotter.NewLine(alloc)
		line.Width = vg.Points(0.8)
		p.Add(line)
		p.Legend.Add("allocated to lanes", line)
	}
	if l.CapacityMiB > 0 {
		cap := plotter.XYs{{X: 0, Y: l.CapacityMiB / 1024}, {X: end * u.Scale, Y: l.CapacityMiB / 1024}}
		line, _ := plotter.NewLine(cap)
		line.Color, line.Width, line.Dashes = capacityC, vg.Points(1.5), []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("device capacity (%.1f GiB)", l.CapacityMiB/1024), line)
		p.Y.Max = l.CapacityMiB / 1024 * 1.35 // room for the legend above the line
	}
	p.Legend.Add("persistent (solid, by lane slot)", swatch{Colour(0)})
	p.Legend.Add("ephemeral peak (pale)", swatch{pale(Colour(0), 0.6)})
	p.Y.Min, p.X.Min, p.X.Max = 0, 0, end*u.Scale*1.02
	return Single(name, title, 10*vg.Inch, 4.5*vg.Inch, p)
}

// memorySteps returns the times at which lane memory changed and, after each,
// every open slot's latest sample.
func memorySteps(l *RunLog) ([]float64, [][]MemSample) {
	var times []float64
	var states [][]MemSample
	cur := map[int]MemSample{}
	for i, m := range l.Memory {
		if m.LaneMiB == 0 {
			delete(cur, m.Slot)
		} else {
			cur[m.Slot] = m
		}
		if i+1 < len(l.Memory) && l.Memory[i+1].T == m.T {
			continue // one state per instant
		}
		snap := make([]MemSample, 0, len(cur))
		for _, s := range cur {
			snap = append(snap, s)
		}
		sort.Slice(snap, func(a, b int) bool { return snap[a].Slot < snap[b].Slot })
		times, states = append(times, m.T), append(states, snap)
	}
	return times, states
}

// stack fills the stacked step areas.
type stack struct {
	times  []float64
	states [][]MemSample
	end    float64
	scale  float64 // seconds to the axis's unit
}

// Plot fills one polygon per layer (a slot's persistent or ephemeral memory)
// over the whole run, so adjacent steps leave no seams.
func (s *stack) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	slots := 0
	for _, st := range s.states {
		for _, m := range st {
			slots = max(slots, m.Slot+1)
		}
	}
	n := len(s.times)
	// lower and upper bounds of each layer (2 per slot) in each interval.
	lo := make([][]float64, 2*slots)
	hi := make([][]float64, 2*slots)
	for l := range lo {
		lo[l], hi[l] = make([]float64, n), make([]float64, n)
	}
	for i, st := range s.states {
		var base float64
		bySlot := make([]MemSample, slots)
		for _, m := range st {
			bySlot[m.Slot] = m
		}
		for k, m := range bySlot {
			lo[2*k][i], hi[2*k][i] = base, base+m.PersistentMiB
			base += m.PersistentMiB
			lo[2*k+1][i], hi[2*k+1][i] = base, base+m.EphemeralMiB
			base += m.EphemeralMiB
		}
	}
	pt := func(t, mib float64) vg.Point { return vg.Point{X: tx(t * s.scale), Y: ty(mib / 1024)} }
	for l := range lo {
		pts := make([]vg.Point, 0, 4*n)
		for i, t := range s.times {
			pts = append(pts, pt(t, hi[l][i]), pt(s.next(i), hi[l][i]))
		}
		for i := n - 1; i >= 0; i-- {
			pts = append(pts, pt(s.next(i), lo[l][i]), pt(s.times[i], lo[l][i]))
		}
		clr := Colour(l / 2)
		if l%2 == 1 {
			clr = pale(clr, 0.6)
		}
		c.FillPolygon(clr, c.ClipPolygonXY(pts))
	}
}

func (s *stack) next(i int) float64 {
	if i+1 < len(s.times) {
		return s.times[i+1]
	}
	return s.end
}
