package interference

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/optimize"
)

// FitOptions are the fit's choices; the zero value chooses them by
// cross-validation on the pairs (see Fit).
type FitOptions struct {
	// Ranks and Lambdas are the forms and regularizations tried; the one of least
	// cross-validated error is kept. Empty: DefaultRanks, DefaultLambdas.
	Ranks   []int
	Lambdas []float64
	// Folds is the number of folds of the cross-validation (default 5). Pairs go
	// to folds by a hash of their unordered key, so a pair and its mirror stay
	// together and the split is the same on every machine.
	Folds int
}

// DefaultRanks and DefaultLambdas are the forms a fit chooses among.
var (
	DefaultRanks   = []int{1, 2, 3}
	DefaultLambdas = []float64{0.003, 0.01}
)

// FitReport is a fit's error, per job (each job's figure of each pair),
// in sample and cross-validated, for the model and the forms it is compared
// with.
type FitReport struct {
	Pairs int `json:"pairs"`
	Jobs  int `json:"jobs"`
	Folds int `json:"folds"`
	// Model, Rule and Half are the model's, today's rule's (one demand per job,
	// fitted: 1/max(1, d_a + d_b) each) and "0.5 each".
	Model Errors `json:"model"`
	Rule  Errors `json:"rule"`
	Half  Errors `json:"half"`
}

// Errors are absolute errors of normalized throughput, per job.
type Errors struct {
	InSample Summary `json:"in_sample"`
	CV       Summary `json:"cross_validated"`
}

// Summary is a distribution of absolute errors.
type Summary struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Mean   float64 `json:"mean"`
}

func (s Summary) String() string { return fmt.Sprintf("%.3f / %.3f", s.Median, s.P90) }

// Summarize is the median, p90 and mean of errs.
func Summarize(errs []float64) Summary {
	if len(errs) == 0 {
		return Summary{}
	}
	e := slices.Clone(errs)
	slices.Sort(e)
	var sum float64
	for _, v := range e {
		sum += v
	}
	return Summary{Median: quantile(e, 0.5), P90: quantile(e, 0.9), Mean: sum / float64(len(e))}
}

// quantile of sorted xs, linear between order statistics.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (pos-float64(lo))*(xs[hi]-xs[lo])
}

// obs is one job's measured figure beside another: job a's normalized
// throughput beside b (indices into the fit's jobs).
type obs struct {
	a, b int
	n    float64
}

// PairKey is a pair's unordered key, the two jobs sorted: the key by which
// the published sets were split in halves, and by which Fit splits its folds.
func PairKey(a, b Job) string {
	x, y := a.String(), b.String()
	if y < x {
		x, y = y, x
	}
	return x + "|" + y
}

// Fit fits a device model to measured pairs of one device (every pair's
// WorkerType must be device) run under mech. It chooses the rank and the
// regularization of least cross-validated error (median plus p90 of the
// per-job absolute error, folds by pair key), refits on every pair, and
// reports the in-sample and cross-validated error beside today's rule and
// "0.5 each".
func Fit(device string, mech Mechanism, source string, pairs []Pair, o FitOptions) (*DeviceModel, error) {
	device = strings.ToLower(device)
	var measured []Pair
	for _, p := range pairs {
		if p.WorkerType != device {
			return nil, fmt.Errorf("line %d: worker_type %q, fitting %q", p.Line, p.WorkerType, device)
		}
		if p.Measured {
			measured = append(measured, p)
		}
	}
	if len(measured) < 2 {
		return nil, fmt.Errorf("%s: %d measured pairs: a fit needs at least 2 with normalized figures", device, len(measured))
	}
	if len(o.Ranks) == 0 {
		o.Ranks = DefaultRanks
	}
	if len(o.Lambdas) == 0 {
		o.Lambdas = DefaultLambdas
	}
	if o.Folds == 0 {
		o.Folds = 5
	}
	if o.Folds < 2 {
		return nil, errors.New("cross-validation needs at least 2 folds")
	}
	folds := foldsOf(measured, o.Folds)
	best, bestScore := [2]float64{}, math.Inf(1)
	for _, r := range o.Ranks {
		for _, l := range o.Lambdas {
			s := Summarize(crossValidate(measured, folds, o.Folds, func(train []Pair) predictor {
				return fitFactors(train, r, l)
			}))
			if score := s.Median + s.P90; score < bestScore {
				best, bestScore = [2]float64{float64(r), l}, score
			}
		}
	}
	rank, lambda := int(best[0]), best[1]
	ff := fitFactors(measured, rank, lambda)
	d := ff.deviceModel(device, mech, source, measured)
	d.Lambda = lambda
	if err := d.prepare(); err != nil {
		return nil, err
	}
	rep := &FitReport{Pairs: len(measured), Jobs: len(d.Jobs), Folds: o.Folds}
	rep.Model.InSample = Summarize(errorsOf(measured, ff))
	rep.Model.CV = Summarize(crossValidate(measured, folds, o.Folds, func(train []Pair) predictor { return fitFactors(train, rank, lambda) }))
	rule := fitRule(measured)
	rep.Rule.InSample = Summarize(errorsOf(measured, rule))
	rep.Rule.CV = Summarize(crossValidate(measured, folds, o.Folds, func(train []Pair) predictor { return fitRule(train) }))
	rep.Half.InSample = Summarize(errorsOf(measured, half{}))
	rep.Half.CV = rep.Half.InSample
	d.Error = rep
	return d, nil
}

