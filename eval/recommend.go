package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/salusgo/salus/metrics"
)

// Estimate is a metric's value: one run's, or a mean across seeds with its 95%
// confidence interval: [Low, High] when given (a sweep's, MeanInterval), else
// Mean ± CI95 (0 for one run).
type Estimate struct {
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95,omitempty"`
	Low  float64 `json:"low,omitempty"`
	High float64 `json:"high,omitempty"`
}

// bounds is the estimate's interval, and whether it has one.
func (e Estimate) bounds() (lo, hi float64, ok bool) {
	if e.High > e.Low {
		return e.Low, e.High, true
	}
	return e.Mean - e.CI95, e.Mean + e.CI95, e.CI95 > 0
}

// Candidate is one scheme's figures for Recommend, by metric key (makespan_s,
// avg_jct_s, p95_jct_s, jain_slowdown, max_slowdown); a metric it lacks, or
// whose value is 0, is not known for it.
type Candidate struct {
	Scheme  string
	Metrics map[string]Estimate
	// PerSeed holds, from a sweep, each metric's value at each seed. Seeds are the
	// same traces for every scheme, so two schemes are compared seed by seed (a
	// paired comparison), which takes out the spread the traces share.
	PerSeed map[string]map[int64]float64
}

// Criterion is a metric Recommend compares the schemes on.
type Criterion struct {
	Key, Name string
	// Higher: a larger value is better (Jain's index); otherwise a smaller one.
	Higher bool
	// Scale and Unit show the value: minutes for times, a plain number else.
	Scale float64
	Unit  string
	Prec  int
}

// singleRunTie is the relative difference under which a single run's figures
// tie: 0.5%, below what a live run repeats to (the live engine's makespans
// agree with the simulator's to a few tenths of a percent) and below any lead a
// scheme is chosen for.
const singleRunTie = 0.005

// Criteria are what Recommend compares, in its paragraph's order.
var Criteria = []Criterion{
	{Key: "makespan_s", Name: "makespan", Scale: 1.0 / 60, Unit: " min", Prec: 1},
	{Key: "avg_jct_s", Name: "average JCT", Scale: 1.0 / 60, Unit: " min", Prec: 1},
	{Key: "p95_jct_s", Name: "p95 JCT", Scale: 1.0 / 60, Unit: " min", Prec: 1},
	{Key: "jain_slowdown", Name: "fairness (Jain's index of the jobs' slowdowns, 1 = all slowed alike)", Higher: true, Scale: 1, Prec: 3},
}

// Recommend says, in one paragraph, which scheme is best on each criterion and by
// how much against the runner-up. From a sweep it gives the 95% confidence
// intervals across seeds and judges the lead seed by seed when it has the
// per-seed values (PerSeed: the mean difference and its BCa interval, as the
// cells' intervals are computed, clear of zero or not), else by whether the
// two intervals overlap (then the lead is within the
// noise across seeds). A lead within the noise is no win: that criterion has no
// clear winner. A single run's lead (no interval, no per-seed values) says nothing
// of the noise and counts, unless it is under 0.5% (singleRunTie): a tie. It ends with the scheme that clearly leads on most
// criteria, or says there is no clear winner when every lead is within the noise.
// It needs two candidates at least.
func Recommend(cands []Candidate) string { return RecommendIn(cands, metrics.Minutes) }

// RecommendIn is Recommend with times shown in unit u.
func RecommendIn(cands []Candidate, u TimeUnit) string { return recommend(cands, u, Noise{}, "seed") }

// RecommendNoisy is RecommendIn for live runs: PerSeed holds each repeat's
// value (repeat i of every scheme ran at about the same time, so they pair as
// a sweep's seeds do), and a lead smaller than the noise the runs measured
// (NoiseOfLogs) is within the noise, however clear of zero.
func RecommendNoisy(cands []Candidate, u TimeUnit, n Noise) string {
	return recommend(cands, u, n, "repeat")
}

