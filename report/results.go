package report

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/plots"
)

// Drawer is a result that draws figures of its own: a suite this package does not
// know draws its pictures by implementing it (prefix: what to begin the figures'
// names with, so that several suites' files do not collide).
type Drawer interface {
	Figures(prefix string) []plots.Figure
}

// figure is a picture of a section, with its caption.
type figure struct {
	plots.Figure
	caption string
}

// flatten lists the results a report shows: --suite all's own (its headlines),
// then its suites'.
func flatten(res eval.Result) []eval.Result {
	out := []eval.Result{res}
	if all, ok := res.(*eval.AllReport); ok {
		for _, r := range all.Runs {
			out = append(out, flatten(r)...)
		}
	}
	return out
}

// trainingLogs are the event logs the training runs name: only they are drawn
// from their logs (timelines, memory, CDF). Runs that recorded their events as
// they ran come in recorded; the others' logs are to be read.
func trainingLogs(results []eval.Result) (paths []string, recorded map[string]*plots.RunLog) {
	recorded = map[string]*plots.RunLog{}
	seen := map[string]bool{}
	for _, res := range results {
		r, ok := res.(*eval.Report)
		if !ok {
			continue
		}
		for _, run := range r.Runs {
			if run.Log == "" || run.Error != "" || seen[run.Log] {
				continue
			}
			seen[run.Log] = true
			if run.Recorded != nil {
				recorded[run.Log] = run.Recorded
			} else {
				paths = append(paths, run.Log)
			}
		}
	}
	return paths, recorded
}

// section tabulates one result and picks its figures: the tables from the result's
// own fields (its runs, its parameters), the figures by its type.
func section(res eval.Result, prefix string, logs map[string]*plots.RunLog) (suiteSection, []figure) {
	sec := suiteSection{Name: res.SuiteName()}
	var figs []figure
	switch r := res.(type) {
	case *eval.AllReport:
		if t, ok := structTable("the paper's headlines and this project's figures", reflect.ValueOf(r.Claims), metrics.Minutes); ok {
			sec.Tables = append(sec.Tables, t)
		}
		return sec, nil
	case *eval.FailedSuite:
		sec.Text = "The suite failed: " + r.Error
		return sec, nil
	case *eval.PaperReport:
		// One table per experiment of the paper, each with its set-up.
		for _, s := range r.Sections {
			sec.Tables = append(sec.Tables, paperTable(s))
		}
		for _, f := range r.Figures(prefix) {
			figs = append(figs, figure{f, "Every job's JCT under each of Table 1's policies, all seeds together, drawn from 0 to 300 min as the paper's Fig. 7 is (the paper: FIFO's longest JCT about 254 min, half of SRTF's jobs within about 18 min)."})
		}
		return sec, figs
	}
	genericTables(res, &sec)
	if hs := res.Headlines(); len(hs) > 0 {
		if t, ok := structTable("the paper's figures and this project's", reflect.ValueOf(hs), metrics.Minutes); ok {
			sec.Tables = append(sec.Tables, t)
		}
	}
	switch r := res.(type) {
	case *eval.Report:
		if t, ok := perGPUTable(r); ok {
			sec.Tables = append(sec.Tables, t)
		}
		if t, ok := boundTable(r); ok {
			sec.Tables = append(sec.Tables, t)
		}
		if t, ok := classTable(r); ok {
			sec.Tables = append(sec.Tables, t)
		}
		figs = trainingFigures(r, prefix, logs)
		if r.Recommendation != "" {
			sec.Recommendations = []string{r.Recommendation}
		}
		sec.JobTables = jobTables(r)
	case *eval.TuningReport:
		if f, ok := tuningBars(prefix, r); ok {
			figs = append(figs, figure{f, fmt.Sprintf("Hyper-parameter exploration: makespan of each workload's jobs under each scheme against running them one after another, and the ratio (utilization improvement; the paper's %.2fx dashed).", r.Paper.Value)})
		}
	case *eval.InferenceReport:
		if t, ok := latencyTable(r); ok {
			sec.Tables = append(sec.Tables, t)
		}
		for _, f := range inferenceFigures(prefix, r) {
			figs = append(figs, figure{f, "Inference: " + f.Title + "."})
		}
	}
	if d, ok := res.(Drawer); ok {
		for _, f := range d.Figures(prefix) {
			figs = append(figs, figure{f, f.Title + "."})
		}
	}
	return sec, figs
}

