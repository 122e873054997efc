package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// turnCounter counts the stretches of turns in a log.
type turnCounter struct{ turns int }

func (c *turnCounter) TakesTurns() bool { return true }
func (c *turnCounter) Emit(e eventlog.Event) {
	if e.Kind == eventlog.Stretch && len(e.Turns) > 0 {
		c.turns++
	}
}

// salusTrace is a salus100 trace at four times its rate: lanes of several jobs.
func salusTrace(t testing.TB, seed int64, jobs int) *workload.Trace {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed, Jobs: jobs, Load: 4})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Lanes whose jobs take turns (fair, fcfs, pack's shared lanes) give every job
// the result of the iteration-by-iteration engine, under every registered
// scheme, on one GPU and two; and turns are taken.
func TestTurnsAreExact(t *testing.T) {
	jobs := 120
	if testing.Short() {
		jobs = 50
	}
	turns := turnsAreExact(t, jobs, false)
	for _, s := range []string{"salus/fair", "salus/fcfs", "salus/wfair", "salus/floor"} {
		if turns[s] == 0 {
			t.Errorf("%s: no stretch of turns ran", s)
		}
	}
}

// turnsAreExact runs every registered scheme on salus100 traces of jobs
// jobs, seeds 1 and 2 on as many GPUs, with stretches and iteration by
// iteration, and fails where a job's result differs, or with classes (the
// jobs in three priority classes) a class's figures; it returns the
// stretches of turns each scheme took.
func turnsAreExact(t *testing.T, jobs int, classes bool) map[string]int {
	turns := map[string]int{}
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		var counters []*turnCounter // each run's
		for seed := int64(1); seed <= 2; seed++ {
			tr := salusTrace(t, seed, jobs)
			var prio map[string]int
			if classes {
				prio = map[string]int{}
				for i := range tr.Jobs {
					tr.Jobs[i].Priority = i % 3
					prio[tr.Jobs[i].ID] = i % 3
				}
			}
			gpus := int(seed)
			ag := bothEngines(t, agreeCase{
				name:    fmt.Sprintf("%v seed %d", ms, seed),
				trace:   tr,
				opts:    Options{Policy: p, Device: device.DefaultDevice(), GPUs: gpus},
				check:   true,
				classes: prio,
				sinks: func(bool) eventlog.Sink {
					n := &turnCounter{}
					counters = append(counters, n)
					return n
				},
			})
			if ag.diff != nil {
				t.Fatalf("%v seed %d on %d GPUs: with turns, %v", ms, seed, gpus, ag.diff)
			}
			a, b := ag.slow, ag.fast
			if !reflect.DeepEqual(a.Classes, b.Classes) {
				t.Fatalf("%v seed %d: classes with turns %+v, want %+v", ms, seed, b.Classes, a.Classes)
			}
		}
		for _, n := range counters {
			turns[ms[0]+"/"+ms[1]] += n.turns
		}
	}
	return turns
}

// Turns by attained time per unit of share (wfair; floor, whose jobs that
// come back from a pause are credited up to the lane's clock) give every job
// the per-iteration engine's result when the jobs' shares differ, on one GPU
// and two, and are taken (before, every boundary of a shared lane was an
// event under them: floor took over 60 s at 100,000 jobs).
func TestTurnsByShareAreExact(t *testing.T) {
	for _, name := range []string{"wfair", "floor"} {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		turns := 0
		for seed := int64(1); seed <= 2; seed++ {
			tr := salusTrace(t, seed, 100)
			rng := rand.New(rand.NewPCG(uint64(seed), 5))
			for i := range tr.Jobs {
				tr.Jobs[i].Share = 0.5 + 3.5*rng.Float64()
			}
			n := &turnCounter{}
			ag := bothEngines(t, agreeCase{
				name:  fmt.Sprintf("%s seed %d", name, seed),
				trace: tr,
				opts:  Options{Policy: p, Device: device.DefaultDevice(), GPUs: int(seed)},
				check: true,
				sinks: func(perIteration bool) eventlog.Sink {
					if perIteration {
						return nil
					}
					return n
				},
			})
			if ag.diff != nil {
				t.Fatalf("%s seed %d: %v", name, seed, ag.diff)
			}
			turns += n.turns
		}
		if turns == 0 {
			t.Errorf("%s: no stretch of turns ran", name)
		}
	}
}

