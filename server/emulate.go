package server

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/sim"
)

// Emulation (Config.Emulate): the daemon runs the simulator's device model
// (sim.GPU, the very code the simulator uses) on the wall clock, so that workers
// without a GPU slow each other down as jobs sharing a GPU would. A worker does not
// sleep through its iteration: it sends end as soon as its begin is granted, and the
// daemon holds that end until the model says the iteration's work is done, given
// every other iteration in flight (compute shared by demand). The end is then
// processed at that instant, with the iteration's standalone work as its GPU time,
// as the simulator processes it.
//
// "At that instant" is the model's instant, not when the daemon got round to it:
// before any event at wall time now, the daemon catches the model up, processing
// every iteration end up to now at its own instant and letting the core decide
// there, as the simulator's event loop does. One timer fires at the model's next
// end so that the replies go out; it fires late by the runtime's timer resolution
// (about a millisecond on Linux), which then delays only the replies, not the
// model, the core or the log. Were ends processed when the timer fired, every
// iteration would idle for that latency, a few percent of 10 to 50 ms iterations,
// which would measure the timer rather than the daemon. What the daemon does cost
// still shows: an end that the client sends after the model finished the work (an
// iteration shorter than the client's round trip) is processed when it arrives,
// and the difference is counted as lag.
//
// A node of several GPUs has one model per GPU, advanced together; a gang job's
// iteration is one part of its work on each of its GPUs, and it is done when its
// last part is, as in the simulator.
//
// The model is only ever advanced under the server's mutex, and always up to the
// instant at which the set of iterations in flight changes (a start, a lost
// session), so each iteration progresses at the share it had meanwhile.

// EmulationStats is what the daemon measured of its emulated device.
type EmulationStats struct {
	// Iterations is how many emulated iterations ended.
	Iterations int64
	// Held counts the iterations whose client sent its end before the model
	// finished the work: each was processed at the model's instant. Late is the
	// total time by which their answers went out after that instant (the timer's
	// latency, about a millisecond on Linux): it delays the clients, not the model,
	// the core or the event log.
	Held int64
	Late time.Duration
	// Lagged counts the iterations whose client's end came after the model
	// finished the work (iterations shorter than the time the client takes to
	// answer): each ended when the end came. Lag is the total of those delays, and
	// MaxLag the largest: the daemon's per-iteration overhead in the simulator's
	// terms (Device.IterOverheadS), which the event log shows.
	Lagged int64
	Lag    time.Duration
	MaxLag time.Duration
}

// MeanLag is the lag per iteration, over all iterations: what each iteration was
// stretched by on average. 0 when none ended.
func (e EmulationStats) MeanLag() time.Duration {
	if e.Iterations == 0 {
		return 0
	}
	return e.Lag / time.Duration(e.Iterations)
}

// MeanLate is the mean delay of the answers to held ends, 0 when none.
func (e EmulationStats) MeanLate() time.Duration {
	if e.Held == 0 {
		return 0
	}
	return e.Late / time.Duration(e.Held)
}

// MeanLaggedBy is the mean lag of the iterations whose end came after their
// work: the client's round trip, when the iterations are much shorter than it.
func (e EmulationStats) MeanLaggedBy() time.Duration {
	if e.Lagged == 0 {
		return 0
	}
	return e.Lag / time.Duration(e.Lagged)
}

// emulator is the device model driven by the server's clock.
type emulator struct {
	dev   device.Device
	gpus  []*sim.GPU    // one per GPU of the node, by the core's index
	at    time.Duration // how far the model has been advanced, on the server's clock
	timer *time.Timer   // fires at the model's next end
	stats EmulationStats
	// gangs are the gang iterations in flight: a rank whose part is done holds
	// its GPU until the last rank's is (sim.GPU.Hold), as in the simulator.
	gangs []emuGang
}

// emuGang is a gang's iteration on the model: its parts, their GPUs, and the
// holds of the ranks that are done.
type emuGang struct {
	job   string
	parts []*sim.Work
	gpus  []*sim.GPU
	holds []*sim.Work
}

// partDone holds the GPU of a gang's part w that is done while other parts run
// (all: release the gang's holds, its iteration is over). Not a gang: nothing.
func (e *emulator) partDone(w *sim.Work, all bool) {
	for k := range e.gangs {
		g := &e.gangs[k]
		if g.job != w.Job {
			continue
		}
		if all {
			for i, h := range g.holds {
				g.gpus[i].Release(h)
			}
			e.gangs = slices.Delete(e.gangs, k, k+1)
			return
		}
		for i, p := range g.parts {
			if p == w {
				g.holds[i] = &sim.Work{Job: w.Job, Lane: w.Lane, Demand: w.Demand, Model: w.Model}
				g.gpus[i].Hold(g.holds[i])
			}
		}
		return
	}
}

