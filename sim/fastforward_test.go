package sim

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/history"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// TestFastForwardIsExact runs random traces under every registered scheme with
// stretches and iteration by iteration (PerIteration), on one GPU and on two,
// with and without a per-iteration overhead and start-up as GPU work, and wants
// the same result for every job: arrival, first service, end, JCT and queuing
// identical, its GPU time within rounding (the stretch adds it up in one
// record); the run's figures likewise. And it checks that stretches did run.
func TestFastForwardIsExact(t *testing.T) {
	skipped := 0
	for _, ms := range simtest.Schemes() {
		for seed := uint64(1); seed <= 6; seed++ {
			gpus := 1 + int(seed%2)
			ff, err := agree(t, ms, seed, 20, gpus, 0, nil)
			if err != nil {
				t.Fatalf("%s/%s seed %d on %d GPUs: with stretches, %v", ms[0], ms[1], seed, gpus, err)
			}
			if ff.iterations == 0 {
				skipped++
			}
		}
	}
	if skipped == len(simtest.Schemes())*6 {
		t.Fatal("no stretch ever ran")
	}
}

// The fast path's speed on a trace of long jobs, one at a time (fifo).
func BenchmarkFastForwardFIFO(b *testing.B) {
	tr, _ := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 1, Load: 1})
	p, _ := core.Lookup("fifo")
	for range b.N {
		if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice()}); err != nil {
			b.Fatal(err)
		}
	}
}

// emitOnly hides a sink's Boundary: it gets the two events of each boundary.
type emitOnly struct{ eventlog.Sink }

// TakesTurns is the hidden sink's answer: only Boundary is hidden.
func (s emitOnly) TakesTurns() bool { return eventlog.TakesTurns(s.Sink) }

// The metrics of a run are the same whether the collector takes the boundaries of
// fast-forwarded iterations in one call or as their two events.
func TestBoundariesGiveTheSameMetrics(t *testing.T) {
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		trace := simtest.RandomTrace(5, 25)
		resultOf := func(wrap bool) metrics.Result {
			c := metrics.NewCollector()
			var sink eventlog.Sink = c
			if wrap {
				sink = emitOnly{c}
			}
			if err := Run(trace, Options{Policy: p, Device: device.DefaultDevice(), Sink: sink}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if a, b := resultOf(false), resultOf(true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s/%s: metrics differ:\n%+v\n%+v", ms[0], ms[1], a, b)
		}
	}
}

// noTurns is a sink that takes no stretch of turns.
type noTurns struct{ eventlog.Sink }

func (noTurns) TakesTurns() bool { return false }

// The readers of a log take a stretch as the boundaries it stands for: the
// per-class figures and the plots' run log (the lanes' stretches of service)
// come out the same from a log of stretches as from one of iterations, and
// history reads the same iterations (their times the stretch's mean).
func TestReadersTakeStretches(t *testing.T) {
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		trace := simtest.RandomTrace(7, 20)
		classes := map[string]int{}
		for i, j := range trace.Jobs {
			classes[j.ID] = i % 3
		}
		// Each engine's plots recorder and log file. No turns
		// (TestReadersTakeTurns has them): the plots draw a stretch of turns
		// as one stretch of service.
		type reader struct {
			runs *plots.Recorder
			path string
			file *eventlog.File
		}
		readers := map[bool]*reader{}
		ag := bothEngines(t, agreeCase{
			name:    fmt.Sprintf("%v", ms),
			trace:   trace,
			opts:    Options{Policy: p, Device: device.DefaultDevice(), GPUs: 2},
			classes: classes,
			sinks: func(perIteration bool) eventlog.Sink {
				r := &reader{runs: plots.NewRecorder(), path: filepath.Join(t.TempDir(), "events.jsonl")}
				var err error
				if r.file, err = eventlog.Create(r.path); err != nil {
					t.Fatal(err)
				}
				readers[perIteration] = r
				return eventlog.Sinks{noTurns{r.runs}, r.file}
			},
		})
		if ag.diff != nil {
			t.Fatalf("%v: %v", ms, ag.diff)
		}
		type out struct {
			res   metrics.Result
			runs  *plots.RunLog
			iters map[string]int
		}
		read := func(perIteration bool, res metrics.Result) out {
			r := readers[perIteration]
			if err := r.file.Close(); err != nil {
				t.Fatal(err)
			}
			l, err := r.runs.Log()
			if err != nil {
				t.Fatal(err)
			}
			h, err := history.Read(r.path)
			if err != nil {
				t.Fatal(err)
			}
			iters := map[string]int{}
			for _, j := range h.Jobs {
				iters[j.ID] = len(j.IterS)
			}
			return out{res, l, iters}
		}
		a, b := read(true, ag.slow), read(false, ag.fast)
		for i := range a.res.Classes {
			x, y := a.res.Classes[i], b.res.Classes[i]
			if x.Waits != y.Waits || x.WaitMeanS != y.WaitMeanS || x.WaitP95S != y.WaitP95S || x.AvgJCTS != y.AvgJCTS {
				t.Fatalf("%v: class %d: %+v, want %+v", ms, x.Priority, y, x)
			}
		}
		if len(a.runs.Jobs) != len(b.runs.Jobs) || !reflect.DeepEqual(a.runs.Memory, b.runs.Memory) || a.runs.Slots != b.runs.Slots {
			t.Fatalf("%v: the plots' run logs differ", ms)
		}
		for i, x := range a.runs.Jobs {
			y := b.runs.Jobs[i]
			if x.ID != y.ID || x.EndS != y.EndS || x.StartupToS != y.StartupToS || !reflect.DeepEqual(x.Stretches, y.Stretches) || !reflect.DeepEqual(x.GPUs, y.GPUs) {
				t.Fatalf("%v: the plots' run logs differ at %s: %+v, want %+v", ms, x.ID, y, x)
			}
		}
		if !reflect.DeepEqual(a.iters, b.iters) {
			t.Fatalf("%v: history reads %v iterations, want %v", ms, b.iters, a.iters)
		}
	}
}

