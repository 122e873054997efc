package core

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// JobView is what a policy may look at when it orders the ready jobs of a lane.
type JobView struct {
	ID         string
	Seq        int           // arrival order, from 0
	Arrival    time.Duration // since the start of the run
	Declared   time.Duration // declared GPU time (start-up excluded)
	Attained   time.Duration // GPU time received so far
	Iterations int           // iterations completed
	RequestSeq uint64        // order in which the pending iteration request was made
	Priority   int
}

// Remaining is the declared GPU time not yet received, as SRTF sees it.
func (v JobView) Remaining() time.Duration { return v.Declared - v.Attained }

// Policy is a scheduling policy: where jobs are admitted and who runs next.
type Policy struct {
	Name        string
	Description string
	// Mode names how the device is shared: "exclusive" (no sharing) or "salus" (lanes).
	Mode      string
	Placement Placement
	// Less orders two ready jobs of one lane: true when a should run first. Ties
	// (neither is less) go to the earlier arrival.
	Less func(a, b JobView) bool
	// UsesDeclared is true when Less reads the jobs' declared GPU time: a job must
	// then declare one (the daemon refuses or estimates a missing one).
	UsesDeclared bool
	// StartupOnGPU is true when a job holds its lane from admission through its
	// start-up, as plain TensorFlow does when jobs run one after another; otherwise
	// start-up runs off the GPU from the job's arrival.
	StartupOnGPU bool
	// AdmitInOrder admits strictly in arrival order: a job that does not fit blocks
	// the later ones (separate processes started one after another).
	AdmitInOrder bool
	// Quantum, when positive, lets the job that runs keep its lane at iteration
	// boundaries until it has had the lane this long (suspend/resume's time slice).
	Quantum time.Duration
	// Swapped is true when only the running job of a lane is resident.
	Swapped bool
}

var registry = map[string]func() Policy{
	"fifo": FIFO,
	"srtf": SRTF,
	"pack": Pack,
	"fair": Fair,
	"fcfs": FCFS,
}

// Lookup returns the named policy.
func Lookup(name string) (Policy, error) {
	mk, ok := registry[strings.ToLower(name)]
	if !ok {
		return Policy{}, fmt.Errorf("unknown policy %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	return mk(), nil
}

// Names lists the registered policies in a stable order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	order := map[string]int{"fifo": 0, "srtf": 1, "pack": 2, "fair": 3}
	sort.Slice(names, func(i, j int) bool {
		oi, iok := order[names[i]]
		oj, jok := order[names[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
	return names
}

func byArrival(a, b JobView) bool { return a.Seq < b.Seq }

// byRequest serves iteration requests in the order they were made.
func byRequest(a, b JobView) bool { return a.RequestSeq < b.RequestSeq }
