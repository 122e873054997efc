package server

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
)

// Journal and recovery. The daemon's event log is its journal: every arrival,
// iteration end and departure is in it, so a daemon restarted on the same log
// (salus serve --events FILE) can rebuild the sessions that were open when the
// previous one died: their jobs, arrival times, memory, declared and attained GPU
// time. It restores them in the core in arrival order (core.Scheduler.Restore),
// which re-admits them into lanes, and holds them for Config.RecoverWindow: a
// client that reconnects and opens its job with resume gets its session back,
// with the same arrival and attained time, so fair and srtf order it as before.
// Sessions not resumed within the window are logged lost ("not resumed after
// restart") and their memory freed, in one step (leaveAll). The new daemon's
// clock continues from the log's last time, so the log's times stay in order
// across the restart; its run header says "restart".
//
// A rotated journal (durable.go) is read from its newest snapshot on: the
// snapshot says what the events before it would have (Journal.Emit takes it),
// so a restart's reading is bounded by the rotation size and the open sessions.
// At most Config.MaxRecovered sessions are restored, the earliest arrivals; the
// others are logged lost at once, and the daemon says so.

// Journal is what a daemon's event log says of its run so far. It is an
// eventlog.Sink: feed it the log's events in order.
type Journal struct {
	// LastS is the time of the log's last event, seconds.
	LastS float64
	// Events counts the events read; Files are the files they were read from
	// (ReadJournal), and Bytes their size.
	Events int
	Files  []string
	Bytes  int64
	open   map[string]*RecoveredSession
	seq    int
}

// RecoveredSession is a session open at the end of a log: its job arrived, and
// neither finished nor was lost.
type RecoveredSession struct {
	Job, Model, Kind            string
	ArrivalS                    float64
	PersistentMiB, EphemeralMiB float64
	DeclaredS, StartupS         float64
	AloneS                      float64
	Priority                    int
	Share                       float64 // its scheduling weight (0: 1)
	// PlannedIterations is what the job said it plans; Iterations and AttainedS
	// what it ran: the iterations that ended, and their GPU time.
	PlannedIterations int
	Iterations        int
	AttainedS         float64
	// GPUs is how many GPUs the job needs at once (0: one).
	GPUs int
	// OnGPUs are the node's GPUs (core indices) it was admitted to, if it was:
	// its process holds memory there, so it is restored onto them.
	OnGPUs []int
	// ResumeSHA256 is the SHA-256 (hex) of the session's resume token, and
	// OwnerUID its opener's uid when it came over a Unix socket (nil: not
	// recorded): who may take it back (access.go). An empty ResumeSHA256 (a log
	// of an older daemon) cannot be resumed.
	ResumeSHA256 string
	OwnerUID     *uint32
	seq          int
}

// NewJournal returns an empty journal.
func NewJournal() *Journal { return &Journal{open: map[string]*RecoveredSession{}} }

// Emit takes one event of the log. A snapshot replaces what the journal knew:
// it is the state the events before it left.
func (j *Journal) Emit(e eventlog.Event) {
	j.LastS = max(j.LastS, e.T)
	j.Events++
	switch e.Kind {
	case eventlog.Snapshot:
		clear(j.open)
		for _, o := range e.Open {
			j.seq++
			j.open[o.Job] = &RecoveredSession{Job: o.Job, Model: o.Model, Kind: o.Kind, ArrivalS: o.ArrivalS,
				PersistentMiB: o.PersistentMiB, EphemeralMiB: o.EphemeralMiB, DeclaredS: o.DeclaredS, StartupS: o.StartupS,
				AloneS: o.AloneS, Priority: o.Priority, Share: o.Share, PlannedIterations: o.Iterations, Iterations: o.Ended, AttainedS: o.AttainedS,
				GPUs: o.GPUs, OnGPUs: slices.Clone(o.OnGPUs), ResumeSHA256: o.ResumeSHA256, OwnerUID: parseUID(o.OwnerUID), seq: j.seq}
		}
	case eventlog.Arrive:
		j.seq++
		j.open[e.Job] = &RecoveredSession{Job: e.Job, Model: e.Model, Kind: e.JobKind, ArrivalS: e.T,
			PersistentMiB: e.PersistentMiB, EphemeralMiB: e.EphemeralMiB, DeclaredS: e.DeclaredS, StartupS: e.StartupS,
			AloneS: e.AloneS, Priority: e.Priority, Share: e.Share, PlannedIterations: e.Iterations, GPUs: e.GPUs, ResumeSHA256: e.ResumeSHA256, OwnerUID: parseUID(e.OwnerUID), seq: j.seq}
	case eventlog.Admit:
		if r := j.open[e.Job]; r != nil {
			r.OnGPUs = []int{e.GPUIndex}
			if len(e.Gang) > 0 {
				r.OnGPUs = slices.Clone(e.Gang)
			}
		}
	case eventlog.IterEnd:
		if r := j.open[e.Job]; r != nil {
			r.Iterations++
			r.AttainedS += e.GPU
		}
	case eventlog.Stretch:
		for _, tu := range e.Turns { // a lane's turns: each job's iterations
			if r := j.open[tu.Job]; r != nil {
				r.Iterations += tu.Iterations
				r.AttainedS += tu.GPU
			}
		}
		if r := j.open[e.Job]; r != nil && len(e.Turns) == 0 {
			r.Iterations += e.Iterations
			r.AttainedS += e.GPU
		}
	case eventlog.Finish, eventlog.Lost:
		delete(j.open, e.Job)
	}
}

