package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// tInterval is Student's t-interval of the mean, the method the bootstrap
// replaced, for comparison.
func tInterval(xs []float64) (lo, hi float64) {
	n := float64(len(xs))
	var m, ss float64
	for _, x := range xs {
		m += x
	}
	m /= n
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * math.Sqrt(ss/(n-1)/n)
	return m - half, m + half
}

// On a positive, skewed sample where the t-interval reaches below zero, the
// bootstrap's stays within the values and around the mean, and leans to the
// long tail (the upper bound further from the mean than the lower).
func TestMeanIntervalRespectsAPositiveSkewedMetric(t *testing.T) {
	xs := []float64{1.2, 1.5, 2.0, 3.1, 40} // one seed with a long job early
	if lo, _ := tInterval(xs); lo >= 0 {
		t.Fatalf("the t-interval's lower bound %v: the case no longer shows the problem", lo)
	}
	mean, lo, hi := MeanInterval(xs)
	if math.Abs(mean-9.56) > 1e-12 {
		t.Errorf("mean %v, want 9.56", mean)
	}
	if !(lo >= slices.Min(xs) && lo <= mean && mean <= hi && hi <= slices.Max(xs)) {
		t.Errorf("interval [%v, %v] around %v: want within [%v, %v] and around the mean", lo, hi, mean, slices.Min(xs), slices.Max(xs))
	}
	if hi-mean <= mean-lo {
		t.Errorf("interval [%v, %v] around %v: want it longer on the side of the long tail", lo, hi, mean)
	}
	// The same values in another order: the same bounds, to the bit.
	rev := slices.Clone(xs)
	slices.Reverse(rev)
	if _, lo2, hi2 := MeanInterval(rev); lo2 != lo || hi2 != hi {
		t.Errorf("reversed: [%v, %v], in order: [%v, %v]", lo2, hi2, lo, hi)
	}
	for _, c := range [][]float64{{7}, {3, 3, 3}} {
		if m, lo, hi := MeanInterval(c); m != c[0] || lo != m || hi != m {
			t.Errorf("%v: %v [%v, %v], want no spread", c, m, lo, hi)
		}
	}
	if m, _, _ := MeanInterval(nil); !math.IsNaN(m) {
		t.Errorf("no values: mean %v, want NaN", m)
	}
}

// The interval is about a 95% interval: on lognormal samples of 10 (skewed as
// a sweep's JCTs are) it covers the true mean at least as often as Student's t
// (less than 95%: small skewed samples are hard for both), and on normal
// samples about 95% of the time (binomial spread over 300 samples: 1.3
// points).
func TestMeanIntervalCoverage(t *testing.T) {
	coverage := func(draw func(*rand.Rand) float64, truth float64) (boot, student float64) {
		rng := rand.New(rand.NewPCG(1, 2))
		const reps, n = 300, 10
		for range reps {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = draw(rng)
			}
			if _, lo, hi := MeanInterval(xs); lo <= truth && truth <= hi {
				boot++
			}
			if lo, hi := tInterval(xs); lo <= truth && truth <= hi {
				student++
			}
		}
		return boot / reps, student / reps
	}
	const sigma = 0.8
	b, st := coverage(func(r *rand.Rand) float64 { return math.Exp(sigma * r.NormFloat64()) }, math.Exp(sigma*sigma/2))
	if b < st-0.01 || b < 0.85 {
		t.Errorf("lognormal samples of 10: the bootstrap covered the mean %.1f%% of the time, Student's t %.1f%%", 100*b, 100*st)
	}
	nb, _ := coverage(func(r *rand.Rand) float64 { return 100 + 10*r.NormFloat64() }, 100)
	if nb < 0.91 || nb > 0.99 {
		t.Errorf("normal samples of 10: the bootstrap covered the mean %.1f%% of the time, want about 95%%", 100*nb)
	}
	t.Logf("lognormal: bootstrap %.1f%%, t %.1f%%; normal: bootstrap %.1f%%", 100*b, 100*st, 100*nb)
}