// paperTable is one experiment of the paper: each published figure beside ours.
func paperTable(s eval.PaperSection) table {
	t := table{Caption: s.Title + ". " + s.Setup,
		Head: []string{"figure", "row", "column", "paper", "ours", "seed range", "paper inside", "ours / paper", "why they differ"}}
	for _, r := range s.Rows {
		ours, ratio := r.Ours, ""
		if ours == "" {
			ours = "-"
		}
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		t.Rows = append(t.Rows, []string{r.Figure, r.Row, r.Column, r.Paper + " " + r.Unit, ours, r.Range, r.Inside, ratio, r.Why})
	}
	return t
}

// perGPUTable shows what each GPU of a node did, run by run, when the runs had
// more than one GPU.
func perGPUTable(r *eval.Report) (table, bool) {
	t := table{Caption: "runs per GPU", Head: []string{"scheme", "GPU", "jobs", "busy", "peak memory (MiB)"}}
	for _, run := range r.Runs {
		for _, g := range run.PerGPU {
			t.Rows = append(t.Rows, []string{run.Scheme, fmt.Sprint(g.GPU), fmt.Sprint(g.Jobs),
				fmt.Sprintf("%.0f%%", g.Busy*100), fmt.Sprintf("%.0f", g.PeakMemoryMiB)})
		}
	}
	return t, len(t.Rows) > 0
}

// boundTable shows the trace's lower bounds, which the runs' "vs bound" columns
// divide by, and their two parts.
func boundTable(r *eval.Report) (table, bool) {
	b := r.Bound
	if b == nil {
		return table{}, false
	}
	u := r.Unit()
	m := func(s float64) string { return fmt.Sprintf("%.1f", s*u.Scale) }
	work, workSpan := m(b.WorkAvgJCTS), m(b.WorkMakespanS)
	if b.AloneOnly { // from an event log, which gives no demands
		work, workSpan = "-", "-"
	}
	in := " (" + u.Name + ")"
	return table{Caption: "lower bound on this trace and device (no scheme can beat it; see docs/concepts.md, Lower bound)",
		Head: []string{"figure", "bound" + in, "SRPT on the GPU work" + in, "jobs alone" + in},
		Rows: [][]string{
			{"average JCT", m(b.AvgJCTS), work, m(b.AloneAvgJCTS)},
			{"makespan", m(b.MakespanS), workSpan, m(b.AloneMakespanS)},
		}}, true
}

// classTable is the runs' per-priority figures, when a run had several classes.
func classTable(r *eval.Report) (table, bool) {
	head, rows := r.ClassRows()
	return table{Caption: eval.ClassCaption, Head: head, Rows: rows}, len(rows) > 0
}

