package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/salusgo/salus/bound"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/history"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

// The commands that read a daemon's event log back: salus profile (catalog
// entries), salus trace from-log (a trace) and salus report (the metrics and the
// HTML report). The reading is package history's and metrics'.

func init() {
	registerCommand(80, newProfileCmd)
	registerCommand(81, newReportCmd)
	traceSubcommands = append(traceSubcommands, newTraceFromLogCmd)
}

// formatFromOut takes the format from --out's extension when --format is not given.
func formatFromOut(cmd *cobra.Command, of *outputFlags, out string, byExt map[string]string) {
	if f, ok := byExt[strings.ToLower(filepath.Ext(out))]; ok && !changed(cmd.Flags(), "format") {
		of.format = f
	}
}

// writeOut writes b to out, or to w when out is empty or "-".
func writeOut(w io.Writer, out string, b []byte) error {
	if out == "" || out == "-" {
		_, err := w.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

func newProfileCmd() *cobra.Command {
	var (
		of  outputFlags
		out string
		pf  pairsFlags
	)
	cmd := &cobra.Command{
		Use:   "profile LOG | --pairs JOBS",
		Short: "Turn a daemon's event log into catalog entries (--catalog FILE); --pairs: measure your jobs' co-location pairs",
		Long: `Read a daemon's event log (salus serve --events FILE) and write one catalog profile per
model, batch size and kind of the jobs that ran: the mean time of the steady iterations on
the daemon's clock (each job's after its first; the median is in the profile's source), the
median start-up (admission to the first iteration), the peak and persistent memory
the clients measured (the measured events of the Python client on CUDA), else what they
declared at open, and how many jobs and iterations the figures come from. Demand is not in
a log: it is left out (1, the whole GPU). It warns, on stderr, when the iterations were
timed while several jobs ran at once, when no client measured memory (a CPU run), and of
the demand. The output is a catalog file, ready for --catalog:

  salus profile events.jsonl --out profile.yaml
  salus eval --catalog profile.yaml --trace trace.csv
` + pairsHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pf.check(cmd); err != nil {
				return err
			}
			if pf.on {
				return pf.runPairs(cmd, args[0], out)
			}
			formatFromOut(cmd, &of, out, map[string]string{".json": "json"})
			if err := of.check(); err != nil {
				return err
			}
			l, err := history.Read(args[0])
			if err != nil {
				return err
			}
			f := workload.CatalogFile{Profiles: l.Profiles()}
			if len(f.Profiles) == 0 {
				return fmt.Errorf("%s: none of its %d jobs ran an iteration: there is nothing to profile", args[0], len(l.Jobs))
			}
			for _, w := range l.Warnings() {
				fmt.Fprintf(cmd.ErrOrStderr(), "salus profile: warning: %s\n", w)
			}
			var buf bytes.Buffer
			if of.format == "json" {
				enc := json.NewEncoder(&buf)
				enc.SetIndent("", "  ")
				err = enc.Encode(f)
			} else {
				fmt.Fprintf(&buf, "# salus profile %s: %d profiles; use with --catalog FILE\n", args[0], len(f.Profiles))
				err = workload.WriteCatalogYAML(&buf, f)
			}
			if err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, buf.Bytes())
		},
	}
	of.register(cmd, "o", "yaml", "json")
	addOutFlag(cmd.Flags(), &out, "", "write the catalog (with --pairs: the pair file) to this file instead of standard output (a name ending in .json: JSON, unless --format says otherwise)")
	pf.register(cmd)
	return cmd
}

