package sim

import (
	"container/heap"
	"math"
	"slices"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
)

// Work is one iteration in flight on the device model.
type Work struct {
	Job  string
	Lane int
	// Delay is wall time to pass before the work starts (scheduling overhead, a
	// switch, a copy): the GPU is not busy for it meanwhile.
	Delay time.Duration
	// Left is the standalone GPU work to do: how long it would take alone.
	Left time.Duration
	// Demand is the share of the GPU the work keeps busy when it runs alone.
	Demand float64
	// Model is the job's type (catalog model and batch size), by which a
	// co-location model (GPU.SetInterference) says how it fares beside others.
	Model interference.Job
	// job is the simulator's own record of the job (nil for the daemon's emulator):
	// it saves a lookup by name at every iteration's end.
	job *job

	// The model's bookkeeping. seq orders the works by their start; finish is the
	// virtual time at which the work phase is done; delayEnd is when the delay
	// phase is over; endedAt is when the work last finished on gpu (a next
	// iteration started at that very instant continues from its finish: see Start).
	seq      uint64
	finish   vtime
	delayEnd time.Duration
	endedAt  time.Duration
	gpu      *GPU
	// own is the work's clock while works side by side under a co-location
	// model run each at its own rate (GPU.each): finish is then on it, and its
	// share is the work's slowdown. unit is its row in the model.
	own     clock
	unit    int
	press   int64 // the fixed-point sum of the model's terms of the works beside it (GPU.enter)
	index   int   // in its heap
	working bool
	held    bool // a hold (GPU.Hold), not an iteration
}

// vtime is a virtual time of a GPU: standalone work in nanoseconds, an integer
// part and a fraction in [0, 1). Adding whole nanoseconds of work is exact, so a
// job's n-th iteration boundary is the same whether its iterations are added one
// by one or n at once.
type vtime struct {
	i int64
	f float64
}

func (v vtime) add(d int64) vtime { return vtime{v.i + d, v.f} }

// addF adds x nanoseconds of work, x >= 0.
func (v vtime) addF(x float64) vtime {
	xi := math.Floor(x)
	f := v.f + (x - xi)
	i := v.i + int64(xi)
	if f >= 1 {
		f--
		i++
	}
	return vtime{i, f}
}

// sub is v - u in nanoseconds of work.
func (v vtime) sub(u vtime) float64 { return float64(v.i-u.i) + (v.f - u.f) }

func (v vtime) less(u vtime) bool { return v.i < u.i || v.i == u.i && v.f < u.f }

// demandScale is the fixed point of demands: sums of integers do not depend on
// the order they were added in, so a GPU's share depends only on what runs.
const demandScale = 1 << 32

func fixed(d float64) int64 {
	if d <= 0 || math.IsNaN(d) {
		return 0
	}
	return int64(math.Round(math.Min(d, 1<<28) * demandScale))
}

// clock is a GPU's virtual clock: at real time t0 it read v0, and it runs at
// 1/share of real time.
type clock struct {
	t0    time.Duration
	v0    vtime
	share float64
}

// reRate re-bases c at at to run at share s from then, and says whether it
// did: a clock whose share is s already is kept, so that the same rates give
// the same ends.
func (c *clock) reRate(at time.Duration, s float64) bool {
	if s == c.share {
		return false
	}
	*c = clock{t0: at, v0: c.vAt(at), share: s}
	return true
}

// vAt is the virtual clock at t >= t0, the share unchanged until then. At a
// share of 1 it is exact integer arithmetic (as floats are, below 2^53 ns: 104
// days without a change of share), so that an iteration started at t ends at
// t plus its standalone time however long the GPU has been busy.
func (c *clock) vAt(t time.Duration) vtime {
	if t == c.t0 {
		return c.v0
	}
	if c.share == 1 {
		return c.v0.add(int64(t - c.t0))
	}
	return c.v0.addF(float64(t-c.t0) / c.share)
}

// endAfter is the real time at which a work of virtual finish f ends at the
// current share, and not before now.
func (c *clock) endAfter(f vtime, now time.Duration) time.Duration {
	if c.share == 1 && f.f == c.v0.f && f.i < math.MaxInt64 {
		// Exact, as vAt: what floats give below 2^53 ns.
		d := time.Duration(f.i - c.v0.i)
		if d >= math.MaxInt64-c.t0 {
			return math.MaxInt64
		}
		return max(c.t0+d, now)
	}
	t := math.Ceil(f.sub(c.v0) * c.share)
	if t >= float64(math.MaxInt64-c.t0) {
		return math.MaxInt64
	}
	return max(c.t0+time.Duration(t), now)
}

