package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/salusgo/salus/eventlog"
)

// Durability: what an acknowledgement means, and what the daemon does while its
// journal cannot be written (a full disk, a file-size limit).
//
// The daemon's event log, when it is a journal that says whether it wrote
// (eventlog.Appender: salus serve --events), is written before anything is
// acknowledged that it records: an iteration's end is answered (the end's reply,
// or, for an end with next, the next iteration's grant) only once its event is in
// the file, and so is a grant (an admission) once its start (admit) event is, even
// when the disk fills at that very write (ackDecision). In the default mode (Config.OnJournalError "stop": fail closed) a
// failed write makes the daemon stop granting work: opens are refused with code
// journal_unavailable, no decision is taken (nothing is admitted or started), and
// the ends that come in are processed (their GPU time counts) but answered only
// once their events are written. The Appender keeps the events it could not write;
// the daemon retries them (50 ms, doubling to 1 s) and, once they are all in the
// file, takes one decision and answers what waited: it resumes by itself when
// space comes back. In mode "continue" (fail open) it goes on granting and
// acknowledging, and its journal misses what a crash meanwhile loses (at most
// eventlog.DefaultMaxPending bytes are kept; events beyond are dropped, counted).
//
// Rotation (Config.JournalRotateBytes): once the journal file has grown that much
// since it began, the daemon starts a new one with a snapshot of its open
// sessions (eventlog.Appender.Rotate), so that a restart reads that file only:
// the restart's time is bounded by the open sessions and the rotation size, not
// by the daemon's age.

// The daemon's behaviours while its journal cannot be written (Config.OnJournalError).
const (
	// JournalStop: fail closed (the default).
	JournalStop = "stop"
	// JournalContinue: fail open.
	JournalContinue = "continue"
)

// DefaultJournalRotateBytes is the default of Config.JournalRotateBytes: a
// restart reads at most about this much (about 0.6 s on this project's machine).
const DefaultJournalRotateBytes = 64 << 20

// DefaultMaxRecovered is the default of Config.MaxRecovered.
const DefaultMaxRecovered = 100_000

// checkedSink is a journal that says whether it wrote (eventlog.Appender).
type checkedSink interface {
	eventlog.Sink
	TryEmit(eventlog.Event) error
	Queue(eventlog.Event) error
	Flush() error
	Pending() int
}

// rotatingSink is a journal that can rotate (an eventlog.Appender on a file).
type rotatingSink interface {
	SinceRotation() int64
	Rotate(snapshot eventlog.Event) error
}

// journal is the server's event log: it writes the configured sink, and for a
// journal that says whether it wrote, tracks its health. Its fields are guarded
// by the server's mutex, under which every event is emitted, except the
// counters, which /metrics reads.
type journal struct {
	s       *Server
	sink    eventlog.Sink
	checked checkedSink  // nil: the sink cannot say (no journal, or a test's)
	rot     rotatingSink // nil: no rotation
	// rotateAt is the size of the journal past which it rotates (after its
	// snapshot); a failed rotation waits for another quarter of it.
	rotateAt, nextTry int64
	stop              bool     // fail closed
	open              *Journal // the open sessions, for the snapshot (with rot)
	// started: the daemon has rebuilt what it recovered; it may rotate.
	started bool

	failing bool
	// batching: events are queued, to be written together (batch).
	batching bool
	since    time.Time
	lastErr  string
	backoff  time.Duration
	timer    *time.Timer
	// unacked are the sessions whose end, grant or admission waits for the
	// journal (a session may be listed more than once).
	unacked []*Session

	writeErrors atomic.Int64
	dropped     atomic.Int64
	rotations   atomic.Int64
	down        atomic.Bool
}

func newJournal(s *Server, cfg Config) *journal {
	j := &journal{s: s, sink: cfg.Log, stop: cfg.OnJournalError != JournalContinue}
	j.checked, _ = cfg.Log.(checkedSink)
	if r, ok := cfg.Log.(rotatingSink); ok && j.checked != nil && cfg.JournalRotateBytes > 0 {
		j.rot, j.rotateAt = r, cfg.JournalRotateBytes
		j.open = NewJournal()
		if cfg.Recover != nil {
			j.open = cfg.Recover // taken over: a copy of a million sessions would cost as much again
		}
	}
	return j
}

