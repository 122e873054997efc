package sweep

import (
	"math"

	"github.com/salusgo/salus/eval"
)

// Stat is a metric over the seeds of one cell: the mean and its 95% confidence
// interval [Low, High], a BCa bootstrap of the mean (eval.MeanInterval, where
// the choice is explained): never below the smallest seed's value, so never
// below zero for a positive metric, and longer on the side of a skewed
// metric's tail.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// SD is the sample standard deviation across seeds (0 for one seed).
	SD   float64 `json:"sd"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Summarize computes a Stat of xs.
func Summarize(xs []float64) Stat {
	s := Stat{N: len(xs)}
	if s.N == 0 {
		return s
	}
	s.Mean, s.Low, s.High = eval.MeanInterval(xs)
	if s.N > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(s.N-1))
	}
	return s
}
