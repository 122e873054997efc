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

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/sweep"
	"github.com/salusgo/salus/workload"
)

// SweepOptions says what sweep report to write and where.
type SweepOptions struct {
	// Dir holds the sweep's plots (sweep.Plot) and receives index.html.
	Dir    string
	Result sweep.Result
	// Figures are what sweep.Plot drew and wrote; their PNGs go inline.
	Figures []sweep.Drawn
	Args    []string
	Version string
}

// WriteSweep writes DIR/index.html for a sweep: the cells' means with their 95%
// confidence intervals (the seeds and the method under the table), the recommendation at each trace, load and capacity, the
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
	t := table{Caption: r.IntervalNote()}
	t.Head = append(t.Head, "trace", "policy", "mode", "load", "GiB", "GPUs", "runs")
	for _, m := range sweep.Columns {
		t.Head = append(t.Head, m.Head)
	}
	gpus := r.Grid.GPUsLabel()
	for _, c := range r.Cells {
		runs := fmt.Sprint(c.Runs)
		if c.Failed > 0 {
			runs += fmt.Sprintf(" (%d failed)", c.Failed)
		}
		row := []string{c.TraceName(), c.Policy, c.ModeName(), fmt.Sprint(c.Load), fmt.Sprintf("%.1f", c.CapacityMiB/1024), gpus, runs}
		for _, m := range sweep.Columns {
			row = append(row, m.Show(c.Metrics[m.Key]))
		}
		t.Rows = append(t.Rows, row)
	}
	// The columns that fit a page, every column folded under them.
	t.keys = t.Head
	sec.Tables = append(sec.Tables, t.only("trace", "policy", "mode", "load", "GPUs", "runs", "avg JCT (min)", "p95 JCT (min)", "makespan (min)", "Jain (slowdowns)"))
	for _, rec := range r.Recommendations {
		where := fmt.Sprintf("On %s at load %g, %.1f GiB", rec.TraceName(), rec.Load, rec.CapacityMiB/1024)
		if gpus != "1" {
			where += ", GPUs " + gpus
		}
		sec.Recommendations = append(sec.Recommendations, where+": "+rec.Text)
	}
	for _, d := range o.Figures {
		for _, f := range d.Files {
			if !strings.HasSuffix(f, ".png") {
				continue
			}
			png, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			name := strings.TrimSuffix(filepath.Base(f), ".png")
			sec.Figures = append(sec.Figures, image{Name: name, Title: d.Title, Caption: d.Caption,
				DataURI: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)), PNG: name + ".png", SVG: name + ".svg"})
		}
	}
	grid := table{Caption: "grid", Head: []string{"parameter", "value"}}
	add := func(k string, v any) { grid.Rows = append(grid.Rows, []string{k, fmt.Sprint(v)}) }
	add("policies", strings.Join(r.Grid.Policies, ", "))
	add("modes", strings.Join(r.Grid.Modes, ", "))
	add("seeds", len(r.Grid.Seeds))
	add("loads", r.Grid.Loads)
	add("capacities (MiB)", r.Grid.CapacitiesMiB)
	add("device", r.Grid.Device)
	add("GPUs", gpus)
	if len(r.Grid.Traces) > 0 {
		add("trace files", strings.Join(r.Grid.Traces, ", "))
		add("resampling", r.Grid.Resample)
	}
	if kinds := r.Grid.TraceKinds; len(kinds) > 0 || len(r.Grid.Traces) == 0 {
		if len(kinds) == 0 {
			kinds = []string{workload.Salus100}
		}
		add("generated traces", fmt.Sprintf("%s, %d jobs, a new trace per seed", strings.Join(kinds, ", "), r.Grid.Jobs))
	}
	add("intervals", "95% "+eval.IntervalMethod+" of the mean across seeds, "+fmt.Sprint(eval.IntervalResamples)+" resamples")
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