// Emit writes e. Called under the server's mutex.
func (j *journal) Emit(e eventlog.Event) {
	if j.open != nil { // as a restart will read it back: to the microsecond
		j.open.Emit(eventlog.Rounded(e))
	}
	if j.checked == nil {
		j.sink.Emit(e)
		return
	}
	if j.failing { // the retries write it
		if err := j.checked.Queue(e); err != nil {
			j.dropped.Add(1)
			if j.dropped.Load() == 1 {
				j.s.logger.Error("journal: an event was dropped: it cannot be written, and the journal already keeps its maximum of unwritten events; the journal will miss it", "err", err)
			}
		}
		return
	}
	if j.batching { // written by the MiB
		j.checked.Queue(e)
		if j.checked.Pending() >= 1<<20 {
			j.flush()
		}
		return
	}
	if err := j.checked.TryEmit(e); err != nil {
		j.fail(err)
		return
	}
	j.maybeRotate()
}

// flush writes what is queued; a failure marks the journal down.
func (j *journal) flush() {
	if err := j.checked.Flush(); err != nil {
		j.fail(err)
		return
	}
	j.maybeRotate()
}

// maybeRotate rotates the journal once it has grown past the rotation size.
func (j *journal) maybeRotate() {
	if j.rot != nil && j.started && !j.batching && j.rot.SinceRotation() >= max(j.rotateAt, j.nextTry) {
		j.rotate()
	}
}

// start says the daemon has rebuilt what it recovered: the journal may rotate
// (a snapshot before would list sessions that the restart then loses).
func (j *journal) start() {
	j.started = true
	if !j.failing {
		j.maybeRotate()
	}
}

// batch runs fn, which emits many events at one instant (100,000 sessions lost at
// once), and writes its events together: a write each would cost more than the
// rest of the step. Called under the server's mutex.
func (j *journal) batch(fn func()) {
	if j.checked == nil || j.failing || j.batching {
		fn()
		return
	}
	j.batching = true
	fn()
	j.batching = false
	if !j.failing {
		j.flush()
	}
}

// fail marks the journal down after a failed write, and arms the retries.
func (j *journal) fail(err error) {
	j.failing, j.since, j.lastErr = true, time.Now(), err.Error()
	j.writeErrors.Add(1)
	j.down.Store(true)
	j.backoff = 50 * time.Millisecond
	if j.stop {
		j.s.logger.Error("journal: cannot write the event log: the daemon admits no new job, starts no iteration and answers no iteration's end until it can (--on-journal-error stop); it retries by itself: free space on its file system",
			"err", err)
	} else {
		j.s.logger.Error("journal: cannot write the event log: the daemon goes on scheduling (--on-journal-error continue), keeping the events to write them later; a crash meanwhile loses them",
			"err", err)
	}
	if j.timer == nil {
		j.timer = time.AfterFunc(j.backoff, j.retry)
	} else {
		j.timer.Reset(j.backoff)
	}
}

// retry writes what the journal kept; once all of it is written, the daemon
// answers the ends that waited and decides again.
func (j *journal) retry() {
	s := j.s
	var out []func()
	s.mu.Lock()
	if s.closing || !j.failing {
		s.mu.Unlock()
		return
	}
	if err := j.checked.Flush(); err != nil {
		j.writeErrors.Add(1)
		j.lastErr = err.Error()
		j.backoff = min(2*j.backoff, time.Second)
		j.timer.Reset(j.backoff)
		s.mu.Unlock()
		return
	}
	j.failing = false
	j.down.Store(false)
	down, held := time.Since(j.since), len(j.unacked)
	for _, ss := range j.unacked {
		if h := ss.unacked; h != nil {
			ss.unacked = nil
			ss.owes = true // the client owes the next message again: the lease runs
			ss.touch()
			out = append(out, func() { h.done(nil) })
		}
		for _, r := range ss.unwritten {
			ss.owes = true
			ss.touch()
			out = append(out, r.ok)
		}
		ss.unwritten = nil
	}
	j.unacked = nil
	now := s.clock(&out)
	s.decide(now, &out)
	s.unlockRun(out)
	s.logger.Info("journal: the event log is written again: the daemon resumes", "down_for", down.Round(time.Millisecond),
		"ends_answered", held, "write_errors", j.writeErrors.Load())
}

// paused reports whether the daemon grants no work: its journal cannot be
// written and it fails closed.
func (j *journal) paused() bool { return j.failing && j.stop }

