// Package report writes a run's human-facing report: the pictures (through
// package plots) and one self-contained HTML page, DIR/index.html, with the
// tables, the plots inline, the trace summary, the device and model parameters,
// the command line and the version. It renders eval's typed results (a table of
// each result's runs and parameters from its fields; the figures by the result's
// type, or by its own Figures method) and reads the event logs they name; it runs
// nothing itself. A training report adds each scheme's fairness (Jain's index of
// the jobs' slowdowns, the worst slowdown), per-job tables and eval's
// recommendation. WriteSweep writes a sweep's page: its cells with confidence
// intervals, the recommendations and the plots.
package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/workload"
	"gonum.org/v1/plot/vg"
)

// Options says what to report and where.
type Options struct {
	// Dir receives index.html and the plots (PNG and SVG, beside it).
	Dir string
	// Results is eval's result: one suite's, or --suite all's.
	Results eval.Result
	// Trace is the trace the training runs replayed; nil leaves out its summary.
	Trace *workload.Trace
	// Args is the command line, for the page.
	Args []string
	// Version is the binary's module version and commit, for the page (what
	// salus version prints); empty reads "devel".
	Version string
}

// Written lists what Write wrote.
type Written struct {
	Index   string
	Files   []string       // every plot file, PNG and SVG
	Figures []plots.Figure // what the files draw, in the page's order
}

