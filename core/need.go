package core

import "math"

// need is what the scheduler keeps of a Job besides its view (JobView): its
// memory, its GPUs and where it may go. Jobs that need the same, and are
// neither pinned nor limited to GPU models, share one (Scheduler.needs): a
// waiting job then holds a pointer, not a copy of its Job (about 130 bytes;
// at a million jobs, 750,000 of them wait at once).
type need struct {
	persistent, ephemeral, laneCap float64
	gpus                           int
	pinned                         []int
	models                         []string
	// jobs counts the jobs that hold it, while it is shared: it is dropped
	// with the last of them.
	jobs int
	// class is the waiting class of its jobs that wait (members.go), set at
	// each arrival.
	class *waitClass
}

// needKey is a shared need's key: the figures' bits, so that -0 and 0 stay
// apart as they were in the jobs.
type needKey struct {
	persistent, ephemeral, laneCap uint64
	gpus                           int
}

// needOf returns the need of j, shared when it can be.
func (s *Scheduler) needOf(j Job) *need {
	own := len(j.Pinned) > 0 || len(j.GPUModels) > 0 // a list of GPUs or models is no map key
	k := needKey{math.Float64bits(j.Persistent), math.Float64bits(j.Ephemeral), math.Float64bits(j.LaneCap), j.GPUs}
	if shared, ok := s.needs[k]; ok && !own {
		shared.jobs++
		return shared
	}
	n := &need{persistent: j.Persistent, ephemeral: j.Ephemeral, laneCap: j.LaneCap, gpus: j.GPUs, pinned: j.Pinned, models: j.GPUModels}
	if !own {
		n.jobs = 1
		s.needs[k] = n
	}
	return n
}

// dropNeed is js's leaving: its need goes with the last job that shares it.
func (s *Scheduler) dropNeed(js *jobState) {
	n := js.need
	if n.jobs == 0 {
		return // its own
	}
	if n.jobs--; n.jobs == 0 {
		delete(s.needs, needKey{math.Float64bits(n.persistent), math.Float64bits(n.ephemeral), math.Float64bits(n.laneCap), n.gpus})
	}
}

// job is the Job of view v that needs n.
func (n *need) job(v JobView) Job {
	return Job{ID: v.ID, Arrival: v.Arrival, Persistent: n.persistent, Ephemeral: n.ephemeral, Declared: v.Declared,
		Priority: v.Priority, GPUs: n.gpus, Pinned: n.pinned, LaneCap: n.laneCap, Share: v.Share, GPUModels: n.models}
}
