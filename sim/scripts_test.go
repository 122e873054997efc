package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// scriptsDir holds the core's interaction scripts (core/script_test.go).
const scriptsDir = "../core/testdata"

// scriptsSkipped are the scripts the simulator cannot set up, and why.
var scriptsSkipped = map[string]string{
	// Its events are calls the core refuses (a job that exists, one too big,
	// requests and yields out of turn, time going back): a run makes none.
	"bad_calls.txt": "its calls are ones the core refuses, which a simulated run never makes",
	// Restore brings a job back with GPU time attained and iterations done (a
	// daemon's restart); a trace's jobs start from nothing.
	"restore.txt": "it restores jobs with attained time, which a trace cannot say",
}

// scriptScenario is one scenario of a script, from its new line to the next:
// the scheme and GPUs the new line sets up, and the jobs that arrive.
type scriptScenario struct {
	pos  string // the new line's file:line
	args []datadriven.CmdArg
	// refused is the new line's error in the script's expected output: the
	// core refuses the setup (the script tests that).
	refused string
	jobs    []scriptJob
	// restores says a job is restored in it (see scriptsSkipped).
	restores bool
}

// scriptJob is an arrive line: at is the at block's time, seconds.
type scriptJob struct {
	pos string
	at  float64
	kv  map[string]string
	id  string
}

// The core's scripts through both engines: each scenario of each script in
// core/testdata (a new line and the jobs that arrive after it) is a trace on
// the scheme, GPUs, memory and mode parameters the new line sets up, each
// job the memory, declared time, GPUs, priority and share of its arrive line,
// arriving at its at block's time; its iterations (count, time, start-up,
// compute demand, catalog model) are drawn from a seed of the file's name,
// and a job that yields in the script is an inference job pausing between
// requests. Under today's rule and the built-in co-location model, every
// job's result with stretches is the per-iteration engine's, and the log
// keeps each GPU's memory. Jobs the script's core refuses at arrival are
// left out (the simulator refuses a trace that holds them), and so are
// scenarios whose new line the core refuses and those scriptsSkipped names.
func TestScriptsThroughBothEngines(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scriptsDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no script in %s", scriptsDir)
	}
	builtin := interference.Builtin()
	ran, stretched := 0, 0
	for _, path := range files {
		name := filepath.Base(path)
		if why, ok := scriptsSkipped[name]; ok {
			t.Logf("%s: skipped: %s", name, why)
			continue
		}
		for i, sc := range readScript(t, path) {
			switch {
			case sc.refused != "":
				t.Logf("%s: skipped: the core refuses its setup (%s)", sc.pos, sc.refused)
				continue
			case sc.restores:
				t.Logf("%s: skipped: it restores jobs with attained time, which a trace cannot say", sc.pos)
				continue
			}
			tr, o, mp := scriptTrace(t, name, i, sc)
			if len(tr.Jobs) == 0 {
				t.Logf("%s: skipped: no job arrives", sc.pos)
				continue
			}
			// The script's own scheme under both rules; then every other
			// registered scheme (with the script's mode parameters), under
			// one rule or the other in turn.
			own := [2]string{o.Policy.Mode, o.Policy.Name}
			cases := []struct {
				ms [2]string
				m  *interference.Model
			}{{own, nil}, {own, builtin}}
			for k, ms := range simtest.Schemes() {
				if ms != own {
					cases = append(cases, struct {
						ms [2]string
						m  *interference.Model
					}{ms, []*interference.Model{nil, builtin}[(i+k)%2]})
				}
			}
			for _, cs := range cases {
				o := o
				if cs.ms != own {
					if o.Policy, err = core.Compose(cs.ms[0], cs.ms[1], mp); err != nil {
						continue // the mode parameters do not apply to it
					}
				}
				o.Interference = cs.m
				c := agreeCase{name: fmt.Sprintf("%s under %s/%s (co-location model %v)", sc.pos, cs.ms[0], cs.ms[1], cs.m != nil), trace: tr, opts: o, check: true}
				if cs.ms != own {
					if c.trace = feasibleOnly(t, tr, o); len(c.trace.Jobs) == 0 {
						continue
					}
				}
				ag := bothEngines(t, c)
				if ag.diff != nil {
					t.Errorf("%s: with stretches, %v", c.name, ag.diff)
				}
				ran, stretched = ran+1, stretched+ag.ff.iterations
			}
		}
	}
	if ran == 0 || stretched == 0 {
		t.Fatalf("%d runs of both engines, %d iterations in stretches: want some of each", ran, stretched)
	}
	t.Logf("%d runs of both engines on %d scripts, %d iterations in stretches", ran, len(files)-len(scriptsSkipped), stretched)
}

