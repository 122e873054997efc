package eventlog

import "slices"

// Async is a Sink that hands the events to its sink on a goroutine of its
// own, in order, a batch at a time: the producer (the simulator) and the
// consumers (the metrics, a log writer) then run on two cores, and the
// producer does not wait on the consumers' records of the jobs. An event's
// slices are copied, so the producer may reuse them once Emit returns; its
// turns (and their waits) are good during the sink's Emit only, as the
// simulator's own are, and the rest are the sink's to keep. It
// says what its sink takes (TurnsSink and the others), takes boundaries in
// one call (BoundarySink) and hands them on as EmitBoundary does. Close
// waits until the sink has taken every event: the sink may be read then,
// and not before. Its methods are for one goroutine.
type Async struct {
	sink Sink
	cur  *asyncBatch
	// full carries the batches to the consumer, free brings them back; done
	// is closed when the consumer stops (every batch taken, or its sink
	// stopped the goroutine: a test's Fatal).
	full, free        chan *asyncBatch
	done              chan struct{}
	turns, waits, one bool
	closed            bool
}

// asyncBatchLen is a batch's events: enough that handing a batch over costs
// little an event, few enough that a batch stays in the caches.
const asyncBatchLen = 128

// asyncBatches bounds the batches in flight: a producer faster than its
// sink waits for one to come back rather than piling up events. Their
// memory (about 60 KiB each) is the run's, not the jobs'.
const asyncBatches = 3

// asyncItem is an event, or a boundary (its job, handle, lane, time and GPU
// seconds in the event's fields).
type asyncItem struct {
	ev       Event
	boundary bool
}

// asyncBatch holds events and the copies of their turns.
type asyncBatch struct {
	items []asyncItem
	turns []Turn
	waits []Wait
}

// NewAsync starts handing events to s.
func NewAsync(s Sink) *Async {
	a := &Async{sink: s, full: make(chan *asyncBatch, asyncBatches), free: make(chan *asyncBatch, asyncBatches),
		done: make(chan struct{}), turns: TakesTurns(s), waits: NeedsTurnWaits(s), one: TakesTurnsAtOneOnly(s)}
	for range asyncBatches {
		a.free <- &asyncBatch{items: make([]asyncItem, 0, asyncBatchLen)}
	}
	a.cur = <-a.free
	go a.consume()
	return a
}

func (a *Async) consume() {
	defer close(a.done)
	for b := range a.full {
		for i := range b.items {
			it := &b.items[i]
			if it.boundary {
				EmitBoundary(a.sink, it.ev.Job, it.ev.Handle, it.ev.Lane, it.ev.T, it.ev.GPU)
			} else {
				a.sink.Emit(it.ev)
			}
		}
		clear(b.items) // the events' strings and pointers go with the batch
		b.items, b.turns, b.waits = b.items[:0], b.turns[:0], b.waits[:0]
		a.free <- b
	}
}

// Emit hands e on, its slices copied.
func (a *Async) Emit(e Event) {
	b := a.cur
	if len(e.Turns) > 0 {
		from := len(b.turns)
		for _, t := range e.Turns {
			if len(t.Waits) > 0 {
				w := len(b.waits)
				b.waits = append(b.waits, t.Waits...)
				t.Waits = b.waits[w:len(b.waits):len(b.waits)]
			}
			b.turns = append(b.turns, t)
		}
		e.Turns = b.turns[from:len(b.turns):len(b.turns)]
	}
	if e.Gang != nil {
		e.Gang = slices.Clone(e.Gang) // a sink may keep it (an admission's, once a job)
	}
	if e.Open != nil { // a daemon's snapshot: rare
		open := slices.Clone(e.Open)
		for i := range open {
			open[i].OnGPUs = slices.Clone(open[i].OnGPUs)
		}
		e.Open = open
	}
	if e.RunInfo != nil {
		ri := *e.RunInfo
		ri.Command = slices.Clone(ri.Command)
		e.RunInfo = &ri
	}
	a.put(asyncItem{ev: e})
}

// Boundary hands a boundary on (BoundarySink).
func (a *Async) Boundary(job string, handle, lane int, t, gpuS float64) {
	a.put(asyncItem{ev: Event{Job: job, Handle: handle, Lane: lane, T: t, GPU: gpuS}, boundary: true})
}

// put adds it to the current batch, and hands the batch on once it is full.
func (a *Async) put(it asyncItem) {
	a.cur.items = append(a.cur.items, it)
	if len(a.cur.items) == asyncBatchLen {
		a.handOn()
	}
}

// handOn sends the current batch and takes a free one. Where the consumer
// stopped early, what follows is dropped: its sink's goroutine ended (a
// failed test), and nobody reads it.
func (a *Async) handOn() {
	select {
	case a.full <- a.cur:
	case <-a.done:
	}
	select {
	case a.cur = <-a.free:
	case <-a.done:
		a.cur = &asyncBatch{items: a.cur.items[:0]}
	}
}

// Close hands on the last events and waits until the sink has taken them
// all. A second call does nothing.
func (a *Async) Close() {
	if a.closed {
		return
	}
	a.closed = true
	if len(a.cur.items) > 0 {
		select {
		case a.full <- a.cur:
		case <-a.done:
		}
	}
	close(a.full)
	<-a.done
}

// TakesTurns says whether its sink does (TurnsSink).
func (a *Async) TakesTurns() bool { return a.turns }

// NeedsTurnWaits says whether its sink does (TurnWaitsSink).
func (a *Async) NeedsTurnWaits() bool { return a.waits }

// TakesTurnsAtOneOnly says whether its sink does (TurnsAtOneSink).
func (a *Async) TakesTurnsAtOneOnly() bool { return a.one }
