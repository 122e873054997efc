package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

type page struct {
	Title, Version, Command, GoVersion string
	Suites                             []suiteSection
	TraceSummary                       string
	Models                             *table
}

type suiteSection struct {
	Name, Engine string
	Text         string // a failed suite's error
	// Recommendations say which scheme is best on which metric (a sweep: one per
	// trace, load and capacity).
	Recommendations []string
	Tables          []table
	// JobTables are the per-job results, a table per run, each folded away.
	JobTables []table
	Params    []table
	Figures   []image
}

type table struct {
	Caption string
	Head    []string
	Rows    [][]string
	// Wide, when set, is the table with every column, folded away under this
	// one, which shows the columns that fit the page.
	Wide *table
	keys []string // the JSON names of the columns, when a struct's fields
}

// only is t with the columns of these JSON names that it has, in its order, and
// t itself folded under it; t when it has no more than those.
func (t table) only(keys ...string) table {
	var pick []int
	for i, k := range t.keys {
		if slices.Contains(keys, k) {
			pick = append(pick, i)
		}
	}
	if len(pick) == len(t.keys) || len(pick) == 0 {
		return t
	}
	out := table{Caption: t.Caption}
	for _, i := range pick {
		out.Head, out.keys = append(out.Head, t.Head[i]), append(out.keys, t.keys[i])
	}
	for _, row := range t.Rows {
		r := make([]string, len(pick))
		for j, i := range pick {
			r[j] = row[i]
		}
		out.Rows = append(out.Rows, r)
	}
	wide := t
	wide.Caption = "every column"
	out.Wide = &wide
	return out
}

// column says how a well-known run field is shown.
type column struct {
	head  string
	scale float64 // multiply by this
	unit  string  // "%", "x" or "" (a plain number)
	prec  int
}

var columns = map[string]column{
	"makespan_s":               {"makespan (min)", 1.0 / 60, "", 1},
	"sequential_makespan_s":    {"one by one (min)", 1.0 / 60, "", 1},
	"avg_jct_s":                {"avg JCT (min)", 1.0 / 60, "", 1},
	"p95_jct_s":                {"p95 JCT (min)", 1.0 / 60, "", 1},
	"avg_queuing_s":            {"avg queuing (min)", 1.0 / 60, "", 1},
	"gpu_busy":                 {"GPU busy", 100, "%", 0},
	"peak_memory_mib":          {"peak memory (GiB)", 1.0 / 1024, "", 1},
	"avg_jct_speedup_vs_fifo":  {"avg JCT vs fifo", 1, "x", 2},
	"makespan_speedup_vs_fifo": {"makespan vs fifo", 1, "x", 2},
	"avg_jct_vs_bound":         {"avg JCT vs bound", 1, "x", 2},
	"makespan_vs_bound":        {"makespan vs bound", 1, "x", 2},
	"improvement":              {"improvement", 1, "x", 2},
	"gpus_needed":              {"GPUs needed", 1, "", 0},
	"jain_slowdown":            {"Jain (slowdowns)", 1, "", 3},
	"max_slowdown":             {"worst slowdown", 1, "x", 2},
	"slowdown_unknown":         {"jobs without slowdown", 1, "", 0},
	"sim_makespan_s":           {"sim makespan (min)", 1.0 / 60, "", 2},
	"sim_avg_jct_s":            {"sim avg JCT (min)", 1.0 / 60, "", 2},
	"sim_p95_jct_s":            {"sim p95 JCT (min)", 1.0 / 60, "", 2},
	"live_vs_sim_makespan":     {"live vs sim makespan", 100, "%", 1},
	"live_vs_sim_avg_jct":      {"live vs sim avg JCT", 100, "%", 1},
	"live_vs_sim_p95_jct":      {"live vs sim p95 JCT", 100, "%", 1},
	"paper":                    {"paper", 1, "x", 2}, // a headline's figures
	"measured":                 {"measured", 1, "x", 2},
}

// isTime says whether a column is a time, shown in the table's unit.
func (c column) isTime() bool { return c.scale == 1.0/60 && strings.HasSuffix(c.head, "(min)") }

