package exprpolicy

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
)

// A typo in the order is refused at load, with the file, the line and column
// of the error in the file, the field and what an order may read.
func TestTypoRefusedWithItsPosition(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string
	}{
		{"literal block", "name: mine\norder: |\n  memory *\n    atained\n", []string{"mine.yaml:4:5:", "field order", "undeclared reference to 'atained'", "attained", "\n |     atained\n | ....^"}},
		{"one line", "name: mine\norder: memory * atained\n", []string{"mine.yaml:2:17:", "'atained'"}},
		{"quoted", "name: mine\norder: \"memory * atained\"\n", []string{"mine.yaml:2:18:", "'atained'"}},
		{"syntax", "name: mine\norder: |\n  memory * (remaining\n", []string{"mine.yaml:", "field order", "missing ')'"}},
		{"int arithmetic", "name: mine\norder: attained * 2\n", []string{"mine.yaml:2:", "write numbers with a point"}},
		{"a string", "name: mine\norder: model\n", []string{"mine.yaml:2:", "gives a string"}},
		{"unknown field", "name: mine\nordr: memory\n", []string{"mine.yaml:2:", `unknown field "ordr"`}},
		{"no order", "name: mine\n", []string{"mine.yaml:1:", "field order is missing"}},
		{"no name", "order: memory\n", []string{"mine.yaml:1:", "field name is missing"}},
		{"bad name", "name: my,policy\norder: memory\n", []string{"mine.yaml:1:", "field name"}},
		{"param a field", "name: mine\nparams:\n  memory: 3\norder: memory\n", []string{"mine.yaml:3:", "params.memory", "job's field"}},
		{"param a map", "name: mine\nparams:\n  x: {a: 1}\norder: memory\n", []string{"mine.yaml:3:", "params.x"}},
		{"bad yaml", "name: [mine\n", []string{"mine.yaml:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("mine.yaml", []byte(c.file))
			if err == nil {
				t.Fatalf("%q loaded", c.file)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
		})
	}
}

// What an order reads decides what the policy declares to the core.
func TestReadsDecideDeclarations(t *testing.T) {
	cases := []struct {
		order        string
		reads        []string
		usesDeclared bool
		keepsLead    bool
	}{
		{"memory", []string{"memory"}, false, true},
		{"persistent + declared", []string{"persistent", "declared"}, true, true},
		{"remaining * memory", []string{"memory", "remaining"}, true, true},
		{"memory * remaining + arrival", []string{"memory", "arrival", "remaining"}, true, true},
		{"remaining / gpus - attained", []string{"gpus", "attained", "remaining"}, true, true},
		{"-attained", []string{"attained"}, false, true},
		{"attained", []string{"attained"}, false, false},
		{"remaining * -1.0", []string{"remaining"}, true, false},
		{"priority * remaining", []string{"priority", "remaining"}, true, false},
		{"remaining / declared", []string{"declared", "remaining"}, true, false},
		{"remaining - attained * 2.0", []string{"attained", "remaining"}, true, true},
		{"gpus > 1.0 ? remaining : 0.0", []string{"gpus", "remaining"}, true, true},
		{"attained > 1.0 ? 0.0 : 1.0", []string{"attained"}, false, false},
		{"remaining + iterations", []string{"remaining", "iterations"}, true, false},
		{"size(limits.filter(t, attained * gpus >= t))", []string{"gpus", "attained"}, false, false},
		{"cel.bind(s, attained, s < 1.0 ? 0 : 1)", []string{"attained"}, false, false},
		{"model == 'vae' ? 0 : 1", []string{"model"}, false, true},
		{"waiting > 60.0", []string{"waiting"}, false, false},
	}
	for _, c := range cases {
		p, err := Parse("x.yaml", []byte("name: x\nparams:\n  limits: [1, 2]\norder: \""+c.order+"\"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.order, err)
		}
		if !slices.Equal(p.Reads, c.reads) || p.UsesDeclared() != c.usesDeclared || p.KeepsLead() != c.keepsLead {
			t.Errorf("%s: reads %v, uses declared %v, keeps the lead %v; want %v, %v, %v", c.order, p.Reads, p.UsesDeclared(), p.KeepsLead(), c.reads, c.usesDeclared, c.keepsLead)
		}
		cp := p.Core()
		if cp.UsesDeclared != c.usesDeclared || cp.Order.(core.LeadKeeper).KeepsLead() != c.keepsLead {
			t.Errorf("%s: the core's policy declares otherwise", c.order)
		}
	}
}

// The key of a double keeps the doubles' order, -0 as 0, NaN last.
func TestKeyOfDoubleKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := []float64{math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 1, math.MaxFloat64, math.Inf(1)}
	for range 1000 {
		xs = append(xs, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(40)-20)))
	}
	for _, a := range xs {
		for _, b := range xs[:50] {
			if (a < b) != (keyOfDouble(a) < keyOfDouble(b)) || (a == b) != (keyOfDouble(a) == keyOfDouble(b)) {
				t.Fatalf("%g, %g: keys %d, %d", a, b, keyOfDouble(a), keyOfDouble(b))
			}
		}
	}
	if keyOfDouble(math.Copysign(0, -1)) != keyOfDouble(0) || keyOfDouble(math.NaN()) <= keyOfDouble(math.Inf(1)) {
		t.Error("-0 is not 0, or NaN is not last")
	}
}

