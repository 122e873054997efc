package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

func yamlCluster(t *testing.T, text string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.ParseYAML([]byte(text), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// One node of Device x GPUs as a cluster gives the log of --gpus N, byte for byte.
func TestClusterOfOneNodeIsGPUs(t *testing.T) {
	tr := placementTrace(t, 1, 4)
	for _, name := range []string{"fifo", "pack", "srtf"} {
		p, _ := core.Lookup(name)
		logOf := func(o Options) []byte {
			var buf bytes.Buffer
			w := eventlog.NewWriter(&buf)
			o.Policy, o.Sink = p, w
			if err := Run(tr, o); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			return buf.Bytes()
		}
		dev := device.DefaultDevice()
		if !bytes.Equal(logOf(Options{Device: dev, GPUs: 4}), logOf(Options{Device: dev, Cluster: cluster.Single(4, dev)})) {
			t.Errorf("%s: a cluster of one node of 4 GPUs gave another log than --gpus 4", name)
		}
	}
}

// A job runs at the speed of the GPU it is on: on an A100 node, a P100's
// iteration takes 1/Speed of its time; the model constraint sends it there.
func TestJobIsTimedOnItsNode(t *testing.T) {
	cl := yamlCluster(t, "shapes:\n  - {count: 1, gpus: 2, model: p100}\n  - {count: 1, gpus: 2, model: a100}\n")
	tr := heavyTrace(t, 2, "")
	tr.Jobs[1].GPUModels = []string{"A100"}
	p, _ := core.Lookup("fifo")
	g := &gpuLog{gpuOf: map[string][]int{}, end: map[string]float64{}, laneG: map[int][]int{}}
	if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Cluster: cl, Sink: g}); err != nil {
		t.Fatal(err)
	}
	if n, _ := cl.NodeOf(g.gpuOf["h1"][0]); n != 1 {
		t.Fatalf("h1 allows the A100 only, ran on node %d", n)
	}
	if n, _ := cl.NodeOf(g.gpuOf["h0"][0]); n != 0 {
		t.Fatalf("h0 went to node %d: first-fit takes node 0", n)
	}
	a100, _ := device.Preset("a100")
	if want := 100 * 0.1 / a100.Speed; math.Abs(g.end["h1"]-want) > 1e-6 {
		t.Errorf("h1 on the A100 ends at %v, want %v (100 iterations of 0.1 s / %g)", g.end["h1"], want, a100.Speed)
	}
	if want := 100 * 0.1; math.Abs(g.end["h0"]-want) > 1e-6 {
		t.Errorf("h0 on the P100 ends at %v, want %v", g.end["h0"], want)
	}
}

// A job no node can ever hold is an error before the run, naming the job.
func TestClusterRefusesJobsNoNodeHolds(t *testing.T) {
	cl := yamlCluster(t, "shapes:\n  - {count: 3, gpus: 4, model: v100}\n")
	p, _ := core.Lookup("pack")
	for _, c := range []struct {
		edit func(j *workload.Job)
		want string
	}{
		{func(j *workload.Job) { j.GPUs = 8 }, `job "h1" needs 8 GPUs at once but the largest node it may use has 4`},
		{func(j *workload.Job) { j.GPUModels = []string{"h100", "a100"} }, `job "h1" allows GPU models h100, a100, which no node of the cluster has (it has v100)`},
	} {
		tr := heavyTrace(t, 2, "")
		c.edit(&tr.Jobs[1])
		err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Cluster: cl})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
}

// A gang goes to a node with enough GPUs, never across two: on nodes of 2 and
// 4 GPUs, a gang of 3 waits for the node of 4 although 3 GPUs are idle elsewhere.
func TestGangStaysOnOneNode(t *testing.T) {
	cl := yamlCluster(t, "shapes:\n  - {count: 2, gpus: 2, model: v100}\n  - {count: 1, gpus: 4, model: v100}\n")
	tr := heavyTrace(t, 0, "g0,heavy,1,100,0,4,0.1,0,1000,1000,1\ng1,heavy,1,100,0,3,0.1,0,1000,1000,1\n")
	p, _ := core.Lookup("fifo")
	for _, np := range core.NodePlacementNames() {
		npl, _ := core.LookupNodePlacement(np)
		g := &gpuLog{gpuOf: map[string][]int{}, end: map[string]float64{}, laneG: map[int][]int{}}
		if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Cluster: cl, NodePlacement: npl, Sink: g}); err != nil {
			t.Fatal(err)
		}
		if got := g.gpuOf["g1"]; len(got) != 3 || got[0] < 4 {
			t.Errorf("%s: the gang of 3 got GPUs %v, want 3 of the node of 4 (GPUs 4 to 7)", np, got)
		}
		v100, _ := device.Preset("v100")
		if want := 2 * 100 * 0.1 / v100.Speed; math.Abs(makespan(g)-want) > 1e-6 {
			t.Errorf("%s: makespan %v, want %v: the gang of 3 waits for the gang of 4", np, makespan(g), want)
		}
	}
}

