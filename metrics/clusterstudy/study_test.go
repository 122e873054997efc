package clusterstudy

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
	"github.com/salusgo/salus/workload/traceimport"
)

// FGD's fragmentation of a node, by hand: a node of two GPUs, one free, one
// half free. Of a workload half 0.6-GPU pods, half 2-GPU pods: the 0.6 pod fits
// the free GPU and cannot use the half (500 fragmented); the 2-GPU pod fits
// nowhere (all 1500). A pod constrained to another model has all of it.
func TestFragmentationByHand(t *testing.T) {
	types := []taskType{{gpus: 1, milli: 600, p: 0.5}, {gpus: 2, milli: 1000, p: 0.5}}
	if f := Fragmentation([]int{1000, 500}, "T4", types); f != 0.5*500+0.5*1500 {
		t.Errorf("fragmentation %v, want 1000", f)
	}
	if f := Fragmentation([]int{1000, 1000}, "T4", types); f != 0 {
		t.Errorf("an empty node's fragmentation %v, want 0: both kinds fit", f)
	}
	onV100 := []taskType{{gpus: 1, milli: 100, models: []string{"V100M32"}, p: 1}}
	if f := Fragmentation([]int{1000, 500}, "T4", onV100); f != 1500 {
		t.Errorf("a T4 node for V100 pods: fragmentation %v, want all 1500", f)
	}
	if f := Fragmentation([]int{0, 0}, "T4", types); f != 0 {
		t.Errorf("a full node's fragmentation %v, want 0", f)
	}
}

