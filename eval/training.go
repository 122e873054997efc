// Package eval runs experiments (suites) on an engine and reports their results as
// tables, JSON and CSV. It composes the workload, sim and metrics packages; it holds
// no scheduling logic and computes metrics only through package metrics.
package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// PaperSRTFSpeedup is the paper's headline: SRTF's average JCT is 3.19x better than FIFO's.
const PaperSRTFSpeedup = 3.19

// TraceInfo names the trace a report ran.
type TraceInfo struct {
	Name string `json:"name"`
	Jobs int    `json:"jobs"`
	Seed int64  `json:"seed"`
}

// Run is the result of one policy on one trace.
type Run struct {
	Policy string `json:"policy"`
	Mode   string `json:"mode"`
	metrics.Result
	// Ratios to the fifo run of the same report (fifo / this: above 1 is better).
	JCTSpeedup      float64 `json:"avg_jct_speedup_vs_fifo,omitempty"`
	MakespanSpeedup float64 `json:"makespan_speedup_vs_fifo,omitempty"`
	// Log is the event log's path, when one was written.
	Log string `json:"log,omitempty"`
}

// Report is a suite's outcome.
type Report struct {
	Suite  string     `json:"suite"`
	Engine string     `json:"engine"`
	Trace  TraceInfo  `json:"trace"`
	Device sim.Device `json:"device"`
	Runs   []Run      `json:"runs"`
	Paper  Paper      `json:"paper"`
}

// Paper is the published figure a report compares itself to.
type Paper struct {
	Claim    string  `json:"claim"`
	Value    float64 `json:"value"`
	Measured float64 `json:"measured"`
}

// TrainingOptions configures the training suite.
type TrainingOptions struct {
	Trace    *workload.Trace
	Policies []string // default: all registered
	Device   sim.Device
	// OutDir, when set, receives each run's event log (events-POLICY.jsonl.gz).
	OutDir string
}

// Training runs the trace under each policy in the simulator, in parallel.
func Training(o TrainingOptions) (*Report, error) {
	if len(o.Policies) == 0 {
		o.Policies = core.Names()
	}
	policies := make([]core.Policy, len(o.Policies))
	for i, name := range o.Policies {
		p, err := core.Lookup(name)
		if err != nil {
			return nil, err
		}
		policies[i] = p
	}
	rep := &Report{Suite: "training", Engine: "sim", Device: o.Device,
		Trace: TraceInfo{Name: o.Trace.Name, Jobs: len(o.Trace.Jobs), Seed: o.Trace.Seed},
		Runs:  make([]Run, len(policies))}
	errs := make([]error, len(policies))
	var wg sync.WaitGroup
	for i, p := range policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Runs[i], errs[i] = simulate(o.Trace, p, o.Device, o.OutDir)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rep.compareToFIFO()
	return rep, nil
}

func simulate(t *workload.Trace, p core.Policy, dev sim.Device, outDir string) (Run, error) {
	c := metrics.NewCollector()
	var sink eventlog.Sink = c
	run := Run{Policy: p.Name, Mode: p.Mode}
	var file *eventlog.File
	if outDir != "" {
		run.Log = filepath.Join(outDir, "events-"+p.Name+".jsonl.gz")
		var err error
		if file, err = eventlog.Create(run.Log); err != nil {
			return run, err
		}
		sink = eventlog.Sinks{c, file}
	}
	err := sim.Run(t, sim.Options{Policy: p, Device: dev, Sink: sink})
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return run, fmt.Errorf("%s: %w", p.Name, err)
	}
	run.Result, err = c.Result()
	if err != nil {
		return run, fmt.Errorf("%s: %w", p.Name, err)
	}
	return run, nil
}

func (r *Report) compareToFIFO() {
	r.Paper = Paper{Claim: "average JCT, SRTF over FIFO", Value: PaperSRTFSpeedup}
	var fifo *Run
	for i := range r.Runs {
		if r.Runs[i].Policy == "fifo" && r.Runs[i].Mode == "exclusive" {
			fifo = &r.Runs[i]
		}
	}
	if fifo == nil {
		return
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		run.JCTSpeedup = fifo.AvgJCTS / run.AvgJCTS
		run.MakespanSpeedup = fifo.MakespanS / run.MakespanS
		if run.Policy == "srtf" && run.Mode == "salus" {
			r.Paper.Measured = run.JCTSpeedup
		}
	}
}

// WriteResults writes results.json and results.csv into dir.
func (r *Report) WriteResults(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(*os.File) error{
		"results.json": func(f *os.File) error { return r.JSON(f) },
		"results.csv":  func(f *os.File) error { return r.CSV(f) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