// predictor predicts a pair's two normalized figures.
type predictor interface {
	predict(a, b Job) (float64, float64)
}

func errorsOf(pairs []Pair, p predictor) []float64 {
	errs := make([]float64, 0, 2*len(pairs))
	for _, q := range pairs {
		a, b := p.predict(q.A, q.B)
		errs = append(errs, math.Abs(a-q.NormA), math.Abs(b-q.NormB))
	}
	return errs
}

// Errors is the per-job absolute error of d's predictions on pairs (measured
// pairs only), as d answers them: measurements where it has them, else from
// the parameters.
func (d *DeviceModel) Errors(pairs []Pair) []float64 {
	var measured []Pair
	for _, q := range pairs {
		if q.Measured {
			measured = append(measured, q)
		}
	}
	return errorsOf(measured, d)
}

func (d *DeviceModel) predict(a, b Job) (float64, float64) { return d.PredictPair(a, b) }

func foldsOf(pairs []Pair, k int) []int {
	f := make([]int, len(pairs))
	for i, p := range pairs {
		// A salt keeps the folds independent of the halves the sets were split by.
		f[i] = int(crc32.ChecksumIEEE([]byte("fold:"+PairKey(p.A, p.B))) % uint32(k))
	}
	return f
}

func crossValidate(pairs []Pair, folds []int, k int, fit func([]Pair) predictor) []float64 {
	var errs []float64
	for f := range k {
		var train, test []Pair
		for i, p := range pairs {
			if folds[i] == f {
				test = append(test, p)
			} else {
				train = append(train, p)
			}
		}
		if len(test) == 0 || len(train) == 0 {
			continue
		}
		errs = append(errs, errorsOf(test, fit(train))...)
	}
	return errs
}

// half is "0.5 each".
type half struct{}

func (half) predict(Job, Job) (float64, float64) { return 0.5, 0.5 }

// jobsOf lists the jobs of pairs, sorted, with each one's index.
func jobsOf(pairs []Pair) ([]Job, map[Job]int) {
	idx := map[Job]int{}
	var jobs []Job
	for _, p := range pairs {
		for _, j := range []Job{p.A, p.B} {
			if _, ok := idx[j]; !ok {
				idx[j] = 0
				jobs = append(jobs, j)
			}
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Batch, b.Batch))
	})
	for i, j := range jobs {
		idx[j] = i
	}
	return jobs, idx
}

func observations(pairs []Pair, idx map[Job]int) []obs {
	out := make([]obs, 0, 2*len(pairs))
	for _, p := range pairs {
		a, b := idx[p.A], idx[p.B]
		out = append(out, obs{a, b, p.NormA}, obs{b, a, p.NormB})
	}
	return out
}

// factors is a fitted rank-R model: x_ab = s_a . p_b.
type factors struct {
	jobs    []Job
	idx     map[Job]int
	rank    int
	s, p    [][]float64
	unknown [2][]float64 // s and p of a job not seen
}

func (f *factors) params(j Job) ([]float64, []float64) {
	if i, ok := f.idx[j]; ok {
		return f.s[i], f.p[i]
	}
	return f.unknown[0], f.unknown[1]
}

func (f *factors) predict(a, b Job) (float64, float64) {
	sa, pa := f.params(a)
	sb, pb := f.params(b)
	return 1 / (1 + dot(sa, pb)), 1 / (1 + dot(sb, pa))
}