// importShares imports the fixture pod list: two pods of 110 milli of a P100
// each, created together, each running an hour.
func importShares(t *testing.T) *workload.Trace {
	t.Helper()
	f, err := traceimport.Lookup("alibaba2023")
	if err != nil {
		t.Fatal(err)
	}
	d := device.DefaultDevice()
	var buf bytes.Buffer
	o := traceimport.Options{Device: &traceimport.GPU{Name: d.Name, CapacityMiB: d.CapacityMiB, Speed: d.Speed}}
	if _, err := traceimport.Convert(f, []string{filepath.Join("testdata", "openb_pod_list_share.csv")}, o, &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ParseTrace(buf.Bytes(), "shares.csv", "shares", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func run(t *testing.T, tr *workload.Trace, c *cluster.Cluster, mode, policy string) Result {
	t.Helper()
	p, err := core.Compose(mode, policy, core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	s := New(c, tr)
	if err := sim.Run(tr, sim.Options{Policy: p, Device: device.DefaultDevice(), GPUs: c.GPUCount(), Sink: s}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Result(policy)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two pods of 11% of a GPU each, imported from the trace's own schema, share
// one GPU under pack and finish as fast as each alone: their share is their
// compute demand, 22% of the GPU together. The GPU is allocated and busy 22%
// of the time; each one's JCT is its trace run.
func TestTwoElevenPercentPodsFinishAsFastAsAlone(t *testing.T) {
	tr := importShares(t)
	for _, j := range tr.Jobs {
		if j.Demand == nil || *j.Demand != 0.11 {
			t.Fatalf("job %s: demand %v, want 0.11 (its gpu_milli)", j.ID, j.Demand)
		}
	}
	one := cluster.Single(1, device.DefaultDevice())
	both := run(t, tr, one, core.ModeSalus, "pack")
	alone := run(t, &workload.Trace{Name: "alone", Jobs: tr.Jobs[:1]}, one, core.ModeSalus, "pack")
	if both.RunRatio.N != 2 || math.Abs(both.RunRatio.Median-alone.RunRatio.Median) > 1e-9 || math.Abs(both.RunRatio.P95-alone.RunRatio.Median) > 1e-9 {
		t.Errorf("together %+v, alone %+v: want both as fast as one alone", both.RunRatio, alone.RunRatio)
	}
	if math.Abs(alone.RunRatio.Median-1) > 0.01 {
		t.Errorf("alone the pod's JCT is %.4f of its trace run, want 1", alone.RunRatio.Median)
	}
	if c := both.Cluster; math.Abs(c.Allocation-0.22) > 1e-6 || math.Abs(c.Utilization-0.22) > 0.01 {
		t.Errorf("allocation %v, utilization %v: want 0.22 and about 0.22 (start-up holds no demand)", c.Allocation, c.Utilization)
	}
	// The free 78% fits every 11% pod: nothing is fragmented.
	if both.Cluster.Fragmentation != 0 {
		t.Errorf("fragmentation %v, want 0", both.Cluster.Fragmentation)
	}
	if len(both.Classes) != 1 || both.Classes[0].Priority != 3 || both.Classes[0].Trace.Mean != 0 || both.Classes[0].Sim.Mean > 1e-6 {
		t.Errorf("classes %+v: want one, BE (3), no delay simulated nor in the trace", both.Classes)
	}
}

// A study's GPUs are the cluster's, node by node: on two nodes of one GPU each,
// exclusive GPUs allocate each pod a whole GPU, per shape and per model; the
// outputs carry every group.
func TestStudyGroupsByNode(t *testing.T) {
	tr := importShares(t)
	c, err := cluster.ParseYAML([]byte("models:\n  G2: {like: v100}\nshapes:\n  - {name: a, count: 1, gpus: 1, model: p100}\n  - {name: b, count: 1, gpus: 1, model: G2}\n"), "two.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, tr, c, core.ModeExclusive, "fifo")
	if len(r.Shapes) != 2 || len(r.Models) != 2 || r.Shapes[0].Name != "a" || r.Models[1].Name != "G2" {
		t.Fatalf("shapes %+v, models %+v", r.Shapes, r.Models)
	}
	for _, g := range append(r.Shapes, r.Cluster) {
		if math.Abs(g.Allocation-1) > 1e-6 {
			t.Errorf("%s: allocation %v, want 1: exclusive gives each pod its GPU for the whole run", g.Name, g.Allocation)
		}
	}
	rep := &Report{Cluster: "two.yaml", Nodes: 2, GPUs: 2, Trace: tr.Name, Jobs: len(tr.Jobs), Runs: []Result{r}}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table": func(b *bytes.Buffer) error { return rep.Table(b) },
		"json":  func(b *bytes.Buffer) error { return rep.JSON(b) },
		"csv":   func(b *bytes.Buffer) error { return rep.CSV(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "G2") {
			t.Errorf("the %s lacks the G2 model:\n%s", name, b.String())
		}
	}
}

// A study takes stretches of a lane's turns: on a busy cluster of two nodes,
// under the policies whose lanes take turns (pack's side by side too, which
// the study takes only at a share of 1), with the jobs in three priority
// classes, its figures are those of the iteration-by-iteration run (the busy
// time to the rounding of its sums), and turns were taken.
func TestStudyTakesTurns(t *testing.T) {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 3, Jobs: 80, Load: 6})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Jobs {
		tr.Jobs[i].Priority = i % 3
	}
	c, err := cluster.ParseYAML([]byte("shapes:\n  - {name: a, count: 2, gpus: 2, model: p100}\n"), "two.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"fair", "fcfs", "pack"} {
		p, err := core.Compose(core.ModeSalus, policy, core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		runOf := func(perIteration bool) (Result, int) {
			s := New(c, tr)
			n := &turnCounter{}
			o := sim.Options{Policy: p, Device: device.DefaultDevice(), GPUs: c.GPUCount(), Cluster: c, PerIteration: perIteration, Sink: eventlog.Sinks{s, n}}
			if err := sim.Run(tr, o); err != nil {
				t.Fatal(err)
			}
			r, err := s.Result(policy)
			if err != nil {
				t.Fatal(err)
			}
			return r, n.turns
		}
		a, _ := runOf(true)
		b, turns := runOf(false)
		if turns == 0 {
			t.Fatalf("%s: no stretch of turns ran", policy)
		}
		if !reflect.DeepEqual(a.Classes, b.Classes) || !reflect.DeepEqual(a.RunRatio, b.RunRatio) {
			t.Fatalf("%s: classes %+v, JCTs %+v with turns; want %+v, %+v", policy, b.Classes, b.RunRatio, a.Classes, a.RunRatio)
		}
		for i, x := range append(a.Shapes, a.Cluster) {
			y := append(b.Shapes, b.Cluster)[i]
			if math.Abs(x.Utilization-y.Utilization) > 1e-9 || x.Allocation != y.Allocation || x.Fragmentation != y.Fragmentation {
				t.Fatalf("%s: %s with turns %+v, want %+v", policy, x.Name, y, x)
			}
			if x.Utilization < 0.1 {
				t.Fatalf("%s: %s busy %v of the time: the test wants a busy cluster", policy, x.Name, x.Utilization)
			}
		}
	}
}

// turnCounter counts the stretches of turns in a run.
type turnCounter struct{ turns int }

func (c *turnCounter) TakesTurns() bool { return true }
func (c *turnCounter) Emit(e eventlog.Event) {
	if e.Kind == eventlog.Stretch && len(e.Turns) > 0 {
		c.turns++
	}
}
