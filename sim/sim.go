// Package sim is the discrete-event simulator: a virtual clock and a device model
// that says how long each iteration takes when others run beside it (the device's
// figures are a device.Device, from package device). It drives the scheduling core
// (package core) and writes the event log (package eventlog); it holds no policy
// logic of its own and computes no metrics.
//
// Time is integer nanoseconds since the start of the run (time.Duration), as in the
// core: an instant is every event with the same time, and nothing depends on
// rounding. Seconds appear only at the edges: the trace and the device parameters
// going in, the event log coming out.
package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// Options configures one simulated run.
type Options struct {
	Policy core.Policy
	// Device is each GPU of the node; Device.GPUs says how many there are and
	// Device.GPUPlacement how a job's GPU is chosen.
	Device device.Device
	// GPUs, when positive, overrides Device.GPUs.
	GPUs int
	// GPUPlacement, when set, overrides Device.GPUPlacement.
	GPUPlacement core.GPUPlacement
	// Cluster, when set, is the nodes the run has, in place of one node of
	// Device x GPUs: each GPU has its node's device (memory, speed), a job runs
	// at the speed of the GPU it is on, and its GPUs are on one node. GPU
	// indices (the event log's gpu) are the cluster's (cluster.NodeOf). Device
	// is then the reference device only: a job's declared and alone times, the
	// per-iteration and switch overheads and the copy speed are its.
	Cluster *cluster.Cluster
	// NodePlacement chooses a job's node on a cluster; nil: core's default.
	NodePlacement core.NodePlacement
	// Sink receives the event log; nil discards it.
	Sink eventlog.Sink
	// PerIteration runs and logs every iteration: no stretches (see stretch), the
	// log at the grain of iterations, each boundary an iter_end and an iter_start.
	PerIteration bool
	// Interference, when set, is the co-location model: each job's iterations
	// run beside others at the rate it gives for the GPU's device and the
	// policy's way of sharing compute (Mechanism), in place of one share by
	// demands. A GPU that runs two jobs side by side under it goes boundary by
	// boundary (the stretches' arithmetic assumes one share per GPU); one that
	// runs one job at a time keeps its stretches. nil: Device.CoLocation.
	Interference *interference.Model
	// Stats, when not nil, receives at the run's end what its fast path did
	// (salus bench reports it).
	Stats *Stats
}

// Stats is what a run's fast path did, for measuring it.
type Stats struct {
	// Switches counts the boundaries at which a lane of lanes side by side,
	// run boundary by boundary (sideBySide), went on with another job: each
	// changes who runs beside whom, and so every lane's rate beside it. Pack's
	// cost follows them (docs/simulator.md). A run of several GPUs' lanes that
	// is put back and run again (an epoch's) counts its switches again.
	Switches int64
}

// Mechanism is how p's iterations side by side share a GPU, as the
// co-location model names it: time-slicing, MPS, or Salus's lanes.
func Mechanism(p core.Policy) interference.Mechanism {
	switch {
	case p.Compute == core.TimeSliced:
		return interference.TimeSlicing
	case p.Mode == core.ModeMPS:
		return interference.MPS
	default:
		return interference.Lanes
	}
}

// maxTime is where the clock stops: a run that would pass it fails rather than wrap.
const maxTime = time.Duration(math.MaxInt64)

// job is a job's record in the run, from its arrival to its end. At a million
// jobs most of them wait at once (the GPU falls behind), so it holds what a
// waiting job needs and no more: of its trace record, only what the run reads
// after the arrival (spec; the record itself is dropped at the arrival), and
// what only a job in a lane needs behind a pointer (onLane) made at its
// admission.
type job struct {
	spec jobSpec
	// handle is its events' Handle: its place in the trace, from 1.
	handle int
	done   int // iterations completed
	// requestedAt is when the pending iteration (inference: request) was asked
	// for; a job may ask before its admission.
	requestedAt time.Duration
	*onLane     // nil until it is admitted
}

// jobSpec is what the run reads of a job's trace record after its arrival:
// its name and length, and the rest, which the jobs of one model share
// (shape).
type jobSpec struct {
	ID         string
	Iterations int
	*shape
}

