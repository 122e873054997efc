package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The confidence intervals across seeds, of a metric's mean (a sweep's cell) and
// of the mean difference of two schemes on the same seeds (Recommend's paired
// comparison), are one method: the bias-corrected and accelerated (BCa)
// bootstrap of the mean (Efron, 1987; Efron and Tibshirani, "An Introduction
// to the Bootstrap", ch. 14), at 95%, from IntervalResamples resamples drawn
// with a fixed seed, its normal quantiles widened for small samples to
// Student's t with n-1 degrees of freedom times sqrt(n/(n-1)) (Hesterberg's
// "expanded" bootstrap, "What Teachers Should Know About the Bootstrap", 2015).
//
// Why a bootstrap and not Student's t: the metrics (JCTs, makespans, queuing,
// slowdowns) are positive and skewed across seeds (one seed whose trace has a
// long job early doubles its average JCT), and a symmetric t-interval on such
// values reaches below zero (srtf's average JCT over 5 seeds: 12.8 ± 15.4 min).
// Every bootstrap mean is a mean of observed values, so a bound is never below
// the smallest seed's value (never below zero for a positive metric, never
// above one for a fraction); BCa then corrects the percentile interval for the
// skew (the acceleration, from the jackknife) and for the median bias of the
// resampled means. Why not a t-interval on the logarithms: it bounds the
// geometric mean rather than the mean the tables show, and a metric that can be
// zero (a run with no queuing) has no logarithm. Why widened: BCa alone covers
// the mean of 5 lognormal values (log-SD 0.8) 76% of the time where Student's t
// covers it 87%; widened, 86%, and 89% against t's 86% at 10 values
// (TestMeanIntervalCoverage measures it at 10).
//
// What it cannot do: the interval stays within the seeds' own range, and with
// few seeds it covers less than its nominal 95%; the tables say so under 10
// seeds (IntervalFewSeeds). The fixed seed makes an interval a function of the
// values alone, whatever their order: a resumed or merged sweep reports the
// same bounds as one run at once.
const (
	IntervalMethod    = "BCa bootstrap"
	IntervalResamples = 10000
	// IntervalFewSeeds is the number of seeds under which the tables warn that
	// the intervals cover less than their nominal level.
	IntervalFewSeeds = 10
)

// IntervalNote says in one line how the intervals across n seeds (the most any
// cell has) were computed, for the foot of a table.
func IntervalNote(n int) string {
	s := "mean [95% confidence interval] across " + plural(n, "seed") + ": " + IntervalMethod + " of the mean (10000 resamples, fixed seed; docs/comparing.md)"
	if n > 1 && n < IntervalFewSeeds {
		s += "; under 10 seeds an interval covers less than 95% of the time (about 86% at 5): run --seeds 10 or more for a paper"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// MeanInterval is the mean of xs and its 95% BCa bootstrap interval (see
// IntervalMethod). With one value, or all values equal, the interval is the
// mean alone; with none, all three are NaN.
func MeanInterval(xs []float64) (mean, low, high float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	// Sorted: the bounds depend on the values, not on the order they came in.
	xs = slices.Clone(xs)
	slices.Sort(xs)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if xs[0] == xs[n-1] {
		return mean, mean, mean
	}
	// The jackknife means (each value left out) give the acceleration: the skew
	// of the mean's influence values.
	var num, den float64
	for _, x := range xs {
		d := (mean*float64(n) - x) / float64(n-1)
		d = mean - d
		num += d * d * d
		den += d * d
	}
	accel := num / (6 * math.Pow(den, 1.5))

	rng := rand.New(rand.NewPCG(0x5a105, 0xb0075))
	means := make([]float64, IntervalResamples)
	below, equal := 0, 0
	for b := range means {
		var s float64
		for range n {
			s += xs[rng.IntN(n)]
		}
		m := s / float64(n)
		means[b] = m
		switch {
		case m < mean:
			below++
		case m == mean:
			equal++
		}
	}
	slices.Sort(means)
	// The bias correction: how far the resampled means' median is from the mean,
	// in standard normal units (ties counted half, as they fall on both sides).
	p := (float64(below) + float64(equal)/2) / IntervalResamples
	p = min(max(p, 0.5/IntervalResamples), 1-0.5/IntervalResamples)
	norm := distuv.UnitNormal
	z0 := norm.Quantile(p)
	// Small samples: the normal quantile widened to Student's t with n-1
	// degrees of freedom, times sqrt(n/(n-1)) (Hesterberg's expanded bootstrap).
	expand := math.Sqrt(float64(n) / float64(n-1))
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}
	at := func(alpha float64) float64 {
		z := expand * tq.Quantile(alpha)
		q := norm.CDF(z0 + (z0+z)/(1-accel*(z0+z)))
		return quantile(means, q)
	}
	low, high = at(0.025), at(0.975)
	// The bounds are resampled means, within [min, max] of xs; the mean is
	// inside them unless the bias correction moved both past it.
	return mean, min(low, mean), max(high, mean)
}

// quantile is the q quantile of sorted xs, interpolated between neighbours.
func quantile(xs []float64, q float64) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(math.Floor(pos))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	if i < 0 {
		return xs[0]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}
