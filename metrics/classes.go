package metrics

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/salusgo/salus/eventlog"
)

// inferKind is the kind an arrive event gives an inference job (workload.Infer:
// metrics reads logs and does not import the trace package).
const inferKind = "infer"

// ClassResult is what the jobs of one priority class got (a smaller priority is
// more urgent): their completion times, how long their iterations waited, and the
// work they got done.
type ClassResult struct {
	Priority int     `json:"priority"`
	Jobs     int     `json:"jobs"`
	Finished int     `json:"finished"`
	AvgJCTS  float64 `json:"avg_jct_s"`
	P95JCTS  float64 `json:"p95_jct_s"`
	// Waits counts the iterations after a job's first; WaitMeanS and WaitP95S are
	// how long they waited from their request to their start: for training, from
	// the job's previous iteration's end (it asks for the next at once); for
	// inference, from the request the served event dates. A job's first iteration
	// waits in the queue and through its start-up: that is its queuing.
	Waits     int     `json:"waits"`
	WaitMeanS float64 `json:"wait_mean_s"`
	WaitP95S  float64 `json:"wait_p95_s"`
	// Requests counts the inference requests served; LatencyMeanS and
	// LatencyP95S are their latencies, request to end.
	Requests     int     `json:"requests,omitempty"`
	LatencyMeanS float64 `json:"latency_mean_s,omitempty"`
	LatencyP95S  float64 `json:"latency_p95_s,omitempty"`
	// Throughput over the class's span, its first arrival to its last end: the
	// jobs finished per hour and the iterations completed per second.
	JobsPerHour    float64 `json:"jobs_per_hour"`
	IterationsPerS float64 `json:"iterations_per_s"`
}

// classState is what the collector keeps per class, when it keeps classes.
type classState struct {
	// waits counts the iterations' waits by value: to the microsecond
	// (eventlog.WaitS) they are a few thousand values where there are
	// millions of waits, and a stretch stands for its waits of zero.
	waits      map[float64]int
	latencies  []float64
	iterations int
}

// addWaits counts n waits of s seconds.
func (s *classState) addWaits(w float64, n int) {
	if s.waits == nil {
		s.waits = map[float64]int{}
	}
	s.waits[w] += n
}

// jobWait is where a job's iterations stand, for its waits.
type jobWait struct {
	lastStart, lastEnd float64
	ended              bool // an iteration of it has ended
}

// SetClasses makes the collector compute per-priority figures (Result.Classes):
// priority gives each job's priority by its ID (a trace's); a job not in it takes
// the priority its arrive event carries (0 when it carries none). nil takes every
// job's from the log. Call it before the first event.
func (c *Collector) SetClasses(priority map[string]int) {
	c.priority = map[string]int{}
	for id, p := range priority {
		c.priority[id] = p
	}
	c.classes = map[int]*classState{}
	c.waiting = map[*eventlog.JobState]*jobWait{}
}

func (c *Collector) class(j *eventlog.JobState) *classState {
	p := c.priority[j.ID]
	s := c.classes[p]
	if s == nil {
		s = &classState{}
		c.classes[p] = s
	}
	return s
}

func (c *Collector) waitOf(j *eventlog.JobState) *jobWait {
	w := c.waiting[j]
	if w == nil {
		w = &jobWait{}
		c.waiting[j] = w
	}
	return w
}

// classEvent takes an event of job j for the per-class figures.
func (c *Collector) classEvent(e eventlog.Event, j *eventlog.JobState) {
	if c.classes == nil || j == nil {
		return
	}
	switch e.Kind {
	case eventlog.Arrive:
		if _, given := c.priority[j.ID]; !given {
			c.priority[j.ID] = e.Priority
		}
	case eventlog.IterStart:
		w := c.waitOf(j)
		if w.ended && j.Kind != inferKind {
			s := c.class(j)
			s.addWaits(eventlog.WaitS(w.lastEnd, e.T), 1)
		}
		w.lastStart = e.T
	case eventlog.IterEnd:
		w := c.waitOf(j)
		w.lastEnd, w.ended = e.T, true
		c.class(j).iterations++
	case eventlog.Stretch:
		if len(e.Turns) > 0 {
			c.classTurns(e, j)
			return
		}
		// Its boundaries, each a start that waited for nothing.
		s := c.class(j)
		s.iterations += e.Iterations
		s.addWaits(0, e.Iterations)
		w := c.waitOf(j)
		w.lastStart, w.lastEnd, w.ended = e.T, e.T, true
	case eventlog.Served:
		s := c.class(j)
		s.latencies = append(s.latencies, e.Latency)
		s.addWaits(eventlog.WaitS(e.T-e.Latency, c.waitOf(j).lastStart), 1)
	case eventlog.Finish, eventlog.Lost:
		delete(c.waiting, j)
	}
}

