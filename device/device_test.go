package device

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

func TestPresetSpeedsArePositiveAndOrdered(t *testing.T) {
	speed := map[string]float64{}
	for _, name := range Names() {
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
	// no faster than the 80 GB one; the two V100s alike; the estimated cards
	// between their anchors as their comments reason: t4 < p100, l4 < a10 <
	// a100-40g, l40s < a100-40g (bandwidth), h100-pcie < h100.
	if !(speed["p100"] < speed["v100"] && speed["v100"] < speed["a100"] && speed["a100"] <= speed["h100"] &&
		speed["h100"] <= speed["h200"] && speed["v100"] < speed["a100-40g"] && speed["a100-40g"] <= speed["a100"] &&
		speed["v100-16g"] == speed["v100"] && speed["t4"] < speed["p100"] && speed["l4"] < speed["a10"] &&
		speed["a10"] < speed["a100-40g"] && speed["l40s"] < speed["a100-40g"] && speed["h100-pcie"] < speed["h100"]) {
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
	if got := d.DeclaredS(workload.Job{Iterations: 10, Profile: &p, DeclaredS: 7}); got != 7 {
		t.Errorf("an explicit declared time %v changed to %v", 7, got)
	}
}

func TestEmulateScalesIterationsOnly(t *testing.T) {
	p, _ := workload.Default().Lookup("vae", 64, workload.Train)
	tr := &workload.Trace{Name: "x", Jobs: []workload.Job{{ID: "a", Iterations: 10, Profile: &p}, {ID: "b", Iterations: 5, DeclaredS: 9, Profile: &p}}}
	got := Device{Speed: 4}.Emulate(tr)
	if tr.Jobs[0].Profile.IterS != p.IterS {
		t.Fatal("Emulate changed its input")
	}
	a, b := got.Jobs[0], got.Jobs[1]
	if a.Profile.IterS != p.IterS/4 || a.Profile.StartupS != p.StartupS || math.Abs(a.DeclaredS-10*p.IterS/4) > 1e-12 || b.DeclaredS != 9 {
		t.Errorf("emulated jobs %+v, %+v", a, b)
	}
}

func TestNamesAreTheRegistryInOrder(t *testing.T) {
	names, specs := Names(), Specs()
	if len(names) != len(specs) || len(names) == 0 {
		t.Fatalf("Names() = %v, want the %d registered presets", names, len(specs))
	}
	for i, s := range specs {
		if names[i] != s.Key || (i > 0 && specs[i-1].Order >= s.Order) {
			t.Errorf("Names() = %v: want the keys in their explicit order", names)
		}
		for _, n := range []string{strings.ToUpper(s.Key), s.Device.Name, strings.ToLower(s.Device.Name)} {
			d, err := Preset(n)
			if err != nil || d.Name != s.Device.Name || d.SliceS <= 0 || d.ContextSwitchS <= 0 {
				t.Errorf("Preset(%q) = %+v, %v: want the preset with the time-slicing defaults", n, d, err)
			}
		}
		// A preset's own name matches it back, as a trace's or a log's would.
		if got, err := Match(s.Device.Name, 0); got != s.Key {
			t.Errorf("Match(%q) = %q, %v: want %q", s.Device.Name, got, err, s.Key)
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

// smiNames are GPU names as nvidia-smi --query-gpu=name,memory.total writes them
// (memory in MiB), and what Match makes of each: a preset's key, or "" for a
// refusal.
var smiNames = []struct {
	name   string
	memMiB float64
	want   string
}{
	{"Tesla P100-PCIE-16GB", 16280, "p100"},
	{"Tesla P100-SXM2-16GB", 16280, "p100"},
	{"Tesla P100-PCIE-12GB", 12198, ""}, // no 12 GB preset
	{"Tesla V100-SXM2-16GB", 16160, "v100-16g"},
	{"Tesla V100-PCIE-16GB", 16160, "v100-16g"},
	{"Tesla V100-FHHL-16GB", 16160, "v100-16g"},
	{"Tesla V100-SXM2-32GB", 32510, "v100"},
	{"Tesla V100-PCIE-32GB", 32510, "v100"},
	{"Tesla V100-SXM3-32GB", 32510, "v100"},
	{"Tesla V100S-PCIE-32GB", 32510, ""}, // another model
	{"Tesla T4", 15360, "t4"},
	{"NVIDIA T4", 15360, "t4"},
	{"NVIDIA A10", 23028, "a10"},
	{"NVIDIA A10G", 23028, ""}, // AWS's, no datasheet
	{"A100-SXM4-40GB", 40536, "a100-40g"},
	{"NVIDIA A100-SXM4-40GB", 40960, "a100-40g"},
	{"NVIDIA A100-PCIE-40GB", 40960, "a100-40g"},
	{"NVIDIA A100-SXM4-80GB", 81920, "a100"},
	{"NVIDIA A100 80GB PCIe", 81920, "a100"},
	{"NVIDIA L4", 23034, "l4"},
	{"NVIDIA L40S", 46068, "l40s"},
	{"NVIDIA L40", 46068, ""},
	{"NVIDIA H100 80GB HBM3", 81559, "h100"},
	{"NVIDIA H100 PCIe", 81559, "h100-pcie"},
	{"NVIDIA H100 NVL", 95830, ""}, // a form no preset has
	{"NVIDIA H200", 143771, "h200"},
	{"NVIDIA H200 NVL", 143771, ""},
	{"NVIDIA GH200 480GB", 97871, ""},
	{"NVIDIA A30", 24576, ""},
	{"NVIDIA A40", 46068, ""},
	{"NVIDIA GeForce RTX 4090", 24564, ""},
	{"Tesla K80", 11441, ""},
}

func TestMatchNvidiaSMINames(t *testing.T) {
	for _, c := range smiNames {
		got, err := Match(c.name, c.memMiB)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("Match(%q, %v) = %q, %v: want %q", c.name, c.memMiB, got, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), c.name) {
			t.Errorf("Match(%q): error %q does not name the GPU", c.name, err)
		}
	}
}

func TestMatchTraceNamesAndMemory(t *testing.T) {
	for _, c := range []struct {
		name   string
		memMiB float64
		want   string
	}{
		{"V100M16", 0, "v100-16g"}, {"V100M32", 0, "v100"}, {"V100", 0, "v100"}, {"V100", 16384, "v100-16g"},
		{"A100", 0, "a100"}, {"A100", 40960, "a100-40g"}, {"A100-SXM4-40GB", 81920, "a100-40g"}, // the name's own memory first
		{"H100", 0, "h100"}, {"P100", 0, "p100"}, {"T4", 0, "t4"}, {"l40s", 0, "l40s"},
		{"A100", 24576, ""}, {"MISC", 0, ""}, {"G2", 0, ""}, {"", 0, ""}, {"A10G", 0, ""},
	} {
		if got, err := Match(c.name, c.memMiB); got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("Match(%q, %v) = %q, %v: want %q", c.name, c.memMiB, got, err, c.want)
		}
	}
	_, err := Match("NVIDIA GeForce RTX 4090", 24564)
	if err == nil || !strings.Contains(err.Error(), strings.Join(Models(), ", ")) {
		t.Errorf("an unknown model's error %v should list the models known, %v", err, Models())
	}
	_, err = Match("Tesla P100-PCIE-12GB", 0)
	if err == nil || !strings.Contains(err.Error(), "p100: 16 GiB") {
		t.Errorf("a known model of unknown memory: error %v should give the model's presets", err)
	}
}

func TestDetectNeverTakesAnUnknownGPUForAP100(t *testing.T) {
	d, err := Detect("NVIDIA A100 80GB PCIe", 81920)
	if err != nil || d.Name != "A100-80GB" || d.Speed != 3 {
		t.Errorf("Detect(A100 80GB PCIe) = %+v, %v: want the a100 preset", d, err)
	}
	d, err = Detect("NVIDIA GeForce RTX 4090", 24564)
	if err == nil || !strings.Contains(err.Error(), "speed 1") {
		t.Errorf("an unknown GPU: error %v, want a warning that says it runs at speed 1", err)
	}
	if d.Name != "NVIDIA GeForce RTX 4090" || d.TotalMiB != 24564 || d.CapacityMiB != 24564.0*7/8 || d.Speed != 1 || d.SliceS <= 0 {
		t.Errorf("an unknown GPU: %+v, want its own name and memory at speed 1", d)
	}
}

func TestRegisterRefusesClashes(t *testing.T) {
	for _, s := range []Spec{
		{Key: "p100", Order: 1000, Model: "x", Device: Device{TotalMiB: 1}},                      // key taken
		{Key: "x", Order: 10, Model: "x", Device: Device{TotalMiB: 1}},                           // order taken
		{Key: "x", Order: 1000, Model: "t4", Device: Device{TotalMiB: 16 << 10}},                 // same card
		{Key: "x", Order: 1000, Model: "v100", Default: true, Device: Device{TotalMiB: 8 << 10}}, // second default
		{Key: "X", Order: 1000, Model: "x", Device: Device{TotalMiB: 1}},                         // not lowercase
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", s)
				}
			}()
			Register(s)
		}()
	}
	if len(Specs()) != len(Names()) || slices.Contains(Names(), "x") {
		t.Errorf("a refused preset was registered: %v", Names())
	}
}

func TestParseSMI(t *testing.T) {
	gpus, err := ParseSMI("0, NVIDIA A100 80GB PCIe, 81920\n1, Tesla T4, 15360\n\n")
	if err != nil || !slices.Equal(gpus, []SMIGPU{{0, "NVIDIA A100 80GB PCIe", 81920}, {1, "Tesla T4", 15360}}) {
		t.Errorf("ParseSMI = %+v, %v", gpus, err)
	}
	for _, bad := range []string{"", "0, NVIDIA A100", "x, A100, 81920", "0, A100, [N/A]", "0, , 1024"} {
		if _, err := ParseSMI(bad); err == nil {
			t.Errorf("ParseSMI(%q): want an error", bad)
		}
	}
}