func newTraceFromLogCmd() *cobra.Command {
	var (
		of       outputFlags
		out      string
		catalogs []string
	)
	cmd := &cobra.Command{
		Use:   "from-log LOG",
		Short: "Turn a daemon's event log into a trace: arrivals, iterations done, model, batch size, kind",
		Long: `Read a daemon's event log and write the trace of the jobs that ran: each at its arrival
(seconds from the first), with the iterations it ran, its model, batch size, kind and
declared time. A job whose model, batch size and kind the catalog (with --catalog files)
lacks carries its own figures as inline columns: its median iteration time on the daemon's
clock, its start-up and the memory it declared. Jobs that ran no iteration are left out
(said on standard error).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			formatFromOut(cmd, &of, out, map[string]string{".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"})
			if err := of.check(); err != nil {
				return err
			}
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			l, err := history.Read(args[0])
			if err != nil {
				return err
			}
			name := strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			t, skipped, err := l.Trace(cat, name)
			if err != nil {
				return err
			}
			if skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "salus: %d of the %d jobs ran no iteration: left out\n", skipped, len(l.Jobs))
			}
			var buf bytes.Buffer
			if of.format == "jsonl" {
				err = t.WriteJSONL(&buf)
			} else {
				err = t.WriteCSV(&buf)
			}
			if err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, buf.Bytes())
		},
	}
	of.register(cmd, "o", "csv", "jsonl")
	addOutFlag(cmd.Flags(), &out, "", "write the trace to this file instead of standard output (a name ending in .jsonl: JSON Lines, unless --format says otherwise)")
	addCatalogFlag(cmd, &catalogs)
	return cmd
}

func newReportCmd() *cobra.Command {
	var (
		of  outputFlags
		out string
		// reuseOut is --reuse-out.
		reuseOut bool
	)
	cmd := &cobra.Command{
		Use:   "report LOG [LOG...]",
		Short: "Compute the metrics table (and, with --out, the HTML report) of daemons' event logs, side by side",
		Long: `Compute a run's results from its event log alone, without a trace: makespan, average and
p95 JCT, queuing, GPU busy time and peak memory, as salus eval prints them; any engine's log
will do (salus serve --events, salus simulate --events, eval --out). Several logs (a team's
srtf run and its pack run, say) are put side by side, one row each, with the ratios to a
fifo run among them and the recommendation. With --out DIR, also write results.json,
results.csv and the HTML report (index.html with its plots) there. Beside a live daemon's
run it puts what the simulator predicts for the same jobs (each with the iteration time,
start-up and memory its log measured) and how far the live run is from it. A log that holds
several daemons' runs (serve --continue-events) is reported run by run, one row each.
results.json begins with where it came from: the build, the command and each log's sha256.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := of.check(); err != nil {
				return err
			}
			prov := provenance.New(commandLine(cmd, args))
			prov.Interference = provenance.Model{Name: interference.RuleName} // predictLive's device
			for _, path := range args {
				t, err := provenance.File(path)
				if err != nil {
					return err
				}
				prov.Logs = append(prov.Logs, t)
			}
			if out != "" {
				if err := createOut(out, reuseOut); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			note := w // what the runs of a log are: beside the table, on stderr beside JSON or CSV
			if of.format != "table" {
				note = cmd.ErrOrStderr()
			}
			logs, cleanup, err := logsByRun(args, out, note)
			defer cleanup()
			if err != nil {
				return err
			}
			rep, err := reportFromLogs(logs)
			if err != nil {
				return err
			}
			if err := predictLive(rep); err != nil {
				return err
			}
			if out != "" {
				if err := eval.WriteResults(out, rep, prov); err != nil {
					return err
				}
				var trace *workload.Trace
				if l, err := history.Read(logs[0]); err == nil { // the first log's jobs
					trace, _, _ = l.Trace(workload.Default(), rep.Trace.Name)
				}
				if err := writeReport(out, rep, trace); err != nil {
					return err
				}
			}
			if err := printReport(w, rep, of.format); err != nil {
				return err
			}
			if out != "" && of.format == "table" {
				fmt.Fprintf(w, "\nWrote results.json, results.csv, plots and index.html to %s\n", out)
			}
			return nil
		},
	}
	of.register(cmd, "o", "table", "json", "csv")
	addOutFlag(cmd.Flags(), &out, "", "directory for results.json, results.csv, plots and index.html")
	addReuseOutFlag(cmd.Flags(), &reuseOut)
	return cmd
}

// logsByRun is the logs to report: each of paths, or, for one that holds
// several runs (daemons started on it with --continue-events), each run as a
// log of its own (splitRuns) in out, or in a temporary folder that cleanup
// removes when out is empty. It says on note how many runs such a log holds.
func logsByRun(paths []string, out string, note io.Writer) (logs []string, cleanup func(), err error) {
	cleanup = func() {}
	for _, path := range paths {
		runs, err := logRuns(path)
		if err != nil {
			return nil, cleanup, err
		}
		if runs <= 1 {
			logs = append(logs, path)
			continue
		}
		dir := out
		if dir == "" {
			if dir, err = os.MkdirTemp("", "salus-report-"); err != nil {
				return nil, cleanup, err
			}
			prev := cleanup
			cleanup = func() { prev(); os.RemoveAll(dir) }
		}
		split, err := splitRuns(path, dir, runs)
		if err != nil {
			return nil, cleanup, err
		}
		names := make([]string, len(split))
		for i, p := range split {
			names[i] = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		}
		fmt.Fprintf(note, "%s holds %d runs (daemons started on it one after another): each is reported apart, as %s\n\n",
			path, runs, strings.Join(names, ", "))
		logs = append(logs, split...)
	}
	return logs, cleanup, nil
}

