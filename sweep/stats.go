package sweep

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stat is a metric over the seeds of one cell: the mean and its 95% confidence
// interval, mean ± CI95, from Student's t with n-1 degrees of freedom.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	// CI95 is the interval's half width; 0 when n < 2 (no spread to estimate).
	CI95 float64 `json:"ci95"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Summarize computes a Stat of xs.
func Summarize(xs []float64) Stat {
	s := Stat{N: len(xs)}
	if s.N == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(s.N-1))
		s.CI95 = TQuantile(0.975, s.N-1) * s.SD / math.Sqrt(float64(s.N))
	}
	s.Low, s.High = s.Mean-s.CI95, s.Mean+s.CI95
	return s
}

// TQuantile is the p quantile of Student's t distribution with df degrees of freedom.
func TQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}