// in is the column as a table in unit u shows it.
func (c column) in(u metrics.TimeUnit) column {
	if c.isTime() {
		c.scale, c.head = u.Scale, strings.TrimSuffix(c.head, "(min)")+"("+u.Name+")"
	}
	return c
}

func formatValue(key string, v any, u metrics.TimeUnit) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return fmt.Sprint(x), true
	case float64:
		if c, ok := columns[key]; ok {
			c = c.in(u)
			if x == 0 && c.unit == "x" {
				return "-", true
			}
			if strings.HasPrefix(key, "live_vs_sim") { // a difference: signed
				return fmt.Sprintf("%+.*f%s", c.prec, x*c.scale, c.unit), true
			}
			return fmt.Sprintf("%.*f%s", c.prec, x*c.scale, c.unit), true
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%.0f", x), true
		}
		return fmt.Sprintf("%.4g", x), true
	case nil:
		return "", true
	}
	return "", false // objects and arrays are shown elsewhere
}

func header(key string, u metrics.TimeUnit) string {
	if c, ok := columns[key]; ok {
		return c.in(u).head
	}
	return strings.ReplaceAll(key, "_", " ")
}

// latencyTable is the inference suite's request latency per model and scheme.
func latencyTable(r *eval.InferenceReport) (table, bool) {
	t := table{Caption: "request latency per model (ms)", Head: []string{"model", "alone"}}
	var models []string
	rows := map[string][]string{}
	for _, run := range r.Runs {
		if len(run.Models) == 0 {
			continue
		}
		t.Head = append(t.Head, run.Scheme+" mean", run.Scheme+" p99")
	}
	col := 0
	for _, run := range r.Runs {
		if len(run.Models) == 0 {
			continue
		}
		for _, l := range run.Models {
			row, ok := rows[l.Model]
			if !ok {
				models = append(models, l.Model)
				row = make([]string, len(t.Head))
				row[0] = l.Model
			}
			if l.AloneS > 0 {
				row[1] = fmt.Sprintf("%.1f", l.AloneS*1000)
			}
			row[2+2*col], row[3+2*col] = fmt.Sprintf("%.1f", l.MeanS*1000), fmt.Sprintf("%.1f", l.P99S*1000)
			rows[l.Model] = row
		}
		col++
	}
	for _, m := range models {
		t.Rows = append(t.Rows, rows[m])
	}
	return t, len(models) > 0
}

// jobTables are a table per run that did not fail: each job's JCT, queuing, time
// alone and slowdown, in arrival order.
func jobTables(r *eval.Report) []table {
	var out []table
	for _, run := range r.Runs {
		if run.Error != "" || len(run.Completion) == 0 {
			continue
		}
		t := table{Caption: fmt.Sprintf("%s: %d jobs", run.Scheme, len(run.Completion)),
			Head: []string{"job", "model", "arrival (min)", "JCT (min)", "queuing (min)", "alone (min)", "slowdown"}}
		jobs := slices.Clone(run.Completion)
		slices.SortStableFunc(jobs, func(a, b metrics.JobResult) int { return cmp.Compare(a.ArrivalS, b.ArrivalS) })
		for _, j := range jobs {
			alone, slow := "-", "-"
			if j.Slowdown > 0 {
				alone, slow = fmt.Sprintf("%.1f", j.AloneS/60), fmt.Sprintf("%.2fx", j.Slowdown)
			}
			jct := fmt.Sprintf("%.1f", j.JCTS/60)
			if j.Lost {
				jct += " (lost)"
			}
			t.Rows = append(t.Rows, []string{j.ID, j.Model, fmt.Sprintf("%.1f", j.ArrivalS/60), jct, fmt.Sprintf("%.1f", j.QueuingS/60), alone, slow})
		}
		out = append(out, t)
	}
	return out
}

