package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/live"
	"github.com/salusgo/salus/workload"
)

// compare prints, after a report of an engine other than the reference one, the
// reference engine's figures for the same trace, schemes and device (what salus
// eval --engine sim prints) and how far the run is from them, with what the
// engine says of each run (engine.Annotator).
func compare(w io.Writer, rep *eval.Report, eng engine.Engine, t *workload.Trace, dev device.Device) error {
	ref := engine.Reference()
	if t == nil || len(rep.Runs) == 0 || ref == nil || ref.Name() == eng.Name() {
		return nil
	}
	ann, _ := eng.(engine.Annotator)
	fmt.Fprintf(w, "\nThe simulator on the same trace and device (salus eval --engine %s), and the %[2]s run's difference from it:\n\n", ref.Name(), eng.Name())
	u := rep.Unit() // the run's table's unit
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	col := ""
	if ann != nil {
		col = ann.Column() + "\t"
	}
	vs := eng.Name() + " vs " + ref.Name()
	fmt.Fprintf(tw, "scheme\t%[2]s makespan (%[1]s)\t%[3]s\t%[2]s avg JCT (%[1]s)\t%[3]s\t%[2]s p95 JCT (%[1]s)\t%[3]s\tcompletion order\t%[4]s\n", u.Name, ref.Name(), vs, col)
	for _, run := range rep.Runs {
		s := eval.Scheme{Mode: run.Mode, Policy: run.Policy}
		sim, err := eval.Simulate(t, s, rep.Modes, dev, "")
		if err != nil {
			return err
		}
		note := ""
		if ann != nil {
			note = ann.Note(run.Scheme) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t%s\n", run.Scheme,
			sim.MakespanS*u.Scale, eval.Percent(run.MakespanS, sim.MakespanS), sim.AvgJCTS*u.Scale, eval.Percent(run.AvgJCTS, sim.AvgJCTS),
			sim.P95JCTS*u.Scale, eval.Percent(run.P95JCTS, sim.P95JCTS), eval.SameOrder(t, run.Completion, sim.Completion), note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if ann != nil {
		if f := ann.Footnote(); f != "" {
			fmt.Fprintf(w, "\n%s\n", f)
		}
	}
	return nil
}

// replayEngine is the engine salus replay runs: salus replay is salus eval
// --engine live (the default suite), with the flags that act there only.
const replayEngine = "live"

func newReplayCmd() *cobra.Command {
	ef := evalFlags{engine: replayEngine, suite: eval.DefaultSuite, repeat: 1}
	cmd := &cobra.Command{
		Use:   "replay --trace FILE",
		Short: "Replay a trace on the live engine: the daemon and one worker process per job",
		Long: `Replay a trace on the live engine: a daemon (in this process, or --server) and one
worker process per job, launched at the job's arrival time. The daemon in this process
emulates --device (no GPU needed): it runs the simulator's device model on the wall clock,
so jobs in lanes side by side slow each other down by their compute demands, and each
worker only asks before every iteration and reports its end at once. Inference jobs pause
between their requests as the trace's pause_s says, and jobs that arrive at the same
instant open in the trace's order, as the simulator takes them. Prints the same
results table as the simulator, computed from the live event log, then the simulator's
figures for the same trace, schemes and device and the live run's difference from them.
--time-scale shrinks the trace for quick runs (the tables show the trace's own times);
before the runs, a probe of a fraction of a second measures the live engine's
per-iteration overhead, and a warning says when the time scale makes the trace's shortest
iteration too short for it, and what time scale would be enough. On a terminal, a progress
bar shows the jobs finished and the trace time elapsed.

With --server the daemon there is used as it runs: pack agrees with the simulator only if
it was started with --emulate.

Same as: salus eval --engine live --trace FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ef.tf.file == "" {
				return errors.New("--trace is required: give a trace file (salus trace generates one)")
			}
			return ef.execute(cmd)
		},
	}
	// Only the trace file and its --load: the generator's --seed would do nothing.
	cmd.Flags().StringVar(&ef.tf.file, "trace", "", "trace file (CSV with a header, or JSON Lines; required)")
	addCatalogFlag(cmd, &ef.tf.catalogs)
	ef.tf.registerLoad(cmd)
	ef.df.register(cmd)
	ef.addEngineFlags(cmd, replayEngine)
	ef.schemeFlags.register(cmd, nil, nil, "; default: those of the training suite the engine runs ("+strings.Join(schemeNames(replayEngine), ", ")+")",
		"; the live engine runs "+strings.Join(live.Modes(), " and "))
	ef.outputFlags.register(cmd, "o", "table", "json", "csv")
	addOutFlag(cmd.Flags(), &ef.out, "", "directory for event logs, results.json and results.csv")
	addReuseOutFlag(cmd.Flags(), &ef.reuseOut)
	addRepeatFlag(cmd.Flags(), &ef.repeat)
	return cmd
}

// schemeNames are the names of the training suite's default schemes on the named engine.
func schemeNames(engineName string) []string {
	eng, err := engine.Lookup(engineName)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range eval.SchemesFor(eng, eval.TrainingSchemes) {
		out = append(out, s.String())
	}
	return out
}
