package sweep

import (
	"github.com/salusgo/salus/eval"
)

// Recommendation is eval.Recommend's paragraph for one point of the grid: the
// schemes that ran on one trace at one load and capacity, compared on their
// means with the 95% confidence intervals across seeds, and seed by seed.
type Recommendation struct {
	Trace       string  `json:"trace,omitempty"`
	Kind        string  `json:"kind,omitempty"`
	Load        float64 `json:"load"`
	CapacityMiB float64 `json:"capacity_mib"`
	Text        string  `json:"text"`
}

// Recommend gives a recommendation for each trace, load and capacity of the
// summaries (in their order) where two schemes or more ran; the samples, when
// given, let it compare two schemes seed by seed (every scheme runs the same
// traces at a seed).
func Recommend(cells []Summary, samples []Sample) []Recommendation {
	perSeed := map[Cell]map[string]map[int64]float64{}
	for _, s := range samples {
		if s.Err != "" {
			continue
		}
		if perSeed[s.Cell] == nil {
			perSeed[s.Cell] = map[string]map[int64]float64{}
		}
		for k, v := range s.Metrics {
			if perSeed[s.Cell][k] == nil {
				perSeed[s.Cell][k] = map[int64]float64{}
			}
			perSeed[s.Cell][k][s.Seed] = v
		}
	}
	type point struct {
		trace, kind string
		load, cap   float64
	}
	var order []point
	by := map[point][]eval.Candidate{}
	for _, c := range cells {
		if c.Runs == 0 {
			continue
		}
		p := point{c.Trace, c.Kind, c.Load, c.CapacityMiB}
		if _, ok := by[p]; !ok {
			order = append(order, p)
		}
		label := eval.Scheme{Mode: c.Mode, Policy: c.Policy}.String()
		if c.Admission != "" {
			label += " (admit by " + c.Admission + ")"
		}
		if c.Migrate {
			label += " (migrate)"
		}
		cand := eval.Candidate{Scheme: label, Metrics: map[string]eval.Estimate{},
			PerSeed: perSeed[c.Cell]}
		for k, s := range c.Metrics {
			cand.Metrics[k] = eval.Estimate{Mean: s.Mean, Low: s.Low, High: s.High}
		}
		by[p] = append(by[p], cand)
	}
	var out []Recommendation
	for _, p := range order {
		if text := eval.Recommend(by[p]); text != "" {
			out = append(out, Recommendation{Trace: p.trace, Kind: p.kind, Load: p.load, CapacityMiB: p.cap, Text: text})
		}
	}
	return out
}

// TraceName names the recommendation's trace as Cell.TraceName does.
func (r Recommendation) TraceName() string { return Cell{Trace: r.Trace, Kind: r.Kind}.TraceName() }
