package device

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

func TestPresetSpeedsArePositiveAndOrdered(t *testing.T) {
	speed := map[string]float64{}
	for name := range Presets {
		d, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if !(d.Speed > 0) {
			t.Errorf("%s: speed %v, want > 0", name, d.Speed)
		}
		speed[name] = d.Speed
	}
	if speed["p100"] != 1 {
		t.Errorf("p100 speed %v: the profiles' own card must be 1", speed["p100"])
	}
	// The documented order: p100 < v100 < a100 <= h100 <= h200, and the 40 GB A100
	// no faster than the 80 GB one.
	if !(speed["p100"] < speed["v100"] && speed["v100"] < speed["a100"] && speed["a100"] <= speed["h100"] &&
		speed["h100"] <= speed["h200"] && speed["v100"] < speed["a100-40g"] && speed["a100-40g"] <= speed["a100"]) {
		t.Errorf("speeds %v out of the documented order", speed)
	}
}

func TestIterSDividesBySpeed(t *testing.T) {
	for _, c := range []struct{ speed, in, want float64 }{{1, 0.3, 0.3}, {2, 0.3, 0.15}, {0, 0.3, 0.3}, {-1, 0.3, 0.3}, {4, 1, 0.25}} {
		if got := (Device{Speed: c.speed}).IterS(c.in); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("speed %v: IterS(%v) = %v, want %v", c.speed, c.in, got, c.want)
		}
	}
	p, _ := workload.Default().Lookup("resnet50", 50, workload.Train)
	d := Device{Speed: 2}
	if got, want := d.StandaloneS(p, 10), p.StartupS+10*p.IterS/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("standalone %v, want start-up unscaled + iterations halved = %v", got, want)
	}
	if got := d.DeclaredS(workload.Job{Iterations: 10, Profile: p, DeclaredS: 7}); got != 7 {
		t.Errorf("an explicit declared time %v changed to %v", 7, got)
	}
}

func TestEmulateScalesIterationsOnly(t *testing.T) {
	p, _ := workload.Default().Lookup("vae", 64, workload.Train)
	tr := &workload.Trace{Name: "x", Jobs: []workload.Job{{ID: "a", Iterations: 10, Profile: p}, {ID: "b", Iterations: 5, DeclaredS: 9, Profile: p}}}
	got := Device{Speed: 4}.Emulate(tr)
	if tr.Jobs[0].Profile.IterS != p.IterS {
		t.Fatal("Emulate changed its input")
	}
	a, b := got.Jobs[0], got.Jobs[1]
	if a.Profile.IterS != p.IterS/4 || a.Profile.StartupS != p.StartupS || math.Abs(a.DeclaredS-10*p.IterS/4) > 1e-12 || b.DeclaredS != 9 {
		t.Errorf("emulated jobs %+v, %+v", a, b)
	}
}

func TestNamesArePresetsAndUnknownNamesThem(t *testing.T) {
	names := Names()
	if len(names) != len(Presets) || !sort.StringsAreSorted(names) {
		t.Fatalf("Names() = %v, want the %d presets sorted", names, len(Presets))
	}
	for _, n := range names {
		d, err := Preset(strings.ToUpper(n))
		if err != nil || d.Name != Presets[n].Name || d.SliceS <= 0 || d.ContextSwitchS <= 0 {
			t.Errorf("Preset(%q) = %+v, %v: want the preset with the time-slicing defaults", n, d, err)
		}
	}
	_, err := Preset("tpu")
	if err == nil || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
		t.Errorf("unknown preset: error %v, want one that lists %v", err, names)
	}
	if d := DefaultDevice(); d.Name != "P100" || d.Speed != 1 {
		t.Errorf("default device %+v, want the P100 at speed 1", d)
	}
}
