package server

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/salusgo/salus/protocol"
)

// The idle timeout (Config.IdleTimeout): a job that keeps the GPU from others
// without using it gives it back. A notebook, or a job that caught an exception
// and sleeps, would otherwise hold its lane (under fifo, the whole GPU) and its
// memory for as long as its process lives, heartbeats keeping its lease.
//
// Past the timeout, and only while another job waits for what it holds:
//
//   - an admitted job with no iteration running (one that never began, or
//     stopped) while jobs wait for admission, under every policy, is evicted:
//     lost with reason "idle for D", code evicted, so that its client exits and
//     its memory, which is what they wait for, goes to them. Its lane time alone
//     would let no one in: under fifo the admitted job holds the whole GPU, under
//     pack and fair its memory stays allocated (the daemon cannot take a
//     process's GPU memory back; only the process can give it up, by ending);
//   - a job holding its lane between iterations (it ended one and asked for no
//     other; only possible when --grace is longer than the timeout) while jobs of
//     its lane are ready yields it, through the core's Yield as the grace window
//     does: its next begin still works, it waits its turn, and the reply says
//     idle_yielded;
//   - a job whose granted iteration has not ended is taken for hung and evicted the
//     same way, under every policy: the core cannot take a running iteration back.
//
// The longest idle goes first, and each eviction lets the core admit what it
// can before the next is considered: once nobody waits, nothing more is taken.
// Nobody waiting, nothing is taken: an idle job harms no one.

func (s *Server) idler() {
	defer close(s.idlerDone)
	d := s.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	// Checked a few times per timeout: a job is reclaimed within d*9/8.
	t := time.NewTicker(min(max(d/8, 5*time.Millisecond), 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.stopReaper:
			return
		case <-t.C:
			s.reclaimIdle(time.Now())
		}
	}
}

// reclaimIdle applies the idle timeout at wall-clock time wall.
func (s *Server) reclaimIdle(wall time.Time) {
	d := s.cfg.IdleTimeout
	var out []func()
	type told struct {
		ss     *Session
		reason string
	}
	var evicted []told
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	now := s.clock(&out)
	type idleSession struct {
		ss  *Session
		dur time.Duration
	}
	var idle []idleSession
	for _, ss := range s.sessions {
		if ss.unclaimed {
			continue // recovered after a restart: its client has the recover window to come back
		}
		var idleFor time.Duration
		switch ss.phase {
		case pRunning:
			if ss.held != nil { // the daemon holds the end (emulation): not the job's doing
				continue
			}
			idleFor = wall.Sub(ss.granted)
		case pHolding, pIdle:
			idleFor = wall.Sub(ss.since)
		default:
			continue
		}
		if idleFor > d {
			idle = append(idle, idleSession{ss, idleFor})
		}
	}
	// The longest idle first (then by name): what is taken does not depend on
	// the map's order.
	slices.SortFunc(idle, func(a, b idleSession) int {
		if c := cmp.Compare(b.dur, a.dur); c != 0 {
			return c
		}
		return strings.Compare(a.ss.id, b.ss.id)
	})
	yielded := false
	for _, is := range idle {
		ss, idleFor := is.ss, is.dur
		if ss.phase == pGone || !s.othersWait(ss) {
			continue
		}
		switch {
		case ss.phase == pRunning:
			reason := fmt.Sprintf("iteration begun %v ago never ended (idle timeout %v): taken for hung", idleFor.Round(time.Millisecond), d)
			s.leaveWith(ss, false, protocol.CodeEvicted, reason, &out) // the core decides: waiting jobs may be admitted now
			evicted = append(evicted, told{ss, reason})
		case s.sched.WaitingCount() > 0:
			reason := fmt.Sprintf("idle for %v", d)
			s.logger.Warn("idle job evicted: jobs wait for admission, for memory it holds", "job", ss.id, "idle", idleFor.Round(time.Millisecond),
				"idle_timeout", d, "waiting", s.sched.WaitingCount())
			s.leaveWith(ss, false, protocol.CodeEvicted, reason, &out)
			evicted = append(evicted, told{ss, reason})
		case ss.phase == pHolding:
			if err := s.sched.Yield(now, ss.id); err != nil {
				s.logger.Error("core refused a yield", "job", ss.id, "err", err)
				continue
			}
			ss.gen++ // its grace timer, if any, is stale
			ss.phase = pIdle
			ss.idleYielded = true
			yielded = true
			s.logger.Warn("idle job yielded its lane to waiting jobs", "job", ss.id, "idle", idleFor.Round(time.Millisecond), "idle_timeout", d)
		}
	}
	if yielded {
		s.decide(now, &out)
	}
	s.mu.Unlock()
	run(out)
	for _, e := range evicted {
		tell(e.ss, protocol.CodeEvicted, e.reason)
	}
}

// othersWait reports whether another job waits for what ss holds: jobs waiting
// for admission, or ready jobs of its lane. Called under s.mu.
func (s *Server) othersWait(ss *Session) bool {
	return s.sched.WaitingCount() > 0 || s.sched.ReadyCount(ss.lane) > 0
}