// heldEnd is a client's end that arrived before the model finished the
// iteration's work: it is processed when the model says the work is done.
type heldEnd struct {
	next bool
	// release gives the lane back at once after the end (EndRelease).
	release bool
	// done answers a plain end; begin answers an end with next, once the next
	// iteration is granted.
	done  func(error)
	begin func(BeginReply, error)
}

func newEmulator(compute core.ComputeSharing, dev device.Device, gpus int, fire func()) *emulator {
	e := &emulator{dev: dev}
	for range max(gpus, 1) {
		g := sim.NewGPU(compute, dev)
		if dev.CoLocation != nil {
			// The daemon's sharing side by side is Salus's lanes.
			mech := interference.Lanes
			if compute == core.TimeSliced {
				mech = interference.TimeSlicing
			}
			if dm, _ := dev.CoLocation.ForDevice(dev.Name, mech); dm != nil {
				g.SetInterference(dm)
			}
		}
		e.gpus = append(e.gpus, g)
	}
	e.timer = time.AfterFunc(math.MaxInt64, fire)
	e.timer.Stop()
	return e
}

// nextEnd is how long until the next part of an iteration ends on any GPU;
// false when nothing runs.
func (e *emulator) nextEnd() (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, g := range e.gpus {
		if d, ok := g.NextEnd(); ok && (!found || d < next) {
			next, found = d, true
		}
	}
	return next, found
}

// advance moves every GPU's model dt ahead.
func (e *emulator) advance(dt time.Duration) {
	for _, g := range e.gpus {
		g.Advance(dt)
	}
}

// remove takes the work of ss off every GPU of its lane (its client went away).
func (e *emulator) remove(ss *Session) {
	for _, g := range ss.gpus {
		e.gpus[g].Remove(ss.id)
	}
	e.gangs = slices.DeleteFunc(e.gangs, func(g emuGang) bool { return g.job == ss.id })
	ss.parts = 0
}

// lagged records an iteration whose end came at now, after its work ended at at.
func (e *emulator) lagged(now, at time.Duration) {
	lag := max(now-at, 0)
	e.stats.Iterations++
	e.stats.Lagged++
	e.stats.Lag += lag
	e.stats.MaxLag = max(e.stats.MaxLag, lag)
}

// held records an iteration whose held end was processed at the model's instant
// at, answered at now.
func (e *emulator) held(now, at time.Duration) {
	e.stats.Iterations++
	e.stats.Held++
	e.stats.Late += max(now-at, 0)
}

// emulatedWork resolves what an open under emulation must say of its iterations:
// the standalone work of one (on the emulated device) and its compute demand,
// from the request, else from the catalog model m (when known: ok).
func (e *emulator) emulatedWork(req OpenRequest, m Model, ok bool) (work time.Duration, demand float64, from string, err error) {
	iterS, demand, from := req.IterS, req.Demand, "client"
	if ok && (iterS == 0 || demand == 0) {
		from = "catalog model " + req.Model
		if iterS == 0 {
			// The catalog's times are the P100's; the client's are taken as they are.
			iterS = e.dev.IterS(m.IterS)
		}
		if demand == 0 {
			demand = m.Demand
		}
	}
	if iterS == 0 || demand == 0 {
		var missing string
		switch {
		case iterS == 0 && demand == 0:
			missing = "iter_s and demand"
		case iterS == 0:
			missing = "iter_s"
		default:
			missing = "demand"
		}
		return 0, 0, "", errorf(protocol.CodeRejected, "open %q: this daemon emulates a %s and needs each iteration's standalone time and compute demand, and this job gave no %s: send iter_s (seconds one iteration takes alone on that device) and demand (the share of the GPU one iteration keeps busy alone, above 0 and at most 1), or a catalog model (salus models lists them)",
			req.Job, e.dev.Name, missing)
	}
	if work, err = secondsField(req.Job, "iter_s", iterS); err != nil {
		return 0, 0, "", err
	}
	if !(demand > 0 && demand <= 1) {
		return 0, 0, "", errorf(protocol.CodeRejected, "open %q: compute demand %v (from the %s) is outside (0, 1]: it is the share of the GPU one iteration keeps busy alone", req.Job, demand, from)
	}
	return max(work, 1), demand, from, nil
}

func secondsField(job, name string, v float64) (time.Duration, error) {
	d, err := core.Seconds(v)
	if err != nil {
		return 0, errorf(protocol.CodeBadRequest, "open %q: %s: %v", job, name, err)
	}
	return d, nil
}

// clock returns the time of an event that happens now, under the lock, after
// catching the emulated device up to it.
func (s *Server) clock(out *[]func()) time.Duration {
	now := s.now()
	if s.emu != nil && !s.closing {
		s.catchUp(now, out)
	}
	return now
}