// The readers take a stretch of turns: the metrics from the log written and
// read back, and history's iterations, are those of the per-iteration log; the
// plots' run log has the same jobs, ends and memory. The per-class waits, which
// the turns carry for a collector of classes, are the per-iteration run's,
// and read back, within the log's microsecond.
func TestReadersTakeTurns(t *testing.T) {
	p, _ := core.Lookup("fair")
	tr := salusTrace(t, 1, 100)
	classes := map[string]int{}
	for i, j := range tr.Jobs {
		classes[j.ID] = i % 3
	}
	type reader struct {
		runs  *plots.Recorder
		turns *turnCounter
		path  string
		file  *eventlog.File
	}
	readers := map[bool]*reader{}
	ag := bothEngines(t, agreeCase{
		name:    "fair",
		trace:   tr,
		opts:    Options{Policy: p, Device: device.DefaultDevice()},
		classes: classes,
		sinks: func(perIteration bool) eventlog.Sink {
			r := &reader{runs: plots.NewRecorder(), turns: &turnCounter{}, path: filepath.Join(t.TempDir(), "events.jsonl")}
			var err error
			if r.file, err = eventlog.Create(r.path); err != nil {
				t.Fatal(err)
			}
			readers[perIteration] = r
			return eventlog.Sinks{r.runs, r.file, r.turns}
		},
	})
	type out struct {
		res, file metrics.Result
		runs      *plots.RunLog
		iters     map[string]int
		turns     int
	}
	read := func(perIteration bool, res metrics.Result) out {
		r := readers[perIteration]
		if err := r.file.Close(); err != nil {
			t.Fatal(err)
		}
		o := out{res: res, turns: r.turns.turns}
		fc := metrics.NewCollector()
		fc.SetClasses(classes)
		if err := eventlog.ReadFile(r.path, func(e eventlog.Event) error { fc.Emit(e); return nil }); err != nil {
			t.Fatal(err)
		}
		var err error
		if o.file, err = fc.Result(); err != nil {
			t.Fatal(err)
		}
		if o.runs, err = r.runs.Log(); err != nil {
			t.Fatal(err)
		}
		h, err := history.Read(r.path)
		if err != nil {
			t.Fatal(err)
		}
		o.iters = map[string]int{}
		for _, j := range h.Jobs {
			o.iters[j.ID] = len(j.IterS)
		}
		return o
	}
	a, b := read(true, ag.slow), read(false, ag.fast)
	if b.turns == 0 {
		t.Fatal("no stretch of turns ran")
	}
	if ag.diff != nil {
		t.Fatal(ag.diff)
	}
	if len(a.res.Classes) != 3 || !reflect.DeepEqual(a.res.Classes, b.res.Classes) {
		t.Fatalf("per-class figures with turns %+v, want %+v", b.res.Classes, a.res.Classes)
	}
	for i, x := range a.file.Classes {
		y := b.file.Classes[i]
		if y.Waits != x.Waits || math.Abs(y.WaitMeanS-x.WaitMeanS) > 1.5e-6 || math.Abs(y.WaitP95S-x.WaitP95S) > 1.5e-6 {
			t.Fatalf("read back, class %d: %+v, want %+v", x.Priority, y, x)
		}
		if x.Waits == 0 || x.WaitP95S == 0 {
			t.Fatalf("class %d: %+v: no iteration waited", x.Priority, x)
		}
	}
	a.file.Classes, b.file.Classes = nil, nil
	// Read back, GPU times are rounded to the microsecond per iteration in one
	// log and per stretch in the other: up to half a microsecond an iteration
	// apart, 1e-4 of iterations of 5 ms.
	if len(a.file.Completion) != len(b.file.Completion) {
		t.Fatalf("read back, %d jobs, want %d", len(b.file.Completion), len(a.file.Completion))
	}
	for i, x := range a.file.Completion {
		y := b.file.Completion[i]
		if math.Abs(x.GPUS-y.GPUS) > 1e-4*x.GPUS {
			t.Fatalf("read back, job %s: GPU %v s, want %v", x.ID, y.GPUS, x.GPUS)
		}
		x.GPUS, y.GPUS = 0, 0
		if x != y {
			t.Fatalf("read back, job %d: %+v, want %+v", i, y, x)
		}
	}
	if !reflect.DeepEqual(a.iters, b.iters) {
		t.Fatalf("history reads %v iterations, want %v", b.iters, a.iters)
	}
	if len(a.runs.Jobs) != len(b.runs.Jobs) || !reflect.DeepEqual(a.runs.Memory, b.runs.Memory) {
		t.Fatal("the plots' run logs differ")
	}
	for i, x := range a.runs.Jobs {
		if y := b.runs.Jobs[i]; x.ID != y.ID || x.EndS != y.EndS || !reflect.DeepEqual(x.GPUs, y.GPUs) {
			t.Fatalf("the plots' run logs differ at %s: %+v, want %+v", x.ID, y, x)
		}
	}
}

// Two lanes side by side on one GPU, each taking turns among jobs of
// different demands: a lane's turns keep a share of 1 only if they do with
// every job the other lane may switch to, not only with the one it runs now
// (0.3 and 0.3 fit, 0.6 and 0.6 do not). The results are the per-iteration
// engine's.
func TestTurnsOfLanesSideBySide(t *testing.T) {
	for _, policy := range []string{"pack", "fcfs", "fair"} {
		p, err := core.Lookup(policy)
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 3; seed++ {
			tr := salusTrace(t, seed, 80)
			for i := range tr.Jobs {
				prof := *tr.Jobs[i].Profile // shared with the catalog: a copy of its own
				prof.Demand = 0.3 + 0.3*float64(i%2)
				tr.Jobs[i].Profile = &prof
			}
			ag := bothEngines(t, agreeCase{name: fmt.Sprintf("%s seed %d", policy, seed), trace: tr, opts: Options{Policy: p, Device: device.DefaultDevice()}})
			if ag.diff != nil {
				t.Fatalf("%s seed %d: with turns, %v", policy, seed, ag.diff)
			}
		}
	}
}

// Turns in lanes of jobs of several priorities: the jobs of the running
// job's priority take turns while the less urgent ones wait. Under every
// registered scheme, on one GPU and two, with the jobs in three classes, the
// per-job and per-class results (their waits included) are those of the
// iteration-by-iteration engine, and turns are taken under the policies
// whose lanes take them.
func TestTurnsAmongPrioritiesAreExact(t *testing.T) {
	turns := turnsAreExact(t, 60, true)
	for _, s := range []string{"salus/fair", "salus/fcfs", "salus/pack"} {
		if turns[s] == 0 {
			t.Errorf("%s: no stretch of turns ran", s)
		}
	}
}
