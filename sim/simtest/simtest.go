// Package simtest is test support for the simulator and what runs it: the
// registered schemes (Schemes), a random trace (RandomTrace), a sink that checks an event log's invariants as it is
// written (Checker), and one that watches admissions pass over waiting jobs
// (PassOvers). The simulator's own tests, its conformance checks (package
// sim/conformance) and the sweep's tests use them.
//
// It is for tests only: no product package imports it. It reads event logs and
// builds traces, and imports neither the simulator nor any engine, so that package
// sim's own tests may import it.
package simtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// Schemes are every registered mode with every registered policy it accepts, as
// {mode, policy}, in the registries' orders: what a test that covers every
// scheme ranges over, so that a newly registered one is covered.
func Schemes() [][2]string { return core.Schemes() }

// RandomTrace draws a small trace of jobs jobs: random profiles of the default
// catalog, arrivals (exponential gaps of mean 5 s) and lengths (1 to 40
// iterations), the same for the same seed.
func RandomTrace(seed uint64, jobs int) *workload.Trace {
	rng := rand.New(rand.NewPCG(seed, 1))
	profiles := workload.Default().Profiles()
	t := &workload.Trace{Name: fmt.Sprintf("random-%d", seed)}
	now := 0.0
	for i := 0; i < jobs; i++ {
		now += rng.ExpFloat64() * 5
		p := profiles[rng.IntN(len(profiles))]
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("j%02d", i), Model: p.Model, Batch: p.Batch, Kind: p.Kind,
			Iterations: 1 + rng.IntN(40), ArrivalS: now, Profile: &p})
	}
	return t
}

// Checker verifies the invariants of a log as it is written, failing its test at
// the first event that breaks one: time never goes back; a lane's memory holds
// what it is said to hold, and the lanes on a GPU allocate no more than its
// capacity; a lane runs one iteration at a time, and is regrouped (defrag) only
// when none is in flight; under an exclusive placement one job at a time is
// admitted on a GPU. It also records which jobs finished and the GPU time each
// received (Finished, GPUS).
type Checker struct {
	// CapacityOf, when set, is GPU g's usable memory (a cluster's GPUs differ);
	// otherwise every GPU has NewChecker's capacity.
	CapacityOf func(g int) float64
	t          testing.TB
	capacity   float64
	lanes      map[int]float64 // lane sizes
	busyLanes  map[int]string  // lane -> job running there
	finished   map[string]bool
	gpu        map[string]float64
	admitted   map[string]bool
	laneGPUs   map[int][]int // lane -> its GPUs
	jobGPUs    map[string][]int
	exclusive  bool
	last       float64
}

// NewChecker returns a checker for GPUs of capacity MiB each; exclusive says the
// placement admits one job at a time on a GPU.
func NewChecker(t testing.TB, capacity float64, exclusive bool) *Checker {
	return &Checker{t: t, capacity: capacity, exclusive: exclusive, lanes: map[int]float64{}, busyLanes: map[int]string{},
		finished: map[string]bool{}, gpu: map[string]float64{}, admitted: map[string]bool{}, laneGPUs: map[int][]int{}, jobGPUs: map[string][]int{}}
}

// Finished says whether the log said the job finished.
func (c *Checker) Finished(job string) bool { return c.finished[job] }

// GPUS is the GPU time the job's iterations received, seconds.
func (c *Checker) GPUS(job string) float64 { return c.gpu[job] }

// TakesTurns is true: the checker follows a lane's turns (eventlog.TurnsSink).
func (c *Checker) TakesTurns() bool { return true }