// addTrace adds the trace's summary and the parameters of the models it uses.
func (p *page) addTrace(t *workload.Trace) {
	var buf bytes.Buffer
	workload.TraceStats(t).Write(&buf)
	p.TraceSummary = buf.String()
	jobs := map[string]int{}
	profiles := map[string]workload.Profile{}
	for _, j := range t.Jobs {
		jobs[j.Profile.Key()]++
		profiles[j.Profile.Key()] = *j.Profile
	}
	keys := make([]string, 0, len(profiles))
	for k := range profiles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tb := &table{Caption: "model parameters (profiles the trace uses, as measured on the P100; the device's speed divides iteration times)",
		Head: []string{"model", "batch", "kind", "jobs", "iteration on P100 (ms)", "start-up (s)", "persistent (MiB)", "ephemeral (MiB)", "peak (MiB)", "compute demand", "times"}}
	for _, k := range keys {
		pr := profiles[k]
		times := "measured"
		if pr.Estimated {
			times = "estimated"
		}
		tb.Rows = append(tb.Rows, []string{pr.Model, fmt.Sprint(pr.Batch), pr.Kind, fmt.Sprint(jobs[k]),
			fmt.Sprintf("%.1f", pr.IterS*1000), fmt.Sprintf("%.1f", pr.StartupS), fmt.Sprintf("%.0f", pr.PersistentMiB),
			fmt.Sprintf("%.0f", pr.EphemeralMiB), fmt.Sprintf("%.0f", pr.PeakMiB), fmt.Sprintf("%.2f", pr.Demand), times})
	}
	p.Models = tb
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1150px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; }
.meta { color: #555; font-size: 0.9em; }
code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.88em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th:last-child, td:last-child { text-align: left; }
th { background: #f2f2f2; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; max-width: 60em; }
.params { display: flex; flex-wrap: wrap; gap: 2em; }
nav a { margin-right: 1em; }
.recommendation { background: #f3f7ee; border-left: 4px solid #7a9a4a; padding: 0.6em 0.9em; max-width: 60em; }
summary { cursor: pointer; margin: 0.3em 0; }
.scroll { overflow-x: auto; max-width: 100%; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">salus {{.Version}} ({{.GoVersion}})<br>Command: <code>{{.Command}}</code></p>
<nav>{{range .Suites}}<a href="#suite-{{.Name}}">{{.Name}}</a>{{end}}{{if .TraceSummary}}<a href="#trace">trace</a>{{end}}{{if .Models}}<a href="#models">models</a>{{end}}</nav>
{{range .Suites}}
<section id="suite-{{.Name}}">
<h2>Suite {{.Name}}{{if .Engine}} ({{.Engine}}){{end}}</h2>
{{if .Text}}<pre>{{.Text}}</pre>{{end}}
{{range .Tables}}{{template "table" .}}{{end}}
{{range .Recommendations}}<p class="recommendation"><b>Which scheme?</b> {{.}}</p>
{{end}}
{{range .Figures}}
<figure id="fig-{{.Name}}">
<img src="{{.DataURI}}" alt="{{.Title}}">
<figcaption><b>{{.Title}}.</b> {{.Caption}} <a href="{{.SVG}}">SVG</a> · <a href="{{.PNG}}">PNG</a></figcaption>
</figure>
{{end}}
{{if .JobTables}}<h3>Per job</h3>
<p class="meta">Each job's completion time (arrival to end), queuing (arrival to first getting the GPU), time alone on the device and slowdown (completion time over time alone), per run; "-" where the log gives no time alone.</p>
{{range .JobTables}}<details><summary>{{.Caption}}</summary>{{template "table" .}}</details>
{{end}}{{end}}
{{if .Params}}<h3>Parameters</h3>
<div class="params">{{range .Params}}{{template "table" .}}{{end}}</div>{{end}}
</section>
{{end}}
{{if .TraceSummary}}<section id="trace"><h2>Trace</h2><pre>{{.TraceSummary}}</pre></section>{{end}}
{{if .Models}}<section id="models"><h2>Models</h2>{{template "table" .Models}}</section>{{end}}
</body>
</html>
{{define "table"}}<div class="scroll"><table>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody></table></div>
{{with .Wide}}<details><summary>Every column</summary>{{template "table" .}}</details>{{end}}{{end}}
`))