// GPU is the compute side of the device model: the iterations in flight and how
// fast each progresses beside the others. Iterations of concurrent lanes (or MPS
// clients) share compute by their demands: when those sum to more than one, each
// slows by the sum. Under time-slicing the GPU runs one process at a time, so n
// resident iterations each get a 1/n share of the slices, less the context switches.
//
// Every iteration in its work phase progresses at the same rate, 1/share of real
// time, so the GPU keeps one virtual clock (work done by each, since an epoch)
// instead of stepping every iteration: the clock is re-based only when the share
// changes, and an iteration ends at the first nanosecond the clock passes its
// finish. An event that does not change the share (an arrival elsewhere, another
// job's boundary) changes no iteration's end, and an event costs O(log n).
//
// Under a co-location model (SetInterference) each job's rate depends on who
// runs beside it: while two works or more are in their work phase each has a
// clock of its own (clockOf), re-based at each change of who runs beside whom
// (settleEach, O(n)); while one runs, the shared clock above serves, a job alone
// running as fast as alone under any model.
//
// It knows no clock: the simulator advances it by virtual time, the daemon's
// emulated GPU by wall time. Times are integer nanoseconds; an iteration's end is
// an exact instant.
type GPU struct {
	timeslice  bool
	efficiency float64 // time-slicing: the share of slices that do work
	now        time.Duration
	clock
	// sum and n are the demands (fixed point) and the count of works in their
	// work phase; dirty says they changed since the share was computed.
	sum   int64
	n     int
	dirty bool
	seq   uint64

	// im, when set, is the co-location model (SetInterference): each work's rate
	// then depends on who runs beside it, and units caches each job type's row.
	im    *interference.DeviceModel
	units map[interference.Job]int
	// each: two works or more are in their work phase under im, each on a
	// clock of its own (settleEach); otherwise the shared clock runs.
	each bool

	holds    int       // the works of works that are holds (Hold)
	works    workHeap  // by finish
	delays   delayHeap // by delayEnd
	finished []*Work
}

// NewGPU returns the device model of d, its iterations sharing compute as the
// sharing mode says (a policy's Compute).
func NewGPU(compute core.ComputeSharing, d device.Device) *GPU {
	return &GPU{timeslice: compute == core.TimeSliced, efficiency: d.TimesliceEfficiency(), clock: clock{share: 1}}
}

// SetInterference makes d the GPU's co-location model: an iteration in its
// work phase then runs 1 + the sum of d's terms of the jobs beside it slower
// than alone (interference.DeviceModel), each at its own rate, in place of
// one share for all. Set it before anything runs; nil keeps one share by
// demands (today's rule).
func (g *GPU) SetInterference(d *interference.DeviceModel) {
	g.im = d
	g.units = map[interference.Job]int{}
}

// unitOf is w's row in the co-location model.
func (g *GPU) unitOf(w *Work) int {
	u, ok := g.units[w.Model]
	if !ok {
		u = g.im.Index(w.Model)
		g.units[w.Model] = u
	}
	return u
}

// vnow is the virtual clock now, at the share it ran at until now.
func (g *GPU) vnow() vtime {
	return g.vAt(g.now)
}

// Start puts w on the GPU. Left must be at least one nanosecond. A work that
// finished on this GPU at this very instant and starts again with no delay (a
// job's next iteration, in the same lane) continues from its last finish rather
// than from the clock: its iterations add up exactly, whatever else ends then.
func (g *GPU) Start(w *Work) {
	w.Left = max(w.Left, 1)
	chained := w.gpu == g && w.endedAt == g.now && !w.working && w.Delay <= 0
	w.gpu = g
	g.seq++
	w.seq = g.seq
	if w.Delay > 0 {
		w.working = false
		w.delayEnd = g.now + w.Delay
		heap.Push(&g.delays, w)
		return
	}
	switch {
	case chained:
		w.finish = w.finish.add(int64(w.Left))
	case g.each:
		w.own, w.finish = clock{t0: g.now, share: 1}, vtime{i: int64(w.Left)}
	default:
		w.finish = g.vnow().add(int64(w.Left))
	}
	g.enter(w)
}

