package server

import (
	"fmt"
	"math"
	"time"

	"github.com/salusgo/salus/core"
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
// The model is only ever advanced to the server's clock under the server's mutex,
// and always before the set of iterations in flight changes (a start, a lost
// session), so each iteration progresses at the share it had meanwhile. One timer
// fires at the model's next end; when it fires late, GPU.Advance passes every end
// that went by, and each is processed at the instant the timer fired.

// EmulationStats is what the daemon measured of its emulated device.
type EmulationStats struct {
	// Iterations is how many emulated iterations ended.
	Iterations int64
	// Lag is the total, over those iterations, of how much later each iteration's
	// end was processed than the device model's end: the timer's latency, and the
	// time to the client's end when it came after the work was done (iterations
	// shorter than the client's round trip). It is the per-iteration overhead of the
	// daemon, in the simulator's terms (Device.IterOverheadS).
	Lag time.Duration
	// MaxLag is the largest lag of one iteration.
	MaxLag time.Duration
}

// MeanLag is the mean lag per iteration, 0 when none ended.
func (e EmulationStats) MeanLag() time.Duration {
	if e.Iterations == 0 {
		return 0
	}
	return e.Lag / time.Duration(e.Iterations)
}

// emulator is the device model driven by the server's clock.
type emulator struct {
	dev   sim.Device
	gpu   *sim.GPU
	at    time.Duration // how far the model has been advanced, on the server's clock
	timer *time.Timer   // fires at the model's next end
	// ended are iterations whose work the model finished, with the instant it did,
	// not yet handed to their sessions.
	ended []ended
	stats EmulationStats
}

type ended struct {
	w  *sim.Work
	at time.Duration
}

// heldEnd is a client's end that arrived before the model finished the
// iteration's work: it is processed when the model says the work is done.
type heldEnd struct {
	next bool
	// done answers a plain end; begin answers an end with next, once the next
	// iteration is granted.
	done  func(error)
	begin func(BeginReply, error)
}

func newEmulator(mode string, dev sim.Device, fire func()) *emulator {
	e := &emulator{dev: dev, gpu: sim.NewGPU(mode, dev)}
	e.timer = time.AfterFunc(math.MaxInt64, fire)
	e.timer.Stop()
	return e
}

// advance runs the model up to now, one end at a time so that the instant every
// iteration's work was done is known (for the lag).
func (e *emulator) advance(now time.Duration) {
	for e.at < now {
		next, ok := e.gpu.NextEnd()
		if !ok {
			break
		}
		if next > now-e.at {
			e.gpu.Advance(now - e.at)
			e.at = now
		} else {
			e.gpu.Advance(next)
			e.at += next
		}
		for _, w := range e.gpu.Finished() {
			e.ended = append(e.ended, ended{w: w, at: e.at})
		}
	}
	e.at = max(e.at, now)
}

// lagged records an iteration's end processed at now whose work ended at at.
func (e *emulator) lagged(now, at time.Duration) {
	lag := max(now-at, 0)
	e.stats.Iterations++
	e.stats.Lag += lag
	e.stats.MaxLag = max(e.stats.MaxLag, lag)
}

// remove takes job's work off the model, after advancing it to now.
func (e *emulator) remove(now time.Duration, job string) {
	e.advance(now)
	e.gpu.Remove(job)
	kept := e.ended[:0]
	for _, x := range e.ended {
		if x.w.Job != job {
			kept = append(kept, x)
		}
	}
	clear(e.ended[len(kept):])
	e.ended = kept
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
		return 0, 0, "", errorf(CodeRejected, "open %q: this daemon emulates a %s and needs each iteration's standalone time and compute demand, and this job gave no %s: send iter_s (seconds one iteration takes alone on that device) and demand (the share of the GPU one iteration keeps busy alone, above 0 and at most 1), or a catalog model (salus models lists them)",
			req.Job, e.dev.Name, missing)
	}
	if work, err = secondsField(req.Job, "iter_s", iterS); err != nil {
		return 0, 0, "", err
	}
	if !(demand > 0 && demand <= 1) {
		return 0, 0, "", errorf(CodeRejected, "open %q: compute demand %v (from the %s) is outside (0, 1]: it is the share of the GPU one iteration keeps busy alone", req.Job, demand, from)
	}
	return max(work, 1), demand, from, nil
}

// checkEmulationFields refuses iter_s and demand that no daemon could use,
// emulating or not.
func checkEmulationFields(req OpenRequest) error {
	if _, err := secondsField(req.Job, "iter_s", req.IterS); err != nil {
		return err
	}
	if req.Demand < 0 || req.Demand > 1 || math.IsNaN(req.Demand) {
		return errorf(CodeBadRequest, "open %q: demand is %v: give the share of the GPU one iteration keeps busy alone, above 0 and at most 1", req.Job, req.Demand)
	}
	return nil
}

func secondsField(job, name string, v float64) (time.Duration, error) {
	d, err := core.Seconds(v)
	if err != nil {
		return 0, errorf(CodeBadRequest, "open %q: %s: %v", job, name, err)
	}
	return d, nil
}

// startWork puts a granted iteration of an emulated session on the model.
func (s *Server) startWork(now time.Duration, ss *Session) {
	e := s.emu
	e.advance(now)
	ss.workDone = false
	e.gpu.Start(&sim.Work{Job: ss.id, Lane: ss.lane, Left: ss.work, Demand: ss.demand})
}

// settle hands the iterations the model finished by now to their sessions: an end
// the client already sent is processed now; otherwise the session remembers that
// its work is done, and its end is processed when it comes. It reports whether it
// changed the core's state (so the caller must decide again).
func (s *Server) settle(now time.Duration, out *[]func()) bool {
	e := s.emu
	e.advance(now)
	if len(e.ended) == 0 {
		return false
	}
	changed := false
	done := e.ended
	e.ended = nil
	for _, x := range done {
		ss := s.sessions[x.w.Job]
		if ss == nil || ss.phase != pRunning || !ss.emulated {
			// Lost sessions' work is removed from the model; say so if any slips by.
			s.logger.Error("emulated device finished an iteration nobody runs", "job", x.w.Job)
			continue
		}
		if ss.held == nil {
			ss.workDone, ss.doneAt = true, x.at
			continue
		}
		e.lagged(now, x.at)
		h := ss.held
		ss.held = nil
		s.completeHeld(ss, now, h, out)
		changed = true
	}
	return changed
}

// completeHeld processes a held end at now.
func (s *Server) completeHeld(ss *Session, now time.Duration, h *heldEnd, out *[]func()) {
	if err := s.endIteration(ss, now, ss.work, !h.next); err != nil {
		s.failHeld(h, err, out)
		return
	}
	if !h.next {
		*out = append(*out, func() { h.done(nil) })
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
func (s *Server) arm(now time.Duration) {
	e := s.emu
	next, ok := e.gpu.NextEnd()
	if !ok {
		e.timer.Stop()
		return
	}
	// The model is at now: its next end is next from now.
	e.timer.Reset(next)
}

// emuFire is the timer's function: advance to now and process what ended.
func (s *Server) emuFire() {
	var out []func()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.decide(s.now(), &out)
	s.mu.Unlock()
	run(out)
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
func describeEmulation(d sim.Device) string {
	return fmt.Sprintf("%s, iterations of concurrent lanes share compute by demand", d.Describe())
}
