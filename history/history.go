// Package history reads a daemon's event log back into what the daemon saw: catalog
// profiles of the jobs' models (salus profile) and a trace of the jobs' arrivals and
// iterations (salus trace from-log). Times come from the daemon's own clock (the
// iteration start and end events); memory from what the clients measured, when they
// reported it (the measured events), else from what they declared at open.
package history

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// Job is one job of the log, as the daemon saw it.
type Job struct {
	ID    string
	Model string
	Batch int
	Kind  string
	// Priority (smaller: more urgent) and the GPUs it needed at once, as it
	// arrived.
	Priority, GPUs int
	// ArrivalS is the time of its open, seconds from the log's first arrival.
	ArrivalS float64
	// AdmitS is when it got a lane (its arrival when the log has no admit event).
	AdmitS float64
	// FirstIterS is when its first iteration started (NaN: none).
	FirstIterS float64
	// EndS is when it finished or was lost (NaN: still open at the log's end).
	EndS float64
	Lost bool
	// IterS holds each iteration's time on the daemon's clock, start to end.
	IterS []float64
	// SoloCycleS holds, for its iterations after the first, the time from the
	// iteration's start to its next one's (the iteration and the round trip
	// to ask for the next) when no other job's iteration ran in between: the
	// job's pace alone, which on a machine that is not busy is the same from
	// run to run whatever the policy (per-iteration events only; a
	// simulator's stretches add none). An emulating daemon times an
	// iteration by its model: the machine shows in the round trip.
	SoloCycleS []float64
	// DeclaredS and the declared memory, as the open gave them.
	DeclaredS     float64
	PersistentMiB float64
	EphemeralMiB  float64
	// Measured is what the client reported, when it did (the last report).
	Measured *eventlog.Event
	// EmulatedIterS and Demand are, at a daemon that emulated a GPU, one
	// iteration's standalone time on it and its compute demand, as the daemon
	// modelled them (0: not emulated).
	EmulatedIterS, Demand float64

	start float64 // the running iteration's start (NaN: none running)
	// cycleFrom is the last iteration's start (NaN: none), cycleShared whether
	// another job's iteration ran since.
	cycleFrom   float64
	cycleShared bool
}

// PeakMiB is the job's peak memory: the client's measured peak when it reported
// one, else the declared persistent plus ephemeral memory.
func (j *Job) PeakMiB() float64 {
	if j.Measured != nil && j.Measured.PeakMiB > 0 {
		return j.Measured.PeakMiB
	}
	return j.PersistentMiB + j.EphemeralMiB
}

// Persistent is the job's persistent memory: measured, else declared.
func (j *Job) Persistent() float64 {
	if j.Measured != nil && j.Measured.PersistentMiB > 0 {
		return j.Measured.PersistentMiB
	}
	return j.PersistentMiB
}

// steady is the job's iterations after the first (all of them when it ran one):
// the first carries the framework's warm-up (lazy initialization, allocator and
// kernel caches), a one-off cost.
func (j *Job) steady() []float64 {
	if len(j.IterS) > 1 {
		return j.IterS[1:]
	}
	return j.IterS
}

// SteadyIterS is the mean time of the job's iterations after the first.
func (j *Job) SteadyIterS() float64 { return mean(j.steady()) }