// shape is what the jobs of one kind, profile, GPU count and pause share, on
// this device (engine.shapes): one copy, not one a job. jobs counts the jobs
// that hold it, so that it goes with the last.
type shape struct {
	Kind    string
	Profile *workload.Profile
	gpus    int
	iterS   float64 // one iteration alone on the device, seconds
	// startup is the start-up, off the GPU; firstExtra is start-up carried by
	// the first iteration as GPU work (Device.StartupIsGPUWork), startup then
	// zero.
	startup, firstExtra time.Duration
	pause               time.Duration
	// reference: timed on the reference device whatever GPU the job runs on
	// (workload.TimedOnReference), not on its GPU's.
	reference bool
	jobs      int
}

// shapeKey is a shape's key in engine.shapes: what its times derive from.
type shapeKey struct {
	kind      string
	profile   *workload.Profile
	gpus      int
	pause     time.Duration
	reference bool
}

// GPUCount is how many GPUs the job needs, at least one (workload.Job.GPUCount).
func (s *shape) GPUCount() int { return max(s.gpus, 1) }

// onLane is what a job needs once it is admitted: where its iteration runs.
type onLane struct {
	// iterS is one iteration alone on the GPU it was admitted on, seconds;
	// firstExtra is its shape's.
	iterS      float64
	firstExtra time.Duration
	// parts is how many GPUs still run the parts of its iteration (a gang job's
	// iteration ends when its part on each GPU has).
	parts int
	// works are its iteration's parts on the device model, one per GPU of its lane,
	// reused by every iteration: a job has one iteration in flight at a time, so
	// the simulator's loop allocates nothing per iteration.
	works []Work
	// holds and rankGPUs are, for a gang, each rank's hold (GPU.Hold: the rank's
	// demand on its GPU once its part is done, until the last rank's is) and its
	// GPU, by the index of its part in works.
	holds    []Work
	rankGPUs []*GPU
	ranks    []int  // the ranks' GPUs, by index
	oneGPU   [1]int // gpusOf's answer for a job of one GPU
	// migrated is the persistent memory (MiB) to copy over the host link
	// before its next iteration starts: it moved to another GPU (core.Migrate).
	migrated float64
	// lead is, for a gang, the part on its GPU of highest index: the one whose end
	// ends the iteration when all end at once (GPUs go in index order), by which a
	// stretch orders the gang's boundaries among the other jobs'.
	lead *Work
	// stepGen and stepOK are engine.inStep's answer, valid for stretch stepGen.
	stepGen uint64
	stepOK  bool
	// gang is, for a gang out of step, its ranks as a stretch times them (steadyGang).
	gang *gangRun
}

// arrival is a job read from the trace that has not arrived yet: its record
// and the times its arrival needs, which the job does not keep.
type arrival struct {
	j            *job
	rec          *workload.Job
	shape        shape // its figures, before it is shared
	at, declared time.Duration
	gpusRead     int // the GPUs the jobs read up to it ask for (arrivals.readGPUs)
}

type timer struct {
	at  time.Duration
	seq int
	job *job
}

// timers is a min-heap by (at, seq), a strict order: timers of the same instant
// fire in the order they were set. It is typed, not a container/heap, which boxes
// each timer pushed or popped in an interface (an allocation per inference request).
type timers []timer

func (t timer) before(u timer) bool { return t.at < u.at || t.at == u.at && t.seq < u.seq }

