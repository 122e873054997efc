package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/live"
)

// salus profile --pairs: the co-location pairs of the user's own jobs, measured
// on this machine under an in-process daemon (package live's), written as a pair
// file (package interference's format). The measuring is here; the format and
// what is made of it are package interference's.

// pairsPolicy is the policy the pairs run under: pack gives each job a lane of
// its own while memory allows, and lanes run side by side.
const pairsPolicy = "pack"

// cpuCapacityMiB is the memory the daemon schedules when the jobs run on the
// CPU: host memory, which the daemon does not police, so that no pair of CPU
// jobs is kept from running side by side by the estimates they declare.
const cpuCapacityMiB = 1 << 20

// pairsHelp is what profile's help says of --pairs.
const pairsHelp = `
With --pairs, the argument is instead a jobs file, and salus profile measures on this
machine how much the jobs slow each other down when they share it, for the simulator's
co-location model: it runs each job alone under a daemon for --duration, then each
unordered pair (a job with itself too, each pair once) side by side under a fresh
daemon for --duration, and writes a pair file (CSV: worker_type, job_a, batch_a,
job_b, batch_b, alone_a, alone_b, together_a, together_b, normalized_a, normalized_b,
same_job, clipped_a, clipped_b) to --out. A job's throughput is its iterations per
second on the daemon's clock, read from the daemon's event log: the iterations, and
the fractions of iterations, that fall in a window of --duration that opens once every
job of the run has ended --warmup iterations. normalized is together / alone (1: no
slowdown); nothing is clipped. The pairs run under the daemon's pack policy: it gives
each job a lane of its own while memory allows, and lanes run side by side, so the two
jobs iterate at the same time, as they would sharing a GPU under MPS (fifo, fair and
srtf keep one lane and would make them take turns, leaving nothing to measure). A pair
that did not get two lanes (--capacity-mib too small for both) is an error. Alone
runs are under the same daemon and policy, so the daemon's own per-iteration cost is
in both figures.

The jobs file (YAML) lists each job's name, batch size (0 if it has none) and the
command that runs it as a salus client, a string run by sh -c or a list of arguments:

  jobs:
    - name: cnn
      batch: 32
      command: /usr/bin/python3 examples/train.py --model cnn --batch-size 32 --iterations 100000 --salus env
    - name: mlp
      batch: 64
      command: [/usr/bin/python3, examples/train.py, --model, mlp, --batch-size, "64", --iterations, "100000", --salus, env]

  salus profile --pairs examples/pairs.yaml --duration 20s --out pairs.csv

Commands run in the current directory with SALUS_ADDR set to the daemon's socket
(salus_client connects there; examples/train.py with --salus env). Each must open one
session and iterate for longer than its warm-up and --duration, with room to spare: it
is stopped (SIGTERM) once measured. Each job, and each copy of a job paired with
itself, must open its session under a name of its own (train.py's is MODEL-PID). On a
GPU with CUDA PyTorch the jobs share the GPU; on a machine without one they contend
for the CPU's cores (set their threads, torch.set_num_threads, as they would run). The
rows' worker_type is --device: by default the preset of the GPU nvidia-smi names (as
salus serve --device auto finds it), else cpu. With --logs DIR, each run's event log
and each job's output are kept there. The file is what salus's co-location model
reads (salus interference fit).`

// pairsFlags are salus profile's flags for --pairs.
type pairsFlags struct {
	on             bool
	duration       time.Duration
	warmup         int
	device         string
	capacityMiB    float64
	startupTimeout time.Duration
	logs           string
}

// pairsOnly are the flags that act only with --pairs.
var pairsOnly = []string{"duration", "warmup", "device", "capacity-mib", "startup-timeout", "logs"}

func (f *pairsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.on, "pairs", false, "measure the co-location pairs of the jobs of the jobs file given as the argument (see above), and write a pair file")
	fl.DurationVar(&f.duration, "duration", 20*time.Second, "with --pairs: how long each run is measured, after its warm-up")
	fl.IntVar(&f.warmup, "warmup", 5, "with --pairs: iterations each job of a run ends before its measured window opens")
	fl.StringVar(&f.device, "device", "", "with --pairs: the rows' worker_type (default: the preset of the GPU nvidia-smi names, as salus serve --device auto finds it, else cpu)")
	fl.Float64Var(&f.capacityMiB, "capacity-mib", 0, "with --pairs: memory the daemon schedules, MiB (default: the GPU's usable memory; on the CPU, no limit)")
	fl.DurationVar(&f.startupTimeout, "startup-timeout", 5*time.Minute, "with --pairs: how long a job may take to open its session and end its warm-up iterations")
	fl.StringVar(&f.logs, "logs", "", "with --pairs: keep each run's event log and each job's output in this directory")
}