// StartupS is the job's fixed cost once it could run: the time from its admission
// (or arrival, if later) to its first iteration's start, plus how much longer than
// iterS its first iteration took (the warm-up). It is what Salus's catalog calls
// start-up: a job's time alone less its iterations at the steady iteration time.
func (j *Job) StartupS(iterS float64) float64 {
	if math.IsNaN(j.FirstIterS) {
		return 0
	}
	gap := math.Max(0, j.FirstIterS-math.Max(j.ArrivalS, j.AdmitS))
	return gap + math.Max(0, j.IterS[0]-iterS)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Log is the jobs of one log in arrival order.
type Log struct {
	Path string
	Jobs []*Job
	// Policy and Engine are the first run header's.
	Policy, Engine string
}

// Read reads the log at path (a .gz is decompressed). A log whose last line was cut
// off (a daemon killed mid-write) is read up to it.
func Read(path string) (*Log, error) {
	l := &Log{Path: path}
	open := map[string]*Job{}
	t0 := math.NaN()
	err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if e.Kind == eventlog.Run {
			if l.Policy == "" {
				l.Policy, l.Engine = e.Policy, e.Engine
			}
			// A restart: the iterations running then ended with the daemon.
			for _, j := range open {
				j.start = math.NaN()
			}
			return nil
		}
		if e.Kind == eventlog.Arrive {
			if math.IsNaN(t0) {
				t0 = e.T
			}
			j := &Job{ID: e.Job, Model: e.Model, Batch: e.Batch, Kind: normKind(e.JobKind), ArrivalS: e.T - t0, AdmitS: e.T - t0,
				FirstIterS: math.NaN(), EndS: math.NaN(), cycleFrom: math.NaN(), DeclaredS: e.DeclaredS, PersistentMiB: e.PersistentMiB,
				EphemeralMiB: e.EphemeralMiB, EmulatedIterS: e.IterS, Demand: e.Demand, Priority: e.Priority, GPUs: e.GPUs, start: math.NaN()}
			open[e.Job] = j
			l.Jobs = append(l.Jobs, j)
			return nil
		}
		j := open[e.Job]
		if j == nil {
			return nil // memory events, or a job of a run before a restart that never came back
		}
		t := e.T - t0
		switch e.Kind {
		case eventlog.Admit:
			j.AdmitS = t
		case eventlog.IterStart:
			busy := false
			for _, k := range open {
				if k == j {
					continue
				}
				busy = busy || !math.IsNaN(k.start)
				k.cycleShared = true
			}
			if !math.IsNaN(j.cycleFrom) && !j.cycleShared && len(j.IterS) >= 2 {
				j.SoloCycleS = append(j.SoloCycleS, t-j.cycleFrom)
			}
			j.cycleFrom, j.cycleShared = t, busy
			j.start = t
			if math.IsNaN(j.FirstIterS) {
				j.FirstIterS = t
			}
		case eventlog.IterEnd:
			if !math.IsNaN(j.start) {
				j.IterS = append(j.IterS, t-j.start)
			}
			j.start = math.NaN()
		case eventlog.Stretch:
			if len(e.Turns) > 0 {
				turns(open, e, t)
				break
			}
			// Iterations back to back from the last start: each took their mean.
			if !math.IsNaN(j.start) && e.Iterations > 0 {
				d := (t - j.start) / float64(e.Iterations)
				for range e.Iterations {
					j.IterS = append(j.IterS, d)
				}
			}
			j.start, j.cycleFrom = t, math.NaN() // a stretch times no iteration alone
		case eventlog.Measured:
			m := e
			j.Measured = &m
		case eventlog.Finish, eventlog.Lost:
			j.EndS, j.Lost = t, e.Kind == eventlog.Lost
			delete(open, e.Job)
		}
		return nil
	})
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		return nil, err
	}
	if len(l.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no job arrived in this log: give the event log of a daemon that served jobs (salus serve --events FILE)", path)
	}
	return l, nil
}

// turns takes a stretch of a lane's turns (eventlog.Event.Turns): each job's
// iterations took their mean GPU time (they ran at the speed they run alone,
// one at a time); the job that runs after it starts at its end, the one that
// ran before it (when another) stops there.
func turns(open map[string]*Job, e eventlog.Event, t float64) {
	for i, tu := range e.Turns {
		j := open[tu.Job]
		if j == nil || tu.Iterations <= 0 {
			continue
		}
		d := tu.GPU / float64(tu.Iterations)
		for range tu.Iterations {
			j.IterS = append(j.IterS, d)
		}
		if i == 0 {
			j.start = math.NaN()
		}
	}
	if j := open[e.Job]; j != nil {
		j.start, j.cycleFrom = t, math.NaN()
	}
}

func normKind(k string) string {
	switch k {
	case "infer", "inference":
		return workload.Infer
	}
	return workload.Train
}

// modelOf is the job's model name for a catalog: its model, else its id.
func (j *Job) modelOf() string {
	if j.Model != "" {
		return j.Model
	}
	return j.ID
}