func (h *timers) push(x timer) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// pop removes and returns the earliest timer.
func (h *timers) pop() timer {
	s := *h
	top, n := s[0], len(s)-1
	s[0], s[n] = s[n], timer{}
	s = s[:n]
	for i := 0; ; {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && s[r].before(s[m]) {
			m = r
		}
		if !s[m].before(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

type engine struct {
	o     Options
	sched *core.Scheduler
	gpus  []*GPU
	// busy is the GPUs with work on them (running, delayed or held), in index
	// order: only they are advanced and scanned at an event, so an idle GPU
	// costs nothing. A GPU joins when work starts on it (wake) and leaves at the
	// first nextEnd that finds it empty, its clock settled; isBusy is by GPU.
	busy   []int
	isBusy []bool
	// sealed: the policy seals its lanes, and a job alone on its GPU is parked
	// until its last iteration (sealed.go); parked is those jobs, isParked by
	// GPU (a parked GPU is not busy), waking unpark's buffer.
	sealed   bool
	arrivals arrivals
	// passed is how many of the next arrivals the stretch being run passes
	// (passArrivals); timerScratch is passTimers'.
	passed       int
	timerScratch timers
	parked       parkHeap
	wakeStack    []int // wakeBound's
	isParked     []bool
	waking       []stretchCand
	// decisions is the buffer the core's decisions are written to, reused.
	decisions []core.Decision
	// noFastForward runs every iteration through the core (tests compare both);
	// forwarded counts the iterations that did not.
	noFastForward bool
	forwarded     forwarded
	cands         []stretchCand // reused by stretch
	order         []*stretchCand
	// turnsOK: a stretch may take the turns of a lane's jobs (the sink takes
	// their record); turnWaits: the record carries the turns' waits
	// (eventlog.TurnWaitsSink); turnsAtOne: only turns at a share of 1 are
	// taken (eventlog.TurnsAtOneSink); turnPool, turnUsed and turnRecs are
	// reused by stretch.
	turnsOK    bool
	turnWaits  bool
	turnsAtOne bool
	turnPool   []*turnCand
	turnUsed   int
	turnRecs   []eventlog.Turn
	// sides are the GPUs whose lanes a stretch runs boundary by boundary
	// (sideBySide), reused.
	sides []sideBySide
	// sideRun is runTogether's GPUs, reused; epochSpan is the length of its
	// last epoch.
	sideRun   []*sideBySide
	epochSpan time.Duration
	ending    []*Work
	// stretchMiss counts the stretches tried in a row that took nothing (capped),
	// and stretchSkip the tries to skip before the next.
	stretchMiss, stretchSkip int
	// stretchGen counts the stretches tried (job.stepGen); gangs are the
	// gangs out of step the last one met (steadyGang).
	stretchGen uint64
	gangs      []*gangRun
	rankWorks  []*Work // a GPU's ranks of gangs out of step, as a stretch meets them
	now        time.Duration
	jobs       map[string]*job
	// bySeq is the jobs by the order they arrived at the core (its JobView.Seq,
	// their handle less one), nil once ended: a stretch's turns find their jobs
	// by it, where the map hashes each name (jobOf).
	bySeq  []*job
	shapes map[shapeKey]*shape // the jobs' shapes, shared
	timers timers
	seq    int
	left   int
	// Per-iteration costs of the device, converted once.
	iterOverhead, switchCost time.Duration
	// resident is, under suspend/resume, the job whose persistent memory is on the
	// GPU in each lane.
	resident map[int]*job
	// asked is the job that asked for an iteration last. A decision is most often
	// to start it (all but a few of salus100's under fifo or srtf), and comparing
	// its name to the decision's, the very string the core was given, costs less
	// than hashing it.
	asked *job
	// log is false when the events go nowhere (Discard): they are then not built.
	log bool
	// devs is each GPU's device on a cluster (Options.Cluster); nil otherwise.
	devs []device.Device
}

// Run simulates the trace under o and writes the event log to o.Sink. It returns an
// error when a job can never run on the device, a figure is out of range, or the
// core rejects a call (a bug); every job is checked before the run starts.
func Run(t *workload.Trace, o Options) error {
	return run(t, o, o.PerIteration, nil)
}

// RunStream is Run on a stream (workload.Stream), which it reads as the arrivals
// come, and closes: memory follows the jobs alive, not the trace. A job is checked
// when it is read, so an error may come after the run has written events. The jobs
// must come in arrival order.
func RunStream(s *workload.Stream, o Options) error {
	defer s.Close()
	return runStream(nil, s, o, o.PerIteration, nil)
}

// forwarded is what a run took without the core at every boundary: the
// iterations in stretches, and those of them a sideBySide timed; sideRun is
// the boundaries the sideBySides ran, those a stretch took and those it threw
// away (a run past where another GPU's stopped).
type forwarded struct {
	iterations, sideBySide, sideRun int
	// switches counts the boundaries the sideBySides ran where a lane went on
	// with another job (Stats.Switches).
	switches int
	// twoLanes counts the runs of two lanes that both take turns (advanceTwo).
	twoLanes int
	// ownClocks counts the iterations stretches took on a GPU whose works
	// side by side ran each on a clock of its own (a co-location model);
	// gangIterations those of gangs out of step (takeGang), gangBeside those
	// of them beside lanes a sideBySide ran.
	ownClocks, gangIterations, gangBeside int
	// scanned counts the GPUs the stretches looked at, parked the jobs parked
	// (parkedGangs those on several GPUs); woken those woken at an instant of
	// their own, wokenEarly those woken within a stretch (wakeEarly).
	scanned, parked, parkedGangs, woken, wokenEarly int
	// passedArrivals and passedTimers count the arrivals and the timers
	// stretches ran past (passArrivals, passTimers).
	passedArrivals, passedTimers int
}

// run is Run, without fast-forward when noFF is set (tests compare both); ff,
// when not nil, receives what ran fast-forwarded.
func run(t *workload.Trace, o Options, noFF bool, ff *forwarded) error {
	return runStream(t, t.Stream(), o, noFF, ff)
}

// runStream runs the jobs of s; whole, when not nil, is the trace s streams,
// whose jobs are all checked first.
func runStream(whole *workload.Trace, s *workload.Stream, o Options, noFF bool, ff *forwarded) error {
	if o.Sink == nil {
		o.Sink = eventlog.Discard{}
	}
	if _, discard := o.Sink.(eventlog.Discard); !discard {
		// The sinks take the events on a core of their own; every event is
		// theirs before the run returns.
		a := eventlog.NewAsync(o.Sink)
		defer a.Close()
		o.Sink = a
	}
	n := o.Device.Count()
	if o.GPUs > 0 {
		n = o.GPUs
	}
	d := core.Uniform(n, o.Device.CapacityMiB)
	var devs []device.Device // by GPU, on a cluster
	if c := o.Cluster; c != nil {
		n = c.GPUCount()
		d.Capacities = d.Capacities[:0]
		for _, node := range c.Nodes {
			d.Nodes = append(d.Nodes, core.Node{Count: node.GPUs(), Model: node.Model})
			for range node.GPUs() {
				d.Capacities = append(d.Capacities, node.Device.CapacityMiB)
				devs = append(devs, node.Device)
			}
		}
		d.NodePlacement = o.NodePlacement
	}
	d.Placement = o.GPUPlacement
	if d.Placement == nil {
		gp, err := core.LookupGPUPlacement(o.Device.GPUPlacement)
		if err != nil {
			return fmt.Errorf("device: %w", err)
		}
		d.Placement = gp
	}
	sched, err := core.NewNode(o.Policy, d)
	if err != nil {
		return err
	}
	_, discard := o.Sink.(eventlog.Discard)
	if o.Interference == nil {
		o.Interference = o.Device.CoLocation
	}
	e := &engine{o: o, sched: sched, jobs: map[string]*job{}, shapes: map[shapeKey]*shape{}, resident: map[int]*job{}, log: !discard, noFastForward: noFF, devs: devs,
		turnsOK: discard || eventlog.TakesTurns(o.Sink), turnWaits: !discard && eventlog.NeedsTurnWaits(o.Sink),
		turnsAtOne: !discard && eventlog.TakesTurnsAtOneOnly(o.Sink)}
	if ff != nil {
		defer func() { *ff = e.forwarded }()
	}
	if o.Stats != nil {
		defer func() { o.Stats.Switches = int64(e.forwarded.switches) }()
	}
	for g := range n {
		dev := o.Device
		if devs != nil {
			dev = devs[g]
		}
		g := NewGPU(o.Policy.Compute, dev)
		if o.Interference != nil {
			dm, _ := o.Interference.ForDevice(dev.Name, Mechanism(o.Policy))
			if dm == nil {
				return fmt.Errorf("co-location model %q has no pairs for %s or %s", o.Interference.Name, dev.Name, interference.StandIn)
			}
			g.SetInterference(dm)
		}
		e.gpus = append(e.gpus, g)
	}
	e.isBusy = make([]bool, n)
	e.isParked = make([]bool, n)
	e.sealed = sched.SealsLanes()
	if e.iterOverhead, err = core.Seconds(o.Device.IterOverheadS); err != nil {
		return fmt.Errorf("device: iteration overhead: %w", err)
	}
	if e.switchCost, err = core.Seconds(o.Device.SwitchS); err != nil {
		return fmt.Errorf("device: switch cost: %w", err)
	}
	if whole != nil {
		for i := range whole.Jobs {
			if err := e.check(&whole.Jobs[i], s.Name); err != nil {
				return err
			}
		}
	}
	e.arrivals = arrivals{s: s, checked: whole != nil}
	next, err := e.nextArrival()
	if err != nil {
		return err
	}
	run := eventlog.Event{Kind: eventlog.Run, Policy: o.Policy.Name, Engine: "sim", Mode: o.Policy.Mode,
		Trace: s.Name, Seed: s.Seed, CapacityMiB: o.Device.CapacityMiB, Device: o.Device.Name, GPUs: gpusField(n)}
	if n > 1 {
		run.GPUPlacement = d.Placement.Name()
	}
	o.Sink.Emit(run)
	for e.left > 0 {
		nextArrival := maxTime
		if next != nil {
			nextArrival = next.at
		}
		if err := e.stretch(nextArrival); err != nil {
			return err
		}
		if next, err = e.nextArrival(); err != nil { // the stretch may have read ahead, and taken arrivals
			return err
		}
		if nextArrival = maxTime; next != nil {
			nextArrival = next.at
		}
		// The next instant: an arrival, a timer, or an iteration's phase end.
		at, ok := e.nextEnd()
		if ok {
			at += e.now
			if at < e.now { // overflow
				return fmt.Errorf("simulation passed %v of simulated time at %s: the trace is too long to simulate", maxTime, seconds(e.now))
			}
		} else {
			at = maxTime
		}
		at = min(at, nextArrival, e.nextWake())
		if len(e.timers) > 0 {
			at = min(at, e.timers[0].at)
		}
		if d, ok := e.sched.NextDeadline(); ok {
			at = min(at, max(d, e.now)) // a waiting job starts starving: the core decides then
		}
		if at == maxTime {
			return fmt.Errorf("simulation stalled at %ss with %d jobs left: the scheduler admitted none of them", seconds(e.now), e.left)
		}
		for _, gi := range e.busy {
			e.gpus[gi].Advance(at - e.now)
		}
		e.now = at
		if err := e.unpark(); err != nil {
			return err
		}
		// Apply every event of the instant, then let the core decide, until nothing
		// more happens at this instant.
		for {
			for _, gi := range e.busy { // in index order, as the events of an instant go
				for _, it := range e.gpus[gi].Finished() {
					if err := e.partEnded(it); err != nil {
						return err
					}
				}
			}
			for next != nil && next.at <= e.now {
				if err := e.arrive(*next); err != nil {
					return err
				}
				e.arrived()
				if next, err = e.nextArrival(); err != nil {
					return err
				}
			}
			// After the arrivals: a start-up of zero ends at the arrival itself.
			for len(e.timers) > 0 && e.timers[0].at <= e.now {
				tm := e.timers.pop()
				if err := e.request(tm.job); err != nil {
					return err
				}
			}
			ds, err := e.sched.DecideInto(e.now, e.decisions[:0])
			if err != nil {
				return err
			}
			e.decisions = ds
			if len(ds) == 0 {
				break
			}
			if err := e.apply(ds); err != nil {
				return err
			}
		}
	}
	return nil
}

// gpusField is the run header's GPU count: absent for one GPU, as logs were before.
func gpusField(n int) int {
	if n == 1 {
		return 0
	}
	return n
}

// nextEnd is how long until the next phase end on any GPU. A busy GPU found
// empty leaves busy: NextEnd has settled its clock, and an idle GPU's Advance
// would only move its now, which wake does when work comes back.
func (e *engine) nextEnd() (time.Duration, bool) {
	next, any := time.Duration(math.MaxInt64), false
	keep := e.busy[:0]
	for _, gi := range e.busy {
		if t, ok := e.gpus[gi].NextEnd(); ok {
			next, any = min(next, t), true
			keep = append(keep, gi)
		} else {
			e.isBusy[gi] = false
		}
	}
	e.busy = keep
	return next, any
}

// wake returns GPU gi, made busy: an idle GPU's clock catches up with the
// engine's first (exactly what advancing it at every event would have done).
func (e *engine) wake(gi int) *GPU {
	g := e.gpus[gi]
	if !e.isBusy[gi] {
		g.Advance(e.now - g.now)
		i, _ := slices.BinarySearch(e.busy, gi)
		e.busy = slices.Insert(e.busy, i, gi)
		e.isBusy[gi] = true
	}
	return g
}

// partEnded takes a finished part of an iteration: the iteration ends with its
// last part (a gang job's runs on each of its GPUs).
//
// A gang's rank whose part is done holds its GPU (GPU.Hold) until the last rank's
// is: the ranks meet at the end of every iteration, so each GPU is kept busy, by
// the rank's demand, as long as the slowest rank runs.
func (e *engine) partEnded(w *Work) error {
	j := w.job
	if j.parts--; j.parts > 0 {
		for i := range j.works {
			if &j.works[i] == w {
				j.holds[i].Job, j.holds[i].Lane, j.holds[i].Demand, j.holds[i].job = w.Job, w.Lane, w.Demand, j
				j.holds[i].Model = w.Model
				j.rankGPUs[i].Hold(&j.holds[i])
			}
		}
		return nil
	}
	for i := range j.holds {
		j.rankGPUs[i].Release(&j.holds[i])
	}
	return e.iterationEnded(w)
}

// check is the check of a job before it runs: it can run on the device, and its
// figures are in range.
func (e *engine) check(spec *workload.Job, trace string) error {
	if err := e.sched.Feasible(spec.CoreJob()); err != nil {
		return fmt.Errorf("trace %s: %w", trace, err)
	}
	if _, err := e.newJob(spec); err != nil {
		return fmt.Errorf("trace %s: job %s: %w", trace, spec.ID, err)
	}
	return nil
}

// newJob converts a trace job's times to the clock of this device.
func (e *engine) newJob(s *workload.Job) (arrival, error) {
	a := arrival{j: &job{spec: jobSpec{ID: s.ID, Iterations: s.Iterations}}, rec: s}
	sh := &a.shape
	*sh = shape{Kind: s.Kind, Profile: s.Profile, gpus: s.GPUs, reference: s.TimedOn == workload.TimedOnReference}
	p := s.Profile
	var err error
	sh.iterS = e.o.Device.IterS(p.IterS)
	if _, err = core.Seconds(sh.iterS); err != nil {
		return a, fmt.Errorf("iteration time: %w", err)
	}
	if sh.startup, err = core.Seconds(p.StartupS); err != nil {
		return a, fmt.Errorf("start-up time: %w", err)
	}
	if e.o.Device.StartupIsGPUWork {
		sh.firstExtra, sh.startup = sh.startup, 0
	}
	if sh.pause, err = core.Seconds(s.PauseS); err != nil {
		return a, fmt.Errorf("pause_s: %w", err)
	}
	if a.at, err = core.Seconds(s.ArrivalS); err != nil {
		return a, fmt.Errorf("arrival_s: %w", err)
	}
	if s.DeclaredS > 0 {
		if a.declared, err = core.Seconds(s.DeclaredS); err != nil {
			return a, fmt.Errorf("declared_s: %w", err)
		}
	} else {
		// Exactly what the iterations add up to (see iteration).
		total := float64(s.Iterations) * sh.iterS
		if a.declared, err = core.Seconds(total); err != nil {
			return a, fmt.Errorf("%d iterations of %g s: %w", s.Iterations, sh.iterS, err)
		}
	}
	return a, nil
}

// share gives a's job its shape, shared with the jobs alive of the same.
func (e *engine) share(a arrival) {
	k := shapeKey{a.shape.Kind, a.shape.Profile, a.shape.gpus, a.shape.pause, a.shape.reference}
	shared := e.shapes[k]
	if shared == nil {
		shared = new(shape)
		*shared = a.shape
		e.shapes[k] = shared
	}
	shared.jobs++
	a.j.spec.shape = shared
}

// unshare drops j's shape when j was the last to hold it.
func (e *engine) unshare(j *job) {
	sh := j.spec.shape
	if sh.jobs--; sh.jobs == 0 {
		delete(e.shapes, shapeKey{sh.Kind, sh.Profile, sh.gpus, sh.pause, sh.reference})
	}
}

// timeOn times j's iterations on the GPUs of device dev, where it was
// admitted (a cluster's GPUs differ in speed); its declared time stays the
// reference device's. A job timed on the reference device keeps its time.
func (j *job) timeOn(dev device.Device) error {
	if j.spec.reference {
		return nil
	}
	j.iterS = dev.IterS(j.spec.Profile.IterS)
	if _, err := core.Seconds(j.iterS); err != nil {
		return fmt.Errorf("iteration time on %s: %w", dev.Name, err)
	}
	return nil
}

// iteration is the standalone time of j's k-th iteration (from 0). Each is rounded
// so that the first k+1 together are within half a nanosecond of (k+1) x the
// iteration time: rounding errors do not add up over a job's iterations.
// The first carries the start-up too when that is GPU work (firstExtra).
func (j *job) iteration(k int) time.Duration {
	d := max(j.at(k+1)-j.at(k), 1)
	if k == 0 {
		d += j.firstExtra
	}
	return d
}

// at is when j's first n iterations, run back to back alone, are done.
func (j *job) at(n int) time.Duration { return time.Duration(math.Round(float64(n) * j.iterS * 1e9)) }

// aloneS is how long the job of record s, j, takes alone on this device,
// arrival to end: its start-up, its iterations and, for an inference job, the
// pauses between its requests.
func (j *job) aloneS(s *workload.Job) float64 {
	alone := s.Profile.StartupS + float64(s.Iterations)*j.spec.iterS
	if s.Kind == workload.Infer && s.Iterations > 1 {
		alone += float64(s.Iterations-1) * s.PauseS
	}
	return alone
}

// arrive takes a's job in: its record is read here for the last time.
func (e *engine) arrive(a arrival) error {
	j, s := a.j, a.rec
	e.share(a)
	e.jobs[s.ID] = j
	e.bySeq = append(e.bySeq, j)
	if e.log {
		p := s.Profile
		startup := p.StartupS
		if j.spec.firstExtra > 0 {
			startup = 0 // GPU work of the first iteration, not time off the GPU
		}
		e.o.Sink.Emit(eventlog.Event{T: e.now.Seconds(), Kind: eventlog.Arrive, Job: s.ID, Handle: j.handle, Model: p.Model, JobKind: s.Kind, Priority: s.Priority,
			Iterations: s.Iterations, StartupS: startup, DeclaredS: a.declared.Seconds(), AloneS: j.aloneS(s),
			PersistentMiB: p.PersistentMiB, EphemeralMiB: p.EphemeralMiB, GPUs: gpusField(s.GPUCount()), Share: s.Share})
	}
	cj := s.CoreJob()
	cj.Arrival, cj.Declared = e.now, a.declared
	if err := e.sched.Arrive(e.now, cj); err != nil {
		return err
	}
	if !e.o.Policy.StartupOnGPU {
		// Start-up runs off the GPU from arrival; the job asks for its first iteration
		// when it is over, admitted by then or not.
		e.after(j.spec.startup, j)
	}
	return nil
}

// emit sends j's event ev to the sink, with j's handle. Callers check e.log first,
// so that no event is built for nothing.
func (e *engine) emit(j *job, ev eventlog.Event) {
	ev.Handle = j.handle
	e.o.Sink.Emit(ev)
}

func (e *engine) after(d time.Duration, j *job) {
	e.seq++
	e.timers.push(timer{at: e.now + d, seq: e.seq, job: j})
}

// request asks for j's next iteration: its start-up (or, for inference, the pause
// before its next request) is over.
func (e *engine) request(j *job) error {
	j.requestedAt = e.now
	e.asked = j
	return e.sched.Request(e.now, j.spec.ID)
}

func (e *engine) apply(ds []core.Decision) error {
	for _, d := range ds {
		// By number first: another job's name of the same length would be
		// compared byte by byte, its bytes not in the cache.
		j := e.asked
		if j == nil || j.handle-1 != d.Seq || j.spec.ID != d.Job {
			j = e.jobOf(d.Seq, d.Job)
		}
		for _, g := range d.GPUs {
			if e.isParked[g] {
				return fmt.Errorf("job %s: %s on GPU %d, whose lane was sealed", d.Job, d.Action, g)
			}
		}
		switch d.Action {
		case core.Admit:
			j.onLane = &onLane{iterS: j.spec.iterS, firstExtra: j.spec.firstExtra}
			if e.devs != nil {
				if err := j.timeOn(e.devs[d.GPUs[0]]); err != nil {
					return fmt.Errorf("job %s: %w", d.Job, err)
				}
			}
			if e.log {
				e.emit(j, eventlog.AdmitEvent(e.now, d, e.o.Policy.StartupOnGPU, ""))
			}
			e.memoryOf(d.After[0])
			if e.o.Policy.StartupOnGPU {
				e.after(j.spec.startup, j)
			}
		case core.Defrag:
			// Lanes split or merged: only the accounting changed, nothing moves on
			// the device (no job was running in them).
			if e.log {
				e.o.Sink.Emit(eventlog.DefragEvent(e.now, d))
				for _, l := range d.After {
					e.memoryOf(l)
				}
			}
		case core.Migrate:
			// It moved at its iteration boundary: its persistent memory is copied
			// to its new GPU before its next iteration starts there.
			j.migrated += d.CopyMiB
			if e.devs != nil {
				if err := j.timeOn(e.devs[d.GPUs[0]]); err != nil {
					return fmt.Errorf("job %s: %w", d.Job, err)
				}
			}
			if e.log {
				e.emit(j, eventlog.MigrateEvent(e.now, d))
				for _, l := range d.After { // the lane it left, then the one it joined
					e.memoryOf(l)
				}
			}
		case core.Start:
			copied := e.swapIn(j, d.Lane) + j.migrated
			j.migrated = 0
			if e.log {
				e.emit(j, eventlog.StartEvent(e.now, d, copied))
			}
			delay, err := core.Seconds(e.o.Device.CopyS(copied))
			if err != nil {
				return fmt.Errorf("job %s: copying %.0f MiB: %w", d.Job, copied, err)
			}
			if e.o.Policy.Gated {
				delay += e.iterOverhead
			}
			if d.Previous != "" {
				delay += e.switchCost
			}
			j.parts = len(d.GPUs)
			if len(j.works) != len(d.GPUs) {
				j.works = make([]Work, len(d.GPUs))
			}
			left := j.iteration(j.done)
			for i, g := range d.GPUs {
				// The job's last iteration has ended on every GPU: its works are free.
				// Fields one by one: the model's own bookkeeping in the work stays (a
				// next iteration continues from where the last one finished).
				w := &j.works[i]
				w.Job, w.Lane, w.Delay, w.Left, w.Demand, w.job = d.Job, d.Lane, delay, left, j.spec.Profile.Demand, j
				w.Model = interference.Job{Name: j.spec.Profile.Model, Batch: j.spec.Profile.Batch}
				e.wake(g).Start(w)
			}
			if len(d.GPUs) > 1 {
				if len(j.holds) != len(d.GPUs) {
					j.holds, j.rankGPUs = make([]Work, len(d.GPUs)), make([]*GPU, len(d.GPUs))
				}
				j.ranks = append(j.ranks[:0], d.GPUs...)
				last := slices.Max(d.GPUs)
				for i, g := range d.GPUs {
					j.rankGPUs[i] = e.gpus[g]
					if g == last {
						j.lead = &j.works[i]
					}
				}
			}
		}
	}
	return nil
}

// swapIn makes j resident in its lane under suspend/resume and returns the MiB
// copied over PCIe: the resident job's persistent memory out, j's in.
func (e *engine) swapIn(j *job, lane int) float64 {
	if !e.o.Policy.Swapped || e.resident[lane] == j {
		return 0
	}
	copied := j.spec.Profile.PersistentMiB
	if prev := e.resident[lane]; prev != nil {
		copied += prev.spec.Profile.PersistentMiB
	}
	e.resident[lane] = j
	return copied
}

func (e *engine) memory(lane int) {
	if !e.log {
		return
	}
	info, open := e.sched.Lane(lane)
	info.ID = lane // a closed lane's info is empty
	e.memoryOf(core.LaneAfter{LaneInfo: info, Open: open})
}

// memoryOf logs a lane's memory as a decision left it (Decision.After).
func (e *engine) memoryOf(l core.LaneAfter) {
	if !e.log {
		return
	}
	var lanes []core.LaneInfo // the one lane, unless it closed: not every lane's snapshot
	if l.Open {
		lanes = []core.LaneInfo{l.LaneInfo}
	}
	e.o.Sink.Emit(eventlog.MemoryEvent(e.now, lanes, l.ID, e.o.Policy.Swapped))
}

func (e *engine) iterationEnded(w *Work) error {
	j := w.job
	gpu := j.iteration(j.done)
	if e.log {
		e.emit(j, eventlog.IterEndEvent(e.now, w.Job, w.Lane, gpu))
	}
	if err := e.sched.IterationEnd(e.now, w.Job, gpu); err != nil {
		return err
	}
	j.done++
	if e.log && j.spec.Kind == workload.Infer {
		e.emit(j, eventlog.ServedEvent(e.now, w.Job, e.now-j.requestedAt))
	}
	if j.done < j.spec.Iterations {
		if j.spec.pause <= 0 {
			return e.request(j)
		}
		// An inference job waits for its next request: the lane is free meanwhile.
		e.after(j.spec.pause, j)
		return e.sched.Yield(e.now, w.Job)
	}
	if e.log {
		e.emit(j, eventlog.EndEvent(e.now, w.Job, true, ""))
	}
	e.left--
	delete(e.jobs, w.Job)
	if k := j.handle - 1; k < len(e.bySeq) && e.bySeq[k] == j {
		e.bySeq[k] = nil
	}
	e.unshare(j)
	if e.resident[w.Lane] == j {
		delete(e.resident, w.Lane) // a finished job's memory is freed, not copied out
	}
	if err := e.sched.Leave(e.now, w.Job); err != nil {
		return err
	}
	e.memory(w.Lane)
	return nil
}

// jobOf is job id, whose arrival number at the core is seq (bySeq), or by
// its name where the numbers do not match it.
func (e *engine) jobOf(seq int, id string) *job {
	if seq >= 0 && seq < len(e.bySeq) {
		if j := e.bySeq[seq]; j != nil && j.spec.ID == id {
			return j
		}
	}
	return e.jobs[id]
}

// seconds formats a time for an error message.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