// fitFactors fits x_ab = s_a . p_b (s, p >= 0, rank components) to the pairs'
// normalized figures n = 1/(1+x) by least squares on n, with a ridge of
// weight lambda (per observation) on the parameters' logarithms around the
// pairs' typical term, which ties down the scale s and p share and pulls a
// job seen in few pairs towards the typical job. L-BFGS from a start that
// gives every job the typical term.
func fitFactors(pairs []Pair, rank int, lambda float64) *factors {
	jobs, idx := jobsOf(pairs)
	ob := observations(pairs, idx)
	n := len(jobs)
	fam, nf := families(jobs)
	// The typical term: the median over observations of 1/n - 1.
	xs := make([]float64, 0, len(ob))
	for _, o := range ob {
		xs = append(xs, termOf(o.n))
	}
	slices.Sort(xs)
	typical := max(quantile(xs, 0.5), 0.01)
	mu := 0.5*math.Log(typical) - 0.5*math.Log(float64(rank))
	dim := 2*n*rank + 2*nf*rank
	si := func(a, k int) int { return a*rank + k }
	pi := func(a, k int) int { return n*rank + a*rank + k }
	// A family's centre, which its jobs' parameters are pulled towards.
	fs := func(f, k int) int { return 2*n*rank + f*rank + k }
	fp := func(f, k int) int { return 2*n*rank + nf*rank + f*rank + k }
	x0 := make([]float64, dim)
	for i := 2 * n * rank; i < dim; i++ {
		x0[i] = mu
	}
	for a := range n {
		for k := range rank {
			// Components past the first start apart from one another, by a fixed
			// pattern, so that they can take different roles.
			off := 0.0
			if k > 0 {
				off = 0.3 * math.Sin(float64(7*a+3*k))
			}
			x0[si(a, k)] = mu + off
			x0[pi(a, k)] = mu - off
		}
	}
	w := lambda * float64(len(ob)) / float64(dim)
	fn := func(th []float64) float64 {
		var loss float64
		for _, o := range ob {
			var x float64
			for k := range rank {
				x += math.Exp(th[si(o.a, k)] + th[pi(o.b, k)])
			}
			r := 1/(1+x) - o.n
			loss += r * r
		}
		for a := range n {
			for k := range rank {
				ds, dp := th[si(a, k)]-th[fs(fam[a], k)], th[pi(a, k)]-th[fp(fam[a], k)]
				loss += w * (ds*ds + dp*dp)
			}
		}
		for i := 2 * n * rank; i < dim; i++ {
			loss += w * (th[i] - mu) * (th[i] - mu)
		}
		return loss
	}
	grad := func(g, th []float64) {
		for i := range g {
			g[i] = 0
		}
		for a := range n {
			for k := range rank {
				ds, dp := th[si(a, k)]-th[fs(fam[a], k)], th[pi(a, k)]-th[fp(fam[a], k)]
				g[si(a, k)] += 2 * w * ds
				g[fs(fam[a], k)] -= 2 * w * ds
				g[pi(a, k)] += 2 * w * dp
				g[fp(fam[a], k)] -= 2 * w * dp
			}
		}
		for i := 2 * n * rank; i < dim; i++ {
			g[i] += 2 * w * (th[i] - mu)
		}
		for _, o := range ob {
			var x float64
			for k := range rank {
				x += math.Exp(th[si(o.a, k)] + th[pi(o.b, k)])
			}
			pred := 1 / (1 + x)
			r := pred - o.n
			c := 2 * r * -pred * pred
			for k := range rank {
				e := math.Exp(th[si(o.a, k)] + th[pi(o.b, k)])
				g[si(o.a, k)] += c * e
				g[pi(o.b, k)] += c * e
			}
		}
	}
	th := x0
	res, err := optimize.Minimize(optimize.Problem{Func: fn, Grad: grad}, x0,
		&optimize.Settings{GradientThreshold: 1e-9, MajorIterations: 2000}, &optimize.LBFGS{})
	if err == nil || res != nil && res.X != nil {
		th = res.X
	}
	f := &factors{jobs: jobs, idx: idx, rank: rank, s: make([][]float64, n), p: make([][]float64, n)}
	for a := range n {
		f.s[a], f.p[a] = make([]float64, rank), make([]float64, rank)
		for k := range rank {
			f.s[a][k] = math.Exp(th[si(a, k)])
			f.p[a][k] = math.Exp(th[pi(a, k)])
		}
	}
	f.unknown = [2][]float64{medianComponents(f.s), medianComponents(f.p)}
	return f
}