func recommend(cands []Candidate, u TimeUnit, machine Noise, per string) string {
	if len(cands) < 2 {
		return ""
	}
	var b strings.Builder
	wins := map[string][]string{}
	compared := 0      // criteria with a clear winner
	var noise []string // criteria whose lead is within the noise
	for _, c := range Criteria {
		if c.Unit == " min" { // a time: in the report's unit
			c.Scale, c.Unit = u.Scale, " "+u.Name
		}
		s, best, noisy, ok := criterion(c, cands, machine, per)
		if !ok {
			if c.Key == "jain_slowdown" {
				b.WriteString("Fairness is not compared: the event logs do not give the jobs' time alone. ")
			}
			continue
		}
		b.WriteString(s)
		b.WriteString(" ")
		switch {
		case noisy:
			noise = append(noise, shortName(c))
		case best != "": // not a tie
			wins[best] = append(wins[best], shortName(c))
			compared++
		}
	}
	if compared == 0 {
		if b.Len() == 0 {
			return ""
		}
		if len(noise) > 0 {
			if per == "repeat" {
				b.WriteString("Recommendation: no clear winner: every lead is within the noise of the runs; " +
					"run more repeats (--repeat), on a quieter machine, or choose by the metric that matters most.")
				return b.String()
			}
			b.WriteString("Recommendation: no clear winner: every lead is within the noise across seeds; " +
				"run more seeds (salus sweep --seeds) or choose by the metric that matters most.")
			return b.String()
		}
		b.WriteString("No scheme is ahead on any metric.")
		return b.String()
	}
	// notCounted says which leads within the noise the count leaves out.
	notCounted := ""
	switch len(noise) {
	case 0:
	case 1:
		notCounted = fmt.Sprintf("; the lead on %s is within the noise and not counted", noise[0])
	default:
		notCounted = fmt.Sprintf("; the leads on %s are within the noise and not counted", strings.Join(noise, ", "))
	}
	n := 0
	for _, w := range wins {
		n = max(n, len(w))
	}
	var top []string
	for _, c := range cands { // in the candidates' order
		if len(wins[c.Scheme]) == n && !slices.Contains(top, c.Scheme) {
			top = append(top, c.Scheme)
		}
	}
	switch {
	case len(top) > 1:
		var each []string
		for _, t := range top {
			each = append(each, fmt.Sprintf("%s (%s)", t, strings.Join(wins[t], ", ")))
		}
		metrics := "metrics"
		if n == 1 {
			metrics = "metric"
		}
		clearly := ""
		if len(noise) > 0 {
			clearly = "clearly "
		}
		fmt.Fprintf(&b, "Recommendation: no single scheme: %s %slead on %d %s each%s; choose by the metric that matters most.",
			strings.Join(each, " and "), clearly, n, metrics, notCounted)
	case n == compared && len(noise) == 0:
		fmt.Fprintf(&b, "Recommendation: %s, best on every metric where one scheme leads.", top[0])
	case n == compared:
		fmt.Fprintf(&b, "Recommendation: %s, best on every metric with a clear winner (%s)%s.",
			top[0], strings.Join(wins[top[0]], ", "), notCounted)
	case len(noise) == 0:
		fmt.Fprintf(&b, "Recommendation: %s, best on %d of %d metrics (%s); weigh the others above if they matter more.",
			top[0], n, compared, strings.Join(wins[top[0]], ", "))
	default:
		fmt.Fprintf(&b, "Recommendation: %s, best on %d of the %d metrics with a clear winner (%s)%s; weigh the others above if they matter more.",
			top[0], n, compared, strings.Join(wins[top[0]], ", "), notCounted)
	}
	return b.String()
}

func shortName(c Criterion) string {
	if c.Key == "jain_slowdown" {
		return "fairness"
	}
	return c.Name
}

