package workload

import (
	"strings"
	"testing"
)

const ownYAML = `# our models
profiles:
  - model: transformer
    batch_size: 32
    iter_s: 0.21
    startup_s: 9
    persistent_mib: 1900
    ephemeral_mib: 5200
    demand: 0.9
    source: our A100 runs
  - model: resnet50
    batch_size: 50
    peak_mib: 6000
    persistent_mib: 1000
    iter_s: 0.5
`

func TestCatalogFileAddsAndOverrides(t *testing.T) {
	before := len(Default().Profiles())
	orig, err := Default().Lookup("resnet50", 50, Train)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCatalogFile([]byte(ownYAML), "own.yaml", Default())
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Lookup("transformer", 32, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.IterS != 0.21 || p.StartupS != 9 || p.PersistentMiB != 1900 || p.EphemeralMiB != 5200 || p.PeakMiB != 7100 || p.Demand != 0.9 || p.Kind != Train {
		t.Errorf("transformer profile %+v", p)
	}
	if !strings.Contains(p.Source.Iter, "own.yaml, line 3: our A100 runs") {
		t.Errorf("source %q does not name the file, line and the file's source", p.Source.Iter)
	}
	r, _ := c.Lookup("resnet50", 50, Train)
	if r.IterS != 0.5 || r.EphemeralMiB != 5000 || r.Demand != 1 {
		t.Errorf("override: %+v", r)
	}
	if !c.FromFile(r.Key()) || !c.FromFile(p.Key()) || c.FromFile("resnet50/25/train") {
		t.Error("FromFile marks the wrong profiles")
	}
	if len(r.Lengths) == 0 || r.Lengths["10min"] != orig.Lengths["10min"] {
		t.Errorf("the override lost the generated trace's lengths: %v", r.Lengths)
	}
	// The generated trace keeps its mix: the override is in it, the new model is not.
	measured := c.Measured()
	if len(measured) != len(Default().Measured()) {
		t.Errorf("%d measured profiles, want %d", len(measured), len(Default().Measured()))
	}
	for _, m := range measured {
		if m.Model == "transformer" {
			t.Error("a model the file added is in the generated trace's mix")
		}
	}
	if got := len(c.Profiles()); got != before+1 {
		t.Errorf("merged catalog has %d profiles, want %d", got, before+1)
	}
	// The default catalog is untouched.
	if _, err := Default().Lookup("transformer", 32, Train); err == nil {
		t.Error("the file's profile leaked into the default catalog")
	}
	if again, _ := Default().Lookup("resnet50", 50, Train); again.IterS != orig.IterS || Default().FromFile(again.Key()) {
		t.Error("the override changed the default catalog")
	}
}

func TestCatalogFileJSON(t *testing.T) {
	data := `{"profiles": [
  {"model": "bert", "batch_size": 8, "kind": "infer", "iter_s": 0.02, "persistent_mib": 400, "ephemeral_mib": 100},
  {"model": "bert", "batch_size": 8, "iter_s": "fast", "persistent_mib": 400, "ephemeral_mib": 100}
]}`
	_, err := ParseCatalogFile([]byte(data), "c.json", nil)
	if err == nil || !strings.Contains(err.Error(), `c.json:3: field "iter_s"`) {
		t.Fatalf("error %v, want one naming c.json line 3 field iter_s", err)
	}
	c, err := ParseCatalogFile([]byte(strings.Replace(data, `"fast"`, "0.06", 1)), "c.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Lookup("bert", 8, Infer); err != nil || p.IterS != 0.02 {
		t.Errorf("bert infer: %+v %v", p, err)
	}
}

func TestCatalogFileErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"profiles:\n  - model: a\n    batch_size: 1\n    iter_s: 0.1\n    persistent_mib: 10\n", `x.yaml:2: field "ephemeral_mib": missing`},
		{"profiles:\n  - model: a\n    batch_size: 1\n    iter_s: -1\n    persistent_mib: 10\n    ephemeral_mib: 1\n", `x.yaml:2: field "iter_s": -1 is negative`},
		{"profiles:\n  - model: a\n    batch_size: 1\n    iter_s: 0.1\n    persistent_mib: 10\n    ephemeral_mib: 1\n    demand: 1.5\n", `field "demand"`},
		{"profiles:\n  - model: a\n    batch: 1\n", `x.yaml:3: field "batch": unknown key`},
		{"profiles:\n  - model: a\n    batch_size: two\n", `x.yaml:3: field "batch_size": "two" is not a whole number`},
		{"profiles:\n  - model: a\n    batch_size: 1\n    iter_s: 0.1\n    persistent_mib: 10\n    peak_mib: 5\n", `field "peak_mib": 5 is below persistent_mib`},
		{"models: []\n", `x.yaml:1: field "models": unknown key`},
		{"profiles: []\n", `field "profiles": no profiles`},
		{"profiles:\n  - model: a\n    batch_size: 1\n    iter_s: 0.1\n    persistent_mib: 10\n    ephemeral_mib: 1\n  - model: a\n    batch_size: 1\n    iter_s: 0.2\n    persistent_mib: 10\n    ephemeral_mib: 1\n",
			"x.yaml:7: field \"model\": a/1/train is given twice (first on line 2)"},
		{"profiles:\n  - model: a\n    batch_size: 1\n    kind: eval\n", `field "kind": "eval": use train or infer`},
	} {
		_, err := ParseCatalogFile([]byte(tc.data), "x.yaml", Default())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestTraceUsesCatalogFileModel(t *testing.T) {
	c, err := ParseCatalogFile([]byte(ownYAML), "own.yaml", Default())
	if err != nil {
		t.Fatal(err)
	}
	tr := "job_id,model,batch_size,iterations,arrival_s\nj1,transformer,32,100,0\n"
	got, err := ParseTrace([]byte(tr), "t.csv", "t", c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs[0].Profile.IterS != 0.21 {
		t.Errorf("iter_s %v, want 0.21", got.Jobs[0].Profile.IterS)
	}
	if _, err := ParseTrace([]byte(tr), "t.csv", "t", Default()); err == nil || !strings.Contains(err.Error(), "--catalog") {
		t.Errorf("without the file: %v, want an error naming --catalog", err)
	}
}