func medianComponents(v [][]float64) []float64 {
	if len(v) == 0 {
		return nil
	}
	out := make([]float64, len(v[0]))
	col := make([]float64, len(v))
	for k := range out {
		for i := range v {
			col[i] = v[i][k]
		}
		slices.Sort(col)
		out[k] = quantile(col, 0.5)
	}
	return out
}

func (f *factors) deviceModel(device string, mech Mechanism, source string, measured []Pair) *DeviceModel {
	d := &DeviceModel{Device: device, Mechanism: mech, Source: source, Rank: f.rank}
	count := map[Job]int{}
	for _, p := range measured {
		count[p.A]++
		if p.B != p.A {
			count[p.B]++
		}
	}
	for i, j := range f.jobs {
		d.Jobs = append(d.Jobs, JobParams{Job: j, S: round(f.s[i]), P: round(f.p[i]), Pairs: count[j]})
	}
	d.Unknown = JobParams{Job: Job{Name: "unknown"}, S: round(f.unknown[0]), P: round(f.unknown[1])}
	seen := map[string]bool{}
	for _, p := range measured {
		k := PairKey(p.A, p.B)
		if seen[k] {
			continue // the first measurement of a pair stands
		}
		seen[k] = true
		d.Measured = append(d.Measured, MeasuredPair{A: p.A, B: p.B, NormA: p.NormA, NormB: p.NormB})
	}
	return d
}

// round keeps 6 significant digits: the model file stays readable and its
// figures do not depend on the last bits of the optimizer's arithmetic.
func round(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if x == 0 {
			continue
		}
		e := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(x))))
		out[i] = math.Round(x*e) / e
	}
	return out
}

// rule is today's rule with one demand per job fitted: beside each other,
// jobs of demands d_a and d_b each run at 1/max(1, d_a + d_b).
type rule struct {
	idx    map[Job]int
	demand []float64
	median float64
}

func (r *rule) d(j Job) float64 {
	if i, ok := r.idx[j]; ok {
		return r.demand[i]
	}
	return r.median
}

func (r *rule) predict(a, b Job) (float64, float64) {
	n := 1 / max(1, r.d(a)+r.d(b))
	return n, n
}

// fitRule fits today's rule's demands by coordinate descent on a grid of
// 0.01 (the rule is flat below a sum of 1, so gradients do not help).
func fitRule(pairs []Pair) *rule {
	jobs, idx := jobsOf(pairs)
	r := &rule{idx: idx, demand: make([]float64, len(jobs))}
	for i := range r.demand {
		r.demand[i] = 0.5
	}
	ob := observations(pairs, idx)
	byJob := make([][]obs, len(jobs))
	for _, o := range ob {
		byJob[o.a] = append(byJob[o.a], o)
		if o.b != o.a {
			byJob[o.b] = append(byJob[o.b], o)
		}
	}
	for range 20 {
		for a := range jobs {
			bestD, bestL := r.demand[a], math.Inf(1)
			for g := 0; g <= 300; g++ {
				r.demand[a] = float64(g) / 100
				var l float64
				for _, o := range byJob[a] {
					e := 1/max(1, r.demand[o.a]+r.demand[o.b]) - o.n
					l += e * e
				}
				if l < bestL {
					bestD, bestL = r.demand[a], l
				}
			}
			r.demand[a] = bestD
		}
	}
	ds := slices.Clone(r.demand)
	slices.Sort(ds)
	r.median = quantile(ds, 0.5)
	return r
}

// Family is a job's architecture: its name less a mixed-precision mark
// ("+amp"), whatever its batch. The fit pulls a job's parameters towards its
// family's, so a job measured in few pairs borrows from its other batch sizes.
func Family(j Job) string { return strings.TrimSuffix(j.Name, "+amp") }

func families(jobs []Job) ([]int, int) {
	ids := map[string]int{}
	out := make([]int, len(jobs))
	for i, j := range jobs {
		f := Family(j)
		id, ok := ids[f]
		if !ok {
			id = len(ids)
			ids[f] = id
		}
		out[i] = id
	}
	return out, len(ids)
}
