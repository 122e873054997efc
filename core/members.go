package core

import (
	"container/heap"
	"fmt"
)

// A lane's jobs, kept so that joining and leaving cost O(1) amortized however many
// jobs a lane holds (suspend/resume keeps every admitted job in one lane): jobs
// leave lazily (marked, skipped, compacted when the dead pass an eighth of the living),
// and the job with the largest peak, the one resident under suspend/resume, is
// found without a scan.

// join adds js to the lane, after the jobs already there.
func (l *lane) join(js *jobState) {
	l.jobs = append(l.jobs, js)
	l.live++
	l.addPeak(js)
}

func (l *lane) addPeak(js *jobState) {
	peak := js.view.need.persistent + js.view.need.ephemeral
	if l.peaks == nil {
		l.peaks = map[float64][]*jobState{}
	}
	if len(l.peaks) == 0 || peak > l.maxPeak {
		l.maxPeak = peak
	}
	l.peaks[peak] = append(l.peaks[peak], js)
}

// leave takes js out of the lane.
func (l *lane) leave(js *jobState) {
	js.left = true
	l.live--
	if overdue(len(l.jobs), l.live) {
		l.compact()
	}
}

// compact drops the jobs that left, keeping the others' order.
func (l *lane) compact() {
	kept := l.jobs[:0]
	clear(l.peaks)
	for _, js := range l.jobs {
		if !js.left {
			kept = append(kept, js)
			l.addPeak(js)
		}
	}
	clear(l.jobs[len(kept):])
	l.jobs = kept
}

// each calls fn on the lane's jobs in the order they joined.
func (l *lane) each(fn func(*jobState)) {
	for _, js := range l.jobs {
		if !js.left {
			fn(js)
		}
	}
}

// biggest is the job with the largest peak memory, the first to join among equals;
// nil for an empty lane.
func (l *lane) biggest() *jobState {
	for len(l.peaks) > 0 {
		list := l.peaks[l.maxPeak]
		for len(list) > 0 && list[0].left {
			list = list[1:]
		}
		if len(list) > 0 {
			l.peaks[l.maxPeak] = list
			return list[0]
		}
		delete(l.peaks, l.maxPeak)
		first := true
		for p := range l.peaks {
			if first || p > l.maxPeak {
				l.maxPeak, first = p, false
			}
		}
	}
	return nil
}

// waitClass is the waiting jobs of one memory need, in arrival order. A lane
// placement sees a job's memory, GPU count, pinned GPUs and lane cap only (all
// in the class's key), and memory only shrinks while jobs are admitted: one
// refusal stands for the whole class until memory is freed, so admission tries
// each class once, not each job.
//
// Arrival order, that is, unless priorities or the policy's order (admission.go)
// say otherwise: the jobs are a heap in the order of Scheduler.admitLess.
type waitClass struct {
	jobHeap     // may hold jobs that were admitted or left
	waiting int // how many of them still wait
	key     classKey
	blocked bool // refused since memory was last freed
	queued  bool // among the candidates of the next admission
	// refusedAt[i] is when node i last refused the class's job, on the clock of
	// Scheduler.freeSeq (refusals.go); 0: never; nil: no node has.
	refusedAt []uint64
}

type classKey struct {
	persistent, ephemeral float64
	gpus                  int
	pinned                string  // the GPUs a pinned job may go to
	laneCap               float64 // the most its own lane may take
	models                string  // the GPU models it allows
}

func keyOf(j Job) classKey {
	k := classKey{persistent: j.Persistent, ephemeral: j.Ephemeral, gpus: max(j.GPUs, 1), laneCap: j.LaneCap}
	if len(j.Pinned) > 0 {
		k.pinned = fmt.Sprint(j.Pinned)
	}
	if len(j.GPUModels) > 0 {
		k.models = fmt.Sprint(j.GPUModels)
	}
	return k
}

// front is the class's first waiting job in the order of admission; nil when it
// has none.
func (c *waitClass) front() *jobState {
	for c.Len() > 0 {
		if js := c.jobs[0]; js.waits() {
			return js
		}
		heap.Pop(&c.jobHeap)
	}
	return nil
}

// classHeap orders classes by their first waiting jobs, in the order of
// admission. Each class's first job is kept beside it (fronts), read once
// when it enters and again only where an admission changed it (admit), not
// at each comparison.
type classHeap struct {
	cs     []*waitClass
	fronts []*jobState
	less   func(a, b *jobState) bool
}

func (h *classHeap) Len() int           { return len(h.cs) }
func (h *classHeap) Less(i, j int) bool { return h.less(h.fronts[i], h.fronts[j]) }
func (h *classHeap) Swap(i, j int) {
	h.cs[i], h.cs[j] = h.cs[j], h.cs[i]
	h.fronts[i], h.fronts[j] = h.fronts[j], h.fronts[i]
}
func (h *classHeap) Push(x any) {
	c := x.(*waitClass)
	h.cs, h.fronts = append(h.cs, c), append(h.fronts, c.front())
}
func (h *classHeap) Pop() any {
	n := len(h.cs) - 1
	c := h.cs[n]
	h.cs[n], h.fronts[n] = nil, nil
	h.cs, h.fronts = h.cs[:n], h.fronts[:n]
	return c
}

var _ heap.Interface = (*classHeap)(nil)
