// Package eventlog defines the event log both engines write: JSON Lines, one event a
// line, times in seconds from the start of the run. The metrics package reads it,
// whichever engine wrote it. This package encodes and decodes; it defines, once for
// both engines, the events of the core's decisions (AdmitEvent, StartEvent,
// MemoryEvent); its Tracker follows each job through the log, the bookkeeping
// the metrics and the pictures share; and its Appender writes a daemon's journal,
// which survives a full disk and rotates into segments that read as one log
// (journal.go). It computes no metric and takes no scheduling decision.
package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The kinds of event.
const (
	Run       = "run"        // header: what ran (policy, mode, engine, device, trace)
	Arrive    = "arrive"     // a job arrived (its memory, start-up, iterations)
	Admit     = "admit"      // a job was admitted into a lane
	IterStart = "iter_start" // an iteration started (Prev: the job the lane ran before, on a switch)
	IterEnd   = "iter_end"   // an iteration ended (GPU: GPU time it received, seconds)
	Memory    = "memory"     // a lane's memory after a change
	Served    = "served"     // an inference request was served (Latency: seconds)
	Finish    = "finish"     // a job finished all its iterations
	Lost      = "lost"       // a job left without finishing (crash, lease expired)
	// Stretch is Iterations boundaries of a job, back to back in its lane, the
	// last at T: as many iter_end events, each followed at once by an iter_start,
	// GPU the GPU time of the iterations that ended (seconds). The simulator
	// writes one where nothing else happened between them in the job's lane or
	// on its GPU (events of other GPUs may come between). With Turns, it is a
	// lane whose jobs took turns: each Turn's iterations ended in it, the first
	// Turn's job ran before it, and Job runs the iteration that starts at T (the
	// lane's jobs asked for their next iterations at once, and none waited for
	// anything but the others' turns).
	Stretch = "stretch"
	// Defrag is a split or merge of lanes (Reason: "split" or "merge"; Lane and
	// LaneMiB: the lane that stayed or took the others, and its new size; Jobs: how
	// many jobs changed lane). The lanes' new memory follows in memory events,
	// those that shrank or closed first.
	Defrag = "defrag"
	// Migrate is a job that waited for its turn moved, at its iteration
	// boundary, to a lane of another GPU of its node (Lane, LaneMiB, GPUIndex:
	// where it goes; the memory of its old lane and its new one follows in
	// memory events). CopyMiB is its persistent memory, copied over the host link before
	// its next iteration starts there.
	Migrate = "migrate"
	// Measured is what a client reported it measured (iteration time, peak and
	// persistent memory): logged as the client's word, never used to schedule.
	Measured = "measured"
	// Snapshot is the state of a daemon's open sessions at T (Open): the first
	// line of a rotated journal (Appender.Rotate), all a restart needs of the
	// segments before it. It is state, not history: readers of the history skip
	// it, unless the segments before it are gone (Tracker.Step).
	Snapshot = "snapshot"
)