// check refuses --pairs' flags without --pairs, and what --pairs cannot do.
func (f *pairsFlags) check(cmd *cobra.Command) error {
	fs := cmd.Flags()
	if !f.on {
		for _, name := range pairsOnly {
			if changed(fs, name) {
				return fmt.Errorf("--%s applies to --pairs (measuring your jobs' pairs): give --pairs JOBS, or drop --%[1]s", name)
			}
		}
		return nil
	}
	switch {
	case changed(fs, "format"):
		return errors.New("--format: --pairs writes a pair file, CSV: drop --format")
	case f.duration <= 0:
		return fmt.Errorf("--duration %v: give a positive duration (20s measures most jobs well; 2s for a quick look)", f.duration)
	case f.warmup < 1:
		return fmt.Errorf("--warmup %d: give at least 1 iteration (the first iteration of a job is seldom like the others)", f.warmup)
	case f.capacityMiB < 0:
		return fmt.Errorf("--capacity-mib %v: give a positive number of MiB, or 0 for the default", f.capacityMiB)
	case f.startupTimeout <= 0:
		return fmt.Errorf("--startup-timeout %v: give a positive duration", f.startupTimeout)
	}
	return nil
}

// pairJob is one job of a jobs file.
type pairJob struct {
	interference.Job
	// Argv is the command; a string command is sh -c STRING.
	Argv []string
	// Line is the job's line in the jobs file.
	Line int
}

