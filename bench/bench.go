// Package bench is the simulator's scale benchmark (salus bench): it simulates
// generated salus100 traces of growing size under each scheme and measures how
// long a run takes, how many iterations and events it simulates per second, the
// time per job, and the memory it needs, so that the growth of the cost with the
// number of jobs shows (a line that rises on the µs-per-job chart is worse than
// linear).
//
// One measurement is a Cell (a size and a scheme). Measure runs a cell in this
// process; Run runs a list of cells through a Runner, which the command makes a
// child process per cell (ChildRunner), so that a cell over its timeout can be
// killed and reported as such, and so that the child's peak resident memory is
// that cell's alone. The package runs nothing but the simulator: it holds no
// scheduling or metrics logic.
package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// DefaultSchemes are the schemes salus bench runs when none is named: the paper's
// four policies and two of today's alternatives (suspend/resume under fair, and
// time-slicing), which stress the simulator differently.
var DefaultSchemes = []eval.Scheme{
	{Mode: core.ModeExclusive, Policy: "fifo"},
	{Mode: core.ModeSalus, Policy: "srtf"},
	{Mode: core.ModeSalus, Policy: "pack"},
	{Mode: core.ModeSalus, Policy: "fair"},
	{Mode: core.ModeSuspend, Policy: "fair"},
	{Mode: core.ModeTimeslice, Policy: "fifo"},
}

// DefaultSizes are the trace sizes (jobs) salus bench runs when none is given.
var DefaultSizes = []int{100, 1000, 10000}

// Cell is one measurement: a generated trace of Jobs jobs (seed Seed, arrival
// rate multiplied by Load) simulated under Scheme on the device preset Device.
type Cell struct {
	Jobs   int
	Load   float64
	Seed   int64
	Scheme eval.Scheme
	Device string
	// Interference names the co-location model (interference.Named; "": today's rule).
	Interference string
}

// Status says how a cell ended.
const (
	StatusOK       = "ok"
	StatusTimedOut = "timeout" // killed after the timeout
	StatusSkipped  = "skipped" // not run: the scheme timed out at a smaller size
	StatusFailed   = "failed"  // the run failed; Error says why
)

// Result is one cell's figures. WallS is the simulation (with the metrics computed
// from its events, and the drawing of the trace's jobs, which streams into it), not
// the process's start. GenS is the generator's set-up alone, since jobs are
// drawn as the run goes.
type Result struct {
	Jobs       int     `json:"jobs"`
	Scheme     string  `json:"scheme"`
	Mode       string  `json:"mode"`
	Policy     string  `json:"policy"`
	Load       float64 `json:"load"`
	Seed       int64   `json:"seed"`
	Status     string  `json:"status"`
	Error      string  `json:"error,omitempty"`
	TimeoutS   float64 `json:"timeout_s,omitempty"`
	Iterations int64   `json:"iterations"`
	Events     int64   `json:"events"`
	GenS       float64 `json:"gen_s"`
	WallS      float64 `json:"wall_s"`
	ItersPerS  float64 `json:"iters_per_s"`
	EventsPerS float64 `json:"events_per_s"`
	USPerJob   float64 `json:"us_per_job"`
	// Switches counts the boundaries where lanes side by side changed who runs
	// beside whom (sim.Stats.Switches); NSPerSwitch is the wall time over them
	// where they are a tenth of the iterations or more (the run's cost then
	// follows them, as pack's does), else 0: a run of a few switches is bound
	// by something else, and its time over them says nothing of them.
	Switches    int64   `json:"switches"`
	NSPerSwitch float64 `json:"ns_per_switch"`
	// MakespanS is the simulated makespan, a check that the run is the one meant.
	MakespanS float64 `json:"makespan_s"`
	// AllocMiB is what the run allocated on the Go heap in all (TotalAlloc),
	// HeapMiB the heap in use at its end.
	AllocMiB float64 `json:"alloc_mib"`
	HeapMiB  float64 `json:"heap_mib"`
	// MaxRSSMiB is the peak resident memory of the process that ran the cell
	// (its own child process under ChildRunner: the cell's alone); 0 where
	// unknown (in-process runs, or platforms without getrusage).
	MaxRSSMiB float64 `json:"max_rss_mib"`
}

// OK says whether the cell ran to its end.
func (r Result) OK() bool { return r.Status == StatusOK }

// counter counts the events of a run and its ended iterations.
type counter struct{ events, iters int64 }

// Boundary counts an iteration boundary (eventlog.BoundarySink): the iter_end and
// iter_start events it stands for, without their being built.
func (c *counter) Boundary(string, int, int, float64, float64) {
	c.events += 2
	c.iters++
}

// TakesTurns is true: a stretch of turns counts its iterations (eventlog.TurnsSink).
func (c *counter) TakesTurns() bool { return true }

func (c *counter) Emit(e eventlog.Event) {
	c.events++
	switch e.Kind {
	case eventlog.IterEnd:
		c.iters++
	case eventlog.Stretch:
		c.iters += int64(e.Iterations)
		for _, tu := range e.Turns {
			c.iters += int64(tu.Iterations)
		}
	}
}

