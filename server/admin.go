package server

import (
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/salusgo/salus/protocol"
)

// Operator actions: evict a job, drain the daemon. The connect API's admin calls
// reach them (after access.go's check); they take no policy decision, only end
// sessions and stop new ones.

// Evict ends job's session as lost, with reason "evicted by WHO" (and ": WHY" when
// given): its memory goes back to the device, whatever it waited for is answered
// with code evicted, and a fast-path client is told so and disconnected. It
// returns the reason logged.
func (s *Server) Evict(job, who, why string) (string, error) {
	reason := "evicted by " + who
	if why != "" {
		reason += ": " + why
	}
	var out []func()
	s.mu.Lock()
	ss, ok := s.sessions[job]
	if !ok {
		s.mu.Unlock()
		return "", errorf(protocol.CodeUnknown, "evict: no session of job %q (salus sessions lists them)", job)
	}
	if s.closing {
		s.mu.Unlock()
		return "", errorf(protocol.CodeShutdown, "evict %q: the daemon is shutting down", job)
	}
	s.leaveWith(ss, false, protocol.CodeEvicted, reason, &out)
	s.mu.Unlock()
	run(out)
	tell(ss, protocol.CodeEvicted, reason)
	return reason, nil
}

// tell sends a fast-path client the unsolicited frame that ends its session, and
// closes its connection.
func tell(ss *Session, code, reason string) {
	if ss.drop != nil {
		ss.drop(code, fmt.Sprintf("session %q ended: %s", ss.id, reason))
	}
}

// Drain stops (on) or resumes (!on) admissions. While draining, opens are refused
// with code draining and the jobs already waiting for admission are refused the
// same way (they would wait for ever); admitted jobs carry on to their end. It
// returns how many waiting jobs it refused and how many sessions remain.
func (s *Server) Drain(on bool, who string) (refused, sessions int, err error) {
	var out []func()
	var gone []*Session
	reason := "the daemon is draining (by " + who + "): it admits no new job; try another daemon, or later"
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return 0, 0, errorf(protocol.CodeShutdown, "drain: the daemon is shutting down")
	}
	s.draining = on
	if on {
		// Last arrival first: removing a waiting job never lets a later one in
		// ahead of it (in-order admission), and frees no memory, so nothing is
		// admitted while the queue empties.
		waiting := s.sched.Waiting()
		slices.Reverse(waiting)
		for _, id := range waiting {
			if ss := s.sessions[id]; ss != nil && ss.phase == pWaiting {
				s.leaveWith(ss, false, protocol.CodeDraining, reason, &out)
				gone = append(gone, ss)
			}
		}
	}
	sessions = len(s.sessions)
	s.mu.Unlock()
	run(out)
	for _, ss := range gone {
		tell(ss, protocol.CodeDraining, reason)
	}
	if on {
		s.logger.Warn("draining: admitting no new job", "by", who, "waiting_refused", len(gone), "sessions", sessions)
	} else {
		s.logger.Info("drain ended: admitting jobs again", "by", who)
	}
	return len(gone), sessions, nil
}

// Draining reports whether the daemon is draining.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

func (s *Server) registerAdminMetrics() {
	s.met.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "salus_draining", Help: "1 while the daemon is draining (admits no new job), else 0."},
		func() float64 {
			if s.Draining() {
				return 1
			}
			return 0
		}))
}