// reportFromLogs is the report of one log, or of several side by side: a row per
// log (a scheme that two logs share is told apart by the log's name), the ratios
// to a fifo run among them, and the recommendation. The lower bound is one log's:
// logs of different jobs share none.
func reportFromLogs(paths []string) (*eval.Report, error) {
	rep, err := reportFromLog(paths[0])
	if err != nil || len(paths) == 1 {
		return rep, err
	}
	names := []string{rep.Trace.Name}
	seen := map[string]bool{rep.Runs[0].Scheme: true}
	for _, p := range paths[1:] {
		r, err := reportFromLog(p)
		if err != nil {
			return nil, err
		}
		run := r.Runs[0]
		if seen[run.Scheme] {
			run.Scheme += " @ " + strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		}
		seen[run.Scheme] = true
		rep.Runs = append(rep.Runs, run)
		if !slices.Contains(names, r.Trace.Name) {
			names = append(names, r.Trace.Name)
		}
		if r.Engine != rep.Engine {
			rep.Engine = rep.Engine + "+" + r.Engine
		}
		rep.Trace.Jobs = max(rep.Trace.Jobs, r.Trace.Jobs)
	}
	rep.Trace.Name = strings.Join(names, ", ")
	if len(names) == 1 && rep.Bound != nil { // the same jobs: the first log's bound is theirs
		for i := range rep.Runs {
			r := &rep.Runs[i]
			r.JCTVsBound, r.MakespanVsBound = bound.Ratio(r.AvgJCTS, rep.Bound.AvgJCTS), bound.Ratio(r.MakespanS, rep.Bound.MakespanS)
		}
	} else {
		rep.Bound = nil
		for i := range rep.Runs {
			rep.Runs[i].JCTVsBound, rep.Runs[i].MakespanVsBound = 0, 0
		}
	}
	rep.Compare()
	// Live runs' own logs say how busy the machine was: a lead smaller than
	// that is no reason to choose.
	if err := rep.JudgeNoise(); err != nil {
		return nil, err
	}
	return rep, nil
}

// reportFromLog is the report of one run read from its log: its run header's
// policy, mode and engine, and the metrics of its events.
func reportFromLog(path string) (*eval.Report, error) {
	var head eventlog.Event
	seenHead := false
	priorities := map[int]bool{}
	err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		switch {
		case e.Kind == eventlog.Run && !seenHead:
			head, seenHead = e, true
		case e.Kind == eventlog.Arrive:
			priorities[e.Priority] = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		return nil, err
	}
	fromFile := metrics.FromFile
	if len(priorities) > 1 { // figures per priority class, as salus eval gives them
		fromFile = metrics.FromFileByClass
	}
	res, err := fromFile(path)
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		return nil, err
	}
	if res.Jobs == 0 {
		return nil, fmt.Errorf("%s: no job arrived in this log: give the event log of a run that had jobs", path)
	}
	name := head.Trace
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	policy := head.Policy
	if policy == "" {
		policy = "unknown"
	}
	engine := head.Engine
	if engine == "" {
		engine = "live"
	}
	scheme := policy
	if head.Mode != "" {
		scheme = policy + " (" + head.Mode + ")"
	}
	// The device as the header names it. A live daemon that emulated none names
	// none: its jobs ran on their own GPU or CPU, of which the log knows only the
	// memory the daemon scheduled, and no speed.
	dev, derr := device.Preset(strings.ToLower(head.Device))
	switch {
	case head.Device == "" && engine == "live":
		dev = device.Device{Name: "the clients' own GPU or CPU"}
	case derr != nil:
		dev = device.Device{Name: cmp.Or(head.Device, "GPU"), Speed: 1}
	}
	if head.CapacityMiB > 0 {
		dev.CapacityMiB = head.CapacityMiB
	}
	if head.GPUs > 1 {
		dev.GPUs, dev.GPUPlacement = head.GPUs, head.GPUPlacement
	}
	rep := &eval.Report{Suite: "report", Engine: engine, Trace: eval.TraceInfo{Name: name, Jobs: res.Jobs, Seed: head.Seed},
		Device: dev, Runs: []eval.Run{{Scheme: scheme, Policy: policy, Mode: head.Mode, Result: res, Log: path}}}
	rep.SetAloneBound()
	return rep, nil
}