// Measure runs one cell in this process and measures it. It stops early only
// between steps (generation, simulation), when ctx is done.
func Measure(ctx context.Context, c Cell) (Result, error) {
	r := Result{Jobs: c.Jobs, Scheme: c.Scheme.String(), Mode: c.Scheme.Mode, Policy: c.Scheme.Policy, Load: c.Load, Seed: c.Seed}
	if c.Jobs < 1 {
		return r, fmt.Errorf("a trace of %d jobs: give at least 1", c.Jobs)
	}
	if !(c.Load > 0) {
		return r, fmt.Errorf("load %v: give a positive arrival-rate multiplier (1: the salus100 rate)", c.Load)
	}
	p, err := core.Compose(c.Scheme.Mode, c.Scheme.Policy, core.DefaultModeParams())
	if err != nil {
		return r, err
	}
	dev, err := device.Preset(c.Device)
	if err != nil {
		return r, err
	}
	if dev.CoLocation, err = interference.Named(c.Interference); err != nil {
		return r, err
	}
	start := time.Now()
	// Drawn as the run goes: memory holds the jobs alive, not the trace.
	tr, err := workload.GenerateStream(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: c.Seed, Jobs: c.Jobs, Load: c.Load})
	if err != nil {
		return r, fmt.Errorf("generating %d jobs: %w", c.Jobs, err)
	}
	r.GenS = time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return r, err
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	col, cnt := metrics.NewCollector(), &counter{}
	start = time.Now()
	var stats sim.Stats
	err = sim.RunStream(tr, sim.Options{Policy: p, Device: dev, Sink: eventlog.Sinks{col, cnt}, Stats: &stats})
	if err == nil {
		var m metrics.Result
		if m, err = col.Result(); err == nil {
			r.MakespanS = m.MakespanS
		}
	}
	wall := time.Since(start)
	if err != nil {
		return r, fmt.Errorf("%s, %d jobs: %w", r.Scheme, c.Jobs, err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.Status = StatusOK
	r.Iterations, r.Events = cnt.iters, cnt.events
	r.WallS = wall.Seconds()
	if r.WallS > 0 {
		r.ItersPerS = float64(r.Iterations) / r.WallS
		r.EventsPerS = float64(r.Events) / r.WallS
	}
	r.USPerJob = r.WallS * 1e6 / float64(c.Jobs)
	if r.Switches = stats.Switches; r.Switches > 0 && r.Switches*10 >= r.Iterations {
		r.NSPerSwitch = r.WallS * 1e9 / float64(r.Switches)
	}
	r.AllocMiB = float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	r.HeapMiB = float64(after.HeapInuse) / (1 << 20)
	return r, nil
}

// Runner measures one cell; it returns a result whose Status is StatusTimedOut
// (and a nil error) when the cell ran past timeout.
type Runner func(ctx context.Context, c Cell, timeout time.Duration) (Result, error)

// InProcess is a Runner that measures the cell in this process. It cannot stop
// a run past its timeout: it says so only once the run has ended.
func InProcess(ctx context.Context, c Cell, timeout time.Duration) (Result, error) {
	r, err := Measure(ctx, c)
	if err == nil && timeout > 0 && time.Duration(r.WallS*float64(time.Second)) > timeout {
		r.Status, r.TimeoutS = StatusTimedOut, timeout.Seconds()
	}
	return r, err
}

// Options are a benchmark's cells and how to run them.
type Options struct {
	Sizes   []int
	Schemes []eval.Scheme
	Load    float64
	Seed    int64
	Device  string // the device preset
	// Interference names the co-location model (interference.Named; "": today's rule).
	Interference string
	// Timeout bounds each cell (0: none).
	Timeout time.Duration
	// Runner runs each cell (nil: InProcess).
	Runner Runner
	// Progress, when set, is told of each cell as it ends.
	Progress func(Result)
}

// Run measures every size (ascending, as given) under every scheme. A scheme that
// times out at a size is not run at the larger sizes (they are reported skipped).
// A cell that fails is a row with its error; Run's error is the first such, or
// ctx's when it is cancelled (the results so far come back with it).
func Run(ctx context.Context, o Options) ([]Result, error) {
	runner := o.Runner
	if runner == nil {
		runner = InProcess
	}
	timedOutAt := map[string]int{}
	var out []Result
	var first error
	for _, n := range o.Sizes {
		for _, s := range o.Schemes {
			c := Cell{Jobs: n, Load: o.Load, Seed: o.Seed, Scheme: s, Device: o.Device, Interference: o.Interference}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			var r Result
			if at, ok := timedOutAt[s.String()]; ok {
				r = Result{Jobs: n, Scheme: s.String(), Mode: s.Mode, Policy: s.Policy, Load: o.Load, Seed: o.Seed, Status: StatusSkipped,
					TimeoutS: o.Timeout.Seconds(), Error: fmt.Sprintf("timed out at %d jobs", at)}
			} else {
				var err error
				r, err = runner(ctx, c, o.Timeout)
				r.Jobs, r.Scheme, r.Mode, r.Policy, r.Load, r.Seed = n, s.String(), s.Mode, s.Policy, o.Load, o.Seed
				switch {
				case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
					return out, ctx.Err()
				case err != nil:
					r.Status, r.Error = StatusFailed, err.Error()
					if first == nil {
						first = err
					}
				case r.Status == StatusTimedOut:
					timedOutAt[s.String()] = n
				case r.Status == "":
					r.Status = StatusOK
				}
			}
			out = append(out, r)
			if o.Progress != nil {
				o.Progress(r)
			}
		}
	}
	return out, first
}
