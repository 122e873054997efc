// Package sweep runs a grid of simulations (traces x policies x sharing modes x
// load x device memory, each over several seeds) in parallel, and summarizes every
// metric per cell as a mean with a 95% confidence interval across seeds (a BCa
// bootstrap, eval.MeanInterval). The traces are generated (a new trace per
// seed, of any of workload.Kinds: salus100 by default, the paper's) or the
// user's trace files, whose seeds resample them (workload.Trace.Resample:
// bootstrap or jitter), and whose loads scale their arrival rate. Recommend says which scheme is best
// on which metric at each point. Finished runs
// can be appended to a file as they complete, so an interrupted sweep keeps them
// and a later one resumes. It composes workload, sim and metrics and holds no
// scheduling logic.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/workload"
)

// Grid is what a sweep covers.
type Grid struct {
	Policies []string `json:"policies"`
	// Modes are sharing modes; "default" runs each policy in its own mode.
	Modes         []string  `json:"modes"`
	Seeds         []int64   `json:"seeds"`
	Loads         []float64 `json:"loads"`
	CapacitiesMiB []float64 `json:"capacities_mib"`
	// Admissions are the orders of admission to compare (core.AdmissionOrders);
	// none: arrival order alone, as before the option.
	Admissions []string `json:"admissions,omitempty"`
	// StarveFactor is K of policy-ordered admission (core.ModeParams); 0: the
	// default.
	StarveFactor float64 `json:"starve_factor,omitempty"`
	// Migrations are the migration settings to compare ("off", "on":
	// core.ModeParams.Migrate), a grid dimension; none: off alone, as before
	// the option.
	Migrations []string `json:"migrations,omitempty"`
	// Device is the device preset; Jobs the generated traces' size.
	Device string `json:"device"`
	Jobs   int    `json:"jobs"`
	// TraceKinds are the generated traces' kinds (workload.Kinds), a grid
	// dimension; none: salus100 alone when there are no trace files, none with
	// them.
	TraceKinds []string `json:"trace_kinds,omitempty"`
	// GPUs is how many GPUs of Device each run's node has (0: one).
	GPUs int `json:"gpus,omitempty"`
	// Cluster, when set, is a cluster file (cluster.Load) each run goes to in
	// place of one node of GPUs (Device is then the reference device), and
	// NodePlacement how a job's node is chosen ("": core's default).
	Cluster       string `json:"cluster,omitempty"`
	NodePlacement string `json:"node_placement,omitempty"`
	// Catalogs are catalog files (workload.LoadCatalogFile) over the default
	// catalog, in order: their profiles replace those of the generated trace's
	// models. Kept in the grid file, so that --resume reads them again.
	Catalogs []string `json:"catalogs,omitempty"`
	// Traces are trace files to sweep instead of the generated trace; each seed
	// draws a trace from the file by Resample (workload.ResampleMethods), and each
	// load divides its arrival times.
	Traces   []string `json:"traces,omitempty"`
	Resample string   `json:"resample,omitempty"`
	// Interference names the co-location model (interference.Named: "rule" or
	// "" today's rule, "measured" the built-in model, else a model file).
	Interference string `json:"interference,omitempty"`
	// Shard, when set, is the share of the runs this sweep does (shard.go).
	Shard *Shard `json:"shard,omitempty"`
	// Provenance is where the sweep's results come from (provenance.go): the
	// build, the command line, the seeds, the sha256 of the traces and of the
	// co-location model; none in a grid written before it.
	Provenance *provenance.Record `json:"provenance,omitempty"`
}

// Cell is one point of the grid, all seeds together.
type Cell struct {
	// Trace is the trace file the cell runs; empty: a generated trace, of kind
	// Kind (empty: salus100, so that sweeps from before the kinds read alike).
	Trace       string  `json:"trace,omitempty"`
	Kind        string  `json:"kind,omitempty"`
	Policy      string  `json:"policy"`
	Mode        string  `json:"mode"`
	Load        float64 `json:"load"`
	CapacityMiB float64 `json:"capacity_mib"`
	// Admission is the order of admission (core.AdmissionOrders); empty: the
	// default, arrival order.
	Admission string `json:"admission,omitempty"`
	// Migrate: a job waiting for its turn may move to an idle GPU of its node
	// (core.ModeParams.Migrate).
	Migrate bool `json:"migrate,omitempty"`
}

// ModeName is the cell's mode as tables and plots show it: with the order of
// admission when the grid compares them ("salus/admit-policy").
func (c Cell) ModeName() string {
	name := c.Mode
	if c.Admission != "" {
		name += "/admit-" + c.Admission
	}
	if c.Migrate {
		name += "/migrate"
	}
	return name
}

func (c Cell) String() string {
	s := fmt.Sprintf("%s/%s load %g capacity %g MiB", c.Policy, c.ModeName(), c.Load, c.CapacityMiB)
	switch {
	case c.Trace != "":
		s = c.Trace + ": " + s
	case c.Kind != "":
		s = c.Kind + ": " + s
	}
	return s
}

// TraceName is how the cell's trace is named in tables and plots: the trace
// file's name without its extension, or the generated trace's kind.
func (c Cell) TraceName() string {
	if c.Trace == "" && c.Kind != "" {
		return c.Kind
	}
	return TraceName(c.Trace)
}

// source is a trace a grid runs: a file, or a generated kind.
type source struct{ trace, kind string }

