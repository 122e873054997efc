package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// heavyTrace is n compute-bound jobs (demand 1) submitted at once, with their
// profile inline: 100 iterations of 0.1 s, no start-up.
func heavyTrace(t *testing.T, n int, extra string) *workload.Trace {
	t.Helper()
	var b strings.Builder
	b.WriteString("job_id,model,batch_size,iterations,arrival_s,gpus,iter_s,startup_s,persistent_mib,ephemeral_mib,demand\n")
	for i := range n {
		fmt.Fprintf(&b, "h%d,heavy,1,100,0,1,0.1,0,1000,1000,1\n", i)
	}
	b.WriteString(extra)
	tr, err := workload.ParseTrace([]byte(b.String()), "heavy.csv", "heavy", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// gpuLog records, from a log, the GPU of each job and its end.
type gpuLog struct {
	gpuOf map[string][]int
	end   map[string]float64
	laneG map[int][]int
	// starts of a gang's iterations, and the lanes running now per GPU
	events []eventlog.Event
}

func (g *gpuLog) Emit(e eventlog.Event) {
	g.events = append(g.events, e)
	switch e.Kind {
	case eventlog.Admit:
		gpus := []int{e.GPUIndex}
		if len(e.Gang) > 0 {
			gpus = e.Gang
		}
		g.gpuOf[e.Job], g.laneG[e.Lane] = gpus, gpus
	case eventlog.Finish:
		g.end[e.Job] = e.T
	}
}

func runOn(t *testing.T, tr *workload.Trace, policy string, gpus int) *gpuLog {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := device.Preset("p100")
	g := &gpuLog{gpuOf: map[string][]int{}, end: map[string]float64{}, laneG: map[int][]int{}}
	if err := Run(tr, Options{Policy: p, Device: dev, GPUs: gpus, Sink: g}); err != nil {
		t.Fatal(err)
	}
	return g
}

func makespan(g *gpuLog) float64 {
	var m float64
	for _, e := range g.end {
		m = math.Max(m, e)
	}
	return m
}

func TestComputeHeavyJobsSpreadOverGPUs(t *testing.T) {
	alone := makespan(runOn(t, heavyTrace(t, 1, ""), "pack", 1))
	if math.Abs(alone-10) > 1e-6 {
		t.Fatalf("one job alone: makespan %v s, want 10 s", alone)
	}
	for _, n := range []int{4, 8} {
		g := runOn(t, heavyTrace(t, n, ""), "pack", 4)
		perGPU := map[int]int{}
		for _, gpus := range g.gpuOf {
			perGPU[gpus[0]]++
		}
		for gpu := range 4 {
			if perGPU[gpu] != n/4 {
				t.Errorf("%d jobs on 4 GPUs under pack: GPU %d got %d jobs, want %d (%v)", n, gpu, perGPU[gpu], n/4, perGPU)
			}
		}
		// Two compute-bound jobs on one GPU share it: each takes twice as long.
		if want := alone * float64(n/4); math.Abs(makespan(g)-want) > 1e-3 {
			t.Errorf("%d jobs on 4 GPUs: makespan %v s, want %v s", n, makespan(g), want)
		}
	}
}

func TestGangStartsEveryRankTogether(t *testing.T) {
	// A gang of 2 beside compute-bound jobs, on 2 GPUs under pack: the gang's
	// iteration ends when its slower rank does.
	gang := "g,heavy,1,50,0,2,0.1,0,1000,1000,1\n"
	tr := heavyTrace(t, 1, gang)
	g := runOn(t, tr, "pack", 2)
	if !slices.Equal(g.gpuOf["g"], []int{0, 1}) {
		t.Fatalf("the gang holds GPUs %v, want [0 1]", g.gpuOf["g"])
	}
	// Every iteration of the gang is one start and one end, on its one lane,
	// or one of a stretch's (its ranks out of step: gangs.go), and the number
	// of its iterations is what the trace says.
	var starts, ends int
	for _, e := range g.events {
		if e.Job == "g" && e.Kind == eventlog.IterStart {
			starts++
		}
		if e.Job == "g" && e.Kind == eventlog.IterEnd {
			ends++
		}
		if e.Job == "g" && e.Kind == eventlog.Stretch {
			starts += e.Iterations
			ends += e.Iterations
		}
	}
	if starts != 50 || ends != 50 {
		t.Errorf("gang: %d starts and %d ends, want 50 each", starts, ends)
	}
	// h0 shares one GPU with the gang's rank there: both run at half speed while
	// they overlap (10 s of work each), so the gang needs 10 s, not 5 s.
	if got := g.end["g"]; math.Abs(got-10) > 1e-3 {
		t.Errorf("gang ends at %v s, want 10 s (held back by its rank that shares a GPU)", got)
	}

	// On one GPU the gang can never run: refused, naming the flag.
	p, _ := core.Lookup("pack")
	dev, _ := device.Preset("p100")
	err := Run(tr, Options{Policy: p, Device: dev, GPUs: 1})
	if err == nil || !strings.Contains(err.Error(), "--gpus") {
		t.Errorf("a gang of 2 on 1 GPU: error %v, want one naming --gpus", err)
	}
}

func TestGangWaitsForAllItsGPUs(t *testing.T) {
	// Under fifo every job holds a GPU alone: the gang waits until both GPUs are
	// free, and then takes both at once.
	gang := "g,heavy,1,10,1,2,0.1,0,1000,1000,1\n"
	g := runOn(t, heavyTrace(t, 2, gang), "fifo", 2)
	var gangStart float64 = -1
	for _, e := range g.events {
		if e.Job == "g" && e.Kind == eventlog.Admit {
			gangStart = e.T
		}
	}
	if gangStart != 10 {
		t.Errorf("the gang got its GPUs at %v s, want 10 s (when both jobs before it ended)", gangStart)
	}
}

func TestMetricsPerGPU(t *testing.T) {
	// 6 compute-bound jobs on 4 GPUs under pack: GPUs 0 and 1 get two each and are
	// busy for the whole makespan (20 s), GPUs 2 and 3 one each, busy half of it.
	p, _ := core.Lookup("pack")
	dev, _ := device.Preset("p100")
	c := metrics.NewCollector()
	if err := Run(heavyTrace(t, 6, ""), Options{Policy: p, Device: dev, GPUs: 4, Sink: c}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUs != 4 || len(res.PerGPU) != 4 {
		t.Fatalf("per GPU: %+v", res.PerGPU)
	}
	wantJobs, wantBusy := []int{2, 2, 1, 1}, []float64{1, 1, 0.5, 0.5}
	for g, r := range res.PerGPU {
		if r.Jobs != wantJobs[g] || math.Abs(r.Busy-wantBusy[g]) > 1e-6 || r.PeakMemoryMiB <= 0 {
			t.Errorf("GPU %d: %+v, want %d jobs, busy %v", g, r, wantJobs[g], wantBusy[g])
		}
	}
	if math.Abs(res.GPUBusy-0.75) > 1e-6 || math.Abs(res.MakespanS-20) > 1e-3 {
		t.Errorf("node: busy %v (want 0.75), makespan %v (want 20)", res.GPUBusy, res.MakespanS)
	}
}