// Write draws every picture that applies to the results and writes index.html.
func Write(o Options) (*Written, error) {
	if o.Results == nil {
		return nil, fmt.Errorf("no results to report")
	}
	results := flatten(o.Results)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	paths, logs := trainingLogs(results)
	read, err := readLogs(paths)
	if err != nil {
		return nil, err
	}
	maps.Copy(logs, read)
	version := o.Version
	if version == "" {
		version = "devel"
	}
	page := &page{Title: "salus report", Version: version, Command: strings.Join(quoteArgs(o.Args), " "),
		GoVersion: runtime.Version()}
	var figs []placedFigure
	for i, res := range results {
		prefix := ""
		if len(results) > 1 {
			prefix = plots.Slug(res.SuiteName()) + "-"
		}
		sec, fs := section(res, prefix, logs)
		for _, f := range fs {
			figs = append(figs, placedFigure{Figure: f.Figure, suite: i, caption: f.caption})
		}
		page.Suites = append(page.Suites, sec)
	}
	out := &Written{Index: filepath.Join(o.Dir, "index.html")}
	images, err := render(figs, o.Dir, out)
	if err != nil {
		return nil, err
	}
	for i := range page.Suites {
		for _, img := range images {
			if img.suite == i {
				page.Suites[i].Figures = append(page.Suites[i].Figures, img.image)
			}
		}
	}
	if o.Trace != nil {
		page.addTrace(o.Trace)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, page); err != nil {
		return nil, fmt.Errorf("rendering index.html: %w", err)
	}
	if err := os.WriteFile(out.Index, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

type placedFigure struct {
	plots.Figure
	suite   int
	caption string
}

// readLogs reads event logs, in parallel.
func readLogs(paths []string) (map[string]*plots.RunLog, error) {
	logs := make([]*plots.RunLog, len(paths))
	errs := make([]error, len(paths))
	parallel(len(paths), func(i int) { logs[i], errs[i] = plots.ReadLog(paths[i]) })
	out := map[string]*plots.RunLog{}
	for i, p := range paths {
		if errs[i] != nil {
			return nil, fmt.Errorf("reading event log %s: %w", p, errs[i])
		}
		out[p] = logs[i]
	}
	return out, nil
}

// parallel runs fn(0..n-1) on as many goroutines as there are CPUs.
func parallel(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, runtime.GOMAXPROCS(0)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// trainingFigures are the training suite's pictures: bars of its figures, the JCT
// distribution, and each run's timeline and memory from its event log.
func trainingFigures(r *eval.Report, prefix string, logs map[string]*plots.RunLog) []figure {
	var figs []figure
	add := func(f plots.Figure, caption string) { figs = append(figs, figure{f, caption}) }
	var runs []eval.Run
	for _, run := range r.Runs {
		if run.Error == "" {
			runs = append(runs, run)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	var labels []string
	var makespan, avg, p95 []float64
	u := r.Unit()
	for _, run := range runs {
		labels = append(labels, run.Scheme)
		makespan, avg, p95 = append(makespan, run.MakespanS*u.Scale), append(avg, run.AvgJCTS*u.Scale), append(p95, run.P95JCTS*u.Scale)
	}
	add(plots.Bars(prefix+"bars", "Makespan, average and p95 JCT per policy", 11*vg.Inch,
		plots.Panel{Title: "makespan", Y: u.Word(), Categories: labels, Groups: []plots.Series{{Values: makespan}}},
		plots.Panel{Title: "average JCT", Y: u.Word(), Categories: labels, Groups: []plots.Series{{Values: avg}}},
		plots.Panel{Title: "p95 JCT", Y: u.Word(), Categories: labels, Groups: []plots.Series{{Values: p95}}}),
		"Makespan, average and 95th-percentile job completion time of each run, in "+u.Word()+" (lower is better).")
	var cdf []plots.Series
	for _, run := range runs {
		if l := logs[run.Log]; l != nil {
			cdf = append(cdf, plots.Series{Label: run.Scheme, Values: l.JCTs()})
		}
	}
	var fair []string
	var jain, worst []float64
	for _, run := range runs {
		if run.JainSlowdown > 0 {
			fair, jain, worst = append(fair, run.Scheme), append(jain, run.JainSlowdown), append(worst, run.MaxSlowdown)
		}
	}
	if len(fair) > 0 {
		add(plots.Bars(prefix+"fairness", "Fairness per scheme: the jobs' slowdowns against running alone", 11*vg.Inch,
			plots.Panel{Title: "Jain's index of slowdowns (higher is fairer)", Y: "index", Categories: fair, Groups: []plots.Series{{Values: jain}}, Format: "%.3f"},
			plots.Panel{Title: "worst slowdown (lower is better)", Y: "JCT / time alone", Categories: fair, Groups: []plots.Series{{Values: worst}}, Format: "%.1f"}),
			"Each job's slowdown is its completion time over its time alone on the device (start-up and iterations, from the arrive event's alone_s). Jain's index of the slowdowns, (sum x)² / (n · sum x²), is 1 when every job is slowed alike and falls towards 1/n as the slowdown piles on fewer jobs; the worst slowdown is the job that suffered most.")
	}
	if len(cdf) > 0 {
		add(plots.CDF(prefix+"jct-cdf", "JCT distribution", "job completion time", cdf),
			"Share of jobs finished within a given completion time (arrival to end), every run on one chart: a curve further left and higher is better.")
	}
	for _, run := range runs {
		l := logs[run.Log]
		if l == nil {
			continue
		}
		name := plots.Slug(run.Scheme)
		for g := range max(l.GPUs, 1) {
			gl, suffix, title := l, "", run.Scheme
			if l.GPUs > 1 {
				gl, suffix, title = l.OnGPU(g), fmt.Sprintf("-gpu%d", g), fmt.Sprintf("%s, GPU %d", run.Scheme, g)
				if len(gl.Jobs) == 0 {
					continue
				}
			}
			add(plots.Timeline(gl, prefix+"timeline-"+name+suffix, "Job timeline: "+title),
				"One row per job in arrival order: grey while it waits, tan during start-up, coloured while its iterations run, the colour being its lane's slot (lanes open at the same time get different colours). Iterations closer together than the picture resolves are drawn as one stretch. With several GPUs, one timeline per GPU; a gang job appears on each of its GPUs.")
			add(plots.Memory(gl, prefix+"memory-"+name+suffix, "Memory by lane: "+title),
				"Device memory over time: each open lane's persistent memory (solid) and largest ephemeral peak (pale), stacked; the black line is the memory allocated to lanes, the red dashed line the device's usable capacity. With several GPUs, one chart per GPU.")
		}
	}
	return figs
}

// tuningBars draws makespan and improvement per workload, one bar per scheme,
// with the paper's figure, which the suite carries, as the reference line.
func tuningBars(prefix string, r *eval.TuningReport) (plots.Figure, bool) {
	var workloads, schemes []string
	for _, run := range r.Runs {
		if index(workloads, run.Workload) < 0 {
			workloads = append(workloads, run.Workload)
		}
		if index(schemes, run.Scheme) < 0 {
			schemes = append(schemes, run.Scheme)
		}
	}
	makespan := []plots.Series{{Label: "one by one", Values: make([]float64, len(workloads))}}
	improvement := []plots.Series{}
	for _, sc := range schemes {
		makespan = append(makespan, plots.Series{Label: sc, Values: make([]float64, len(workloads))})
		improvement = append(improvement, plots.Series{Label: sc, Values: make([]float64, len(workloads))})
	}
	for _, run := range r.Runs {
		w := index(workloads, run.Workload)
		sc := index(schemes, run.Scheme)
		makespan[0].Values[w] = max(makespan[0].Values[w], run.SequentialS/60)
		makespan[sc+1].Values[w] = run.Makespan / 60
		improvement[sc].Values[w] = run.Improvement
	}
	return plots.Bars(join(prefix, "tuning-bars"), "Hyper-parameter exploration per scheme", 12*vg.Inch,
		plots.Panel{Title: "makespan", Y: "minutes", Categories: workloads, Groups: makespan, Format: "%.0f"},
		plots.Panel{Title: "utilization improvement (one by one / scheme)", Y: "x", Categories: workloads, Groups: improvement,
			Ref: r.Paper.Value, RefLabel: fmt.Sprintf("paper (pack): %.2fx", r.Paper.Value), Format: "%.2f", FirstColour: 1}), len(workloads) > 0
}

// inferenceFigures draws GPUs needed per scheme and latency per model.
func inferenceFigures(prefix string, r *eval.InferenceReport) []plots.Figure {
	var schemes []string
	var gpus []float64
	for _, run := range r.Runs {
		schemes = append(schemes, run.Scheme)
		gpus = append(gpus, float64(run.GPUsNeeded))
	}
	figs := []plots.Figure{plots.Bars(join(prefix, "inference-gpus"), "GPUs needed to host every inference job", 6*vg.Inch,
		plots.Panel{Title: "GPUs needed", Y: "GPUs", Categories: schemes, Groups: []plots.Series{{Values: gpus}}, Format: "%.0f"})}
	var models []string
	alone := map[string]float64{}
	for _, run := range r.Runs {
		for _, l := range run.Models {
			if index(models, l.Model) < 0 {
				models = append(models, l.Model)
			}
			if l.AloneS > 0 {
				alone[l.Model] = l.AloneS
			}
		}
	}
	if len(models) == 0 {
		return figs
	}
	groups := []plots.Series{{Label: "alone", Values: make([]float64, len(models))}}
	for i, m := range models {
		groups[0].Values[i] = alone[m] * 1000
	}
	for _, run := range r.Runs {
		if len(run.Models) == 0 {
			continue
		}
		s := plots.Series{Label: run.Scheme + " (mean)", Values: make([]float64, len(models))}
		for _, l := range run.Models {
			s.Values[index(models, l.Model)] = l.MeanS * 1000
		}
		groups = append(groups, s)
	}
	return append(figs, plots.Bars(join(prefix, "inference-latency"), "Request latency per model, against the model alone", 14*vg.Inch,
		plots.Panel{Title: "mean request latency", Y: "ms", Categories: models, Groups: groups, Format: "%.0f"}))
}

// join prefixes a figure's name with its suite's, unless the name already says it.
func join(prefix, name string) string {
	if strings.HasPrefix(name, prefix) {
		return name
	}
	return prefix + name
}

func index(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

type image struct {
	Name, Title, Caption string
	DataURI              template.URL // the PNG, inline (a data URI the page trusts: we made it)
	PNG, SVG             string       // file names beside index.html
}

type placedImage struct {
	image
	suite int
}

// render saves every figure (in parallel) and returns the page's images in order.
func render(figs []placedFigure, dir string, out *Written) ([]placedImage, error) {
	images := make([]placedImage, len(figs))
	errs := make([]error, len(figs))
	files := make([][]string, len(figs))
	parallel(len(figs), func(i int) {
		f := figs[i]
		files[i], errs[i] = f.Save(dir)
		if errs[i] != nil {
			return
		}
		png, err := os.ReadFile(filepath.Join(dir, f.Name+".png"))
		if err != nil {
			errs[i] = err
			return
		}
		images[i] = placedImage{suite: f.suite, image: image{Name: f.Name, Title: f.Title, Caption: f.caption,
			DataURI: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)),
			PNG:     f.Name + ".png", SVG: f.Name + ".svg"}}
	})
	for i := range figs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out.Files = append(out.Files, files[i]...)
		out.Figures = append(out.Figures, figs[i].Figure)
	}
	return images, nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}