func (g *GPU) enter(w *Work) {
	if g.im != nil {
		// Each work keeps the sum of the terms of those beside it: a work
		// that comes or goes changes each other's by one term, O(n).
		w.unit = g.unitOf(w)
		w.press = 0
		for _, o := range g.works {
			w.press += g.im.FixedTerm(w.unit, o.unit)
			o.press += g.im.FixedTerm(o.unit, w.unit)
		}
	}
	w.working = true
	heap.Push(&g.works, w)
	g.sum += fixed(w.Demand)
	g.n++
	g.dirty = true
}

// leave takes w, off the works already, out of the sums.
func (g *GPU) leave(w *Work) {
	if g.im != nil {
		for _, o := range g.works {
			o.press -= g.im.FixedTerm(o.unit, w.unit)
		}
	}
	w.working = false
	g.sum -= fixed(w.Demand)
	g.n--
	g.dirty = true
}

// Hold keeps w's demand on the GPU, with no end, until Release: a gang's rank
// whose part of the iteration is done waits there for the other ranks (the
// gradients' all-reduce ends the step), so its GPU stays as busy as its demand
// says for the whole of the gang's iteration, and a job beside it is slowed as
// long as the slowest rank runs, not only while this rank's own part lasts. It
// is no iteration: it never ends, and Running does not count it.
func (g *GPU) Hold(w *Work) {
	w.gpu = g
	g.seq++
	w.seq = g.seq
	w.finish = vtime{i: math.MaxInt64}
	w.own = clock{t0: g.now, share: 1}
	w.held = true
	g.enter(w)
	g.holds++
}

// Release takes a held work (Hold) off the GPU; nothing if it holds none.
func (g *GPU) Release(w *Work) {
	if w == nil || w.gpu != g || !w.held || !w.working {
		return
	}
	heap.Remove(&g.works, w.index)
	g.leave(w)
	g.holds--
	w.gpu, w.held = nil, false
}

// Running is how many iterations are in flight.
func (g *GPU) Running() int { return len(g.works) + len(g.delays) - g.holds }

// Remove takes job's work off the GPU unfinished (its client went away).
func (g *GPU) Remove(job string) {
	var gone []*Work
	for _, w := range g.works {
		if w.Job == job {
			gone = append(gone, w)
		}
	}
	for _, w := range gone {
		heap.Remove(&g.works, w.index)
		g.leave(w)
		if w.held {
			g.holds--
			w.held = false
		}
		w.gpu = nil
	}
	gone = gone[:0]
	for _, w := range g.delays {
		if w.Job == job {
			gone = append(gone, w)
		}
	}
	for _, w := range gone {
		heap.Remove(&g.delays, w.index)
		w.gpu = nil
	}
	g.finished = slices.DeleteFunc(g.finished, func(w *Work) bool { return w.Job == job })
}

// shareOf is how much slower than alone every iteration in its work phase runs
// when n of them with demands summing to sum (fixed point) do.
func (g *GPU) shareOf(n int, sum int64) float64 {
	if g.timeslice {
		if n <= 1 {
			return 1
		}
		return float64(n) / g.efficiency
	}
	if x := float64(sum) / demandScale; x > 1 {
		return x
	}
	return 1
}

// settle re-bases the virtual clock when the share changed.
func (g *GPU) settle() {
	if !g.dirty {
		return
	}
	g.dirty = false
	if g.im != nil {
		switch {
		case g.n >= 2:
			if !g.each {
				g.toEach()
			}
			g.settleEach()
			return
		case g.each:
			g.fromEach()
		}
	}
	if g.n == 0 {
		// Nothing holds a virtual time: start the clock afresh, at an integer.
		g.t0, g.v0, g.share = g.now, vtime{}, 1
		return
	}
	g.clock.reRate(g.now, g.shareOf(g.n, g.sum))
}

// toEach gives each work a clock of its own, a copy of the shared one: two
// works or more now run side by side under a co-location model, each at the
// rate its neighbours leave it (settleEach).
func (g *GPU) toEach() {
	for _, w := range g.works {
		w.own = g.clock
	}
	g.each = true
}

// fromEach goes back to the shared clock when one work or none is left in its
// work phase: the one left's clock becomes the GPU's. A job alone runs as
// fast as alone under any model, so a GPU that runs one job at a time keeps
// the shared clock, and the stretches that read it (fastforward.go).
func (g *GPU) fromEach() {
	for _, w := range g.works {
		if !w.held {
			g.clock = w.own
		}
	}
	g.each = false
}

