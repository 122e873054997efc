package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/salusgo/salus/workload"
)

// arrivals are the jobs read from the trace that have not arrived yet, in
// arrival order: the next one, and as many after it as a parked job's
// horizon asked for (sealed.go). Each job's record is made when it is read
// and dropped at its end (its trace record at its arrival), so memory follows
// the jobs alive and read ahead, not the trace.
type arrivals struct {
	s *workload.Stream
	// checked: the whole trace was checked before the run, so a job read is
	// not checked again.
	checked bool
	q       []arrival
	head    int
	read    int           // the jobs read (the last one's handle)
	lastAt  time.Duration // the arrival time of the last job read
	// readGPUs and arrivedGPUs are the GPUs the jobs read, and those arrived,
	// ask for in all; arrival.gpusRead is readGPUs once it was read.
	readGPUs, arrivedGPUs int
	// err is the error of the last read, kept: a read ahead that fails (a
	// stretch's, passArrivals) leaves it to the read that needs the job.
	err error
}

// readOne reads the trace's next job; false at its end. Its error is kept
// (arrivals.err) and given again at every later read.
func (e *engine) readOne() (bool, error) {
	r := &e.arrivals
	if r.err != nil {
		return false, r.err
	}
	ok, err := e.readNext()
	r.err = err
	return ok, err
}

// readNext is readOne without the kept error.
func (e *engine) readNext() (bool, error) {
	r := &e.arrivals
	spec, ok := r.s.Next()
	if !ok {
		return false, r.s.Err()
	}
	if !r.checked {
		if err := e.sched.Feasible(spec.CoreJob()); err != nil {
			return false, fmt.Errorf("trace %s: %w", r.s.Name, err)
		}
	}
	a, err := e.newJob(spec)
	if err != nil {
		return false, fmt.Errorf("trace %s: job %s: %w", r.s.Name, spec.ID, err)
	}
	if r.read > 0 && a.at < r.lastAt {
		return false, fmt.Errorf("trace %s: job %s arrives at %ss, before the job read before it: the jobs must come in arrival order", r.s.Name, spec.ID, seconds(a.at))
	}
	r.read++
	a.j.handle = r.read
	r.lastAt = a.at
	r.readGPUs += a.shape.GPUCount()
	a.gpusRead = r.readGPUs
	r.q = append(r.q, a)
	e.left++
	return true, nil
}

// nextArrival is the next job to arrive, read when none is; nil at the
// trace's end. The pointer is good until the next read.
func (e *engine) nextArrival() (*arrival, error) {
	r := &e.arrivals
	if r.head == len(r.q) {
		if ok, err := e.readOne(); !ok {
			return nil, err
		}
	}
	return &r.q[r.head], nil
}

// arrived drops the next arrival, which has arrived.
func (e *engine) arrived() {
	r := &e.arrivals
	r.arrivedGPUs = r.q[r.head].gpusRead
	r.q[r.head] = arrival{}
	r.head++
	if r.head == len(r.q) {
		r.q, r.head = r.q[:0], 0
	} else if r.head >= 64 && 2*r.head >= len(r.q) {
		n := copy(r.q, r.q[r.head:])
		clear(r.q[n:])
		r.q, r.head = r.q[:n], 0
	}
}

// horizon is the arrival time of the first job, from the next on, by which
// the jobs arriving from now on ask for k GPUs in all: admissions can place
// no more than the GPUs those before it ask for before then. It reads ahead
// as far as it must; maxTime when the trace ends first.
func (e *engine) horizon(k int) (time.Duration, error) {
	r := &e.arrivals
	want := r.arrivedGPUs + k
	for len(r.q) == r.head || r.q[len(r.q)-1].gpusRead < want {
		if ok, err := e.readOne(); !ok {
			return maxTime, err
		}
	}
	i, _ := slices.BinarySearchFunc(r.q[r.head:], want, func(a arrival, want int) int { return a.gpusRead - want })
	return r.q[r.head+i].at, nil
}

// maxPassed bounds the arrivals a stretch may run past: each is asked about
// (core.OnlyWaits) only once the one before passed, and the asking is lost
// where the stretch ends before it.
const maxPassed = 8

// passArrivals lets the stretch about to run go past the next arrivals, as
// long as each would only wait (core.OnlyWaits): nothing the core decides
// at such an arrival, nor a running lane's turns, depends on when it comes,
// short of a job's end, which ends the stretch. Its job's end of start-up
// off the GPU, a timer set as it is taken, passes too (passTimers: it still
// waits then). It returns the stretch's limit: the first arrival that does
// not pass (maxTime at the trace's end), and notes in e.passed how many
// pass; takePassed takes them as the stretch commits. The arrival is an
// event of the log, as before; the records of the turns around it are not
// cut there.
func (e *engine) passArrivals(limit time.Duration) time.Duration {
	e.passed = 0
	r := &e.arrivals
	for {
		if r.head+e.passed == len(r.q) {
			if ok, _ := e.readOne(); !ok {
				// The trace's end, or a job that cannot be read: its error
				// comes when the run reaches it (readOne keeps it).
				switch {
				case r.err == nil:
					return maxTime
				case e.passed == 0:
					return limit
				}
				e.passed-- // the last passed ends the stretch
				return r.q[r.head+e.passed].at
			}
		}
		a := &r.q[r.head+e.passed]
		if e.passed == maxPassed || !e.sched.OnlyWaits(a.rec.CoreJob()) {
			return a.at
		}
		e.passed++
	}
}

// passTimers lowers a stretch's limit to its first timer that does not
// pass: the timers before it are ends of start-up of jobs that wait for
// admission (core.RequestWaits), which takePassed takes as the stretch
// commits, each at its time.
func (e *engine) passTimers(limit time.Duration) time.Duration {
	if len(e.timers) == 0 || e.timers[0].at >= limit {
		return limit
	}
	if first := e.timers[0]; !e.sched.RequestWaits(first.job.spec.ID) {
		return first.at // no copy of the heap where the first does not pass (an inference job's pause)
	}
	order := append(e.timerScratch[:0], e.timers...) // a copy of the heap, taken in order
	for len(order) > 0 {
		tm := order.pop()
		if tm.at >= limit {
			break
		}
		if !e.sched.RequestWaits(tm.job.spec.ID) {
			limit = tm.at
			break
		}
	}
	e.timerScratch = order
	return limit
}

// takePassed takes the arrivals and the timers the stretch passed
// (passArrivals, passTimers) that come before t, each at its time, an
// arrival before a timer of the same instant (as the per-iteration engine
// takes an instant's events): the stretch commits its candidates in time
// order (inTakingOrder) and calls it before each, so that the core and the
// log meet every event in time order. Every timer before the stretch's
// limit passes, those its passed arrivals set included.
func (e *engine) takePassed(t time.Duration) error {
	r := &e.arrivals
	for {
		arrival := e.passed > 0 && r.q[r.head].at < t
		timer := len(e.timers) > 0 && e.timers[0].at < t
		now := e.now
		var err error
		switch {
		case arrival && (!timer || r.q[r.head].at <= e.timers[0].at):
			e.now = r.q[r.head].at
			if err = e.arrive(r.q[r.head]); err == nil {
				e.arrived()
				e.passed--
				e.forwarded.passedArrivals++
			}
		case timer:
			tm := e.timers.pop()
			e.now = tm.at
			err = e.request(tm.job)
			e.forwarded.passedTimers++
		default:
			return nil
		}
		e.now = now
		if err != nil {
			return err
		}
	}
}