// The order reads every field of the job's view: each field's value for a
// job, read through an order that is that field alone.
func TestEveryFieldIsTheViews(t *testing.T) {
	j := core.Job{ID: "a", Arrival: 2 * time.Second, Persistent: 300, Ephemeral: 50, Declared: 90 * time.Second,
		Priority: 2, GPUs: 4, Share: 3, Model: "resnet50", Batch: 64}
	v := core.ViewOf(j, 0)
	v.Attained, v.Iterations, v.Asked = 30*time.Second, 7, 40*time.Second
	want := map[string]float64{"persistent": 300, "ephemeral": 50, "memory": 350, "batch": 64, "gpus": 4, "priority": 2,
		"share": 3, "arrival": 2, "waiting": 8, "declared": 90, "attained": 30, "remaining": 60, "iterations": 7}
	for _, f := range Fields() {
		order := f.Name
		if f.Type == "string" {
			order = f.Name + " == 'resnet50' ? 1.0 : 0.0"
			want[f.Name] = 1
		}
		p, err := Parse("x.yaml", []byte("name: x\norder: \""+order+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got, w := p.order.Key(v), keyOfDouble(want[f.Name]); got != w {
			t.Errorf("%s: key %d, want %d (%g)", f.Name, got, w, want[f.Name])
		}
	}
}

// Registering: a file's policy is in core's registry under its name, the
// same file again replaces it, and a built-in name or another file's is refused.
func TestRegister(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.yaml", "name: Mine\norder: memory\n")
	t.Cleanup(func() { Unregister("mine") })
	for range 2 {
		if _, err := Register(a); err != nil {
			t.Fatal(err)
		}
	}
	p, err := core.Lookup("mine")
	if err != nil || p.Name != "Mine" {
		t.Fatalf("lookup: %v, %v", p.Name, err)
	}
	if _, err := Register(write("b.yaml", "name: mine\norder: memory\n")); err == nil || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("another file's name: %v", err)
	}
	if _, err := Register(write("c.yaml", "name: srtf\norder: memory\n")); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("a built-in's name: %v", err)
	}
	Unregister("mine")
	if _, err := core.Lookup("mine"); err == nil {
		t.Error("still registered after Unregister")
	}
}

// The examples load.
func TestExamplesLoad(t *testing.T) {
	paths, _ := filepath.Glob("../examples/policies/*.yaml")
	if len(paths) < 2 {
		t.Fatalf("examples: %v", paths)
	}
	for _, path := range paths {
		if _, err := Load(path); err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkKey(b *testing.B) {
	p, err := Load("../examples/policies/las2d.yaml")
	if err != nil {
		b.Fatal(err)
	}
	v := core.ViewOf(core.Job{ID: "a", GPUs: 2, Persistent: 100}, 0)
	for i := 0; b.Loop(); i++ {
		v.Attained = time.Duration(i) * time.Second
		p.order.Key(v)
	}
}

func BenchmarkKeySimple(b *testing.B) {
	p, err := Load("../examples/policies/memtime.yaml")
	if err != nil {
		b.Fatal(err)
	}
	v := core.ViewOf(core.Job{ID: "a", GPUs: 2, Persistent: 100, Declared: time.Hour}, 0)
	for i := 0; b.Loop(); i++ {
		v.Attained = time.Duration(i) * time.Second
		p.order.Key(v)
	}
}
