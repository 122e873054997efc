package core

import "math"

// need is what the scheduler keeps of a Job besides what changes as it runs:
// its memory, its GPUs, where it may go, its share, and its model and batch
// (for the policies: JobView reads them through its pointer). Jobs that need
// the same, and are neither pinned nor limited to GPU models, share one
// (Scheduler.needs): a waiting job then holds a pointer, not a copy of its Job
// (about 150 bytes; at a million jobs, 750,000 of them wait at once), and
// jobs of one workload and batch, as a trace's are, still share it.
type need struct {
	persistent, ephemeral, laneCap float64
	gpus                           int
	share                          float64 // ShareOf the job
	model                          string
	batch                          int
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
	persistent, ephemeral, laneCap, share uint64
	gpus, batch                           int
	model                                 string
}

// needOf returns the need of j, shared when it can be.
func (s *Scheduler) needOf(j Job) *need {
	own := len(j.Pinned) > 0 || len(j.GPUModels) > 0 // a list of GPUs or models is no map key
	k := keyOfNeed(j.Persistent, j.Ephemeral, j.LaneCap, ShareOf(j), j.GPUs, j.Batch, j.Model)
	if shared, ok := s.needs[k]; ok && !own {
		shared.jobs++
		return shared
	}
	n := &need{persistent: j.Persistent, ephemeral: j.Ephemeral, laneCap: j.LaneCap, gpus: j.GPUs, share: ShareOf(j),
		model: j.Model, batch: j.Batch, pinned: j.Pinned, models: j.GPUModels}
	if !own {
		n.jobs = 1
		s.needs[k] = n
	}
	return n
}

// dropNeed is js's leaving: its need goes with the last job that shares it.
func (s *Scheduler) dropNeed(js *jobState) {
	n := js.view.need
	if n.jobs == 0 {
		return // its own
	}
	if n.jobs--; n.jobs == 0 {
		delete(s.needs, keyOfNeed(n.persistent, n.ephemeral, n.laneCap, n.share, n.gpus, n.batch, n.model))
	}
}

func keyOfNeed(persistent, ephemeral, laneCap, share float64, gpus, batch int, model string) needKey {
	return needKey{math.Float64bits(persistent), math.Float64bits(ephemeral), math.Float64bits(laneCap), math.Float64bits(share),
		gpus, batch, model}
}

// job is the Job of view v that needs n.
func (n *need) job(v JobView) Job {
	return Job{ID: v.ID, Arrival: v.Arrival, Persistent: n.persistent, Ephemeral: n.ephemeral, Declared: v.Declared,
		Priority: v.Priority, GPUs: n.gpus, Pinned: n.pinned, LaneCap: n.laneCap, Share: n.share, GPUModels: n.models,
		Model: n.model, Batch: n.batch}
}
