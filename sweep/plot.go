package sweep

import (
	"fmt"
	"strings"

	"github.com/salusgo/salus/plots"
)

// metricLabel says how a metric is drawn: its axis label and the scale to it.
var metricLabel = map[string]struct {
	name, axis string
	scale      float64
}{
	"avg_jct_s":         {"average JCT", "minutes", 1.0 / 60},
	"p95_jct_s":         {"p95 JCT", "minutes", 1.0 / 60},
	"makespan_s":        {"makespan", "minutes", 1.0 / 60},
	"avg_queuing_s":     {"average queuing", "minutes", 1.0 / 60},
	"gpu_busy":          {"GPU busy", "% of the makespan", 100},
	"jain_slowdown":     {"Jain's index of slowdowns", "1 = every job slowed alike", 1},
	"max_slowdown":      {"worst slowdown", "JCT / time alone", 1},
	"avg_jct_vs_bound":  {"average JCT over its lower bound", "x the bound", 1},
	"makespan_vs_bound": {"makespan over its lower bound", "x the bound", 1},
}

// Plot writes sweep-METRIC.png and .svg into dir for each metric: the metric
// against load, one curve per policy (and mode, capacity and trace when the grid
// has several), with 95% confidence intervals as error bars.
func Plot(dir string, cells []Summary) ([]string, error) {
	modes, caps, traces := map[string]bool{}, map[float64]bool{}, map[string]bool{}
	for _, c := range cells {
		modes[c.ModeName()], caps[c.CapacityMiB], traces[c.Trace] = true, true, true
	}
	var files []string
	for _, m := range Metrics {
		ml, ok := metricLabel[m]
		if !ok {
			ml.name, ml.axis, ml.scale = m, m, 1
		}
		var curves []plots.Curve
		index := map[string]int{}
		for _, c := range cells {
			st, ok := c.Metrics[m]
			if !ok || st.N == 0 {
				continue
			}
			label := c.Policy
			if len(modes) > 1 {
				label += "/" + c.ModeName()
			}
			if len(caps) > 1 {
				label += fmt.Sprintf(" %.0f GiB", c.CapacityMiB/1024)
			}
			if len(traces) > 1 {
				label += " " + TraceName(c.Trace)
			}
			i, seen := index[label]
			if !seen {
				i = len(curves)
				index[label] = i
				curves = append(curves, plots.Curve{Label: label})
			}
			cv := &curves[i]
			cv.X = append(cv.X, c.Load)
			cv.Y = append(cv.Y, st.Mean*ml.scale)
			cv.Err = append(cv.Err, st.CI95*ml.scale)
		}
		if len(curves) == 0 {
			continue
		}
		title := fmt.Sprintf("%s against load (mean and 95%% CI over seeds)", ml.name)
		fig := plots.Lines("sweep-"+strings.TrimSuffix(m, "_s"), title, "offered load (arrival-rate multiplier)", ml.name+" ("+ml.axis+")", curves)
		fs, err := fig.Save(dir)
		files = append(files, fs...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}