// SessionState is one session open at a snapshot: what a restarted daemon
// rebuilds it from (server.RecoveredSession).
type SessionState struct {
	Job           string  `json:"job"`
	Model         string  `json:"model,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	ArrivalS      float64 `json:"arrival_s"`
	PersistentMiB float64 `json:"persistent_mib,omitempty"`
	EphemeralMiB  float64 `json:"ephemeral_mib,omitempty"`
	DeclaredS     float64 `json:"declared_s,omitempty"`
	StartupS      float64 `json:"startup_s,omitempty"`
	AloneS        float64 `json:"alone_s,omitempty"`
	Priority      int     `json:"priority,omitempty"`
	Share         float64 `json:"share,omitempty"` // its scheduling weight (0: 1)
	// Iterations is what the job planned; Ended and AttainedS what it ran: the
	// iterations that ended, and their GPU time (seconds).
	Iterations int     `json:"iterations,omitempty"`
	Ended      int     `json:"ended,omitempty"`
	AttainedS  float64 `json:"attained_s,omitempty"`
	// GPUs is how many GPUs the job needs at once (0: one); OnGPUs the GPUs it
	// was admitted to (the log's indices), none while it waits.
	GPUs   int   `json:"gpus,omitempty"`
	OnGPUs []int `json:"on_gpus,omitempty"`
	// ResumeSHA256 and OwnerUID say who may resume the session after a restart,
	// as its arrive event does: without them a snapshot would hand a rotated
	// journal's sessions back to nobody.
	ResumeSHA256 string `json:"resume_sha256,omitempty"`
	OwnerUID     string `json:"owner_uid,omitempty"`
}

// Event is one line of the log. Which fields are set depends on Kind.
type Event struct {
	T    float64 `json:"t"`
	Kind string  `json:"ev"`
	Job  string  `json:"job,omitempty"`
	Lane int     `json:"lane,omitempty"`
	// Handle, when positive, is the engine's number for Job, unique in the run (the
	// simulator's: the job's place in the trace, from 1): readers in the same
	// process find the job by it rather than by name. It is not in the log.
	Handle int `json:"-"`

	// arrive
	Model      string  `json:"model,omitempty"`
	JobKind    string  `json:"kind,omitempty"`
	Iterations int     `json:"iterations,omitempty"`
	StartupS   float64 `json:"startup_s,omitempty"`
	DeclaredS  float64 `json:"declared_s,omitempty"`
	// AloneS is how long the job takes alone on the device, arrival to end: its
	// start-up and iterations (inference: and the pauses between its requests).
	// Zero when the engine does not know it; the job's slowdown is then unknown.
	AloneS float64 `json:"alone_s,omitempty"`
	// arrive (the job's) and memory (the lane's sums), MiB
	PersistentMiB float64 `json:"persistent_mib,omitempty"`
	EphemeralMiB  float64 `json:"ephemeral_mib,omitempty"`
	// admit, memory: the lane's size, MiB (on each of its GPUs); admit: the job holds
	// the whole GPU through start-up
	LaneMiB float64 `json:"lane_mib,omitempty"`
	// admit, memory: the index of the lane's GPU (the first, for a gang lane)
	GPUIndex int `json:"gpu,omitempty"`
	// admit: every GPU of a gang lane (a job on several GPUs at once)
	Gang []int `json:"gang,omitempty"`
	// run: the GPUs of the node; arrive: the GPUs the job needs at once, when more than one
	GPUs int `json:"gpus,omitempty"`
	// run, with several GPUs: how a job's GPU is chosen (core.GPUPlacement's name)
	GPUPlacement string `json:"gpu_placement,omitempty"`
	HoldsGPU     bool   `json:"holds_gpu,omitempty"`
	Jobs         int    `json:"jobs,omitempty"`
	// iter_start: the job the lane ran before (a switch), and the memory copied over
	// PCIe for it (suspend/resume)
	Prev    string  `json:"prev,omitempty"`
	CopyMiB float64 `json:"copy_mib,omitempty"`
	// iter_end
	GPU float64 `json:"gpu_s,omitempty"`
	// served
	Latency float64 `json:"latency_s,omitempty"`
	// lost
	Reason string `json:"reason,omitempty"`
	// arrive: the job's batch size, when its client said it
	Batch int `json:"batch_size,omitempty"`
	// arrive: the job's priority (a smaller number is more urgent; 0, the
	// default, is left out)
	Priority int `json:"priority,omitempty"`
	// arrive (the daemon's): who may resume the session after a restart: the
	// SHA-256 (hex) of the resume token its open reply gave, and the opener's
	// uid (decimal) when it came over a Unix socket
	ResumeSHA256 string `json:"resume_sha256,omitempty"`
	OwnerUID     string `json:"owner_uid,omitempty"`
	// measured (with PersistentMiB and Iterations, the iterations the figures
	// cover): the client's median iteration time and peak memory; arrive, at a
	// daemon that emulates a GPU: one iteration's standalone time on it
	IterS   float64 `json:"iter_s,omitempty"`
	PeakMiB float64 `json:"peak_mib,omitempty"`
	// arrive, at a daemon that emulates a GPU: the compute demand it models
	Demand float64 `json:"demand,omitempty"`
	// arrive: the job's scheduling weight under wfair and floor, when it has one
	// (0: 1)
	Share float64 `json:"share,omitempty"`
	// snapshot: the sessions open, in arrival order
	Open []SessionState `json:"open,omitempty"`
	// stretch of a lane's turns: the jobs whose iterations ended in it, the job
	// that ran before it first (Job is the one that runs after it)
	Turns []Turn `json:"turns,omitempty"`
	// run: a daemon's run, who started it and when (nil: a log written before
	// it, or by another engine)
	RunInfo *RunInfo `json:"run_info,omitempty"`
	// run
	Policy      string  `json:"policy,omitempty"`
	Mode        string  `json:"mode,omitempty"`
	Engine      string  `json:"engine,omitempty"`
	Trace       string  `json:"trace,omitempty"`
	Device      string  `json:"device,omitempty"`
	Seed        int64   `json:"seed,omitempty"`
	CapacityMiB float64 `json:"capacity_mib,omitempty"`
}

// RunInfo is on a daemon's run header: which run of its log it begins or
// continues, and the build and command line of the daemon. A log (a daemon's
// journal) may hold several runs, one after another: a run header with an ID
// and without Reason "restart" begins a new one; a restart's header continues
// the run before it, and carries no ID.
type RunInfo struct {
	// ID is a new run's identifier, random; empty on a restart's header.
	ID string `json:"id,omitempty"`
	// Started is the wall-clock time the daemon started, RFC 3339.
	Started string `json:"started,omitempty"`
	// Version and Commit are the daemon's build (as salus version prints it),
	// Command its command line.
	Version string   `json:"version,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Command []string `json:"command,omitempty"`
}