// Emit implements eventlog.Sink.
func (c *Checker) Emit(e eventlog.Event) {
	t := c.t
	t.Helper()
	if e.T < c.last {
		t.Fatalf("time went backwards: %v after %v", e.T, c.last)
	}
	c.last = e.T
	switch e.Kind {
	case eventlog.Memory:
		if e.Jobs == 0 {
			delete(c.lanes, e.Lane)
		} else {
			c.lanes[e.Lane] = e.LaneMiB
		}
		if _, known := c.laneGPUs[e.Lane]; !known {
			c.laneGPUs[e.Lane] = []int{e.GPUIndex} // a lane split off: opened by no admission
		}
		if e.PersistentMiB+e.EphemeralMiB > e.LaneMiB+1e-6 {
			t.Fatalf("lane %d holds %.1f MiB in %.1f", e.Lane, e.PersistentMiB+e.EphemeralMiB, e.LaneMiB)
		}
		// Per GPU: a gang's lane takes its size on each of its GPUs.
		perGPU := map[int]float64{}
		for lane, size := range c.lanes {
			for _, g := range c.gpusOf(lane) {
				perGPU[g] += size
			}
		}
		for g, sum := range perGPU {
			capacity := c.capacity
			if c.CapacityOf != nil {
				capacity = c.CapacityOf(g)
			}
			if sum > capacity+1e-6 {
				t.Fatalf("lanes allocate %.1f MiB of %.1f on GPU %d", sum, capacity, g)
			}
		}
	case eventlog.Admit:
		c.admitted[e.Job] = true
		gpus := e.Gang
		if len(gpus) == 0 {
			gpus = []int{e.GPUIndex}
		}
		c.laneGPUs[e.Lane], c.jobGPUs[e.Job] = gpus, gpus
		if c.exclusive {
			for other := range c.admitted {
				if other == e.Job {
					continue
				}
				for _, g := range c.jobGPUs[other] {
					if slices.Contains(gpus, g) {
						t.Fatalf("exclusive mode admitted %s on GPU %d beside %s", e.Job, g, other)
					}
				}
			}
		}
	case eventlog.Defrag:
		// Only a lane with no iteration in flight is split or merged.
		if other, busy := c.busyLanes[e.Lane]; busy {
			t.Fatalf("lane %d is regrouped (%s) while %s runs in it", e.Lane, e.Reason, other)
		}
	case eventlog.Migrate:
		// A job moves at an iteration boundary only, to one GPU.
		for lane, job := range c.busyLanes {
			if job == e.Job {
				t.Fatalf("%s migrates to lane %d while it runs in lane %d", e.Job, e.Lane, lane)
			}
		}
		c.laneGPUs[e.Lane], c.jobGPUs[e.Job] = []int{e.GPUIndex}, []int{e.GPUIndex}
	case eventlog.IterStart:
		if other, busy := c.busyLanes[e.Lane]; busy {
			t.Fatalf("lane %d starts %s while %s runs", e.Lane, e.Job, other)
		}
		c.busyLanes[e.Lane] = e.Job
	case eventlog.IterEnd:
		if c.busyLanes[e.Lane] != e.Job {
			t.Fatalf("lane %d ends %s, which was not running", e.Lane, e.Job)
		}
		delete(c.busyLanes, e.Lane)
		c.gpu[e.Job] += e.GPU
	case eventlog.Stretch:
		if len(e.Turns) > 0 {
			// A lane's turns: it ran the first turn's job before, e.Job after.
			if c.busyLanes[e.Lane] != e.Turns[0].Job {
				t.Fatalf("lane %d takes turns after %s, which was not running", e.Lane, e.Turns[0].Job)
			}
			for _, tu := range e.Turns {
				c.gpu[tu.Job] += tu.GPU
			}
			c.busyLanes[e.Lane] = e.Job
			break
		}
		// Boundaries back to back: the lane runs the job before and after.
		if c.busyLanes[e.Lane] != e.Job {
			t.Fatalf("lane %d stretches %s, which was not running", e.Lane, e.Job)
		}
		c.gpu[e.Job] += e.GPU
	case eventlog.Finish:
		c.finished[e.Job] = true
		delete(c.admitted, e.Job)
	}
}

func (c *Checker) gpusOf(lane int) []int {
	if gpus, ok := c.laneGPUs[lane]; ok {
		return gpus
	}
	return []int{0}
}
