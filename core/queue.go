package core

// readyQueue is a lane's ready jobs, a heap in the policy's order: the next job is
// found in O(1) and a job comes and goes in O(log n), so a lane of thousands of
// jobs (suspend/resume keeps every job in one) costs no scan per iteration. A
// job's key does not change while it waits here: what policies order by (attained
// and remaining time, request order) changes only while it runs.
//
// Under a KeyOrder each job's place in the order (its priority, key and arrival)
// is kept beside it, in keys: a lane of thousands of jobs is a heap larger than
// the processor's caches, and comparing without reaching each job's state halves
// what a switch costs there (suspend/resume under floor at 100,000 jobs: the
// comparisons were a fifth of the run, most of it waiting for memory).
type readyQueue struct {
	jobs []*jobState
	keys []readyKey // by jobs' index, under a KeyOrder
	less func(a, b *jobState) bool
	// key, for a KeyOrder: each job's key is computed once, as it joins.
	key func(JobView) int64
}

// readyKey is a queued job's place in a KeyOrder: the more urgent priority
// first (as lessView), then the key, then arrival.
type readyKey struct {
	priority int
	key      int64
	seq      int
}

func (q *readyQueue) Len() int { return len(q.jobs) }

// before says whether the job at i goes before the job at j.
func (q *readyQueue) before(i, j int) bool {
	if q.key == nil {
		return q.less(q.jobs[i], q.jobs[j])
	}
	a, b := &q.keys[i], &q.keys[j]
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

func (q *readyQueue) swap(i, j int) {
	q.jobs[i], q.jobs[j] = q.jobs[j], q.jobs[i]
	q.jobs[i].readyAt, q.jobs[j].readyAt = int32(i), int32(j)
	if q.key != nil {
		q.keys[i], q.keys[j] = q.keys[j], q.keys[i]
	}
}

// up and down keep a 4-ary heap: half the depth of a binary one, so half the
// jobs moved (each move writes the job's readyAt, a job's state the cache may
// not hold), for a few more comparisons of keys beside each other. The policy's
// order is total (lessView ends with arrival), so the first job is the same
// whatever the heap's shape.
func (q *readyQueue) up(j int) {
	for j > 0 {
		i := (j - 1) / 4 // parent
		if !q.before(j, i) {
			break
		}
		q.swap(i, j)
		j = i
	}
}

func (q *readyQueue) down(i0, n int) bool {
	i := i0
	for {
		c := 4*i + 1
		if c >= n || c < 0 {
			break
		}
		j := c // the first child of the four
		for k := c + 1; k < c+4 && k < n; k++ {
			if q.before(k, j) {
				j = k
			}
		}
		if !q.before(j, i) {
			break
		}
		q.swap(i, j)
		i = j
	}
	return i > i0
}

// add queues js.
func (q *readyQueue) add(js *jobState) {
	q.put(js)
	q.up(len(q.jobs) - 1)
}

// put queues js out of order, with its key: init must follow.
func (q *readyQueue) put(js *jobState) {
	js.readyAt = int32(len(q.jobs))
	q.jobs = append(q.jobs, js)
	if q.key != nil {
		js.readyKey = q.key(js.view)
		q.keys = append(q.keys, readyKey{js.view.Priority, js.readyKey, js.view.Seq})
	}
}

// init puts the jobs put in order.
func (q *readyQueue) init() {
	n := len(q.jobs)
	for i := (n - 2) / 4; i >= 0; i-- {
		q.down(i, n)
	}
}

// clear empties the queue.
func (q *readyQueue) clear() {
	for _, js := range q.jobs {
		js.readyAt = -1
	}
	clear(q.jobs)
	q.jobs, q.keys = q.jobs[:0], q.keys[:0]
}

// take removes js, which must be queued: the last job takes its place.
func (q *readyQueue) take(js *jobState) {
	i := int(js.readyAt)
	n := len(q.jobs) - 1
	if n != i {
		q.swap(i, n)
		if !q.down(i, n) {
			q.up(i)
		}
	}
	q.jobs[n] = nil
	q.jobs = q.jobs[:n]
	if q.key != nil {
		q.keys = q.keys[:n]
	}
	js.readyAt = -1
}

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
