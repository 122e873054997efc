package plots

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/salusgo/salus/eventlog"
)

// RunLog is what the pictures need from one run's event log: each job's waiting,
// start-up and running stretches, and each lane's memory over time. Build it with
// ReadLog, or feed a Recorder as an eventlog.Sink.
type RunLog struct {
	Policy, Mode, Engine, Trace, Device string
	CapacityMiB                         float64
	// Jobs in arrival order.
	Jobs []*JobTrace
	// Memory is every lane memory change, in time order.
	Memory []MemSample
	// Slots is how many lanes were ever open at once.
	Slots int
	// GPUs is how many GPUs the node had.
	GPUs int
}

// JobTrace is one job's life.
type JobTrace struct {
	ID, Model string
	ArrivalS  float64
	EndS      float64 // finish (or loss); 0 while running
	Lost      bool
	// StartupFromS and StartupToS bound its start-up: off the GPU from arrival
	// under sharing, holding the GPU from admission under exclusive runs.
	StartupFromS, StartupToS float64
	Stretches                []Stretch
	// GPUs are the GPUs it was admitted on (one, or a gang's).
	GPUs  []int
	state *eventlog.JobState
}

// Stretch is a run of back-to-back iterations of one job in one lane.
type Stretch struct {
	FromS, ToS float64
	// Slot is the lane's colour index: the smallest index free when the lane
	// opened, so lanes open at the same time never share one.
	Slot int
}

// MemSample is one lane's memory after a change; a closed lane has zero size.
type MemSample struct {
	T                           float64
	Slot                        int
	GPU                         int
	PersistentMiB, EphemeralMiB float64
	LaneMiB                     float64
}

// Recorder builds a RunLog from events; it is an eventlog.Sink. The jobs' state is
// an eventlog.Tracker's; the recorder adds what only the pictures need. It rides
// along with a metrics.Collector when both are given to an engine in one
// eventlog.Sinks, so a run's metrics and pictures come from one pass over its
// events.
type Recorder struct {
	log   RunLog
	track *eventlog.Tracker
	slots map[int]int   // open lane -> slot
	used  []bool        // slot in use
	gpus  map[int][]int // lane -> its GPUs
	err   error
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{track: eventlog.NewTracker(), slots: map[int]int{}, gpus: map[int][]int{}}
}

// ReadLog reads an event log file (gzip when its name ends in .gz). A cut-off last
// line (a daemon killed mid-write) gives the log of every event before it together
// with an error wrapping eventlog.ErrTruncated.
func ReadLog(path string) (*RunLog, error) {
	r := NewRecorder()
	readErr := eventlog.ReadFile(path, func(e eventlog.Event) error {
		r.Emit(e)
		return r.err
	})
	if readErr != nil && !errors.Is(readErr, eventlog.ErrTruncated) {
		return nil, readErr
	}
	l, err := r.Log()
	if err != nil {
		return nil, err
	}
	return l, readErr
}

// Log returns what was recorded, or the first inconsistency met.
func (r *Recorder) Log() (*RunLog, error) {
	if r.err != nil {
		return nil, r.err
	}
	if len(r.log.Jobs) == 0 {
		return nil, fmt.Errorf("the log has no jobs")
	}
	r.log.GPUs = r.track.GPUs
	return &r.log, nil
}

// slot returns the open lane's slot, opening it when it is new.
func (r *Recorder) slot(lane int) int {
	if s, ok := r.slots[lane]; ok {
		return s
	}
	s := 0
	for s < len(r.used) && r.used[s] {
		s++
	}
	if s == len(r.used) {
		r.used = append(r.used, false)
	}
	r.used[s] = true
	r.slots[lane] = s
	r.log.Slots = max(r.log.Slots, len(r.used))
	return s
}

func (r *Recorder) closeLane(lane int) {
	if s, ok := r.slots[lane]; ok {
		r.used[s] = false
		delete(r.slots, lane)
	}
}

// TakesTurns is true: the run log draws a stretch of turns (eventlog.TurnsSink).
func (r *Recorder) TakesTurns() bool { return true }

