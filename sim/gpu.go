package sim

import (
	"math"
	"slices"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
)

// Work is one iteration in flight on the device model.
type Work struct {
	Job  string
	Lane int
	// Delay is wall time to pass before the work starts (scheduling overhead, a
	// switch, a copy): the GPU is not busy for it meanwhile.
	Delay time.Duration
	// Left is the standalone GPU work still to do: how long it would take alone.
	Left time.Duration
	// Demand is the share of the GPU the work keeps busy when it runs alone.
	Demand float64
	// job is the simulator's own record of the job (nil for the daemon's emulator):
	// it saves a lookup by name at every iteration's end.
	job *job
	// pace, when above the GPU's slowdown, is the slowdown the work runs at: a
	// gang's rank runs at its slowest rank's pace (Lockstep).
	pace float64
}

// GPU is the compute side of the device model: the iterations in flight and how
// fast each progresses beside the others. Iterations of concurrent lanes (or MPS
// clients) share compute by their demands: when those sum to more than one, each
// slows by the sum. Under time-slicing the GPU runs one process at a time, so n
// resident iterations each get a 1/n share of the slices, less the context switches.
//
// It knows no clock: the simulator advances it by virtual time, the daemon's
// emulated GPU by wall time. Times are integer nanoseconds; an iteration ends at
// the first nanosecond its work is done, so its end is an exact instant.
type GPU struct {
	timeslice  bool
	efficiency float64 // time-slicing: the share of slices that do work
	running    []*Work
	finished   []*Work
	// share and next cache slowdown and NextEnd until the running set changes.
	share float64
	next  time.Duration
	fresh bool
}

// NewGPU returns the device model of d, its iterations sharing compute as the
// sharing mode says (a policy's Compute).
func NewGPU(compute core.ComputeSharing, d device.Device) *GPU {
	return &GPU{timeslice: compute == core.TimeSliced, efficiency: d.TimesliceEfficiency()}
}

// Start puts w on the GPU. Left must be at least one nanosecond.
func (g *GPU) Start(w *Work) {
	w.Left = max(w.Left, 1)
	g.running = append(g.running, w)
	g.fresh = false
}

// Running is how many iterations are in flight.
func (g *GPU) Running() int { return len(g.running) }

// Remove takes job's work off the GPU unfinished (its client went away).
func (g *GPU) Remove(job string) {
	g.running = slices.DeleteFunc(g.running, func(w *Work) bool { return w.Job == job })
	g.fresh = false
}

// slowdown is how much slower than alone every iteration in its work phase runs.
func (g *GPU) slowdown() float64 {
	var sum float64
	n := 0
	for _, w := range g.running {
		if w.Delay <= 0 {
			sum += w.Demand
			n++
		}
	}
	if g.timeslice {
		if n <= 1 {
			return 1
		}
		return float64(n) / g.efficiency
	}
	return math.Max(1, sum)
}

// NextEnd is how long from now until the next iteration ends a phase (its delay or
// its work), while nothing else changes; false when nothing runs.
func (g *GPU) NextEnd() (time.Duration, bool) {
	if len(g.running) == 0 {
		return 0, false
	}
	if !g.fresh {
		g.share = g.slowdown()
		g.next = time.Duration(math.MaxInt64)
		for _, w := range g.running {
			g.next = min(g.next, g.phaseLeft(w, g.share))
		}
		g.fresh = true
	}
	return g.next, true
}

func (g *GPU) phaseLeft(w *Work, share float64) time.Duration {
	if w.Delay > 0 {
		return w.Delay
	}
	share = max(share, w.pace)
	if share == 1 {
		return w.Left
	}
	// Rounded to the nearest nanosecond, so that rounding does not bias the
	// iterations of shared lanes either way.
	t := math.Round(float64(w.Left) * share)
	if t >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(time.Duration(t), 1)
}

// Advance moves the model dt forward. Iterations whose work is done are set aside
// for Finished, in the order they started. dt may pass several phase ends (the
// daemon's timers fire late); the model then advances one phase end at a time.
func (g *GPU) Advance(dt time.Duration) {
	for dt > 0 && len(g.running) > 0 {
		next, _ := g.NextEnd()
		step := min(dt, next)
		g.step(step)
		dt -= step
	}
}

// step advances by dt, no more than the time to the next phase end (NextEnd has
// just been called, so the share is fresh).
func (g *GPU) step(dt time.Duration) {
	share := g.share
	g.fresh = false
	// The works that go on stay in place at the front of running: no pointer is
	// rewritten (a write barrier while the GC runs) unless one before it finished.
	n := 0
	for i, w := range g.running {
		switch {
		case w.Delay > 0:
			w.Delay -= min(dt, w.Delay)
		case g.phaseLeft(w, share) <= dt:
			w.Left = 0
		default:
			// Progress at 1/share of real time, rounded, and short of the end, which
			// is later than dt.
			done := time.Duration(math.Round(float64(dt) / max(share, w.pace)))
			w.Left -= min(done, w.Left-1)
		}
		if w.Delay <= 0 && w.Left == 0 {
			g.finished = append(g.finished, w)
			continue
		}
		if n < i {
			g.running[n] = w
		}
		n++
	}
	for i := n; i < len(g.running); i++ {
		g.running[i] = nil // a finished work is not kept alive by running
	}
	g.running = g.running[:n]
}

// Finished returns the iterations that ended since the last call, in the order
// they started, and forgets them. The slice is valid until the next Advance.
func (g *GPU) Finished() []*Work {
	out := g.finished
	g.finished = g.finished[:0]
	return out
}

// Lockstep paces the parts of one gang's iteration: parts[i] runs on gpus[i]. A
// gang's ranks synchronize at every step of an iteration, so each runs at the
// pace of the slowest (the largest slowdown among their GPUs) and all end at the
// same instant; meanwhile each rank keeps its GPU as busy as its demand says, so a
// job beside a rank that waits on a slower one is slowed for the whole iteration,
// not only while that rank's own share of the work lasts. Call it whenever the
// works on any of those GPUs change, before NextEnd.
func Lockstep(parts []*Work, gpus []*GPU) {
	pace := 1.0
	for i := range parts {
		g := gpus[i]
		if !g.fresh {
			g.NextEnd()
		}
		pace = max(pace, g.share)
	}
	for i, w := range parts {
		if w.pace != pace {
			w.pace = pace
			gpus[i].fresh = false
		}
	}
}
