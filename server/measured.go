package server

import (
	"fmt"
	"math"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
)

// MaxBatch bounds a batch size a client gives at open.
const MaxBatch = 1 << 24

// MaxMeasuredIterS bounds a measured iteration time: a step of more than a day is
// not a measurement of one training step.
const MaxMeasuredIterS = 86400

// Measurement is what a client says it measured over its first iterations: the
// median iteration time (seconds, on its own clock), the peak memory inside an
// iteration and the memory held between iterations (MiB, from its allocator), and
// how many iterations the figures cover. Zero means not measured (memory off CUDA).
type Measurement struct {
	IterS         float64
	PeakMiB       float64
	PersistentMiB float64
	Iterations    int
}

// Measured checks a client's measurement and logs it (event "measured"), as what
// the client reported: it changes no scheduling decision, which goes by the
// daemon's own clock and the memory the job declared at open. A figure that is not
// finite, negative, beyond the bounds, or inconsistent (persistent above the peak,
// more iterations than the daemon saw end, a peak above the device) is refused
// with bad_request naming the field.
func (s *Server) Measured(ss *Session, m Measurement) error {
	bad := func(field string, format string, args ...any) error {
		return errorf(protocol.CodeBadRequest, "measured %q: field %s %s", ss.id, field, fmt.Sprintf(format, args...))
	}
	switch {
	case math.IsNaN(m.IterS) || m.IterS < 0 || m.IterS > MaxMeasuredIterS:
		return bad("iter_s", "is %v: give the median iteration time in seconds, above 0 and at most %d", m.IterS, MaxMeasuredIterS)
	case m.IterS == 0 && m.PeakMiB == 0 && m.PersistentMiB == 0:
		return bad("iter_s", "is missing, and so are peak_mib and persistent_mib: report at least one figure")
	case m.Iterations < 1 || m.Iterations > MaxIterations:
		return bad("iterations", "is %d: give the number of iterations the figures cover, at least 1", m.Iterations)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"peak_mib", m.PeakMiB}, {"persistent_mib", m.PersistentMiB}} {
		if err := checkMiB("measured", ss.id, f.name, f.v); err != nil {
			return err
		}
	}
	if m.PeakMiB > 0 && m.PersistentMiB > m.PeakMiB {
		return bad("persistent_mib", "is %v, above peak_mib %v: the peak includes what stays allocated", m.PersistentMiB, m.PeakMiB)
	}
	if s.emu == nil && s.cfg.CapacityMiB > 0 && m.PeakMiB > s.cfg.CapacityMiB {
		return bad("peak_mib", "is %v, more than the device's %v MiB: memory is in MiB", m.PeakMiB, s.cfg.CapacityMiB)
	}
	var out []func()
	s.mu.Lock()
	if err := s.usable(ss); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.jr.paused() { // only a log line: not worth keeping while the journal cannot be written
		s.mu.Unlock()
		return errorf(protocol.CodeJournal, "measured %q: %s", ss.id, s.jr.refusal())
	}
	if !ss.resumed && m.Iterations > ss.ended {
		n := ss.ended
		s.mu.Unlock()
		return bad("iterations", "is %d, but only %d iterations of this session ended: report the iterations you ran under the daemon", m.Iterations, n)
	}
	now := s.clock(&out)
	s.log.Emit(eventlog.Event{T: now.Seconds(), Kind: eventlog.Measured, Job: ss.id, IterS: m.IterS, PeakMiB: m.PeakMiB,
		PersistentMiB: m.PersistentMiB, Iterations: m.Iterations})
	s.unlockRun(out)
	s.logger.Info("client measured", "job", ss.id, "iter_s", m.IterS, "peak_mib", m.PeakMiB, "persistent_mib", m.PersistentMiB,
		"iterations", m.Iterations, "note", "the client's figures: logged, not used to schedule")
	return nil
}