// readScript reads a script's scenarios with the scripts' own parser; what
// the script expects is given back as it is (the core's test checks it).
func readScript(t *testing.T, path string) []*scriptScenario {
	t.Helper()
	var out []*scriptScenario
	var sc *scriptScenario
	yields := map[string]bool{}
	datadriven.RunTestAny(quietTB{t}, path, func(t testing.TB, td *datadriven.TestData) string {
		switch td.Cmd {
		case "new":
			sc = &scriptScenario{pos: td.Pos, args: td.CmdArgs}
			if e := strings.TrimSpace(td.Expected); strings.HasPrefix(e, "error:") {
				sc.refused = e
			}
			out = append(out, sc)
		case "at":
			if sc == nil {
				t.Fatalf("%s: an at block before the first new line", td.Pos)
			}
			var secs string
			td.ScanArgs(t, "t", &secs)
			at, err := strconv.ParseFloat(secs, 64)
			if err != nil {
				t.Fatalf("%s: t=%q: %v", td.Pos, secs, err)
			}
			for _, line := range strings.Split(td.Input, "\n") {
				f := strings.Fields(line)
				if len(f) < 2 || strings.HasPrefix(f[0], "#") {
					continue
				}
				switch verb, id := f[0], f[1]; verb {
				case "restore":
					sc.restores = true
				case "yield":
					yields[id] = true
				case "arrive":
					// The core refuses a job that exists, and one the
					// expected output names in an error.
					if slices.ContainsFunc(sc.jobs, func(j scriptJob) bool { return j.id == id }) ||
						strings.Contains(td.Expected, fmt.Sprintf("error: job %q", id)) {
						continue
					}
					j := scriptJob{pos: td.Pos, at: at, id: id, kv: map[string]string{}}
					for _, a := range f[2:] {
						k, v, ok := strings.Cut(a, "=")
						if !ok {
							t.Fatalf("%s: arrive %s: %q is not key=value", td.Pos, id, a)
						}
						j.kv[k] = v
					}
					sc.jobs = append(sc.jobs, j)
				}
			}
		}
		return td.Expected
	})
	// A job that yields is an inference job (a yield is a request's end).
	for _, sc := range out {
		for i := range sc.jobs {
			if yields[sc.jobs[i].id] {
				sc.jobs[i].kv["infer"] = "yes"
			}
		}
	}
	return out
}

