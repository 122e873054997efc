package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/salusgo/salus/bench"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/interference"
	"github.com/spf13/cobra"
)

func init() { registerCommand(70, newBenchCmd) }

// benchFlags are salus bench's flags.
type benchFlags struct {
	schemeFlags
	outputFlags
	jobs   []int
	load   float64
	seed   int64
	preset string
	// interference is --interference: the co-location model of every run.
	interference string
	timeout      time.Duration
	out          string
	reuseOut     bool
	all          bool
}

func newBenchCmd() *cobra.Command {
	var bf benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the simulator's speed and memory on generated traces of growing size",
		Long: `Measure the simulator on generated salus100 traces of each --jobs size (at
--load, seed --seed) under each scheme, and print per run: the jobs, the simulated
iterations and events, the wall seconds of the simulation (with its metrics; not
the trace's generation), iterations and events per second, µs per job, the
switches (boundaries where lanes side by side changed who runs beside whom: pack's
cost follows them) and the wall ns per switch (where they are a tenth of the
iterations or more), the peak resident memory (max RSS) and what the Go heap
allocated in all.

Each run is a child process (this program, re-run as the hidden salus bench cell),
so that a run past --timeout is killed and reported as "over Ns" rather than
hanging, and so that the max RSS is that run's alone. A scheme that times out is
not run at the larger sizes (reported "skipped").

Default schemes: fifo, srtf, pack, fair, suspend-fair and timeslice; --policy and
--mode choose others as in salus eval, and --all runs every registered scheme
(each mode with each policy it accepts). -o markdown prints a table to paste into
docs/speed.md; --out DIR also writes bench.json and the chart of µs per job against
jobs (log-log, a line per scheme: flat is linear growth, rising is worse).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return bf.run(cmd) },
	}
	f := cmd.Flags()
	bf.schemeFlags.register(cmd, nil, nil, "; default: fifo, srtf, pack, fair, then suspend-fair and timeslice", "")
	f.BoolVar(&bf.all, "all", false, "run every registered scheme (each mode with each policy it accepts) instead of the default ones")
	f.IntSliceVar(&bf.jobs, "jobs", bench.DefaultSizes, "trace sizes (jobs), comma-separated or repeated, run in this order")
	f.Float64Var(&bf.load, "load", 4, "arrival-rate multiplier of the generated traces (4: four times salus100's rate)")
	f.Int64Var(&bf.seed, "seed", 1, "seed of the generated traces")
	addPresetFlag(f, &bf.preset, "device preset")
	addInterferenceFlag(f, &bf.interference)
	f.DurationVar(&bf.timeout, "timeout", 10*time.Minute, "limit of each run (e.g. 120s, 10m); a run past it is killed and reported as over it; 0: none")
	addOutFlag(f, &bf.out, "", "directory for bench.json and the chart bench-us-per-job (PNG, SVG)")
	addReuseOutFlag(f, &bf.reuseOut)
	bf.outputFlags.register(cmd, "o", "table", "json", "csv", "markdown")
	cmd.AddCommand(newBenchCellCmd())
	return cmd
}

func (bf *benchFlags) run(cmd *cobra.Command) error {
	if err := bf.check(); err != nil {
		return err
	}
	if len(bf.jobs) == 0 {
		return fmt.Errorf("--jobs: give at least one trace size, e.g. --jobs 100,1000")
	}
	for _, n := range bf.jobs {
		if n < 1 {
			return fmt.Errorf("--jobs %d: a trace has at least 1 job", n)
		}
	}
	if !(bf.load > 0) {
		return fmt.Errorf("--load %v: give a positive arrival-rate multiplier (1: the salus100 rate)", bf.load)
	}
	if bf.timeout < 0 {
		return fmt.Errorf("--timeout %v: give a positive limit, or 0 for none", bf.timeout)
	}
	if _, err := device.Preset(bf.preset); err != nil {
		return err
	}
	if _, err := loadInterference(bf.interference); err != nil {
		return err
	}
	schemes := bench.DefaultSchemes
	if bf.all {
		if len(bf.policies) > 0 || len(bf.modes) > 0 {
			return fmt.Errorf("--all runs every registered scheme: give it without --policy and --mode")
		}
		schemes = eval.AllSchemes()
	} else if len(bf.policies) > 0 || len(bf.modes) > 0 {
		var err error
		if schemes, err = eval.ResolveSchemes(bf.policies, bf.modes, core.DefaultModeParams()); err != nil {
			return err
		}
	}
	if bf.out != "" {
		if err := createOut(bf.out, bf.reuseOut); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to run each measurement in: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := cmd.ErrOrStderr()
	results, runErr := bench.Run(ctx, bench.Options{Sizes: bf.jobs, Schemes: schemes, Load: bf.load, Seed: bf.seed, Device: bf.preset, Interference: bf.interference,
		Timeout: bf.timeout, Runner: bench.ChildRunner(func(ctx context.Context, c bench.Cell) *exec.Cmd {
			return exec.CommandContext(ctx, exe, benchCellArgs(c)...)
		}),
		Progress: func(r bench.Result) {
			fmt.Fprintf(stderr, "salus bench: %d jobs, %s: %s\n", r.Jobs, r.Scheme, r.Outcome())
		}})
	if runErr != nil && ctx.Err() != nil {
		runErr = fmt.Errorf("interrupted: the results are the runs that ended (rerun the larger --jobs alone to go on)")
	}
	if len(results) == 0 {
		return runErr
	}
	w := cmd.OutOrStdout()
	switch bf.format {
	case "json":
		err = bench.JSON(w, results)
	case "csv":
		err = bench.CSV(w, results)
	case "markdown":
		err = bench.Markdown(w, results)
	default:
		err = bench.Table(w, results)
	}
	if err != nil {
		return err
	}
	if bf.out != "" {
		if err := writeBenchOut(bf.out, results); err != nil {
			return err
		}
		if bf.format == "table" {
			fmt.Fprintf(w, "\nWrote bench.json and bench-us-per-job.png, .svg to %s\n", bf.out)
		}
	}
	return runErr
}

func writeBenchOut(dir string, results []bench.Result) error {
	f, err := os.Create(dir + string(os.PathSeparator) + "bench.json")
	if err != nil {
		return err
	}
	if err := bench.JSON(f, results); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = bench.Figure(results).Save(dir)
	return err
}

// benchCellArgs are the arguments that make this program measure one cell.
func benchCellArgs(c bench.Cell) []string {
	return append([]string{"bench", "cell", "--jobs", strconv.Itoa(c.Jobs), "--load", strconv.FormatFloat(c.Load, 'g', -1, 64),
		"--seed", strconv.FormatInt(c.Seed, 10), "--mode", c.Scheme.Mode, "--policy", c.Scheme.Policy, "--device", c.Device, "--interference", cmp.Or(c.Interference, interference.RuleName)}, policyFileArgs()...)
}

// newBenchCellCmd is salus bench cell, hidden: one measurement, which salus bench
// runs in a child process.
func newBenchCellCmd() *cobra.Command {
	var c bench.Cell
	var cpuProfile string
	cmd := &cobra.Command{
		Use:    "cell",
		Short:  "Measure one run and print its result as JSON (salus bench runs it in a child process)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.Contains(c.Scheme.Mode, ",") || strings.Contains(c.Scheme.Policy, ",") {
				return fmt.Errorf("salus bench cell measures one scheme: give one --mode and one --policy (salus bench runs several)")
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			r, err := bench.Measure(cmd.Context(), c)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Jobs, "jobs", 100, "jobs in the generated trace")
	f.Float64Var(&c.Load, "load", 4, "arrival-rate multiplier of the generated trace")
	f.Int64Var(&c.Seed, "seed", 1, "seed of the generated trace")
	f.StringVar(&c.Scheme.Mode, "mode", "exclusive", "the one sharing mode: "+modeNames())
	f.StringVar(&c.Scheme.Policy, "policy", "fifo", "the one policy")
	addPolicyFileFlag(f)
	addPresetFlag(f, &c.Device, "device preset")
	addInterferenceFlag(f, &c.Interference)
	// For whoever speeds the simulator up: go tool pprof salus FILE.
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run (generation included) to this file")
	return cmd
}
