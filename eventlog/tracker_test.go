package eventlog

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
)

func TestTrackerFollowsJobs(t *testing.T) {
	tr := NewTracker()
	var last *JobState
	for _, e := range []Event{
		{Kind: Run},
		{T: 1, Kind: Arrive, Job: "a", StartupS: 2},
		{T: 1, Kind: Admit, Job: "a", Lane: 0},
		{T: 4, Kind: IterStart, Job: "a"},
		{T: 5, Kind: IterEnd, Job: "a", GPU: 1},
		{T: 5, Kind: IterStart, Job: "a"},
		{T: 6, Kind: Run, Reason: "restart"}, // the running iteration ends with the crash
		{T: 7, Kind: IterStart, Job: "a"},
		{T: 8, Kind: IterEnd, Job: "a", GPU: 1},
		{T: 8, Kind: Finish, Job: "a"},
	} {
		j, _, err := tr.Step(e)
		if err != nil {
			t.Fatal(err)
		}
		if j != nil {
			last = j
		}
	}
	want := JobState{ID: "a", ArrivalS: 1, StartupS: 2, Admitted: true, Started: true, ServiceS: 2, GPUS: 2, Ended: true, EndS: 8, GPUs: []int{0}}
	if !reflect.DeepEqual(*last, want) {
		t.Errorf("state %+v, want %+v", *last, want)
	}
	if tr.BusyS != 3 || tr.GPUs != 1 || tr.GPUBusyS[0] != 3 || tr.Running != 0 || tr.Runs != 2 || tr.Arrivals != 1 || len(tr.Unended()) != 0 {
		t.Errorf("busy %v running %d runs %d arrivals %d unended %v", tr.BusyS, tr.Running, tr.Runs, tr.Arrivals, tr.Unended())
	}
	if _, _, err := tr.Step(Event{Kind: IterStart, Job: "x"}); err == nil {
		t.Error("an event for a job that never arrived must fail")
	}
	if _, _, err := tr.Step(Event{T: 9, Kind: Arrive, Job: "a"}); err != nil {
		t.Errorf("a name may come again once its job ended: %v", err)
	}
	if _, _, err := tr.Step(Event{T: 9, Kind: Arrive, Job: "a"}); err == nil {
		t.Error("a job that arrives again while it runs must fail")
	}
}

func TestDecisionEvents(t *testing.T) {
	now := 1500 * time.Millisecond
	admit := AdmitEvent(now, core.Decision{Action: core.Admit, Job: "a", Lane: 2, LaneSize: 300}, true, "recovered")
	if !reflect.DeepEqual(admit, Event{T: 1.5, Kind: Admit, Job: "a", Lane: 2, LaneMiB: 300, HoldsGPU: true, Reason: "recovered"}) {
		t.Errorf("admit %+v", admit)
	}
	start := StartEvent(now, core.Decision{Action: core.Start, Job: "a", Lane: 2, Previous: "b"}, 40)
	if !reflect.DeepEqual(start, Event{T: 1.5, Kind: IterStart, Job: "a", Lane: 2, Prev: "b", CopyMiB: 40}) {
		t.Errorf("start %+v", start)
	}
	lanes := []core.LaneInfo{{ID: 2, Size: 300, Persistent: 30, MaxEphemeral: 50, Jobs: 2, BiggestPersistent: 20, BiggestEphemeral: 50}}
	if m := MemoryEvent(now, lanes, 2, false); !reflect.DeepEqual(m, Event{T: 1.5, Kind: Memory, Lane: 2, LaneMiB: 300, PersistentMiB: 30, EphemeralMiB: 50, Jobs: 2}) {
		t.Errorf("memory %+v", m)
	}
	if m := MemoryEvent(now, lanes, 2, true); m.PersistentMiB != 20 || m.EphemeralMiB != 50 || m.Jobs != 2 {
		t.Errorf("memory with one job resident %+v", m)
	}
	if m := MemoryEvent(now, lanes, 3, false); !reflect.DeepEqual(m, Event{T: 1.5, Kind: Memory, Lane: 3}) {
		t.Errorf("a closed lane holds nothing: %+v", m)
	}
}

func TestGangAdmitRoundTrips(t *testing.T) {
	ev := AdmitEvent(time.Second, core.Decision{Action: core.Admit, Job: "g", Lane: 4, LaneSize: 300, GPUs: []int{1, 3}}, false, "")
	if ev.GPUIndex != 1 || !reflect.DeepEqual(ev.Gang, []int{1, 3}) {
		t.Fatalf("gang admit %+v", ev)
	}
	line := Append(nil, ev)
	if want := `{"t":1,"ev":"admit","job":"g","lane":4,"lane_mib":300,"gpu":1,"gang":[1,3]}`; string(line) != want {
		t.Fatalf("encoded %s, want %s", line, want)
	}
	back, ok, err := decodeLine(line, "log", 1)
	if err != nil || !ok || !reflect.DeepEqual(back, ev) {
		t.Fatalf("decoded %+v (%v), want %+v", back, err, ev)
	}
}

// A stretch of turns with waits round-trips through a log line, and one whose
// waits cannot be (a count below 1, a wait below 0, more waits than
// iterations, an end after the record) is refused with the job named.
func TestTurnWaitsRoundTripAndAreChecked(t *testing.T) {
	head := []Event{
		{Kind: Run},
		{T: 0, Kind: Arrive, Job: "a"},
		{T: 0, Kind: Arrive, Job: "b"},
		{T: 0, Kind: Admit, Job: "a", Lane: 0},
		{T: 0, Kind: Admit, Job: "b", Lane: 0},
		{T: 1, Kind: IterStart, Job: "a"},
	}
	good := Event{T: 3, Kind: Stretch, Job: "a", Lane: 0, Turns: []Turn{
		{Job: "a", Iterations: 2, GPU: 1.5, Waits: []Wait{{S: 0.5, N: 1}}, EndS: 2.5},
		{Job: "b", Iterations: 1, GPU: 0.5, Waits: []Wait{{S: 2, N: 1}}, EndS: 3},
	}}
	var got Event
	if err := Read(strings.NewReader(string(Append(nil, good))+"\n"), "turns.jsonl", func(e Event) error { got = e; return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, good) {
		t.Fatalf("read back %+v, want %+v", got, good)
	}
	for _, bad := range []func(*Event){
		func(e *Event) { e.Turns[1].Waits[0].N = 0 },
		func(e *Event) { e.Turns[1].Waits[0].S = -1 },
		func(e *Event) { e.Turns[1].EndS = 4 },
		func(e *Event) { e.Turns[1].Waits[0].N = 2 }, // more than its one iteration
		func(e *Event) { e.Turns[1].Waits[0].N = 1 << 62 },
	} {
		tr := NewTracker()
		for _, e := range head {
			if _, _, err := tr.Step(e); err != nil {
				t.Fatal(err)
			}
		}
		e := good
		e.Turns = []Turn{good.Turns[0], good.Turns[1]}
		e.Turns[1].Waits = []Wait{good.Turns[1].Waits[0]}
		bad(&e)
		if _, _, err := tr.Step(e); err == nil || !strings.Contains(err.Error(), `"b"`) {
			t.Errorf("%+v: error %v, want one naming job b", e.Turns[1], err)
		}
	}
}