// refusal is the sentence of a request refused while paused.
func (j *journal) refusal() string {
	return fmt.Sprintf("the daemon cannot write its journal (%s, for %v) and admits no new job until it can (salus serve --on-journal-error stop): retry later; its operator must free space on the journal's file system",
		j.lastErr, time.Since(j.since).Round(time.Millisecond))
}

// rotate starts a new journal file with a snapshot of the open sessions.
func (j *journal) rotate() {
	snap := eventlog.Event{T: j.open.LastS, Kind: eventlog.Snapshot, Open: j.open.States()}
	if err := j.rot.Rotate(snap); err != nil {
		j.nextTry = j.rot.SinceRotation() + j.rotateAt/4
		j.s.logger.Warn("journal: cannot rotate the event log; it goes on growing, and a restart reads more of it", "err", err)
		return
	}
	j.nextTry = 0
	j.rotations.Add(1)
	j.s.logger.Info("journal: rotated the event log: a restart reads it from this snapshot on", "open_sessions", len(snap.Open))
}

// ackEnd answers a plain end once its iteration's event is in the journal: now,
// or when the journal is written again. Called under the lock.
func (s *Server) ackEnd(ss *Session, h *heldEnd, out *[]func()) {
	if s.jr.paused() {
		ss.unacked = h
		ss.owes = false // the daemon owes the client its answer
		s.jr.unacked = append(s.jr.unacked, ss)
		return
	}
	*out = append(*out, func() { h.done(nil) })
}

// heldReply is the reply to a decision (a grant, an admission), held until
// the decision's events are in the journal: ok answers it, fail answers the
// error that ended the session meanwhile.
type heldReply struct {
	ok   func()
	fail func(error)
}

// ackDecision answers a decision's reply once its events are in the journal:
// now, or when the journal is written again. A decision whose own event failed
// to be written (the disk filled at its write) finds the journal paused here:
// its grant is not acknowledged before its start is on the disk. Called under
// the lock.
func (s *Server) ackDecision(ss *Session, r heldReply, out *[]func()) {
	if s.jr.paused() {
		ss.unwritten = append(ss.unwritten, r)
		ss.owes = false // the daemon owes the client its answer
		s.jr.unacked = append(s.jr.unacked, ss)
		return
	}
	*out = append(*out, r.ok)
}

// JournalHealth is what GetStats and /metrics say of the journal.
type JournalHealth struct {
	// State is "ok", "failing" (the last write failed: Error says why), or
	// "none" (no journal that says whether it wrote: salus serve without --events).
	State string
	Error string
	// WriteErrors counts the writes that failed (every retry that failed too);
	// Unwritten is the bytes of events not written yet; Dropped the events lost
	// (only when failing open, or past eventlog.DefaultMaxPending).
	WriteErrors, Unwritten, Dropped, Rotations int64
}

// journalHealth returns the journal's health. Called under the lock.
func (s *Server) journalHealth() JournalHealth {
	j := s.jr
	if j.checked == nil {
		return JournalHealth{State: "none"}
	}
	h := JournalHealth{State: "ok", WriteErrors: j.writeErrors.Load(), Unwritten: int64(j.checked.Pending()),
		Dropped: j.dropped.Load(), Rotations: j.rotations.Load()}
	if j.failing {
		h.State, h.Error = "failing", j.lastErr
	}
	return h
}

// registerJournalMetrics exports the journal's health, when it has one.
func (s *Server) registerJournalMetrics() {
	j := s.jr
	if j.checked == nil {
		return
	}
	s.met.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "salus_journal_healthy",
			Help: "1 while every event is written to the journal, 0 while it cannot be written (the daemon then grants no work, unless --on-journal-error continue)."},
			func() float64 {
				if j.down.Load() {
					return 0
				}
				return 1
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "salus_journal_write_errors_total",
			Help: "Writes to the journal that failed, retries included."}, func() float64 { return float64(j.writeErrors.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "salus_journal_unwritten_bytes",
			Help: "Bytes of events kept until the journal can be written."}, func() float64 { return float64(j.checked.Pending()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "salus_journal_dropped_events_total",
			Help: "Events the journal could not write nor keep (failing open, or past its bound)."}, func() float64 { return float64(j.dropped.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "salus_journal_rotations_total",
			Help: "Times the journal was rotated into a new file beginning with a snapshot."}, func() float64 { return float64(j.rotations.Load()) }),
	)
}