// RestartReason is the Reason of a run header written by a daemon restarted on
// its log to continue its run.
const RestartReason = "restart"

// BeginsRun says whether e begins a run of its log: a run header, unless a
// restart's (which continues the run before it).
func BeginsRun(e Event) bool { return e.Kind == Run && e.Reason != RestartReason }

// Turn is what one job did in a stretch of its lane's turns: its iterations
// that ended there and their GPU time (seconds). With waits (a simulator's
// for a sink that needs them, NeedsTurnWaits), also how long each of its
// iterations that started in the stretch before T waited, from the job's
// previous end to its start, as values with their counts, and when its last
// iteration in the stretch ended (EndS, seconds; 0: no waits carried).
type Turn struct {
	Job        string  `json:"job"`
	Handle     int     `json:"-"` // as Event.Handle
	Iterations int     `json:"iterations"`
	GPU        float64 `json:"gpu_s,omitempty"`
	Waits      []Wait  `json:"waits,omitempty"`
	EndS       float64 `json:"end_s,omitempty"`
}

// Wait is N iteration starts that each waited S seconds.
type Wait struct {
	S float64 `json:"s"`
	N int     `json:"n"`
}

// WaitS is how long an iteration that started at start waited since end
// (seconds), to the microsecond, as a log keeps times: the iterations' times
// are rounded to the nanosecond each, so that the waits of turns that go
// round alike differ by a nanosecond or two, as many values to count. Never
// below 0.
func WaitS(end, start float64) float64 {
	return max(round(start-end), 0)
}

// TurnsSink is a Sink that says whether it takes stretches of a lane's turns
// (an Event with Turns): one that says no has the simulator run such lanes
// iteration by iteration. One that needs their waits is a TurnWaitsSink.
type TurnsSink interface {
	Sink
	TakesTurns() bool
}

// TakesTurns says whether s takes stretches of turns: Discard, Sinks whose
// every sink does, and a TurnsSink that says so.
func TakesTurns(s Sink) bool {
	switch k := s.(type) {
	case Discard:
		return true
	case Sinks:
		for _, x := range k {
			if !TakesTurns(x) {
				return false
			}
		}
		return true
	case TurnsSink:
		return k.TakesTurns()
	}
	return false
}

