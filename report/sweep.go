package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/salusgo/salus/sweep"
)

// SweepOptions says what sweep report to write and where.
type SweepOptions struct {
	// Dir holds the sweep's plots (sweep.Plot) and receives index.html.
	Dir    string
	Result sweep.Result
	// Plots are the files sweep.Plot wrote; their PNGs go inline.
	Plots   []string
	Args    []string
	Version string
}

// sweepMetrics are the sweep's metrics as the page shows them.
var sweepMetrics = []struct {
	key, head string
	scale     float64
	prec      int
}{
	{"avg_jct_s", "avg JCT (min)", 1.0 / 60, 1}, {"p95_jct_s", "p95 JCT (min)", 1.0 / 60, 1},
	{"makespan_s", "makespan (min)", 1.0 / 60, 0}, {"avg_queuing_s", "avg queuing (min)", 1.0 / 60, 1},
	{"gpu_busy", "GPU busy (%)", 100, 0}, {"jain_slowdown", "Jain (slowdowns)", 1, 3}, {"max_slowdown", "worst slowdown", 1, 1},
	{"avg_jct_vs_bound", "avg JCT vs bound", 1, 2}, {"makespan_vs_bound", "makespan vs bound", 1, 2},
}

// WriteSweep writes DIR/index.html for a sweep: the cells' means with their 95%
// confidence intervals, the recommendation at each trace, load and capacity, the
// plots inline, the grid, the command line and the version. It returns the
// page's path.
func WriteSweep(o SweepOptions) (string, error) {
	r := o.Result
	version := o.Version
	if version == "" {
		version = "devel"
	}
	pg := &page{Title: "salus sweep", Version: version, Command: strings.Join(quoteArgs(o.Args), " "), GoVersion: runtime.Version()}
	sec := suiteSection{Name: "sweep", Engine: "sim"}
	traces := len(r.Grid.Traces) > 0
	t := table{Caption: "mean ± half width of the 95% confidence interval across seeds (Student's t)"}
	if traces {
		t.Head = append(t.Head, "trace")
	}
	t.Head = append(t.Head, "policy", "mode", "load", "GiB", "runs")
	for _, m := range sweepMetrics {
		t.Head = append(t.Head, m.head)
	}
	for _, c := range r.Cells {
		var row []string
		if traces {
			row = append(row, sweep.TraceName(c.Trace))
		}
		runs := fmt.Sprint(c.Runs)
		if c.Failed > 0 {
			runs += fmt.Sprintf(" (%d failed)", c.Failed)
		}
		row = append(row, c.Policy, c.ModeName(), fmt.Sprint(c.Load), fmt.Sprintf("%.1f", c.CapacityMiB/1024), runs)
		for _, m := range sweepMetrics {
			st, ok := c.Metrics[m.key]
			if !ok || st.N == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf("%.*f ± %.*f", m.prec, st.Mean*m.scale, m.prec, st.CI95*m.scale))
		}
		t.Rows = append(t.Rows, row)
	}
	sec.Tables = append(sec.Tables, t)
	for _, rec := range r.Recommendations {
		where := fmt.Sprintf("At load %g, %.1f GiB", rec.Load, rec.CapacityMiB/1024)
		if traces {
			where = fmt.Sprintf("On %s at load %g, %.1f GiB", sweep.TraceName(rec.Trace), rec.Load, rec.CapacityMiB/1024)
		}
		sec.Recommendations = append(sec.Recommendations, where+": "+rec.Text)
	}
	for _, f := range o.Plots {
		if !strings.HasSuffix(f, ".png") {
			continue
		}
		png, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".png")
		title := strings.ReplaceAll(strings.TrimPrefix(name, "sweep-"), "_", " ")
		for _, m := range sweepMetrics {
			if k := strings.TrimPrefix(name, "sweep-"); k == m.key || k+"_s" == m.key {
				title = m.head
			}
		}
		sec.Figures = append(sec.Figures, image{Name: name, Title: title + " against load",
			Caption: "Mean over seeds against the arrival-rate multiplier, one curve per scheme, with 95% confidence intervals as error bars.",
			DataURI: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)), PNG: name + ".png", SVG: name + ".svg"})
	}
	grid := table{Caption: "grid", Head: []string{"parameter", "value"}}
	add := func(k string, v any) { grid.Rows = append(grid.Rows, []string{k, fmt.Sprint(v)}) }
	add("policies", strings.Join(r.Grid.Policies, ", "))
	add("modes", strings.Join(r.Grid.Modes, ", "))
	add("seeds", len(r.Grid.Seeds))
	add("loads", r.Grid.Loads)
	add("capacities (MiB)", r.Grid.CapacitiesMiB)
	add("device", r.Grid.Device)
	if traces {
		add("traces", strings.Join(r.Grid.Traces, ", "))
		add("resampling", r.Grid.Resample)
	} else {
		add("trace", fmt.Sprintf("generated salus100, %d jobs, a new trace per seed", r.Grid.Jobs))
	}
	add("runs", fmt.Sprintf("%d of %d", r.Runs, r.Planned))
	sec.Params = append(sec.Params, grid)
	pg.Suites = append(pg.Suites, sec)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pg); err != nil {
		return "", fmt.Errorf("rendering index.html: %w", err)
	}
	index := filepath.Join(o.Dir, "index.html")
	return index, os.WriteFile(index, buf.Bytes(), 0o644)
}