// Gangs take stretches too where their ranks go in step: on several GPUs of
// one node and on a cluster of two nodes, under every registered scheme, the
// per-job results with stretches are those of the iteration-by-iteration
// engine, and the log keeps each GPU's memory; and under exclusive GPUs, where every rank is alone on its GPU, a
// gang's iterations are taken in stretches.
func TestGangsAreExact(t *testing.T) {
	cl := yamlCluster(t, "shapes:\n  - {count: 1, gpus: 4, model: v100}\n  - {count: 1, gpus: 2, model: t4}\n")
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 4; seed++ {
			trace := simtest.RandomTrace(seed, 16)
			for i := range trace.Jobs {
				trace.Jobs[i].GPUs = 1 + (i+int(seed))%3
				trace.Jobs[i].Iterations += 20
			}
			o := Options{Policy: p, Device: device.DefaultDevice(), GPUs: 4}
			if seed%2 == 0 {
				o.GPUs, o.Cluster = 0, cl
			}
			gangs := 0
			ag := bothEngines(t, agreeCase{
				name:  fmt.Sprintf("%v seed %d", ms, seed),
				trace: trace,
				opts:  o,
				check: true,
				sinks: func(perIteration bool) eventlog.Sink {
					return sinkFunc(func(e eventlog.Event) {
						if !perIteration && e.Kind == eventlog.Stretch && len(e.Turns) == 0 && e.Iterations > 0 && gangOf(trace, e.Job) > 1 {
							gangs++
						}
					})
				},
			})
			if ag.diff != nil {
				t.Fatalf("%v seed %d: with stretches, %v", ms, seed, ag.diff)
			}
			if ms[0] == core.ModeExclusive && gangs == 0 {
				t.Errorf("%v seed %d: no gang took a stretch", ms, seed)
			}
		}
	}
}

func gangOf(tr *workload.Trace, id string) int {
	for _, j := range tr.Jobs {
		if j.ID == id {
			return j.GPUCount()
		}
	}
	return 0
}

// Under defragmentation a job alone in a lane that fits it, with no job
// waiting, takes stretches (no boundary can split or merge its lane); the
// results are the per-iteration engine's. Jobs that overlap and wait are
// probed as before.
func TestDefragStretchesALoneJob(t *testing.T) {
	for _, name := range []string{"pack-defrag", "pack-merge", "srtf-pack-defrag"} {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, trace := range []*workload.Trace{
			{Name: "apart", Jobs: []workload.Job{traceJob("a", 0, 400, 0.05, 1, 2000, 1000), traceJob("b", 100, 400, 0.05, 1, 2000, 1000)}},
			simtest.RandomTrace(3, 20),
		} {
			ag := bothEngines(t, agreeCase{name: name + ", " + trace.Name, trace: trace, opts: Options{Policy: p, Device: device.DefaultDevice()}})
			if ag.diff != nil {
				t.Fatalf("%s, %s: with stretches, %v", name, trace.Name, ag.diff)
			}
			ff := ag.ff.iterations
			if trace.Name == "apart" && ff < 700 {
				t.Errorf("%s: %d of 800 iterations in stretches, want nearly all", name, ff)
			}
		}
	}
}

// Under suspend/resume a switch copies the next job in (a delay on its first
// iteration); once the copy is over the job goes on alone for its quantum, and
// its boundaries from that first iteration's end are a stretch: each quantum
// costs the switch's iteration and the one the core ends it at, no more, and
// one scan of the GPU for a stretch.
func TestSuspendStretchesAfterTheCopy(t *testing.T) {
	p, err := core.Compose("suspend", "fair", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	// Two jobs of 20 s of GPU each, together from 1 s on: quanta of 10 s.
	trace := &workload.Trace{Name: "two", Jobs: []workload.Job{
		traceJob("a", 0, 400, 0.05, 1, 2000, 1000), traceJob("b", 0.5, 400, 0.05, 0.5, 2000, 1000)}}
	ag := bothEngines(t, agreeCase{name: "suspend/fair", trace: trace, opts: Options{Policy: p, Device: device.DefaultDevice()}})
	if ag.diff != nil {
		t.Fatalf("with stretches, %v", ag.diff)
	}
	ff := ag.ff.iterations
	// Four quanta of 10 s, two iterations outside the stretch in each: 792. The
	// iteration after the copy's was outside too before (787).
	if ff < 790 {
		t.Errorf("%d of 800 iterations in stretches, want all but about two a quantum", ff)
	}
	// The GPU is scanned once a quantum, once its copy is over: not at the
	// switch, where only the copy runs (onlyDelays).
	if ag.ff.scanned > 8 {
		t.Errorf("the stretches scanned the GPU %d times in four quanta, want one a quantum (and two spare)", ag.ff.scanned)
	}
}