// sources are the grid's traces, in grid order: the files, then the generated
// kinds (salus100 alone when neither is given). A salus100 cell's kind is
// empty, as before kinds were a dimension.
func (g Grid) sources() []source {
	var out []source
	for _, tr := range g.Traces {
		out = append(out, source{trace: tr})
	}
	kinds := g.TraceKinds
	if len(kinds) == 0 && len(g.Traces) == 0 {
		kinds = []string{workload.Salus100}
	}
	for _, k := range kinds {
		if k == workload.Salus100 {
			k = ""
		}
		out = append(out, source{kind: k})
	}
	return out
}

// Sample is one finished run: a cell at one seed.
type Sample struct {
	Cell
	Seed    int64              `json:"seed"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Err says why the run failed (for example, a job that cannot fit the
	// device); failed runs are reported and left out of the statistics.
	Err string `json:"error,omitempty"`
}

// ErrNotApplicable is what a Runner returns for a policy and mode that do not go
// together (fifo under salus lanes, say); such cells are left out of the sweep.
var ErrNotApplicable = errors.New("policy and mode do not go together")

// Runner runs one cell at one seed and returns its metrics.
type Runner func(c Cell, seed int64) (map[string]float64, error)

// Task is a run to do.
type Task struct {
	Cell
	Seed int64
}

func (t Task) key() string { return fmt.Sprintf("%s|%d", t.Cell, t.Seed) }

// Cells lists the grid's cells that can run, in grid order (trace by trace). applicable says
// whether a policy runs in a mode, and under which name (a policy's default mode
// is named by the policy's own); a cell named twice is listed once.
func (g Grid) Cells(applicable func(policy, mode string) (string, bool)) []Cell {
	var cells []Cell
	seen := map[Cell]bool{}
	admissions := g.Admissions
	if len(admissions) == 0 {
		admissions = []string{""}
	}
	migrations := []bool{false}
	if len(g.Migrations) > 0 {
		migrations = migrations[:0]
		for _, m := range g.Migrations {
			migrations = append(migrations, m == MigrateOn)
		}
	}
	for _, src := range g.sources() {
		for _, p := range g.Policies {
			for _, mode := range g.Modes {
				m, ok := applicable(p, mode)
				if !ok {
					continue
				}
				for _, c := range g.CapacitiesMiB {
					for _, l := range g.Loads {
						for _, a := range admissions {
							for _, mg := range migrations {
								if mg && !mayMigrate(p, m) {
									continue // nothing to move: the cell would be the one without
								}
								cell := Cell{Trace: src.trace, Kind: src.kind, Policy: p, Mode: m, Load: l, CapacityMiB: c, Admission: a, Migrate: mg}
								if !seen[cell] {
									seen[cell] = true
									cells = append(cells, cell)
								}
							}
						}
					}
				}
			}
		}
	}
	return cells
}

// Tasks lists every cell at every seed (those of the grid's shard, when it has
// one), less those already done.
func (g Grid) Tasks(cells []Cell, done []Sample) []Task {
	skip := map[string]bool{}
	for _, s := range done {
		skip[Task{Cell: s.Cell, Seed: s.Seed}.key()] = true
	}
	var tasks []Task
	k := 0
	for _, c := range cells {
		for _, seed := range g.Seeds {
			t := Task{Cell: c, Seed: seed}
			if g.Shard.has(k) && !skip[t.key()] {
				tasks = append(tasks, t)
			}
			k++
		}
	}
	return tasks
}

// Run does the tasks on workers goroutines, calling done (from one goroutine at
// a time) with each finished sample. When ctx is cancelled it starts nothing
// new, waits for the runs in flight, and returns what finished with ctx's error.
func Run(ctx context.Context, tasks []Task, workers int, run Runner, done func(Sample)) ([]Sample, error) {
	workers = max(1, min(workers, len(tasks)))
	todo := make(chan Task)
	results := make(chan Sample)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range todo {
				s := Sample{Cell: t.Cell, Seed: t.Seed}
				m, err := run(t.Cell, t.Seed)
				if err != nil {
					s.Err = err.Error()
				} else {
					s.Metrics = m
				}
				results <- s
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, t := range tasks {
			select {
			case <-ctx.Done():
				return
			case todo <- t:
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var out []Sample
	for s := range results {
		out = append(out, s)
		if done != nil {
			done(s)
		}
	}
	return out, ctx.Err()
}

// Summary is one cell's statistics.
type Summary struct {
	Cell
	Runs    int             `json:"runs"`
	Failed  int             `json:"failed"`
	Errors  []string        `json:"errors,omitempty"`
	Metrics map[string]Stat `json:"metrics"`
}

// SummarizeCells groups samples by cell, in the order of cells, and computes each
// metric's mean and confidence interval over the cell's seeds.
func SummarizeCells(cells []Cell, samples []Sample) []Summary {
	by := map[Cell][]Sample{}
	for _, s := range samples {
		by[s.Cell] = append(by[s.Cell], s)
	}
	var out []Summary
	for _, c := range cells {
		ss := by[c]
		if len(ss) == 0 {
			continue
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i].Seed < ss[j].Seed })
		sum := Summary{Cell: c, Metrics: map[string]Stat{}}
		values := map[string][]float64{}
		for _, s := range ss {
			if s.Err != "" {
				sum.Failed++
				if len(sum.Errors) < 3 {
					sum.Errors = append(sum.Errors, fmt.Sprintf("seed %d: %s", s.Seed, s.Err))
				}
				continue
			}
			sum.Runs++
			for k, v := range s.Metrics {
				values[k] = append(values[k], v)
			}
		}
		for k, vs := range values {
			sum.Metrics[k] = Summarize(vs)
		}
		out = append(out, sum)
	}
	return out
}