// Open returns the sessions open at the end of the log, in arrival order.
func (j *Journal) Open() []RecoveredSession {
	out := make([]RecoveredSession, 0, len(j.open))
	for _, r := range j.open {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b RecoveredSession) int { return a.seq - b.seq })
	return out
}

// States returns the open sessions as a snapshot lists them, in arrival order.
func (j *Journal) States() []eventlog.SessionState {
	open := j.Open()
	out := make([]eventlog.SessionState, len(open))
	for i, r := range open {
		out[i] = eventlog.SessionState{Job: r.Job, Model: r.Model, Kind: r.Kind, ArrivalS: r.ArrivalS, PersistentMiB: r.PersistentMiB,
			EphemeralMiB: r.EphemeralMiB, DeclaredS: r.DeclaredS, StartupS: r.StartupS, AloneS: r.AloneS, Priority: r.Priority, Share: r.Share,
			Iterations: r.PlannedIterations, Ended: r.Iterations, AttainedS: r.AttainedS, GPUs: r.GPUs, OnGPUs: r.OnGPUs,
			ResumeSHA256: r.ResumeSHA256}
		if r.OwnerUID != nil {
			out[i].OwnerUID = strconv.FormatUint(uint64(*r.OwnerUID), 10)
		}
	}
	return out
}

// ReadJournal reads the event log at path for a daemon that restarts on it: from
// its newest snapshot on, for a rotated journal (eventlog.ReadFromSnapshot). A
// file that does not exist is an empty journal. When a line of the log was cut off
// (the daemon died in the middle of writing it) the journal of every other event
// comes back with an error wrapping eventlog.ErrTruncated, for the caller to report.
func ReadJournal(path string) (*Journal, error) {
	j := NewJournal()
	files, err := eventlog.ReadFromSnapshot(path, func(e eventlog.Event) error { j.Emit(e); return nil })
	j.Files = files
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			j.Bytes += fi.Size()
		}
	}
	switch {
	case err == nil, errors.Is(err, os.ErrNotExist):
		return j, nil
	case errors.Is(err, eventlog.ErrTruncated):
		return j, err
	}
	return nil, err
}

// recover rebuilds the journal's open sessions at the start of the daemon's run,
// and arms the recover window. Called by New, before any client can connect.
func (s *Server) recover(j *Journal, now time.Duration) {
	var out []func()
	s.mu.Lock()
	defer func() { s.unlockRun(out) }()
	open := j.Open()
	if max := s.cfg.MaxRecovered; max > 0 && len(open) > max {
		// The rest would cost the start-up time and memory of their number: lost
		// at once, in the log, and said so once.
		reason := fmt.Sprintf("not restored after restart: the journal held %d open sessions, more than the %d a restart restores (salus serve --max-recovered)", len(open), max)
		s.jr.batch(func() {
			for _, r := range open[max:] {
				s.stats.lost++
				s.met.lost.Inc()
				s.log.Emit(eventlog.EndEvent(now, r.Job, false, reason))
			}
		})
		s.logger.Error("journal: too many open sessions to restore: the latest arrivals are lost", "restored", max, "lost", len(open)-max,
			"max_recovered", max)
		open = open[:max]
	}
	n := 0
	for _, r := range open {
		job, err := recoveredJob(r, s.cfg.MinJobMiB)
		if err == nil {
			job.Arrival = min(job.Arrival, now)
			err = s.sched.Restore(now, job, core.MustSeconds(max(r.AttainedS, 0)), r.Iterations)
		}
		if err != nil {
			s.stats.lost++
			s.met.lost.Inc()
			reason := "cannot be restored after restart: " + err.Error()
			s.log.Emit(eventlog.EndEvent(now, r.Job, false, reason))
			s.logger.Warn("session lost", "job", r.Job, "reason", reason)
			continue
		}
		s.sessions[r.Job] = &Session{id: r.Job, job: job, model: r.Model, kind: r.Kind, lane: -1, unclaimed: true,
			resumeHash: r.ResumeSHA256, ownerUID: r.OwnerUID}
		n++
	}
	s.decide(now, &out)
	if n == 0 {
		return
	}
	s.logger.Info("sessions recovered from the event log: their clients may resume them", "sessions", n,
		"window", s.cfg.RecoverWindow, "log_time_s", now.Seconds())
	if s.cfg.RecoverWindow <= 0 {
		s.loseUnclaimed(&out)
		return
	}
	s.recoverTimer = time.AfterFunc(s.cfg.RecoverWindow, func() {
		var out []func()
		s.mu.Lock()
		if !s.closing {
			s.loseUnclaimed(&out)
		}
		s.unlockRun(out)
	})
}

