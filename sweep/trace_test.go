package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTraceFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mine.csv")
	data := "job_id,model,batch_size,iterations,arrival_s\n" +
		"a,alexnet,25,3000,0\nb,resnet50,50,2000,60\nc,vae,64,5000,120\nd,resnet50,50,500,600\ne,alexnet,25,800,650\nf,vae,64,900,700\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A sweep over a trace file: a cell per trace, seeds resample it (the same seed,
// the same figures; another seed, others), and the load scales its arrivals.
func TestSweepATraceFile(t *testing.T) {
	path := writeTraceFile(t)
	g := Grid{Policies: []string{"fifo", "srtf"}, Modes: []string{DefaultMode}, Seeds: []int64{1, 2, 3}, Loads: []float64{1, 3},
		CapacitiesMiB: []float64{14336}, Device: "p100", Traces: []string{path}, Resample: "bootstrap"}
	if err := Check(g); err != nil {
		t.Fatal(err)
	}
	cells := g.Cells(Applicable)
	if len(cells) != 4 || cells[0].Trace != path || !strings.HasPrefix(cells[0].String(), path+": ") {
		t.Fatalf("cells %v: want 4, each naming the trace", cells)
	}
	run := SimRunner(g)
	m1, err := run(cells[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := run(cells[0], 1)
	if m1["avg_jct_s"] != again["avg_jct_s"] || m1["jain_slowdown"] <= 0 || m1["max_slowdown"] < 1 {
		t.Errorf("seed 1 twice: %v and %v; want the same, with fairness figures", m1, again)
	}
	differs := false
	for seed := int64(2); seed <= 6; seed++ {
		m, _ := run(cells[0], seed)
		differs = differs || m["avg_jct_s"] != m1["avg_jct_s"]
	}
	if !differs {
		t.Error("five bootstrap seeds gave the same avg JCT as seed 1")
	}
	// Load 3 under no resampling: the file's jobs, arriving 3x as fast, queue longer.
	g.Resample, g.Seeds = "none", []int64{1}
	run = SimRunner(g)
	slow, _ := run(Cell{Trace: path, Policy: "fifo", Mode: "exclusive", Load: 1, CapacityMiB: 14336}, 1)
	fast, _ := run(Cell{Trace: path, Policy: "fifo", Mode: "exclusive", Load: 3, CapacityMiB: 14336}, 1)
	if fast["avg_queuing_s"] <= slow["avg_queuing_s"] {
		t.Errorf("queuing at load 3 %v, not above load 1's %v", fast["avg_queuing_s"], slow["avg_queuing_s"])
	}
	samples, err := Run(t.Context(), g.Tasks(g.Cells(Applicable), nil), 1, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := Recommend(SummarizeCells(g.Cells(Applicable), samples), samples)
	if len(recs) != 2 || recs[0].Trace != path || recs[0].Load != 1 || !strings.Contains(recs[0].Text, "Recommendation: ") ||
		strings.Contains(recs[0].Text, "seed by seed") {
		t.Errorf("recommendations %+v: want one per load, naming a scheme, not paired (one seed)", recs)
	}
}

func TestCheckRefusesWhatResamplingCannotDo(t *testing.T) {
	path := writeTraceFile(t)
	base := Grid{Policies: []string{"fifo"}, Modes: []string{DefaultMode}, Seeds: []int64{1, 2}, Loads: []float64{1}, Device: "p100"}
	for _, c := range []struct {
		traces   []string
		resample string
		loads    []float64
		want     string
	}{
		{nil, "bootstrap", nil, "draws from trace files"},
		{[]string{path}, "shuffle", nil, "choose bootstrap"},
		{[]string{path}, "none", nil, "intervals would be zero"},
		{[]string{filepath.Join(t.TempDir(), "missing.csv")}, "bootstrap", nil, "missing.csv"},
		{[]string{path}, "jitter", []float64{0}, "positive"},
	} {
		g := base
		g.Traces, g.Resample = c.traces, c.resample
		if c.loads != nil {
			g.Loads = c.loads
		}
		if err := Check(g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q %v: %v, want %q", c.traces, c.resample, c.loads, err, c.want)
		}
	}
}