// catchUp advances the device model to now one end at a time, as the simulator
// does: at each end, the finished iterations whose client already sent its end
// are processed at that instant and the core decides there (starting, say, the
// next iteration, whose work then starts at that instant too); the others are
// marked done, for their end to be processed when it comes.
func (s *Server) catchUp(now time.Duration, out *[]func()) {
	e := s.emu
	for e.at < now {
		next, ok := e.nextEnd()
		if !ok {
			break
		}
		if next > now-e.at {
			e.advance(now - e.at)
			break
		}
		e.advance(next)
		e.at += next
		changed := false
		var done []*Session
		for _, g := range e.gpus {
			for _, w := range g.Finished() {
				ss := s.sessions[w.Job]
				if ss == nil || ss.phase != pRunning || !ss.emulated || ss.parts <= 0 {
					// A session that left has its work removed; say so if any slips by.
					s.logger.Error("emulated device finished an iteration nobody runs", "job", w.Job)
					continue
				}
				ss.parts--
				e.partDone(w, ss.parts == 0)
				if ss.parts == 0 { // a gang's iteration ends with its last part
					done = append(done, ss)
				}
			}
		}
		for _, ss := range done {
			if ss.held == nil {
				ss.workDone, ss.doneAt = true, e.at
				continue
			}
			e.held(now, e.at)
			h := ss.held
			ss.held = nil
			s.completeHeld(ss, e.at, h, out)
			changed = true
		}
		if changed {
			s.decide(e.at, out)
		}
	}
	e.at = max(e.at, now)
	s.arm()
}

// startWork puts a granted iteration of an emulated session on the model. The
// model is at now: every event is preceded by catchUp.
func (s *Server) startWork(now time.Duration, ss *Session) {
	e := s.emu
	if e.at != now {
		s.logger.Error("emulated device out of step with the clock", "model_at", e.at, "now", now)
		e.at = max(e.at, now)
	}
	ss.workDone = false
	ss.parts = len(ss.gpus)
	if len(ss.gpus) == 1 {
		e.gpus[ss.gpus[0]].Start(&sim.Work{Job: ss.id, Lane: ss.lane, Left: ss.work, Demand: ss.demand, Model: ss.modelJob()})
		return
	}
	// A gang: a rank whose part is done holds its GPU until the last one's is.
	g := emuGang{job: ss.id, holds: make([]*sim.Work, len(ss.gpus))}
	for _, i := range ss.gpus {
		w := &sim.Work{Job: ss.id, Lane: ss.lane, Left: ss.work, Demand: ss.demand, Model: ss.modelJob()}
		e.gpus[i].Start(w)
		g.parts, g.gpus = append(g.parts, w), append(g.gpus, e.gpus[i])
	}
	e.gangs = append(e.gangs, g)
}

// modelJob is the session's job type, as a co-location model knows it: its
// catalog model and batch size (0 after a restart, whose journal keeps no
// batch: the model's nearest batch stands in).
func (ss *Session) modelJob() interference.Job {
	return interference.Job{Name: ss.model, Batch: ss.batch}
}

// completeHeld processes a held end at now.
func (s *Server) completeHeld(ss *Session, now time.Duration, h *heldEnd, out *[]func()) {
	if err := s.endIteration(ss, now, ss.work, !h.next && !h.release); err != nil {
		s.failHeld(h, err, out)
		return
	}
	s.released(ss, now, h)
	if !h.next {
		s.ackEnd(ss, h, out)
		return
	}
	if err := s.request(ss, now, h.begin); err != nil {
		s.failHeld(h, err, out)
	}
}

func (s *Server) failHeld(h *heldEnd, err error, out *[]func()) {
	if h.done != nil {
		*out = append(*out, func() { h.done(err) })
	}
	if h.begin != nil {
		*out = append(*out, func() { h.begin(BeginReply{}, err) })
	}
}

// arm sets the timer for the model's next end, or stops it when nothing runs.
func (s *Server) arm() {
	e := s.emu
	next, ok := e.nextEnd()
	if !ok {
		e.timer.Stop()
		return
	}
	// The model is at e.at; the timer counts from now.
	e.timer.Reset(max(e.at+next-s.now(), 0))
}

// emuFire is the timer's function: catch up with the model and answer what ended.
func (s *Server) emuFire() {
	var out []func()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.clock(&out)
	s.unlockRun(out)
}

// EmulationStats returns what the daemon measured of its emulated device; the
// zero value when it emulates none.
func (s *Server) EmulationStats() EmulationStats {
	if s.emu == nil {
		return EmulationStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.stats
}

// describeEmulation is the emulated device for logs.
func describeEmulation(d device.Device) string {
	return fmt.Sprintf("%s, iterations of concurrent lanes share compute by demand", d.Describe())
}

// aloneS is how long the session's job takes alone on the emulated device, arrival
// to end: its start-up and iterations. Zero (not known) when the daemon emulates no
// device, the job gave no iteration count, or it is an inference job, whose pauses
// between requests the daemon does not know: its slowdown is then not reported.
func (ss *Session) aloneS(req OpenRequest) float64 {
	if !ss.emulated || req.Iterations <= 0 || (req.Kind != "train" && req.Kind != "training") {
		return 0
	}
	return req.StartupS + float64(req.Iterations)*ss.work.Seconds()
}
