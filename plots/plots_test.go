package plots

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

func TestRecorderStretchesAndSlots(t *testing.T) {
	r := NewRecorder()
	for _, e := range []eventlog.Event{
		{Kind: eventlog.Run, Policy: "pack", Mode: "salus", CapacityMiB: 100},
		{T: 0, Kind: eventlog.Arrive, Job: "a", StartupS: 1},
		{T: 0, Kind: eventlog.Admit, Job: "a", Lane: 7},
		{T: 0, Kind: eventlog.Memory, Lane: 7, PersistentMiB: 10, EphemeralMiB: 20, LaneMiB: 40},
		{T: 1, Kind: eventlog.Arrive, Job: "b"},
		{T: 1, Kind: eventlog.Memory, Lane: 9, PersistentMiB: 5, EphemeralMiB: 5, LaneMiB: 15},
		{T: 1, Kind: eventlog.IterStart, Job: "a", Lane: 7},
		{T: 2, Kind: eventlog.IterEnd, Job: "a", Lane: 7},
		{T: 2, Kind: eventlog.IterStart, Job: "a", Lane: 7}, // back to back: same stretch
		{T: 3, Kind: eventlog.IterEnd, Job: "a", Lane: 7},
		{T: 3, Kind: eventlog.IterStart, Job: "b", Lane: 9},
		{T: 3.5, Kind: eventlog.IterEnd, Job: "b", Lane: 9},
		{T: 4, Kind: eventlog.IterStart, Job: "a", Lane: 7},
		{T: 5, Kind: eventlog.IterEnd, Job: "a", Lane: 7},
		{T: 5, Kind: eventlog.Finish, Job: "a"},
		{T: 5, Kind: eventlog.Memory, Lane: 7},
		{T: 6, Kind: eventlog.Finish, Job: "b"},
	} {
		r.Emit(e)
	}
	l, err := r.Log()
	if err != nil {
		t.Fatal(err)
	}
	a := l.Jobs[0]
	if len(a.Stretches) != 2 || a.Stretches[0] != (Stretch{FromS: 1, ToS: 3, Slot: 0}) || a.Stretches[1].FromS != 4 {
		t.Errorf("stretches of a: %+v", a.Stretches)
	}
	if l.Jobs[1].Stretches[0].Slot != 1 || l.Slots != 2 {
		t.Errorf("lanes open together must get different slots: %+v, %d slots", l.Jobs[1].Stretches, l.Slots)
	}
	if got := Merge(a.Stretches, 1.5); len(got) != 1 || got[0].ToS != 5 {
		t.Errorf("merge across a 1 s gap: %+v", got)
	}
	if jcts := l.JCTs(); len(jcts) != 2 || jcts[0] != 5 || jcts[1] != 5 {
		t.Errorf("JCTs %v", jcts)
	}
	dir := t.TempDir()
	for _, f := range []Figure{Timeline(l, "t", "timeline"), Memory(l, "m", "memory"),
		CDF("c", "cdf", "min", []Series{{Label: "pack", Values: l.JCTs()}}),
		Lines("l", "lines", "x", "y", []Curve{{Label: "p", X: []float64{1, 2}, Y: []float64{3, 4}, Err: []float64{1, 0.5}}})} {
		files, err := f.Save(dir)
		if err != nil || len(files) != 2 {
			t.Fatalf("%s: %v %v", f.Name, files, err)
		}
		for _, p := range files {
			if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
				t.Errorf("%s empty", filepath.Base(p))
			}
		}
	}
}