// genericTables shows a result's fields: "engine" names the engine; the runs (a
// list of structs) are a table; other lists of structs are tables; structs and
// the scalar fields are parameter tables; "paper" is left to the headlines.
func genericTables(res eval.Result, sec *suiteSection) {
	v := reflect.Indirect(reflect.ValueOf(res))
	if v.Kind() != reflect.Struct {
		return
	}
	u := metrics.Minutes
	if r, ok := res.(*eval.Report); ok {
		u = r.Unit() // the runs' times in the unit of the run's length
	}
	scalars := table{Caption: "suite", Head: []string{"parameter", "value"}}
	var params []table
	for _, f := range fields(v) {
		switch {
		case f.name == "suite", f.name == "paper" && len(res.Headlines()) > 0: // the headlines' table shows the paper's figures
		case f.name == "recommendation": // a paragraph of its own
		case f.name == "bound": // a table of its own (boundTable)
		case f.name == "engine" && f.v.Kind() == reflect.String:
			sec.Engine = f.v.String()
		case f.v.Kind() == reflect.Slice:
			caption := f.name
			switch f.name {
			case "runs":
				caption = sec.Name + " runs"
			case "predicted":
				caption = "the simulator on the same jobs (each with the iteration time, start-up and memory its log measured), and the live run's difference from it"
			}
			if t, ok := structTable(caption, f.v, u); ok {
				if _, isTraining := res.(*eval.Report); isTraining && f.name == "runs" {
					t = t.only(compactRunColumns...) // the rest folded away, as -o wide is
				}
				sec.Tables = append(sec.Tables, t)
			}
		case reflect.Indirect(f.v).Kind() == reflect.Struct:
			if reflect.Indirect(f.v).IsZero() {
				continue // nothing to show: a log's report has no paper figure to compare
			}
			ti, isTrace := f.v.Interface().(eval.TraceInfo)
			t := table{Caption: f.name, Head: []string{"parameter", "value"}}
			for _, g := range fields(reflect.Indirect(f.v)) {
				if isTrace && g.name == "seed" && !ti.SeedUsed() {
					continue // a trace file or a log: no seed drew it
				}
				if s, ok := format(g.name, g.v, metrics.Minutes); ok {
					t.Rows = append(t.Rows, []string{g.name, s})
				}
			}
			params = append(params, t)
		default:
			if s, ok := format(f.name, f.v, metrics.Minutes); ok {
				scalars.Rows = append(scalars.Rows, []string{f.name, s})
			}
		}
	}
	if len(scalars.Rows) > 0 {
		sec.Params = append(sec.Params, scalars)
	}
	sec.Params = append(sec.Params, params...)
}

// compactRunColumns are the columns of a training report's runs that fit the
// page: salus eval's default table's.
var compactRunColumns = []string{"scheme", "mode", "error", "makespan_s", "avg_queuing_s", "avg_jct_s", "p95_jct_s",
	"gpu_busy", "avg_jct_speedup_vs_fifo", "avg_jct_vs_bound", "jain_slowdown"}

type field struct {
	name      string
	omitEmpty bool
	v         reflect.Value
}

// fields are a struct's exported fields by their JSON names, embedded structs'
// fields in place; fields JSON leaves out are left out.
func fields(v reflect.Value) []field {
	var out []field
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			out = append(out, fields(v.Field(i))...)
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, omitEmpty: strings.Contains(opts, "omitempty"), v: v.Field(i)})
	}
	return out
}

// structTable shows a list of structs, a row each, with their scalar fields as
// columns (a column left out when JSON would leave it out of every row; logs are
// files beside the page, not figures).
// Times are in unit u.
func structTable(caption string, list reflect.Value, u metrics.TimeUnit) (table, bool) {
	t := table{Caption: caption}
	if list.Kind() != reflect.Slice || list.Len() == 0 {
		return t, false
	}
	elem := func(i int) reflect.Value { return reflect.Indirect(list.Index(i)) }
	if elem(0).Kind() != reflect.Struct {
		return t, false
	}
	var cols []string
	keep := map[string]bool{}
	for i := range list.Len() {
		for _, f := range fields(elem(i)) {
			if _, scalar := format(f.name, f.v, u); !scalar || f.name == "log" || f.name == "suite" {
				continue
			}
			if _, seen := keep[f.name]; !seen {
				cols = append(cols, f.name)
				keep[f.name] = false
			}
			if !f.omitEmpty || !f.v.IsZero() {
				keep[f.name] = true
			}
		}
	}
	var shown []string
	for _, c := range cols {
		if keep[c] {
			shown = append(shown, c)
			t.Head = append(t.Head, header(c, u))
		}
	}
	t.keys = shown
	for i := range list.Len() {
		byName := map[string]reflect.Value{}
		for _, f := range fields(elem(i)) {
			byName[f.name] = f.v
		}
		row := make([]string, len(shown))
		for j, c := range shown {
			if v, ok := byName[c]; ok {
				row[j], _ = format(c, v, u)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, len(shown) > 0
}

// format shows a scalar field; false for structs, lists and maps.
func format(name string, v reflect.Value, u metrics.TimeUnit) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return fmt.Sprint(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return formatValue(name, float64(v.Int()), u)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return formatValue(name, float64(v.Uint()), u)
	case reflect.Float32, reflect.Float64:
		return formatValue(name, v.Float(), u)
	}
	return "", false
}
