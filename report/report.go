// Package report writes a run's human-facing report: the pictures (through
// package plots) and one self-contained HTML page, DIR/index.html, with the
// tables, the plots inline, the trace summary, the device and model parameters,
// the command line and the version. It reads eval's results and the event logs
// they name; it runs nothing itself.
package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/workload"
	"gonum.org/v1/plot/vg"
)

// Options says what to report and where.
type Options struct {
	// Dir receives index.html and the plots (PNG and SVG, beside it).
	Dir string
	// Results is eval's report (or several), as a value or its JSON.
	Results any
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
	Index string
	Files []string // every plot file, PNG and SVG
}

// Write draws every picture that applies to the results and writes index.html.
func Write(o Options) (*Written, error) {
	suites, err := Parse(o.Results)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	logs, err := readLogs(suites)
	if err != nil {
		return nil, err
	}
	version := o.Version
	if version == "" {
		version = "devel"
	}
	page := &page{Title: "salus report", Version: version, Command: strings.Join(quoteArgs(o.Args), " "),
		GoVersion: runtime.Version()}
	var figs []placedFigure
	for i, s := range suites {
		prefix := ""
		if len(suites) > 1 {
			prefix = plots.Slug(s.Name) + "-"
		}
		figs = append(figs, suiteFigures(s, i, prefix, logs)...)
		page.Suites = append(page.Suites, newSection(s))
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

// readLogs reads the event logs the runs name, in parallel.
func readLogs(suites []Suite) (map[string]*plots.RunLog, error) {
	var paths []string
	seen := map[string]bool{}
	for _, s := range suites {
		for _, r := range s.Runs {
			// Only training runs are drawn from their logs (timelines, memory, CDF).
			if r.Kind == KindTraining && r.Log != "" && !seen[r.Log] {
				seen[r.Log] = true
				paths = append(paths, r.Log)
			}
		}
	}
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

// suiteFigures picks the pictures that apply to a suite's runs.
func suiteFigures(s Suite, idx int, prefix string, logs map[string]*plots.RunLog) []placedFigure {
	var figs []placedFigure
	add := func(f plots.Figure, caption string) {
		figs = append(figs, placedFigure{Figure: f, suite: idx, caption: caption})
	}
	training := runsOf(s, KindTraining)
	if len(training) > 0 {
		var labels []string
		var makespan, avg, p95 []float64
		for _, r := range training {
			labels = append(labels, r.Label)
			makespan, avg, p95 = append(makespan, r.MakespanS/60), append(avg, r.AvgJCTS/60), append(p95, r.P95JCTS/60)
		}
		add(plots.Bars(prefix+"bars", "Makespan, average and p95 JCT per policy", 11*vg.Inch,
			plots.Panel{Title: "makespan", Y: "minutes", Categories: labels, Groups: []plots.Series{{Values: makespan}}},
			plots.Panel{Title: "average JCT", Y: "minutes", Categories: labels, Groups: []plots.Series{{Values: avg}}},
			plots.Panel{Title: "p95 JCT", Y: "minutes", Categories: labels, Groups: []plots.Series{{Values: p95}}}),
			"Makespan, average and 95th-percentile job completion time of each run, in minutes (lower is better).")
		var cdf []plots.Series
		for _, r := range training {
			if l := logs[r.Log]; l != nil {
				cdf = append(cdf, plots.Series{Label: r.Label, Values: l.JCTs()})
			}
		}
		if len(cdf) > 0 {
			add(plots.CDF(prefix+"jct-cdf", "JCT distribution", "job completion time (min, log scale)", cdf),
				"Share of jobs finished within a given completion time (arrival to end), every run on one chart: a curve further left and higher is better.")
		}
		for _, r := range training {
			l := logs[r.Log]
			if l == nil {
				continue
			}
			name := plots.Slug(r.Label)
			add(plots.Timeline(l, prefix+"timeline-"+name, "Job timeline: "+r.Label),
				"One row per job in arrival order: grey while it waits, tan during start-up, coloured while its iterations run, the colour being its lane's slot (lanes open at the same time get different colours). Iterations closer together than the picture resolves are drawn as one stretch.")
			add(plots.Memory(l, prefix+"memory-"+name, "Memory by lane: "+r.Label),
				"Device memory over time: each open lane's persistent memory (solid) and largest ephemeral peak (pale), stacked; the black line is the memory allocated to lanes, the red dashed line the device's usable capacity.")
		}
	}
	if tuning := runsOf(s, KindTuning); len(tuning) > 0 {
		f, ok := tuningBars(prefix, tuning)
		if ok {
			add(f, "Hyper-parameter exploration: makespan of each workload's jobs under each scheme against running them one after another, and the ratio (utilization improvement; the paper's 2.38x dashed).")
		}
	}
	if inf := runsOf(s, KindInference); len(inf) > 0 {
		for _, f := range inferenceFigures(prefix, inf) {
			add(f, "Inference: "+f.Title+".")
		}
	}
	return figs
}

func runsOf(s Suite, kind string) []Run {
	var out []Run
	for _, r := range s.Runs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// tuningBars draws makespan and improvement per workload, one bar per scheme.
func tuningBars(prefix string, runs []Run) (plots.Figure, bool) {
	var workloads, schemes []string
	seenW, seenS := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		w, sc := r.Workload, schemeOf(r)
		if !seenW[w] {
			seenW[w] = true
			workloads = append(workloads, w)
		}
		if !seenS[sc] {
			seenS[sc] = true
			schemes = append(schemes, sc)
		}
	}
	makespan := []plots.Series{{Label: "one by one", Values: make([]float64, len(workloads))}}
	improvement := []plots.Series{}
	for _, sc := range schemes {
		makespan = append(makespan, plots.Series{Label: sc, Values: make([]float64, len(workloads))})
		improvement = append(improvement, plots.Series{Label: sc, Values: make([]float64, len(workloads))})
	}
	for _, r := range runs {
		w := index(workloads, r.Workload)
		sc := index(schemes, schemeOf(r))
		makespan[0].Values[w] = max(makespan[0].Values[w], r.SequentialS/60)
		makespan[sc+1].Values[w] = r.MakespanS / 60
		imp := r.Improvement
		if imp == 0 && r.MakespanS > 0 {
			imp = r.SequentialS / r.MakespanS
		}
		improvement[sc].Values[w] = imp
	}
	return plots.Bars(join(prefix, "tuning-bars"), "Hyper-parameter exploration per scheme", 12*vg.Inch,
		plots.Panel{Title: "makespan", Y: "minutes", Categories: workloads, Groups: makespan, Format: "%.0f"},
		plots.Panel{Title: "utilization improvement (one by one / scheme)", Y: "x", Categories: workloads, Groups: improvement,
			Ref: 2.38, RefLabel: "paper (pack): 2.38x", Format: "%.2f", FirstColour: 1}), len(workloads) > 0
}

// inferenceFigures draws GPUs needed per scheme and latency per model.
func inferenceFigures(prefix string, runs []Run) []plots.Figure {
	var schemes []string
	var gpus []float64
	for _, r := range runs {
		schemes = append(schemes, schemeOf(r))
		gpus = append(gpus, r.GPUsNeeded)
	}
	figs := []plots.Figure{plots.Bars(join(prefix, "inference-gpus"), "GPUs needed to host every inference job", 6*vg.Inch,
		plots.Panel{Title: "GPUs needed", Y: "GPUs", Categories: schemes, Groups: []plots.Series{{Values: gpus}}, Format: "%.0f"})}
	var models []string
	seen := map[string]bool{}
	alone := map[string]float64{}
	for _, r := range runs {
		for _, l := range r.Latency {
			if !seen[l.Model] {
				seen[l.Model] = true
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
	for _, r := range runs {
		if len(r.Latency) == 0 {
			continue
		}
		s := plots.Series{Label: schemeOf(r) + " (mean)", Values: make([]float64, len(models))}
		for _, l := range r.Latency {
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

func schemeOf(r Run) string {
	if r.Scheme != "" {
		return r.Scheme
	}
	return r.Label
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

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