// classTurns takes a stretch of a lane's turns for the per-class figures: its
// iterations count, and the waits it carries (Turn.Waits), each job's last end
// in it and the wait of next's start at its instant, as the iterations' own
// events would give them. A record without them (EndS 0: a log written by an
// engine whose sinks did not need them) leaves its waits out, as well as the
// wait of each job's next start after it: run it with --per-iteration for
// exact waits.
func (c *Collector) classTurns(e eventlog.Event, next *eventlog.JobState) {
	for _, tu := range e.Turns {
		j := c.track.JobBy(tu.Job, tu.Handle)
		if j == nil {
			continue
		}
		s, w := c.class(j), c.waitOf(j)
		s.iterations += tu.Iterations
		if tu.EndS == 0 {
			w.ended = false
			continue
		}
		for _, x := range tu.Waits {
			s.addWaits(x.S, x.N)
		}
		w.lastEnd, w.ended = tu.EndS, true
	}
	// next's iteration starts at e.T, as an iter_start would.
	c.classEvent(eventlog.Event{T: e.T, Kind: eventlog.IterStart}, next)
}

// classBoundary is an iteration boundary of j at t for the per-class figures: the
// next iteration started as the last ended, without waiting.
func (c *Collector) classBoundary(j *eventlog.JobState, t float64) {
	if c.classes == nil || j == nil {
		return
	}
	s := c.class(j)
	s.iterations++
	s.addWaits(0, 1)
	w := c.waitOf(j)
	w.lastStart, w.lastEnd, w.ended = t, t, true
}

// classResults computes the per-class figures from the jobs that ended, most
// urgent class first; nil unless SetClasses was called.
func (c *Collector) classResults(jobs []JobResult) []ClassResult {
	if c.classes == nil {
		return nil
	}
	type acc struct {
		jcts        []float64
		jobs        int
		first, last float64
	}
	accs := map[int]*acc{}
	for _, r := range jobs {
		p := c.priority[r.ID]
		a := accs[p]
		if a == nil {
			a = &acc{first: math.Inf(1), last: math.Inf(-1)}
			accs[p] = a
		}
		a.jobs++
		a.first, a.last = math.Min(a.first, r.ArrivalS), math.Max(a.last, r.EndS)
		if !r.Lost {
			a.jcts = append(a.jcts, r.JCTS)
		}
	}
	var out []ClassResult
	for p, a := range accs {
		r := ClassResult{Priority: p, Jobs: a.jobs, Finished: len(a.jcts)}
		if len(a.jcts) > 0 {
			r.AvgJCTS, r.P95JCTS = mean(a.jcts), Percentile(a.jcts, 0.95)
		}
		if s := c.classes[p]; s != nil {
			if ws := s.waitCounts(); len(ws) > 0 {
				r.Waits, r.WaitMeanS, r.WaitP95S = waitFigures(ws, 0.95)
			}
			if r.Requests = len(s.latencies); r.Requests > 0 {
				r.LatencyMeanS, r.LatencyP95S = mean(s.latencies), Percentile(s.latencies, 0.95)
			}
			if span := a.last - a.first; span > 0 {
				r.JobsPerHour = float64(r.Finished) / span * 3600
				r.IterationsPerS = float64(s.iterations) / span
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// waitCounts is every wait of the class, by value with its count, the
// smallest first.
func (s *classState) waitCounts() []eventlog.Wait {
	ws := make([]eventlog.Wait, 0, len(s.waits))
	for w, n := range s.waits {
		ws = append(ws, eventlog.Wait{S: w, N: n})
	}
	slices.SortFunc(ws, func(a, b eventlog.Wait) int { return cmp.Compare(a.S, b.S) })
	return ws
}

// waitFigures are the count, mean and q-quantile (as Percentile) of the waits
// ws (by value, the smallest first). The sum goes by value, so that the mean
// does not depend on the order the waits came in.
func waitFigures(ws []eventlog.Wait, q float64) (n int, mean, quantile float64) {
	var sum float64
	for _, w := range ws {
		n += w.N
		sum += w.S * float64(w.N)
	}
	i := min(int(q*float64(n)), n-1)
	for _, w := range ws {
		if i < w.N {
			quantile = w.S
			break
		}
		i -= w.N
	}
	return n, sum / float64(n), quantile
}

func sumOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}