// pairJobName is what a job's name may be: it goes into a CSV and into file names.
var pairJobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// readPairJobs reads a jobs file: a YAML mapping whose jobs key lists each job's
// name, batch and command. Errors name the file, the line and the field.
func readPairJobs(path string) ([]pairJob, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jobs file: %w", err)
	}
	var doc struct {
		Jobs []yaml.Node `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w: a jobs file is YAML with a list of jobs under jobs: (salus profile --help)", path, err)
	}
	if len(doc.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs: list them under jobs:, each with name, batch and command (salus profile --help)", path)
	}
	var jobs []pairJob
	seen := map[interference.Job]int{}
	for i, n := range doc.Jobs {
		j, err := parsePairJob(&n)
		if err != nil {
			return nil, fmt.Errorf("%s:%w", path, err)
		}
		if prev, dup := seen[j.Job]; dup {
			return nil, fmt.Errorf("%s:%d: job %d: %s at batch %d is also the job on line %d: give each job once (another batch size is another job)",
				path, j.Line, i+1, j.Name, j.Batch, prev)
		}
		seen[j.Job] = j.Line
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// parsePairJob reads one job of a jobs file; an error begins with its line.
func parsePairJob(n *yaml.Node) (pairJob, error) {
	j := pairJob{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return j, fmt.Errorf("%d: a job is a mapping of name, batch and command, not %q", n.Line, n.Value)
	}
	var hasName, hasBatch bool
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, v := n.Content[k], n.Content[k+1]
		switch key.Value {
		case "name":
			j.Name, hasName = strings.TrimSpace(v.Value), true
			if v.Kind != yaml.ScalarNode || !pairJobName.MatchString(j.Name) {
				return j, fmt.Errorf("%d: field name: %q is not a job name: give letters, digits, '.', '_', '+' or '-', starting with a letter or digit", v.Line, v.Value)
			}
		case "batch":
			b, err := strconv.Atoi(strings.TrimSpace(v.Value))
			if v.Kind != yaml.ScalarNode || err != nil || b < 0 {
				return j, fmt.Errorf("%d: field batch: %q is not a batch size: give a whole number (0 if the job has none)", v.Line, v.Value)
			}
			j.Batch, hasBatch = b, true
		case "command":
			switch v.Kind {
			case yaml.ScalarNode:
				if strings.TrimSpace(v.Value) != "" {
					j.Argv = []string{"sh", "-c", v.Value}
				}
			case yaml.SequenceNode:
				if err := v.Decode(&j.Argv); err != nil {
					return j, fmt.Errorf("%d: field command: %v: give a string (run by sh -c) or a list of strings", v.Line, err)
				}
			}
			if len(j.Argv) == 0 || j.Argv[0] == "" {
				return j, fmt.Errorf("%d: field command: give the command that runs the job as a salus client: a string (run by sh -c) or a list of its arguments", v.Line)
			}
		default:
			return j, fmt.Errorf("%d: field %q: a job has name, batch and command only", key.Line, key.Value)
		}
	}
	for _, m := range []struct {
		ok   bool
		what string
	}{{hasName, "name: the job's name in the pair file"}, {hasBatch, "batch: its batch size (0 if none)"}, {j.Argv != nil, "command: what runs it as a salus client"}} {
		if !m.ok {
			return j, fmt.Errorf("%d: the job has no %s", n.Line, m.what)
		}
	}
	return j, nil
}

// pairsDevice is the device the pairs are measured on: its name (the rows'
// worker_type) and the memory the daemon schedules.
func (f *pairsFlags) pairsDevice(w io.Writer) (string, float64) {
	name, capacity := "cpu", float64(cpuCapacityMiB)
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		if f.device == "" {
			fmt.Fprintln(w, "salus profile: no GPU (no nvidia-smi on PATH): measuring on the CPU, worker_type cpu")
		}
	} else {
		sf := serveFlags{device: "auto"}
		dev, err := sf.detect()
		if err != nil {
			fmt.Fprintf(w, "salus profile: no GPU found (%v): worker_type cpu, and no memory limit\n", err)
		} else {
			name, capacity = dev.Name, dev.CapacityMiB
			for _, key := range device.Names() { // a preset's key, as --device takes it
				if p, _ := device.Preset(key); p.Name == dev.Name {
					name = key
				}
			}
		}
		for _, warn := range sf.warnings {
			fmt.Fprintf(w, "salus profile: %s\n", warn)
		}
	}
	if f.device != "" {
		name = f.device
	}
	if f.capacityMiB > 0 {
		capacity = f.capacityMiB
	}
	return strings.ToLower(name), capacity
}

// runPairs is salus profile --pairs JOBS: every job alone, then every pair, and
// the pair file written to out.
func (f *pairsFlags) runPairs(cmd *cobra.Command, jobsPath, out string) error {
	jobs, err := readPairJobs(jobsPath)
	if err != nil {
		return err
	}
	policy, err := core.Compose("", pairsPolicy, core.DefaultModeParams())
	if err != nil {
		return err
	}
	if f.logs != "" {
		if err := os.MkdirAll(f.logs, 0o755); err != nil {
			return fmt.Errorf("--logs: %w", err)
		}
	}
	msg := cmd.ErrOrStderr()
	worker, capacity := f.pairsDevice(msg)
	n := len(jobs)
	fmt.Fprintf(msg, "salus profile: %d jobs on %s: %d runs alone and %d side by side, each measured %v after %d warm-up iterations, under %s\n",
		n, worker, n, n*(n+1)/2, f.duration, f.warmup, pairsPolicy)
	m := pairsMeasurer{flags: f, policy: policy, capacity: capacity, msg: msg}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	alone := make([]float64, n)
	for i, j := range jobs {
		r, err := m.measure(ctx, "alone-"+j.String(), j)
		if err != nil {
			return err
		}
		alone[i] = r[0]
		fmt.Fprintf(msg, "salus profile: %s alone: %.4g iterations/s\n", j, alone[i])
	}
	var pairs []interference.Pair
	for a := range jobs {
		for b := a; b < n; b++ {
			ja, jb := jobs[a], jobs[b]
			r, err := m.measure(ctx, "pair-"+ja.String()+"-"+jb.String(), ja, jb)
			if err != nil {
				return err
			}
			p := interference.Pair{WorkerType: worker, A: ja.Job, B: jb.Job, AloneA: alone[a], AloneB: alone[b],
				TogetherA: r[0], TogetherB: r[1], NormA: r[0] / alone[a], NormB: r[1] / alone[b], Measured: true}
			fmt.Fprintf(msg, "salus profile: %s beside %s: %.4g and %.4g iterations/s, %.3g and %.3g of alone\n", ja, jb, r[0], r[1], p.NormA, p.NormB)
			pairs = append(pairs, p)
		}
	}
	var buf bytes.Buffer
	if err := interference.WritePairs(&buf, pairs); err != nil {
		return err
	}
	if err := writeOut(cmd.OutOrStdout(), out, buf.Bytes()); err != nil {
		return err
	}
	if _, err := interference.ReadPairs(bytes.NewReader(buf.Bytes())); err != nil {
		return fmt.Errorf("the pair file was written, but salus cannot use it: %w: the measurements are too noisy; measure again with a longer --duration on a quieter machine", err)
	}
	return nil
}

// pairsMeasurer runs the measured runs of salus profile --pairs.
type pairsMeasurer struct {
	flags    *pairsFlags
	policy   core.Policy
	capacity float64
	msg      io.Writer
}

// measure runs jobs side by side (one: alone) under a fresh daemon and returns
// each one's throughput, iterations per second on the daemon's clock over the
// measured window. Different jobs are started one after the other, each once
// the daemon has logged the arrival of the one before: the i-th arrival is the
// i-th job's. Copies of one job start at once.
func (m *pairsMeasurer) measure(ctx context.Context, run string, jobs ...pairJob) ([]float64, error) {
	f := m.flags
	sink := &pairSink{}
	cfg := live.DaemonConfig{Policy: m.policy, CapacityMiB: m.capacity, Trace: "profile --pairs: " + run, Log: sink}
	if f.logs != "" {
		cfg.LogPath = filepath.Join(f.logs, run+".jsonl")
	}
	d, err := live.StartDaemon(cfg)
	if err != nil {
		return nil, err
	}
	procs := make([]*pairProc, 0, len(jobs))
	defer func() {
		for _, p := range procs {
			p.stop()
		}
		d.Stop()
	}()
	startBy := time.Now().Add(f.startupTimeout)
	for i, j := range jobs {
		p, err := startPairProc(j, d.Addr, f.logs, fmt.Sprintf("%s.%d", run, i+1))
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		if i+1 < len(jobs) && jobs[i+1].Job == j.Job {
			continue // copies of one job: which arrives first does not matter
		}
		if err := waitPairs(ctx, procs, startBy, func() bool { return sink.arrivals() > i }); err != nil {
			return nil, m.failed(run, j, err, "did not open its session with the daemon",
				fmt.Sprintf("check that its command (line %d of the jobs file) connects to $SALUS_ADDR, or give a longer --startup-timeout", j.Line), "", sink)
		}
	}
	names := sink.arrived()
	// The window opens once every job has ended its warm-up iterations.
	if err := waitPairs(ctx, procs, startBy, func() bool {
		for _, name := range names {
			if sink.ended(name) < f.warmup {
				return false
			}
		}
		return true
	}); err != nil {
		late := len(jobs) - 1
		for i := range jobs {
			if sink.endedByIndex(i) < f.warmup {
				late = i
				break
			}
		}
		return nil, m.failed(run, jobs[late], err, fmt.Sprintf("did not end %d warm-up iterations", f.warmup),
			"give a longer --startup-timeout, or fewer --warmup iterations", "", sink)
	}
	from := 0.0
	for _, name := range names {
		from = max(from, sink.endOf(name, f.warmup))
	}
	to := from + f.duration.Seconds()
	// It closes once every job has ended an iteration after it: the iterations
	// cut by its end are then known.
	if err := waitPairs(ctx, procs, time.Now().Add(2*f.duration+time.Minute), func() bool {
		for _, name := range names {
			if sink.lastEnd(name) < to {
				return false
			}
		}
		return true
	}); err != nil {
		late := len(jobs) - 1
		for i, name := range names {
			if sink.lastEnd(name) < to {
				late = i
				break
			}
		}
		return nil, m.failed(run, jobs[late], err, "did not iterate to the end of the measured window",
			"its iterations are too long to measure in --duration: give a longer one",
			"it must iterate for longer than its warm-up and --duration: give it more iterations (its command's), or a shorter --duration", sink)
	}
	if lanes := sink.lanes(names); len(names) == 2 && lanes[0] == lanes[1] {
		return nil, fmt.Errorf("run %s: the daemon admitted both jobs into lane %d, where they take turns, not side by side: its %.0f MiB do not hold a lane for each; give --capacity-mib enough for both",
			run, lanes[0], m.capacity)
	}
	out := make([]float64, len(names))
	for i, name := range names {
		out[i] = sink.throughput(name, from, to)
	}
	return out, nil
}

// failed says why a run failed: which job and what it did not do, and todo,
// what to do; when a job exited, what it did, exitTodo (or a check of its
// command) and the end of its standard error.
func (m *pairsMeasurer) failed(run string, j pairJob, err error, what, todo, exitTodo string, sink *pairSink) error {
	var exit *pairExit
	if errors.As(err, &exit) {
		j = exit.job
		what = fmt.Sprintf("exited (%v) after %d iterations under the daemon", exit.err, sink.endedByIndex(exit.index))
		todo = cmp.Or(exitTodo, fmt.Sprintf("check its command (line %d of the jobs file): it must run as a salus client at $SALUS_ADDR and open one session, under a name of its own", j.Line))
		if exit.stderr != "" {
			todo += "; its standard error ends:\n" + exit.stderr
		}
	} else {
		what += " (" + err.Error() + ")"
	}
	return fmt.Errorf("run %s: job %s %s: %s", run, j, what, todo)
}

// pairExit is a job's process that exited during its run.
type pairExit struct {
	job    pairJob
	index  int
	err    error
	stderr string
}

func (e *pairExit) Error() string { return fmt.Sprintf("job %s exited: %v", e.job, e.err) }

// waitPairs polls until cond holds, a process exits (a *pairExit), ctx ends or
// the deadline passes.
func waitPairs(ctx context.Context, procs []*pairProc, deadline time.Time, cond func() bool) error {
	for {
		if cond() {
			return nil
		}
		for i, p := range procs {
			select {
			case <-p.done:
				err := p.err
				if err == nil {
					err = errors.New("exit status 0")
				}
				return &pairExit{job: p.job, index: i, err: err, stderr: p.stderr.String()}
			default:
			}
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pairProc is a job's running process.
type pairProc struct {
	job    pairJob
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr *tailBuffer
	files  []*os.File
}

// startPairProc starts j's command, its environment's SALUS_ADDR the daemon's
// socket; with logs, its output goes to files there too, named name.out and
// name.err.
func startPairProc(j pairJob, addr, logs, name string) (*pairProc, error) {
	p := &pairProc{job: j, cmd: exec.Command(j.Argv[0], j.Argv[1:]...), done: make(chan struct{}), stderr: &tailBuffer{max: 2000}}
	p.cmd.Env = append(os.Environ(), "SALUS_ADDR="+addr)
	p.cmd.Stderr = p.stderr
	if logs != "" {
		base := filepath.Join(logs, name)
		out, err := os.Create(base + ".out")
		if err != nil {
			return nil, fmt.Errorf("--logs: %w", err)
		}
		errf, err := os.Create(base + ".err")
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("--logs: %w", err)
		}
		p.files = []*os.File{out, errf}
		p.cmd.Stdout, p.cmd.Stderr = out, io.MultiWriter(p.stderr, errf)
	}
	ownGroup(p.cmd)
	if err := p.cmd.Start(); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("job %s (line %d of the jobs file): %w: give a command that exists", j, j.Line, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.closeFiles()
		close(p.done)
	}()
	return p, nil
}

func (p *pairProc) closeFiles() {
	for _, f := range p.files {
		f.Close()
	}
}

// stop ends the job: SIGTERM to its process group (a salus client then closes
// its session), SIGKILL if it has not exited 5 seconds later.
func (p *pairProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	signalGroup(p.cmd, false)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		signalGroup(p.cmd, true)
		<-p.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// pairSink follows a run's event log: the jobs in arrival order, their lanes,
// and the spans of their iterations on the daemon's clock.
type pairSink struct {
	mu    sync.Mutex
	order []string
	lane  map[string]int
	begun map[string]float64
	spans map[string][][2]float64
}

// Emit records e.
func (s *pairSink) Emit(e eventlog.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lane == nil {
		s.lane, s.begun, s.spans = map[string]int{}, map[string]float64{}, map[string][][2]float64{}
	}
	switch e.Kind {
	case eventlog.Arrive:
		s.order = append(s.order, e.Job)
	case eventlog.Admit:
		s.lane[e.Job] = e.Lane
	case eventlog.IterStart:
		s.begun[e.Job] = e.T
	case eventlog.IterEnd:
		if b, ok := s.begun[e.Job]; ok {
			s.spans[e.Job] = append(s.spans[e.Job], [2]float64{b, e.T})
			delete(s.begun, e.Job)
		}
	}
}

func (s *pairSink) arrivals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

func (s *pairSink) arrived() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// ended is how many iterations job has ended.
func (s *pairSink) ended(job string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.spans[job])
}

// endedByIndex is how many iterations the i-th job to arrive has ended.
func (s *pairSink) endedByIndex(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.order) {
		return 0
	}
	return len(s.spans[s.order[i]])
}

// endOf is when job's n-th iteration ended.
func (s *pairSink) endOf(job string, n int) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans[job][n-1][1]
}

// lastEnd is when job's last iteration ended (-1: none has).
func (s *pairSink) lastEnd(job string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spans[job]
	if len(sp) == 0 {
		return -1
	}
	return sp[len(sp)-1][1]
}

func (s *pairSink) lanes(jobs []string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(jobs))
	for i, j := range jobs {
		out[i] = s.lane[j]
	}
	return out
}

// throughput is job's iterations per second over [from, to]: each iteration
// counts by the fraction of it inside the window.
func (s *pairSink) throughput(job string, from, to float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0.0
	for _, sp := range s.spans[job] {
		b, e := sp[0], sp[1]
		switch {
		case e <= b:
			if b >= from && b < to {
				n++
			}
		case e > from && b < to:
			n += (min(e, to) - max(b, from)) / (e - b)
		}
	}
	return n / (to - from)
}
