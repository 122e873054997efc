package core

import "container/heap"

// readyQueue is a lane's ready jobs, a heap in the policy's order: the next job is
// found in O(1) and a job comes and goes in O(log n), so a lane of thousands of
// jobs (suspend/resume keeps every job in one) costs no scan per iteration. A
// job's key does not change while it waits here: what policies order by (attained
// and remaining time, request order) changes only while it runs.
type readyQueue struct {
	jobs []*jobState
	less func(a, b *jobState) bool
	// key, for a KeyOrder: each job's key is computed once, as it joins.
	key func(JobView) int64
}

func (q *readyQueue) Len() int { return len(q.jobs) }
func (q *readyQueue) Less(i, j int) bool {
	if q.key == nil {
		return q.less(q.jobs[i], q.jobs[j])
	}
	a, b := q.jobs[i], q.jobs[j]
	// The more urgent priority first, as lessView.
	if a.view.Priority != b.view.Priority {
		return a.view.Priority < b.view.Priority
	}
	if a.readyKey != b.readyKey {
		return a.readyKey < b.readyKey
	}
	return a.view.Seq < b.view.Seq
}
func (q *readyQueue) Swap(i, j int) {
	q.jobs[i], q.jobs[j] = q.jobs[j], q.jobs[i]
	q.jobs[i].readyAt, q.jobs[j].readyAt = int32(i), int32(j)
}
func (q *readyQueue) Push(x any) {
	js := x.(*jobState)
	js.readyAt = int32(len(q.jobs))
	q.jobs = append(q.jobs, js)
}
func (q *readyQueue) Pop() any {
	n := len(q.jobs) - 1
	js := q.jobs[n]
	q.jobs[n] = nil
	q.jobs = q.jobs[:n]
	js.readyAt = -1
	return js
}

// add queues js.
func (q *readyQueue) add(js *jobState) {
	if q.key != nil {
		js.readyKey = q.key(js.view)
	}
	heap.Push(q, js)
}

// put queues js out of order, with its key: heap.Init must follow.
func (q *readyQueue) put(js *jobState) {
	if q.key != nil {
		js.readyKey = q.key(js.view)
	}
	q.Push(js)
}

// take removes js, which must be queued.
func (q *readyQueue) take(js *jobState) { heap.Remove(q, int(js.readyAt)) }

// drop removes js when it is queued.
func (q *readyQueue) drop(js *jobState) {
	if js.readyAt >= 0 && int(js.readyAt) < len(q.jobs) && q.jobs[js.readyAt] == js {
		q.take(js)
	}
}

// first is the job the policy puts first; nil when none is ready.
func (q *readyQueue) first() *jobState {
	if len(q.jobs) == 0 {
		return nil
	}
	return q.jobs[0]
}