// A job timed on the reference device (timed_on reference: an imported pod
// whose run the trace recorded on a model it does not name) runs as long on
// an A100 node as on the reference P100, where a job of the same figures
// without it runs at the A100's speed.
func TestJobTimedOnTheReferenceKeepsItsTimeOnAFasterNode(t *testing.T) {
	cl := yamlCluster(t, "shapes:\n  - {count: 1, gpus: 2, model: a100}\n")
	tr := heavyTrace(t, 2, "")
	tr.Jobs[0].TimedOn = workload.TimedOnReference
	p, _ := core.Lookup("fifo")
	g := &gpuLog{gpuOf: map[string][]int{}, end: map[string]float64{}, laneG: map[int][]int{}}
	if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Cluster: cl, Sink: g}); err != nil {
		t.Fatal(err)
	}
	a100, _ := device.Preset("a100")
	if want := 100 * 0.1; math.Abs(g.end["h0"]-want) > 1e-6 {
		t.Errorf("h0, timed on the reference, ends on the A100 at %v, want %v (100 iterations of 0.1 s)", g.end["h0"], want)
	}
	if want := 100 * 0.1 / a100.Speed; math.Abs(g.end["h1"]-want) > 1e-6 {
		t.Errorf("h1 on the A100 ends at %v, want %v (100 iterations of 0.1 s / %g)", g.end["h1"], want, a100.Speed)
	}
}

// No node placement leaves a job waiting in a busy lane, or beside a busy
// lane, while GPUs that could run it at once are idle: every job, a gang
// among them, starts at once on idle GPUs of its own and ends alone (10 s),
// under every registered node placement with every GPU placement, under
// every policy of Salus's mode. On three nodes of two GPUs, four jobs that
// arrive together; on two nodes of four, three jobs and a gang of two (under
// best-fit GPUs, a gang took the busy GPUs' room first).
func TestNoJobWaitsInALaneWhileAGPUIsIdle(t *testing.T) {
	cases := []struct {
		cluster string
		tr      *workload.Trace
	}{
		{"shapes:\n  - {count: 3, gpus: 2, model: p100}\n", heavyTrace(t, 4, "")},
		{"shapes:\n  - {count: 2, gpus: 4, model: p100}\n", heavyTrace(t, 3, "g,heavy,1,100,0,2,0.1,0,1000,1000,1\n")},
	}
	for _, c := range cases {
		cl := yamlCluster(t, c.cluster)
		for _, pol := range []string{"fair", "srtf", "pack", "fifo"} {
			p, _ := core.Lookup(pol)
			for _, np := range core.NodePlacementNames() {
				for _, gp := range core.GPUPlacementNames() {
					npl, _ := core.LookupNodePlacement(np)
					gpl, _ := core.LookupGPUPlacement(gp)
					g := &gpuLog{gpuOf: map[string][]int{}, end: map[string]float64{}, laneG: map[int][]int{}}
					if err := Run(c.tr, Options{Policy: p, Device: device.DefaultDevice(), Cluster: cl, NodePlacement: npl, GPUPlacement: gpl, Sink: g}); err != nil {
						t.Fatal(err)
					}
					used := map[int]string{}
					for _, j := range c.tr.Jobs {
						for _, gpu := range g.gpuOf[j.ID] {
							if other, ok := used[gpu]; ok {
								t.Errorf("%s, %s/%s: %s and %s share GPU %d while GPUs are idle", pol, np, gp, other, j.ID, gpu)
							}
							used[gpu] = j.ID
						}
						if want := 100 * 0.1; math.Abs(g.end[j.ID]-want) > 1e-6 {
							t.Errorf("%s, %s/%s: %s ends at %v, want %v: it could run alone from the start", pol, np, gp, j.ID, g.end[j.ID], want)
						}
					}
				}
			}
		}
	}
}