// TurnWaitsSink is a TurnsSink that needs the waits of the turns it takes
// (Turn.Waits and Turn.EndS): the per-class figures.
type TurnWaitsSink interface {
	TurnsSink
	NeedsTurnWaits() bool
}

// NeedsTurnWaits says whether some sink of s needs the turns' waits
// (TurnWaitsSink).
func NeedsTurnWaits(s Sink) bool { return anySink(s, TurnWaitsSink.NeedsTurnWaits) }

// TurnsAtOneSink is a TurnsSink that takes only the turns of lanes at a GPU
// share of 1, where each turn takes its GPU time: a cluster study, which
// counts the GPUs' busy demand turn by turn.
type TurnsAtOneSink interface {
	TurnsSink
	TakesTurnsAtOneOnly() bool
}

// TakesTurnsAtOneOnly says whether some sink of s takes only turns at a share
// of 1 (TurnsAtOneSink).
func TakesTurnsAtOneOnly(s Sink) bool { return anySink(s, TurnsAtOneSink.TakesTurnsAtOneOnly) }

// anySink says whether s, or for Sinks one of its sinks, is a K that says yes.
func anySink[K Sink](s Sink, yes func(K) bool) bool {
	switch k := s.(type) {
	case Sinks:
		for _, x := range k {
			if anySink(x, yes) {
				return true
			}
		}
	case K:
		return yes(k)
	}
	return false
}

// Sink takes events in time order.
type Sink interface {
	Emit(Event)
}

// Sinks sends every event to each sink in turn.
type Sinks []Sink

// Emit forwards e.
func (s Sinks) Emit(e Event) {
	for _, k := range s {
		k.Emit(e)
	}
}

// Discard drops events.
type Discard struct{}

// Emit drops e.
func (Discard) Emit(Event) {}

// Boundary drops the boundary.
func (Discard) Boundary(string, int, int, float64, float64) {}

// BoundarySink is a Sink that takes an iteration boundary in one call: an
// iteration of job ended at t after gpuS seconds of GPU time, and its next one
// began at t in the same lane (no switch, nothing copied). It must do exactly
// what the two events would. A simulator that runs a job's iterations back to
// back calls it instead of building two events per iteration.
type BoundarySink interface {
	Sink
	Boundary(job string, handle, lane int, t, gpuS float64)
}

// EmitBoundary sends a boundary to s: in one call when s takes it, else as the
// IterEnd and IterStart events a one-by-one run writes.
func EmitBoundary(s Sink, job string, handle, lane int, t, gpuS float64) {
	if b, ok := s.(BoundarySink); ok {
		b.Boundary(job, handle, lane, t, gpuS)
		return
	}
	s.Emit(Event{T: t, Kind: IterEnd, Job: job, Handle: handle, Lane: lane, GPU: gpuS})
	s.Emit(Event{T: t, Kind: IterStart, Job: job, Handle: handle, Lane: lane})
}

// Boundary forwards the boundary to each sink.
func (s Sinks) Boundary(job string, handle, lane int, t, gpuS float64) {
	for _, k := range s {
		EmitBoundary(k, job, handle, lane, t, gpuS)
	}
}

// Writer encodes events as JSON Lines. It is safe for concurrent use. The encoding
// is written by hand: a simulated run logs millions of iterations, and
// encoding/json would dominate its time. Its first write error stops it, for Flush
// to report: it writes one-shot logs (a simulation's). A daemon's journal is an
// Appender, which keeps what it could not write and retries.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	err error
	// each: every event goes out in its own write, whole (see SetFlushEach).
	each bool
}

// NewWriter returns a Writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16)}
}

// Emit writes one line.
func (w *Writer) Emit(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.buf = Append(w.buf[:0], e)
	w.buf = append(w.buf, '\n')
	_, w.err = w.w.Write(w.buf)
	if w.each && w.err == nil {
		w.err = w.w.Flush()
	}
}

// TakesTurns is true: a log keeps a stretch of turns as one line (TurnsSink).
func (w *Writer) TakesTurns() bool { return true }