// Emit takes one event; events must come in time order.
func (r *Recorder) Emit(e eventlog.Event) {
	if r.err != nil {
		return
	}
	switch e.Kind {
	case eventlog.Run, eventlog.Memory, eventlog.Arrive:
	default:
		if e.Job == "" {
			return // an event kind this package does not draw
		}
	}
	if e.Kind == eventlog.Run && r.track.Runs > 0 {
		// A daemon restarted on its log: the iterations running when it crashed
		// ended with it.
		for _, j := range r.log.Jobs {
			if j.state.Running {
				r.endIteration(j, e.T)
			}
		}
	}
	var before *eventlog.JobState // the job a stretch of turns follows
	if e.Kind == eventlog.Stretch && len(e.Turns) > 0 {
		before = r.track.JobBy(e.Turns[0].Job, e.Turns[0].Handle)
	}
	st, wasRunning, err := r.track.Step(e)
	if err != nil {
		r.err = err
		return
	}
	switch e.Kind {
	case eventlog.Run:
		r.log.Policy, r.log.Mode, r.log.Engine, r.log.Trace, r.log.Device = e.Policy, e.Mode, e.Engine, e.Trace, e.Device
		r.log.CapacityMiB = e.CapacityMiB
		return
	case eventlog.Memory:
		s := r.slot(e.Lane)
		gpus, ok := r.gpus[e.Lane]
		if !ok {
			gpus = []int{e.GPUIndex}
		}
		for _, g := range gpus {
			r.log.Memory = append(r.log.Memory, MemSample{T: e.T, Slot: s, GPU: g,
				PersistentMiB: e.PersistentMiB, EphemeralMiB: e.EphemeralMiB, LaneMiB: e.LaneMiB})
		}
		if e.LaneMiB == 0 {
			r.closeLane(e.Lane)
		}
		return
	case eventlog.Arrive:
		j := &JobTrace{ID: e.Job, Model: e.Model, ArrivalS: e.T,
			StartupFromS: e.T, StartupToS: e.T + e.StartupS, state: st}
		r.log.Jobs = append(r.log.Jobs, j)
		return
	}
	j := r.log.Jobs[st.Index] // the jobs are in the tracker's order of arrival
	switch e.Kind {
	case eventlog.Admit:
		j.GPUs, r.gpus[e.Lane] = st.GPUs, st.GPUs
		if e.HoldsGPU {
			j.StartupFromS, j.StartupToS = e.T, e.T+st.StartupS
		}
	case eventlog.IterStart:
		s := r.slot(e.Lane)
		if n := len(j.Stretches); n > 0 && j.Stretches[n-1].ToS == e.T && j.Stretches[n-1].Slot == s {
			return // back to back: the stretch goes on
		}
		j.Stretches = append(j.Stretches, Stretch{FromS: e.T, ToS: e.T, Slot: s})
	case eventlog.Stretch:
		if before != nil && before != st {
			// A lane's turns: drawn as the service of the job that ran before,
			// to their end (the turns are finer than a picture shows), then of
			// the job that runs after.
			r.endIteration(r.log.Jobs[before.Index], e.T)
			j.Stretches = append(j.Stretches, Stretch{FromS: e.T, ToS: e.T, Slot: r.slot(e.Lane)})
			return
		}
		// Iterations back to back in the same lane: the stretch goes on to its end.
		if wasRunning {
			r.endIteration(j, e.T)
		}
	case eventlog.IterEnd, eventlog.Finish, eventlog.Lost:
		if wasRunning {
			r.endIteration(j, e.T)
		}
		if e.Kind != eventlog.IterEnd {
			j.EndS, j.Lost = e.T, e.Kind == eventlog.Lost
		}
	}
}

func (r *Recorder) endIteration(j *JobTrace, t float64) {
	j.Stretches[len(j.Stretches)-1].ToS = t
}

// OnGPU returns the part of the log on GPU g: the jobs admitted there (a gang
// job on each of its GPUs) and the memory of its lanes.
func (l *RunLog) OnGPU(g int) *RunLog {
	out := *l
	out.Jobs, out.Memory = nil, nil
	for _, j := range l.Jobs {
		if slices.Contains(j.GPUs, g) || (len(j.GPUs) == 0 && g == 0) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	for _, m := range l.Memory {
		if m.GPU == g {
			out.Memory = append(out.Memory, m)
		}
	}
	return &out
}

// EndS is when the last job ended.
func (l *RunLog) EndS() float64 {
	var end float64
	for _, j := range l.Jobs {
		end = max(end, j.EndS)
	}
	return end
}

// JCTs returns the completion times of the finished jobs, sorted, in seconds.
func (l *RunLog) JCTs() []float64 {
	var out []float64
	for _, j := range l.Jobs {
		if j.EndS > 0 && !j.Lost {
			out = append(out, j.EndS-j.ArrivalS)
		}
	}
	sort.Float64s(out)
	return out
}

// Merge joins stretches of one job in one slot separated by less than gap
// seconds: at a picture's resolution, a job that alternates with others in its
// lane iteration by iteration is running there.
func Merge(ss []Stretch, gap float64) []Stretch {
	var out []Stretch
	for _, s := range ss {
		if n := len(out); n > 0 && out[n-1].Slot == s.Slot && s.FromS-out[n-1].ToS < gap {
			out[n-1].ToS = max(out[n-1].ToS, s.ToS)
			continue
		}
		out = append(out, s)
	}
	return out
}
