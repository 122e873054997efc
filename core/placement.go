package core

import "fmt"

// LaneInfo is a read-only view of one lane, given to placements and to callers that
// log memory snapshots. Memory is in MiB.
type LaneInfo struct {
	ID           int
	Size         float64
	Persistent   float64 // sum of the persistent memory of the lane's jobs
	MaxEphemeral float64 // largest ephemeral peak among the lane's jobs
	Jobs         int
	// The memory of the lane's job with the largest peak: what is resident when only
	// the running job is (suspend/resume).
	BiggestPersistent, BiggestEphemeral float64
	// GPU is the index of the GPU the lane is on (the first, for a gang lane).
	GPU int
	// GPUs lists every GPU of a gang lane (a job that needs several GPUs at once
	// holds a lane of Size MiB on each); nil for a lane on one GPU.
	GPUs []int
	// Closed is set on a gang lane: no other job may join it.
	Closed bool
}

// Used is the memory the lane's jobs can touch at once: every job's persistent memory
// plus one iteration's ephemeral peak (only one iteration runs in a lane at a time).
func (l LaneInfo) Used() float64 { return l.Persistent + l.MaxEphemeral }

// Fits reports whether job j can join the lane without the lane overflowing.
func (l LaneInfo) Fits(j Job) bool {
	return !l.Closed && l.Persistent+j.Persistent+max(l.MaxEphemeral, j.Ephemeral) <= l.Size
}

// Where is a placement's answer: join lane Lane, or open a new lane of NewSize MiB
// when Lane is negative.
type Where struct {
	Lane    int
	NewSize float64
}

// NewLane asks for a fresh lane of size MiB.
func NewLane(size float64) Where { return Where{Lane: -1, NewSize: size} }

// Placement decides lane admission. It is asked about waiting jobs in the order
// of admission (arrival, or the policy's: admission.go) whenever memory may have
// become available. Two rules let admission ask
// once per class of jobs rather than once per job (members.go): Place looks at a
// job's memory and GPU count only, and a refusal stands while memory only
// shrinks (jobs admitted, none leaving). Every built-in placement keeps both.
type Placement interface {
	// Place returns where job j goes, or false to keep it waiting. free is the
	// device memory not allocated to any lane. lanes are the device's lanes by
	// id, the scheduler's own views of them: read them, never modify or keep them.
	Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool)
	// Feasible returns an error when j could never be placed, even on an empty device.
	Feasible(j Job, capacity float64) error
}

func needsAtMost(j Job, capacity float64) error {
	if need := j.Persistent + j.Ephemeral; need > capacity {
		return fmt.Errorf("job %q needs %.0f MiB (persistent %.0f + ephemeral %.0f) but the device has %.0f MiB usable: use a device with more memory or a smaller batch",
			j.ID, need, j.Persistent, j.Ephemeral, capacity)
	}
	return nil
}

// Exclusive gives the whole device to one job at a time: no sharing.
type Exclusive struct{}

// Place opens one lane of the whole device when no job holds it.
func (Exclusive) Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool) {
	if len(lanes) > 0 {
		return Where{}, false
	}
	return NewLane(capacity), true
}

// Feasible checks that the job fits the device alone.
func (Exclusive) Feasible(j Job, capacity float64) error { return needsAtMost(j, capacity) }

// Seals is true: a lane holds the whole GPU, so no job joins it and no lane
// opens beside it while it is open.
func (Exclusive) Seals() bool { return true }

// Sealing is a Placement that seals its lanes: while a lane is open, no other
// job joins it and no other lane opens on its GPUs (Exclusive). What goes on in
// such a lane depends on its own job alone.
type Sealing interface {
	Seals() bool
}

// OneLane keeps every admitted job in a single lane the size of the device, as the
// paper evaluated SRTF and FAIR.
type OneLane struct{}

// Place joins the one lane when the job's memory fits beside the others.
func (OneLane) Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool) {
	if len(lanes) == 0 {
		return NewLane(capacity), true
	}
	if lanes[0].Fits(j) {
		return Where{Lane: lanes[0].ID}, true
	}
	return Where{}, false
}

// Feasible checks that the job fits the device alone.
func (OneLane) Feasible(j Job, capacity float64) error { return needsAtMost(j, capacity) }

// SalusLanes is the lane rule of Salus's published code: a new job gets a lane of
// (1.1*persistent + ephemeral) * 1.05 MiB when that much is unallocated; otherwise it
// joins the first lane where it fits; otherwise it waits.
type SalusLanes struct{}

// LaneSize is the size of the lane Salus opens for a job alone, within the job's
// LaneCap when it has one.
func (SalusLanes) LaneSize(j Job) float64 {
	return capLane(j, (1.1*j.Persistent+j.Ephemeral)*1.05)
}

// capLane is size within j's LaneCap, when it has one, but never below its peak.
func capLane(j Job, size float64) float64 {
	if j.LaneCap > 0 {
		size = max(min(size, j.LaneCap), j.Persistent+j.Ephemeral)
	}
	return size
}

// Place applies the published rule. When the device is empty and the padded size does
// not fit but the job itself does, the job gets the whole device instead of waiting
// forever (the published code would wait; a job that fits should run).
func (s SalusLanes) Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool) {
	if size := s.LaneSize(j); size <= free {
		return NewLane(size), true
	}
	for _, l := range lanes {
		if l.Fits(j) {
			return Where{Lane: l.ID}, true
		}
	}
	if len(lanes) == 0 && j.Persistent+j.Ephemeral <= capacity {
		return NewLane(capLane(j, capacity)), true
	}
	return Where{}, false
}

// Feasible checks that the job fits the device alone.
func (SalusLanes) Feasible(j Job, capacity float64) error { return needsAtMost(j, capacity) }

// PerProcess gives every job its own lane holding its full peak memory plus a
// per-process context, as separate processes do under NVIDIA MPS or CUDA
// time-slicing: nothing is shared between jobs. MaxClients, when positive, caps the
// number of resident jobs (MPS's per-GPU client limit).
type PerProcess struct {
	ContextMiB float64
	MaxClients int
}

// Place opens a lane of the job's peak plus the context when memory and the client
// limit allow.
func (p PerProcess) Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool) {
	size := j.Persistent + j.Ephemeral + p.ContextMiB
	if size > free || (p.MaxClients > 0 && len(lanes) >= p.MaxClients) {
		return Where{}, false
	}
	return NewLane(size), true
}

// Feasible checks that the job and its context fit the device alone.
func (p PerProcess) Feasible(j Job, capacity float64) error {
	return needsAtMost(Job{ID: j.ID, Persistent: j.Persistent + p.ContextMiB, Ephemeral: j.Ephemeral}, capacity)
}

// Swapped keeps every job in one lane of the whole device with only the running job
// resident (suspend/resume): the others' persistent memory waits in host memory, so
// any job that fits alone is admitted.
type Swapped struct{}

// Place joins the one lane, opening it if needed.
func (Swapped) Place(j Job, lanes []LaneInfo, free, capacity float64) (Where, bool) {
	if len(lanes) == 0 {
		return NewLane(capacity), true
	}
	return Where{Lane: lanes[0].ID}, true
}

// Feasible checks that the job fits the device alone.
func (Swapped) Feasible(j Job, capacity float64) error { return needsAtMost(j, capacity) }