// SetFlushEach makes every later event go out at once, in one write of its whole
// line: a process killed at any moment (kill -9) then loses no event it emitted,
// and leaves no line cut in the middle (a write to a regular file is not
// interrupted by a signal). Without it, events are buffered until Flush, and the
// buffer goes out when full, whatever line it ends in.
func (w *Writer) SetFlushEach(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.each = on
}

// Flush writes what is buffered and returns the first error met.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// Append appends e's JSON encoding (no newline) to b.
func Append(b []byte, e Event) []byte {
	b = append(b, `{"t":`...)
	b = appendFloat(b, e.T)
	b = appendStr(b, "ev", e.Kind)
	b = appendStr(b, "job", e.Job)
	if e.Lane != 0 || hasLane(e.Kind) {
		b = append(b, `,"lane":`...)
		b = strconv.AppendInt(b, int64(e.Lane), 10)
	}
	b = appendStr(b, "model", e.Model)
	b = appendStr(b, "kind", e.JobKind)
	b = appendInt(b, "iterations", int64(e.Iterations))
	b = appendNum(b, "startup_s", e.StartupS)
	b = appendNum(b, "declared_s", e.DeclaredS)
	b = appendNum(b, "alone_s", e.AloneS)
	b = appendNum(b, "persistent_mib", e.PersistentMiB)
	b = appendNum(b, "ephemeral_mib", e.EphemeralMiB)
	b = appendNum(b, "lane_mib", e.LaneMiB)
	b = appendInt(b, "gpu", int64(e.GPUIndex))
	if len(e.Gang) > 0 {
		b = append(b, `,"gang":[`...)
		for i, g := range e.Gang {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(g), 10)
		}
		b = append(b, ']')
	}
	b = appendInt(b, "gpus", int64(e.GPUs))
	b = appendStr(b, "gpu_placement", e.GPUPlacement)
	if e.HoldsGPU {
		b = append(b, `,"holds_gpu":true`...)
	}
	b = appendInt(b, "jobs", int64(e.Jobs))
	b = appendStr(b, "prev", e.Prev)
	b = appendNum(b, "copy_mib", e.CopyMiB)
	b = appendNum(b, "gpu_s", e.GPU)
	b = appendNum(b, "latency_s", e.Latency)
	b = appendStr(b, "reason", e.Reason)
	b = appendStr(b, "policy", e.Policy)
	b = appendStr(b, "mode", e.Mode)
	b = appendStr(b, "engine", e.Engine)
	b = appendStr(b, "trace", e.Trace)
	b = appendStr(b, "device", e.Device)
	b = appendInt(b, "seed", e.Seed)
	b = appendNum(b, "capacity_mib", e.CapacityMiB)
	b = appendInt(b, "batch_size", int64(e.Batch))
	b = appendInt(b, "priority", int64(e.Priority))
	b = appendStr(b, "resume_sha256", e.ResumeSHA256)
	b = appendStr(b, "owner_uid", e.OwnerUID)
	b = appendNum(b, "iter_s", e.IterS)
	b = appendNum(b, "peak_mib", e.PeakMiB)
	b = appendNum(b, "demand", e.Demand)
	b = appendNum(b, "share", e.Share)
	if e.RunInfo != nil { // a run header: rare, and nested, so encoding/json's
		q, _ := json.Marshal(e.RunInfo)
		b = append(append(b, `,"run_info":`...), q...)
	}
	if len(e.Open) > 0 { // a snapshot: rare, and nested, so encoding/json's
		q, _ := json.Marshal(e.Open)
		b = append(append(b, `,"open":`...), q...)
	}
	if len(e.Turns) > 0 {
		b = append(b, `,"turns":[`...)
		for i, tu := range e.Turns {
			if i > 0 {
				b = append(b, ',')
			}
			if n := len(b); tu.Job == "" {
				b = append(b, `{"job":""`...)
			} else {
				b = appendStr(b, "job", tu.Job)
				b[n] = '{' // the comma appendStr puts before a field opens the object
			}
			b = appendInt(b, "iterations", int64(tu.Iterations))
			b = appendNum(b, "gpu_s", tu.GPU)
			if len(tu.Waits) > 0 {
				b = append(b, `,"waits":[`...)
				for k, w := range tu.Waits {
					if k > 0 {
						b = append(b, ',')
					}
					b = appendFloat(append(b, `{"s":`...), w.S)
					b = append(strconv.AppendInt(append(b, `,"n":`...), int64(w.N), 10), '}')
				}
				b = append(b, ']')
			}
			b = append(appendNum(b, "end_s", tu.EndS), '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func hasLane(kind string) bool {
	switch kind {
	case Admit, IterStart, IterEnd, Stretch, Memory, Defrag, Migrate:
		return true
	}
	return false
}

func appendFloat(b []byte, f float64) []byte {
	f = round(f)
	if math.Abs(f) < 1e15 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// round is f as the log keeps it.
func round(f float64) float64 {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		// JSON has no token for these; the engines check their inputs, so this only
		// keeps a bug from making the whole log unreadable.
		return 0
	case math.Abs(f) < 1e15:
		// Microsecond precision is plenty for both engines and keeps logs small.
		return math.Round(f*1e6) / 1e6
	}
	// Too large to round to microseconds without overflowing: as it is.
	return f
}

// Rounded returns e as it reads back from a log: its times and figures rounded as
// Append writes them (to the microsecond). A reader that follows a log as it is
// written (a daemon's snapshot of its journal) sees what a reader of the file will.
func Rounded(e Event) Event {
	for _, f := range [...]*float64{&e.T, &e.StartupS, &e.DeclaredS, &e.AloneS, &e.PersistentMiB, &e.EphemeralMiB, &e.LaneMiB,
		&e.CopyMiB, &e.GPU, &e.Latency, &e.IterS, &e.PeakMiB, &e.Demand, &e.Share, &e.CapacityMiB} {
		*f = round(*f)
	}
	e.Turns = roundTurns(e.Turns)
	return e
}

// roundTurns is turns with their GPU times as the log keeps them (a copy).
func roundTurns(turns []Turn) []Turn {
	if len(turns) == 0 {
		return turns
	}
	out := slices.Clone(turns)
	for i := range out {
		out[i].GPU, out[i].EndS = round(out[i].GPU), round(out[i].EndS)
		if len(out[i].Waits) > 0 {
			out[i].Waits = slices.Clone(out[i].Waits)
			for k := range out[i].Waits {
				out[i].Waits[k].S = round(out[i].Waits[k].S)
			}
		}
	}
	return out
}

func appendNum(b []byte, key string, f float64) []byte {
	if f == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendFloat(b, f)
}

func appendInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, n, 10)
}

func appendStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	if simple(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func simple(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return true
}

// ErrTruncated says a line of a log was cut off: its writer stopped in the middle
// of it (a crash, kill -9). It is either the last line, and Read has passed on
// every event before it, or a line followed by the header of a run that appended
// to the log after the crash (a daemon restarted on the same log), and Read has
// passed on every event but that line.
var ErrTruncated = errors.New("a line is cut off (its writer stopped in the middle of it: a crash, kill -9); every other event was read")

// maxLine bounds one line of a log, as read and as a rotation writes it
// (Appender.Rotate refuses a longer snapshot): 1 GiB, so that the snapshot of
// the most sessions a daemon restores (100,000 by default, with long names:
// some 50 MB) reads back, and a file that is not a log cannot take more. A
// variable for the tests.
var maxLine = 1 << 30

// Read decodes a log, calling fn for each event in order. Errors name the line. A
// last line that is cut off (no newline, and not an event) gives an error that
// wraps ErrTruncated, after every event before it: callers reading the log of a
// daemon that crashed can warn and go on. So does a line that is not an event but
// is followed by a run header: a daemon that crashed mid-line and was restarted on
// the same log (see OpenAppend); Read then passes on every event, and says which line
// it skipped once it has read them all.
func Read(r io.Reader, name string, fn func(Event) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	line := 0
	var long []byte
	cut, cuts := 0, 0 // the first line cut off before a restart, and how many
	var pending error // a line that is not an event, unless a run header follows
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if long = append(long, chunk...); len(long) > maxLine {
				return fmt.Errorf("%s:%d: a line longer than %d bytes: not an event log", name, line+1, maxLine)
			}
			continue
		}
		if long != nil {
			chunk = append(long, chunk...)
			long = nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", name, line+1, err)
		}
		complete := err == nil
		if len(chunk) > 0 {
			line++
			e, ok, derr := decodeLine(chunk, name, line)
			switch {
			case derr != nil && errors.Is(derr, errNotEvent) && !complete:
				return fmt.Errorf("%s:%d: %w", name, line, ErrTruncated)
			case derr != nil && errors.Is(derr, errNotEvent) && pending == nil:
				pending = derr
				continue
			case derr != nil:
				return cmp.Or(pending, derr)
			case ok && pending != nil:
				if e.Kind != Run {
					return pending
				}
				if cuts++; cut == 0 {
					cut = line - 1
				}
				pending = nil
			}
			if ok {
				if err := fn(e); err != nil {
					return fmt.Errorf("%s:%d: %w", name, line, err)
				}
			}
		}
		if !complete {
			switch {
			case pending != nil:
				return pending
			case cuts == 1:
				return fmt.Errorf("%s:%d: %w (a run appended after it)", name, cut, ErrTruncated)
			case cuts > 1:
				return fmt.Errorf("%s:%d and %d more: %w (each followed by a run appended after it)", name, cut, cuts-1, ErrTruncated)
			}
			return nil
		}
	}
}