func (j *Job) batchOf() int { return max(j.Batch, 1) }

// Median is the median of xs (NaN for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Profiles returns a catalog entry per model, batch size and kind of the jobs that
// ran at least one iteration: the iteration time is the mean of the jobs' steady
// iterations (each job's after its first), the start-up the median over the jobs
// of their fixed costs (Job.StartupS), the memory the largest peak and persistent
// figures. The mean, not the median: a simulator adds iteration times up, and on
// a busy machine the median of a job's iterations falls well short of their mean
// (the source text gives the median too). Demand cannot be read from a log: it is
// left out (1, the whole GPU).
func (l *Log) Profiles() []workload.FileProfile {
	type group struct {
		p        workload.FileProfile
		iters    []float64
		all      []float64
		jobs     []*Job
		peak     float64
		pers     float64
		measured int
		noBatch  bool
		noModel  bool
	}
	groups := map[string]*group{}
	var keys []string
	for _, j := range l.Jobs {
		if len(j.IterS) == 0 {
			continue
		}
		key := workload.Key(j.modelOf(), j.batchOf(), j.Kind)
		g := groups[key]
		if g == nil {
			g = &group{p: workload.FileProfile{Model: j.modelOf(), Batch: j.batchOf(), Kind: j.Kind}}
			groups[key] = g
			keys = append(keys, key)
		}
		g.iters = append(g.iters, j.steady()...)
		g.all = append(g.all, j.IterS...)
		g.jobs = append(g.jobs, j)
		g.peak = math.Max(g.peak, j.PeakMiB())
		g.pers = math.Max(g.pers, j.Persistent())
		if j.Measured != nil && j.Measured.PeakMiB > 0 {
			g.measured++
		}
		g.noBatch = g.noBatch || j.Batch == 0
		g.noModel = g.noModel || j.Model == ""
		g.p.Jobs++
	}
	sort.Strings(keys)
	out := make([]workload.FileProfile, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		p := g.p
		p.Iterations = len(g.all)
		iterS := mean(g.iters)
		var startups []float64
		for _, j := range g.jobs {
			startups = append(startups, j.StartupS(iterS))
		}
		p.IterS = round(iterS, 1e6)
		p.StartupS = round(Median(startups), 1e6)
		pers := math.Max(round(g.pers, 1e3), 1e-3) // a catalog profile needs some persistent memory
		peak := math.Max(round(g.peak, 1e3), pers)
		p.PersistentMiB, p.PeakMiB = pers, &peak
		mem := "declared at open"
		switch {
		case g.measured == p.Jobs:
			mem = "measured by the clients"
		case g.measured > 0:
			mem = fmt.Sprintf("measured by %d of the %d jobs' clients, declared by the others", g.measured, p.Jobs)
		}
		notes := []string{fmt.Sprintf("salus profile of %s: %d jobs, %d iterations; iteration time on the daemon's clock: mean of the steady iterations (median %.6g s, first iterations' warm-up counted as start-up); memory %s; demand not in a log (1)",
			baseName(l.Path), p.Jobs, p.Iterations, Median(g.iters), mem)}
		if g.noModel {
			notes = append(notes, "model not logged: named after the job")
		}
		if g.noBatch {
			notes = append(notes, "batch size not logged: 1")
		}
		p.Source = strings.Join(notes, "; ")
		out = append(out, p)
	}
	return out
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// errNoCatalog stands for a lookup in no catalog.
var errNoCatalog = errors.New("no catalog")

func round(x, unit float64) float64 { return math.Round(x*unit) / unit }

// Trace returns the log's jobs as a trace: each job that ran an iteration, at its
// arrival (seconds from the first), with the iterations it ran, its model, batch
// size, kind and declared time. A job whose model, batch size and kind cat does
// not have carries its own figures as inline columns: its steady iteration time
// and start-up (as Profiles computes them) and its declared memory; with a nil
// cat every job does (the log's own measurements, on the daemon's clock).
// skipped counts the jobs that ran no iteration.
func (l *Log) Trace(cat *workload.Catalog, name string) (t *workload.Trace, skipped int, err error) {
	t = &workload.Trace{Name: name}
	for _, j := range l.Jobs {
		if len(j.IterS) == 0 {
			skipped++
			continue
		}
		job := workload.Job{ID: j.ID, Model: j.modelOf(), Batch: j.batchOf(), Kind: j.Kind, Iterations: len(j.IterS),
			ArrivalS: round(j.ArrivalS, 1e6), DeclaredS: round(j.DeclaredS, 1e6), Priority: j.Priority}
		if j.GPUs > 1 {
			job.GPUs = j.GPUs
		}
		var p workload.Profile
		lerr := errNoCatalog
		if cat != nil {
			p, lerr = cat.Lookup(job.Model, job.Batch, job.Kind)
		}
		if lerr != nil {
			// An emulating daemon's model of the job, else what the log measured:
			// the iterations of a job that shared the GPU ran slower than alone.
			iterS, demand := j.SteadyIterS(), 1.0
			if j.EmulatedIterS > 0 && j.Demand > 0 {
				iterS, demand = j.EmulatedIterS, j.Demand
			}
			iter, startup := round(iterS, 1e6), round(j.StartupS(iterS), 1e6)
			pers, eph := math.Max(round(j.PersistentMiB, 1e3), 1e-3), round(j.EphemeralMiB, 1e3)
			job.IterS, job.StartupS, job.PersistentMiB, job.EphemeralMiB = &iter, &startup, &pers, &eph
			if demand != 1 {
				job.Demand = &demand
			}
			p = workload.Profile{Model: job.Model, Batch: job.Batch, Kind: job.Kind, IterS: iter, StartupS: startup,
				PersistentMiB: pers, EphemeralMiB: eph, PeakMiB: pers + eph, Demand: demand}
		}
		job.Profile = &p
		t.Jobs = append(t.Jobs, job)
	}
	if len(t.Jobs) == 0 {
		return nil, skipped, fmt.Errorf("%s: none of its %d jobs ran an iteration: there is nothing to replay", l.Path, len(l.Jobs))
	}
	return t, skipped, nil
}

// Warnings say when the log's figures are not what a catalog profile should
// hold, and how to take a clean one: iterations measured while several jobs ran
// at once (contention on the GPU, or on the CPU of a machine without one), memory
// no client measured (measured only on CUDA: the jobs may have run on a CPU, whose
// iteration times are not a GPU's), and the compute demand, which no log gives.
func (l *Log) Warnings() []string {
	var out []string
	most := 0
	for _, j := range l.Jobs {
		if len(j.IterS) == 0 || math.IsNaN(j.FirstIterS) {
			continue
		}
		at := 1
		for _, k := range l.Jobs {
			if k == j || len(k.IterS) == 0 || math.IsNaN(k.FirstIterS) {
				continue
			}
			jEnd, kEnd := j.EndS, k.EndS
			if math.IsNaN(jEnd) {
				jEnd = math.Inf(1)
			}
			if math.IsNaN(kEnd) {
				kEnd = math.Inf(1)
			}
			if k.FirstIterS < jEnd && j.FirstIterS < kEnd {
				at++
			}
		}
		most = max(most, at)
	}
	if most > 1 {
		out = append(out, fmt.Sprintf("up to %d jobs ran at once while these iterations were timed: they shared the GPU (or, on a machine without one, the CPU), so the times are longer than each job's alone; for a clean profile run each job alone (one at a time, or salus serve --policy fifo)", most))
	}
	measured := false
	for _, j := range l.Jobs {
		measured = measured || j.Measured != nil && j.Measured.PeakMiB > 0
	}
	if !measured {
		out = append(out, "no client measured its memory (the Python client measures on CUDA only): the memory is what the jobs declared, and if they ran on a CPU their iteration times are this machine's CPU's, not a GPU's; simulated as P100 time they compare a CPU with a P100: profile on the GPU the catalog stands for")
	}
	out = append(out, "compute demand is not in a log: the profiles leave it at 1 (the whole GPU), so jobs beside them overlap nothing in the simulator; give demand: in the catalog file if you measured it (the GPU's utilization with the job alone)")
	return out
}