// recoveredJob is the core's job of a recovered session.
func recoveredJob(r RecoveredSession, minMiB float64) (core.Job, error) {
	arrival, err := core.Seconds(max(r.ArrivalS, 0))
	if err != nil {
		return core.Job{}, fmt.Errorf("arrival: %v", err)
	}
	declared, err := core.Seconds(max(r.DeclaredS, 0))
	if err != nil {
		return core.Job{}, fmt.Errorf("declared time: %v", err)
	}
	if err := checkMiB("restore", r.Job, "persistent_mib", r.PersistentMiB); err != nil {
		return core.Job{}, err
	}
	if err := checkMiB("restore", r.Job, "ephemeral_mib", r.EphemeralMiB); err != nil {
		return core.Job{}, err
	}
	if _, err := core.Seconds(max(r.AttainedS, 0)); err != nil {
		return core.Job{}, fmt.Errorf("attained time: %v", err)
	}
	if err := core.CheckShare("share", r.Share); err != nil {
		return core.Job{}, err
	}
	return core.Job{ID: r.Job, Arrival: arrival, Persistent: max(r.PersistentMiB, minMiB), Ephemeral: max(r.EphemeralMiB, minMiB),
		Declared: declared, Priority: r.Priority, GPUs: r.GPUs, Pinned: r.OnGPUs, Share: r.Share, Model: r.Model}, nil
}

// loseUnclaimed loses the recovered sessions no client resumed, in one step and
// one decision (leaveAll).
func (s *Server) loseUnclaimed(out *[]func()) {
	var gone []*Session
	for _, ss := range s.sessions {
		if ss.unclaimed {
			gone = append(gone, ss)
		}
	}
	s.leaveAll(gone, protocol.CodeLost, "not resumed after restart", out)
}

// resume gives a recovered session to the client that opened its job with
// resume, once mayResume let it. fresh holds what the open brought (transport,
// hooks, emulated work, the caller's process and a fresh connect secret).
// Called under the lock.
func (s *Server) resume(ss, fresh *Session, out *[]func()) {
	ss.unclaimed, ss.resumed = false, true
	ss.transport, ss.drop, ss.pendingOpen = fresh.transport, fresh.drop, fresh.pendingOpen
	ss.peer, ss.secret = fresh.peer, fresh.secret
	ss.emulated, ss.work, ss.demand = fresh.emulated, fresh.work, fresh.demand
	ss.touch()
	if ss.phase == pWaiting { // the open is answered at admission, as any open
		return
	}
	ss.owes = true
	rep := s.openReply(ss)
	if f := ss.pendingOpen; f != nil {
		ss.pendingOpen = nil
		*out = append(*out, func() { f(rep, nil) })
	}
}

// openReply is the answer to the open of an admitted session.
func (s *Server) openReply(ss *Session) OpenReply {
	return OpenReply{Session: ss.id, Lane: ss.lane, LaneMiB: ss.laneMiB, StartupOnGPU: s.cfg.Policy.StartupOnGPU,
		LeaseMS: s.cfg.Lease.Milliseconds(), Policy: s.cfg.Policy.Name, Emulated: ss.emulated, Resumed: ss.resumed,
		RecoverMS: s.cfg.RecoverWindow.Milliseconds(), Secret: ss.secret, GPUs: s.physical(ss.gpus), ResumeToken: ss.resumeToken}
}