var errNotEvent = errors.New("not an event")

// decodeLine decodes one line; ok is false for a blank line.
func decodeLine(b []byte, name string, line int) (e Event, ok bool, err error) {
	text := bytes.TrimSpace(b)
	if len(text) == 0 {
		return e, false, nil
	}
	if decodeFast(text, &e) {
		// the common case: a line as Append writes it
	} else if err := json.Unmarshal(text, &e); err != nil {
		return e, false, fmt.Errorf("%s:%d: %w: %v", name, line, errNotEvent, err)
	}
	if e.Kind == "" {
		return e, false, fmt.Errorf(`%s:%d: field "ev": missing; every event needs a kind`, name, line)
	}
	return e, true, nil
}

// ReadFile reads the log at path; a name ending in .gz is decompressed. A
// journal that was rotated (Appender.Rotate) is read as one log: its segments
// (PATH.000001, ...) first, then PATH.
func ReadFile(path string, fn func(Event) error) error {
	all, err := files(path)
	if err != nil {
		return err
	}
	return readFiles(all, fn)
}

// readOne reads one log file.
func readOne(path string, fn func(Event) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return Read(r, path, fn)
}

// File is a log being written to a file; a name ending in .gz is compressed.
type File struct {
	*Writer
	f  *os.File
	gz *gzip.Writer
	// stop ends the FlushEvery goroutine, which closes stopped.
	stop, stopped chan struct{}
}

// Create opens path for writing a log.
func Create(path string) (*File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	lf := &File{f: f}
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		lf.gz, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
		w = lf.gz
	}
	lf.Writer = NewWriter(w)
	return lf, nil
}

// FlushEvery flushes the file every d from now on, until Close: a process killed
// (kill -9) then loses at most the last d of events, and may leave its last line
// cut (Read reports it). SetFlushEach loses none, for a write per event.
func (f *File) FlushEvery(d time.Duration) {
	if d <= 0 || f.stop != nil {
		return
	}
	f.stop, f.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				f.Flush() // an error stays in the writer, for Close to return
			}
		}
	}()
}

// Close flushes and closes the file.
func (f *File) Close() error {
	if f.stop != nil {
		close(f.stop)
		<-f.stopped
		f.stop = nil
	}
	err := f.Flush()
	if f.gz != nil {
		if e := f.gz.Close(); err == nil {
			err = e
		}
	}
	if e := f.f.Close(); err == nil {
		err = e
	}
	return err
}
