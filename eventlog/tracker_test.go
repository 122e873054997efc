package eventlog

import (
	"reflect"
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