// criterion is the sentence for one criterion and the scheme best on it: "" for
// a tie, and "" with noisy true when the lead is within the noise (the paired
// difference's interval reaches zero, or the two intervals overlap), so there is
// no clear winner. A lead without intervals or per-seed values counts.
func criterion(c Criterion, cands []Candidate, noise Noise, per string) (string, string, bool, bool) {
	type entry struct {
		scheme string
		e      Estimate
	}
	var es []entry
	for _, cand := range cands {
		if e, ok := cand.Metrics[c.Key]; ok && e.Mean > 0 && !math.IsNaN(e.Mean) {
			es = append(es, entry{cand.Scheme, e})
		}
	}
	if len(es) < 2 {
		return "", "", false, false
	}
	better := func(a, b Estimate) bool {
		if c.Higher {
			return a.Mean > b.Mean
		}
		return a.Mean < b.Mean
	}
	best, second := 0, -1
	for i := 1; i < len(es); i++ {
		switch {
		case better(es[i].e, es[best].e):
			best, second = i, best
		case second < 0 || better(es[i].e, es[second].e):
			second = i
		}
	}
	b, s := es[best], es[second]
	show := func(e Estimate) string {
		switch lo, hi, ok := e.bounds(); {
		case ok && e.High > e.Low:
			return fmt.Sprintf("%.*f%s [%.*f, %.*f]", c.Prec, e.Mean*c.Scale, c.Unit, c.Prec, lo*c.Scale, c.Prec, hi*c.Scale)
		case ok:
			return fmt.Sprintf("%.*f ± %.*f%s", c.Prec, e.Mean*c.Scale, c.Prec, e.CI95*c.Scale, c.Unit)
		}
		return fmt.Sprintf("%.*f%s", c.Prec, e.Mean*c.Scale, c.Unit)
	}
	_, _, bi := b.e.bounds()
	_, _, si := s.e.bounds()
	// A single run's figures (no interval, no seeds) that differ by less than
	// singleRunTie are a tie: a lead that small is no reason to choose.
	tie := 1e-9
	if !bi && !si && len(cands[index(cands, b.scheme)].PerSeed[c.Key]) == 0 {
		tie = singleRunTie
	}
	if math.Abs(b.e.Mean-s.e.Mean) <= tie*math.Abs(s.e.Mean) {
		var tied []string
		for _, e := range es {
			if math.Abs(e.e.Mean-b.e.Mean) <= tie*math.Abs(b.e.Mean) {
				tied = append(tied, e.scheme)
			}
		}
		names := strings.Join(tied[:len(tied)-1], ", ") + " and " + tied[len(tied)-1]
		switch {
		case len(tied) == len(es) && len(es) == 2:
			names = "both schemes"
		case len(tied) == len(es):
			names = "all " + fmt.Sprint(len(tied)) + " schemes"
		}
		if math.Abs(b.e.Mean-s.e.Mean) <= 1e-9*math.Abs(s.e.Mean) {
			return fmt.Sprintf("On %s, %s tie at %s.", c.Name, names, show(b.e)), "", false, true
		}
		return fmt.Sprintf("On %s, %s tie within %g%% (best %s).", c.Name, names, 100*singleRunTie, show(b.e)), "", false, true
	}
	// Enough decimals to tell the two apart (up to three more than usual).
	prec := c.Prec
	for prec < c.Prec+3 && fmt.Sprintf("%.*f", prec, b.e.Mean*c.Scale) == fmt.Sprintf("%.*f", prec, s.e.Mean*c.Scale) {
		prec++
	}
	c.Prec = prec
	var by string
	if c.Higher {
		by = fmt.Sprintf("%.*f higher than", c.Prec, (b.e.Mean-s.e.Mean)*c.Scale)
	} else {
		by = fmt.Sprintf("%.1f%% lower than", 100*(s.e.Mean-b.e.Mean)/s.e.Mean)
	}
	noisy := false
	text := fmt.Sprintf("On %s, %s is best with %s, %s %s's %s (the runner-up)", c.Name, b.scheme, show(b.e), by, s.scheme, show(s.e))
	if c.Key == "jain_slowdown" {
		if wb, ws := cands[index(cands, b.scheme)].Metrics["max_slowdown"], cands[index(cands, s.scheme)].Metrics["max_slowdown"]; wb.Mean > 0 && ws.Mean > 0 {
			text += fmt.Sprintf("; its worst slowdown is %.2fx against %.2fx", wb.Mean, ws.Mean)
		}
	}
	if d, lo, hi, n, ok := paired(cands[index(cands, b.scheme)].PerSeed[c.Key], cands[index(cands, s.scheme)].PerSeed[c.Key]); ok {
		if !c.Higher { // the lead: how much lower the best is
			d, lo, hi = -d, -hi, -lo
		}
		var verdict string
		switch {
		case lo > 0:
			verdict = "clear of zero"
		case hi < 0: // the seeds both ran say the runner-up is ahead
			verdict = "so on the seeds both ran the runner-up is ahead"
			noisy = true
		default:
			verdict = "so the lead is within the noise"
			noisy = true
		}
		text += fmt.Sprintf("; %s by %[1]s (%d paired runs) %s leads by %.*f%s [%.*f, %.*f], %s", per, n, b.scheme,
			c.Prec, d*c.Scale, c.Unit, c.Prec, lo*c.Scale, c.Prec, hi*c.Scale, verdict)
	} else if bi || si {
		blo, bhi, _ := b.e.bounds()
		slo, shi, _ := s.e.bounds()
		if blo <= shi && slo <= bhi {
			text += "; the 95% intervals overlap, so the lead is within the noise across seeds"
			noisy = true
		} else {
			text += "; the 95% intervals do not overlap"
		}
	}
	if l := lead(c, b.e.Mean, s.e.Mean); !noisy && noise.Spread > l {
		text += fmt.Sprintf("; but %s, more than this %.1f%% lead, so it is within the machine's noise", noise.Says(), 100*l)
		noisy = true
	}
	if noisy {
		return text + ": no clear winner on " + shortName(c) + ".", "", true, true
	}
	return text + ".", b.scheme, false, true
}