// settleEach is settle under a co-location model with works side by side:
// each work's clock is re-based, now, at the slowdown the works beside it
// give it (the sum of their terms, which enter and leave keep: the model's
// Slowdown, in fixed point, exact in any order; clock.reRate keeps a clock
// whose slowdown is unchanged). A hold presses on the others but runs no
// clock. O(n) in the works side by side: a change of who runs beside whom
// changes every one's rate, and with it the order of their ends. A
// sideBySide's run keeps the same sums as it goes (takeOwn).
func (g *GPU) settleEach() {
	for _, w := range g.works {
		if !w.held {
			w.own.reRate(g.now, interference.SlowdownOf(w.press))
		}
	}
	heap.Init(&g.works)
}

// clockOf is the clock w's finish is on: its own while works run side by
// side under a co-location model, else the GPU's.
func (g *GPU) clockOf(w *Work) *clock {
	if g.each {
		return &w.own
	}
	return &g.clock
}

// endOf is the real time at which w, in its work phase, ends at the current share.
func (g *GPU) endOf(w *Work) time.Duration { return g.clockOf(w).endAfter(w.finish, g.now) }

// nextAt is when the next phase ends (a delay or a work), absolute.
func (g *GPU) nextAt() (time.Duration, bool) {
	g.settle()
	next, ok := time.Duration(math.MaxInt64), false
	if len(g.delays) > 0 {
		next, ok = g.delays[0].delayEnd, true
	}
	if len(g.works) > 0 {
		next, ok = min(next, g.endOf(g.works[0])), true
	}
	return next, ok
}

// NextEnd is how long from now until the next iteration ends a phase (its delay or
// its work), while nothing else changes; false when nothing runs.
func (g *GPU) NextEnd() (time.Duration, bool) {
	at, ok := g.nextAt()
	if !ok {
		return 0, false
	}
	return at - g.now, true
}

// Advance moves the model dt forward. Iterations whose work is done are set aside
// for Finished, in the order they started. dt may pass several phase ends (the
// daemon's timers fire late); the model then advances one phase end at a time.
func (g *GPU) Advance(dt time.Duration) {
	target := g.now + dt
	for {
		at, ok := g.nextAt()
		if !ok || at > target {
			break
		}
		g.now = at
		from := len(g.finished)
		// The works that end now, at the share they ran at.
		for len(g.works) > 0 && g.endOf(g.works[0]) <= at {
			w := heap.Pop(&g.works).(*Work)
			g.leave(w)
			w.endedAt = at
			g.finished = append(g.finished, w)
		}
		if len(g.finished)-from > 1 { // mostly one: no sort to set up
			slices.SortFunc(g.finished[from:], func(a, b *Work) int {
				if a.seq < b.seq {
					return -1
				}
				return 1
			})
		}
		// The delays that end now: the work phase begins, on the clock as it reads now.
		for len(g.delays) > 0 && g.delays[0].delayEnd <= at {
			w := heap.Pop(&g.delays).(*Work)
			w.finish = g.vnow().add(int64(w.Left))
			if g.each {
				w.own, w.finish = clock{t0: g.now, share: 1}, vtime{i: int64(w.Left)}
			}
			g.enter(w)
		}
		if at == target {
			// What ends now may start again now: the share is settled after.
			break
		}
	}
	g.now = target
}

// Finished returns the iterations that ended since the last call, in the order
// they started, and forgets them. The slice is valid until the next Advance.
func (g *GPU) Finished() []*Work {
	out := g.finished
	g.finished = g.finished[:0]
	return out
}

type workHeap []*Work

func (h workHeap) Len() int { return len(h) }
func (h workHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if g := a.gpu; g != nil && g.each {
		// Clocks of their own: by the real end.
		ea, eb := g.endOf(a), g.endOf(b)
		return ea < eb || ea == eb && a.seq < b.seq
	}
	return a.finish.less(b.finish) || a.finish == b.finish && a.seq < b.seq
}
func (h workHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *workHeap) Push(x any) {
	w := x.(*Work)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *workHeap) Pop() any {
	s := *h
	w := s[len(s)-1]
	s[len(s)-1] = nil
	*h = s[:len(s)-1]
	return w
}

// delayHeap is workHeap ordered by the end of the works' delays; the rest of
// its heap.Interface is workHeap's.
type delayHeap []*Work

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.delayEnd < b.delayEnd || a.delayEnd == b.delayEnd && a.seq < b.seq
}
func (h delayHeap) Swap(i, j int) { workHeap(h).Swap(i, j) }
func (h *delayHeap) Push(x any)   { (*workHeap)(h).Push(x) }
func (h *delayHeap) Pop() any     { return (*workHeap)(h).Pop() }
