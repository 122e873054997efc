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
}

// readOne reads the trace's next job; false at its end.
func (e *engine) readOne() (bool, error) {
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