// paired is the mean of a - b over the seeds both have, and its 95% interval
// by the same method as the cells' (MeanInterval, a BCa bootstrap of the
// per-seed differences): the lead is clear of zero when the interval is. Seeds
// are the same traces for both schemes, so the difference takes out the spread
// the traces share. False with fewer than two such seeds.
func paired(a, b map[int64]float64) (mean, lo, hi float64, n int, ok bool) {
	var ds []float64
	for seed, x := range a {
		if y, ok := b[seed]; ok {
			ds = append(ds, x-y)
		}
	}
	if n = len(ds); n < 2 {
		return 0, 0, 0, n, false
	}
	mean, lo, hi = MeanInterval(ds)
	return mean, lo, hi, n, true
}

func index(cands []Candidate, scheme string) int {
	for i, c := range cands {
		if c.Scheme == scheme {
			return i
		}
	}
	return -1
}

// Recommend is the report's recommendation over its runs that did not fail.
func (r *Report) Recommend() string { return RecommendIn(r.candidates(), r.Unit()) }

// candidates are the runs that did not fail, as Recommend compares them.
func (r *Report) candidates() []Candidate {
	var cands []Candidate
	for _, run := range r.Runs {
		if run.Error != "" {
			continue
		}
		cands = append(cands, Candidate{Scheme: run.Scheme, Metrics: map[string]Estimate{
			"makespan_s": {Mean: run.MakespanS}, "avg_jct_s": {Mean: run.AvgJCTS}, "p95_jct_s": {Mean: run.P95JCTS},
			"jain_slowdown": {Mean: run.JainSlowdown}, "max_slowdown": {Mean: run.MaxSlowdown}}})
	}
	return cands
}
