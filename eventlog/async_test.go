package eventlog

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// recorder keeps what it is given, boundaries in one call or not.
type recorder struct {
	got   []string
	turns bool
}

func (r *recorder) Emit(e Event) {
	ri := e.RunInfo
	e.RunInfo = nil // by its fields, not its address
	r.got = append(r.got, fmt.Sprintf("%+v %+v", e, ri))
}

func (r *recorder) TakesTurns() bool     { return r.turns }
func (r *recorder) NeedsTurnWaits() bool { return r.turns }

// boundaryRecorder also takes boundaries in one call.
type boundaryRecorder struct{ recorder }

func (r *boundaryRecorder) Boundary(job string, handle, lane int, t, gpuS float64) {
	r.got = append(r.got, fmt.Sprintf("boundary %s %d %d %v %v", job, handle, lane, t, gpuS))
}

// feed emits n events and boundaries to s, reusing its slices between calls
// as the simulator does, and scribbling over them after each call.
func feed(s Sink, n int) {
	turns := make([]Turn, 2)
	waits := make([]Wait, 3)
	gang := make([]int, 2)
	cmd := []string{"salus", "serve"}
	open := []SessionState{{Job: "s", OnGPUs: []int{1, 2}}}
	for i := range n {
		for k := range turns {
			waits[k] = Wait{S: float64(i), N: k + 1}
			turns[k] = Turn{Job: fmt.Sprint("j", i, k), Iterations: i + k, Waits: waits[k : k+2], EndS: float64(i)}
		}
		gang[0], gang[1] = i, i+1
		open[0].OnGPUs[0] = i
		ev := Event{T: float64(i), Kind: Stretch, Job: fmt.Sprint("j", i), Turns: turns, Gang: gang}
		if i%97 == 0 {
			ev.Open, ev.RunInfo = open, &RunInfo{ID: fmt.Sprint(i), Command: cmd}
		}
		s.Emit(ev)
		if i%3 == 0 {
			EmitBoundary(s, fmt.Sprint("b", i), i, 2, float64(i), 0.5)
		}
		for k := range turns {
			turns[k] = Turn{Job: "scribbled"}
			waits[k] = Wait{S: -1}
		}
		gang[0], cmd[1], open[0].OnGPUs[0] = -1, "scribbled", -1
	}
}

// Async hands every event and boundary on in order, as the sink would
// have taken them itself, with their slices as they were when emitted,
// through many batches; and says what its sink takes.
func TestAsyncHandsOnWhatItIsGiven(t *testing.T) {
	for _, one := range []bool{true, false} {
		var direct, via Sink
		if one {
			direct, via = &boundaryRecorder{recorder{turns: true}}, &boundaryRecorder{recorder{turns: true}}
		} else {
			direct, via = &recorder{}, &recorder{}
		}
		want := func() []string { feed(direct, 1000); return got(direct) }()
		a := NewAsync(via)
		if TakesTurns(a) != TakesTurns(via) || NeedsTurnWaits(a) != NeedsTurnWaits(via) || TakesTurnsAtOneOnly(a) != TakesTurnsAtOneOnly(via) {
			t.Fatalf("boundaries in one call %v: Async says its sink takes turns %v, waits %v; it does %v, %v", one,
				TakesTurns(a), NeedsTurnWaits(a), TakesTurns(via), NeedsTurnWaits(via))
		}
		feed(a, 1000)
		a.Close()
		a.Close()
		if g := got(via); !reflect.DeepEqual(g, want) {
			t.Fatalf("boundaries in one call %v: %d records through Async, %d direct; first difference %q", one, len(g), len(want), firstDiff(g, want))
		}
	}
}

func got(s Sink) []string {
	if b, ok := s.(*boundaryRecorder); ok {
		return b.got
	}
	return s.(*recorder).got
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " / " + b[i]
		}
	}
	return "(one is longer)"
}

// Every field of an Event that refers to memory the producer may reuse is
// one Async copies: a new one must be copied there too.
func TestAsyncCopiesEveryReference(t *testing.T) {
	copied := map[string]bool{"Gang": true, "Open": true, "Turns": true, "RunInfo": true}
	for f := range reflect.TypeFor[Event]().Fields() {
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Pointer, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
			if !copied[f.Name] {
				t.Errorf("Event.%s (%s) is not copied by Async.Emit", f.Name, f.Type)
			}
		}
	}
}

// stopper ends its goroutine at its first event, as a test's Fatal does.
type stopper struct{}

func (stopper) Emit(Event) { runtime.Goexit() }

// A sink that ends the consumer's goroutine stops nobody: the events that
// follow are dropped and Close returns.
func TestAsyncOutlivesASinkThatStops(t *testing.T) {
	a := NewAsync(stopper{})
	feed(a, 2000)
	a.Close()
}

// keeper keeps each event's gang, as the tracker keeps an admission's.
type keeper struct{ gangs [][]int }

func (k *keeper) Emit(e Event) {
	if e.Gang != nil {
		k.gangs = append(k.gangs, e.Gang)
	}
}

// A sink may keep an event's gang: it is the sink's, not a batch's, and
// stays as it was emitted after the batch is reused.
func TestAsyncGangsAreTheSinks(t *testing.T) {
	k := &keeper{}
	a := NewAsync(k)
	feed(a, 1000)
	a.Close()
	if len(k.gangs) != 1000 {
		t.Fatalf("%d gangs kept, want 1000", len(k.gangs))
	}
	for i, g := range k.gangs {
		if len(g) != 2 || g[0] != i || g[1] != i+1 {
			t.Fatalf("gang %d kept as %v, want [%d %d]", i, g, i, i+1)
		}
	}
}