// scriptTrace is scenario i of script name as a trace and the options to
// run it under: the new line's arguments read as core/script_test.go's
// newFromArgs reads them, the iterations drawn from a seed of the name.
func scriptTrace(t *testing.T, name string, i int, sc *scriptScenario) (*workload.Trace, Options, core.ModeParams) {
	t.Helper()
	policy, mode, capacity, quantum, clients, gpus, placement := "", "", 14000.0, 10.0, 16, 1, ""
	mp := core.DefaultModeParams()
	num := func(pos, key, v string) float64 {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: %s=%q: want a number", pos, key, v)
		}
		return x
	}
	for _, a := range sc.args {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		switch a.Key {
		case "policy":
			policy = v
		case "mode":
			mode = v
		case "capacity":
			capacity = num(sc.pos, a.Key, v)
		case "quantum":
			quantum = num(sc.pos, a.Key, v)
		case "clients":
			clients = int(num(sc.pos, a.Key, v))
		case "gpus":
			gpus = int(num(sc.pos, a.Key, v))
		case "placement":
			placement = v
		case "admission":
			mp.Admission = v
		case "starve":
			mp.StarveFactor = num(sc.pos, a.Key, v)
		case "migrate":
			mp.Migrate = true
		default:
			t.Fatalf("%s: new: unknown argument %q: the scripts' new takes policy, mode, capacity, quantum, clients, gpus, placement, admission, starve and migrate", sc.pos, a.Key)
		}
	}
	mp.SuspendQuantumS, mp.MPSMaxClients = quantum, clients
	p, err := core.Compose(mode, policy, mp)
	if err != nil {
		t.Fatalf("%s: %v", sc.pos, err)
	}
	gp, err := core.LookupGPUPlacement(placement)
	if err != nil {
		t.Fatalf("%s: %v", sc.pos, err)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	dev := device.DefaultDevice()
	dev.CapacityMiB, dev.TotalMiB = capacity, max(dev.TotalMiB, capacity)
	dev.IterOverheadS = 0.0005 * float64(rng.IntN(2))
	dev.SwitchS = 0.0003 * float64(rng.IntN(2))
	dev.StartupIsGPUWork = rng.IntN(2) == 0
	profiles := workload.Default().Profiles()
	tr := &workload.Trace{Name: fmt.Sprintf("%s#%d", name, i)}
	for _, j := range sc.jobs {
		get := func(key, def string) float64 {
			v, ok := j.kv[key]
			if !ok {
				v = def
			}
			return num(j.pos, key, v)
		}
		// A catalog model, so that the co-location model tells the jobs apart.
		cat := profiles[rng.IntN(len(profiles))]
		persistent, ephemeral := get("persistent", "100"), get("ephemeral", "100")
		prof := &workload.Profile{Model: cat.Model, Batch: cat.Batch, Kind: workload.Train,
			IterS: 0.05 * float64(1+rng.IntN(8)), StartupS: 0.25 * float64(rng.IntN(4)),
			PersistentMiB: persistent, EphemeralMiB: ephemeral, PeakMiB: persistent + ephemeral, Demand: 0.2 + 0.8*rng.Float64()}
		job := workload.Job{ID: j.id, Model: prof.Model, Batch: prof.Batch, Kind: workload.Train, Iterations: 1 + rng.IntN(40),
			ArrivalS: j.at, DeclaredS: get("declared", "1"), GPUs: int(get("gpus", "1")), Priority: int(get("priority", "0")),
			Share: get("share", "0"), Profile: prof}
		if j.kv["infer"] != "" {
			prof.Kind, job.Kind, job.PauseS = workload.Infer, workload.Infer, 0.25*float64(1+rng.IntN(4))
		}
		tr.Jobs = append(tr.Jobs, job)
	}
	// In arrival order, as a trace streams (the at blocks go forward in time).
	slices.SortStableFunc(tr.Jobs, func(a, b workload.Job) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	return tr, Options{Policy: p, Device: dev, GPUs: gpus, GPUPlacement: gp}, mp
}

// feasibleOnly is tr without the jobs o's scheme can never run on o's GPUs
// (another scheme than the script's may want more memory of a job: MPS).
func feasibleOnly(t *testing.T, tr *workload.Trace, o Options) *workload.Trace {
	t.Helper()
	d := core.Uniform(o.GPUs, o.Device.CapacityMiB)
	d.Placement = o.GPUPlacement
	s, err := core.NewNode(o.Policy, d)
	if err != nil {
		t.Fatal(err)
	}
	out := &workload.Trace{Name: tr.Name}
	for _, j := range tr.Jobs {
		if s.Feasible(j.CoreJob()) == nil {
			out.Jobs = append(out.Jobs, j)
		}
	}
	return out
}

// quietTB is a test without the scripts' parser's log of every directive
// (-v): the core's own test shows them.
type quietTB struct{ testing.TB }

func (quietTB) Logf(string, ...any) {}
