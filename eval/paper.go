package eval

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/workload"
)

// PaperSeeds is how many seeds of the paper trace the paper suite runs each
// training cell over (seeds 1 to PaperSeeds).
const PaperSeeds = 10

// The paper suite: every published figure of the paper's evaluation beside this
// project's (PaperFigures), each experiment run as the paper describes it.
type paperSuite struct{}

func init() { Register(paperSuite{}) }

func (paperSuite) Name() string { return "paper" }
func (paperSuite) Description() string {
	return "every figure of the paper's evaluation beside ours: Table 1 over 10 seeds of the paper trace, Figs. 7, 9-13"
}
func (paperSuite) AllOrder() int { return 4 }

// Reads: --policy and --mode add the user's schemes to Table 1 and Fig. 7.
func (paperSuite) Reads() []string { return []string{"policy", "mode"} }

// Schemes are Table 1's and the user's (--policy, --mode).
func (paperSuite) Schemes(o Options) []Scheme {
	out := []Scheme{}
	for _, p := range paperPolicies {
		out = append(out, p.Scheme)
	}
	return append(out, o.Schemes...)
}

func (paperSuite) Run(o Options) (Result, error) {
	return ReproducePaper(PaperOptions{Device: o.Device, Modes: o.Modes, Seeds: o.PaperSeeds, Schemes: o.Schemes})
}

// PaperOptions configures the paper suite. The zero value is the paper's set-up
// on the P100 preset.
type PaperOptions struct {
	Device device.Device // zero: the P100 preset
	Modes  core.ModeParams
	Seeds  int // seeds of the paper trace per training cell; 0: PaperSeeds
	// Schemes are the user's, run beside Table 1's policies on the same seeds
	// (Table 1's own among them are not run twice).
	Schemes []Scheme
}

func (o *PaperOptions) validate() error {
	if o.Device.CapacityMiB == 0 {
		dev, err := device.Preset("p100")
		if err != nil {
			return err
		}
		o.Device = dev
	}
	o.Modes = o.Modes.WithDefaults()
	if o.Seeds == 0 {
		o.Seeds = PaperSeeds
	}
	if o.Seeds < 1 {
		return fmt.Errorf("the paper suite needs at least one seed (got %d)", o.Seeds)
	}
	return nil
}

// PaperRow is one published figure beside this project's.
type PaperRow struct {
	Figure string `json:"figure"`
	Row    string `json:"row"`
	Column string `json:"column"`
	Unit   string `json:"unit"`
	Paper  string `json:"paper"`
	// Ours is this project's value (the median over seeds, for the training
	// cells), written as the paper writes its value; empty where it is not
	// measured by this suite (Why says where it is).
	Ours string `json:"ours"`
	// Range is the smallest and largest value over the seeds; Inside says whether
	// the paper's value lies within it.
	Range  string `json:"range,omitempty"`
	Inside string `json:"inside,omitempty"`
	// Ratio is ours over the paper's (the sums, for a figure of several values).
	Ratio float64 `json:"ratio,omitempty"`
	// Why explains a difference of more than 10%, or says what the row is.
	Why string `json:"why,omitempty"`
}

// PaperSection is one experiment of the paper: its set-up here and its rows.
type PaperSection struct {
	Experiment string     `json:"experiment"`
	Title      string     `json:"title"`
	Setup      string     `json:"setup"`
	Rows       []PaperRow `json:"rows"`
}

// PolicyJCTs are the JCTs of one policy's runs on the paper trace, seed by seed,
// in seconds (the paper's Fig. 7 draws their distribution).
type PolicyJCTs struct {
	Policy string      `json:"policy"`
	Seeds  [][]float64 `json:"jct_s_by_seed"`
}

// PaperReport is the paper suite's outcome.
type PaperReport struct {
	Suite    string         `json:"suite"`
	Engine   string         `json:"engine"`
	Device   device.Device  `json:"device"`
	Seeds    int            `json:"seeds"`
	Sections []PaperSection `json:"sections"`
	JCTs     []PolicyJCTs   `json:"jcts"`
}

// SuiteName is "paper".
func (r *PaperReport) SuiteName() string { return r.Suite }

// Headlines are the paper's ratios as the suite measures them: Table 1's, over
// the seeds with TensorFlow's start-up (the median, its range in the claim), and
// Fig. 11's improvements.
func (r *PaperReport) Headlines() []Headline {
	var out []Headline
	for _, row := range r.Rows() {
		switch {
		case row.Figure == "Table 1 (ratio)" && row.Column == "start-up on GPU" && strings.HasSuffix(row.Row, "avg JCT"):
			out = append(out, Headline{Claim: fmt.Sprintf("paper: %s, median of %d seeds (range %s)", row.Row, r.Seeds, row.Range),
				Paper: parse(row.Paper), Measured: parse(row.Ours), Explanation: row.Why})
		case row.Figure == "Fig. 11 (ratio)":
			out = append(out, Headline{Claim: "paper: tuning, PACK over one by one, " + row.Row + ", start-up on the GPU",
				Paper: parse(row.Paper), Measured: parse(row.Ours), Explanation: row.Why})
		}
	}
	return out
}

// parse reads a number this file wrote.
func parse(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// Rows are every row of every section.
func (r *PaperReport) Rows() []PaperRow {
	var out []PaperRow
	for _, s := range r.Sections {
		out = append(out, s.Rows...)
	}
	return out
}

// Table prints one table per experiment, in at most 120 columns: each row's
// reason is a note under its table.
func (r *PaperReport) Table(w io.Writer) error {
	fmt.Fprintf(w, "Suite paper on sim: every figure of the paper's evaluation beside this project's; device %s\n", r.Device.Name)
	if l := r.Device.CoLocationLine(); l != "" {
		fmt.Fprintln(w, l)
		fmt.Fprintln(w, "Where a note below speaks of demands or shares, it explains today's rule's figure (--interference rule).")
	}
	for _, s := range r.Sections {
		fmt.Fprintf(w, "\n%s\n%s\n\n", s.Title, Wrap(s.Setup, 100))
		seeded := slices.ContainsFunc(s.Rows, func(r PaperRow) bool { return r.Range != "" })
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		if seeded {
			fmt.Fprintln(tw, "figure\trow\tcolumn\tpaper\tours\tseed range\tinside\tours/paper\twhy")
		} else {
			fmt.Fprintln(tw, "figure\trow\tcolumn\tpaper\tours\tours/paper\twhy")
		}
		var notes []string
		for _, row := range s.Rows {
			ratio := ""
			if row.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f", row.Ratio)
			}
			ours := row.Ours
			if ours == "" {
				ours = "-"
			}
			why := row.Why
			switch {
			case why == "agrees with the paper":
				why = "agrees"
			case strings.HasPrefix(why, calibratedPrefix):
				why = "calibrated" + note(&notes, strings.TrimPrefix(why, calibratedPrefix))
			case why != "":
				why = note(&notes, why)
			}
			paper := row.Paper + " " + row.Unit
			if row.Paper == "-" {
				paper = "-"
			}
			if seeded {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Figure, row.Row, row.Column, paper,
					ours, row.Range, row.Inside, ratio, why)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Figure, row.Row, row.Column, paper, ours, ratio, why)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printNotes(w, notes)
	}
	return nil
}

// note returns the marker of reason why among a table's notes, "[n]", adding it
// if it is new: a reason shared by several rows is printed once, under the table.
func note(notes *[]string, why string) string {
	n := slices.Index(*notes, why)
	if n < 0 {
		*notes = append(*notes, why)
		n = len(*notes) - 1
	}
	return fmt.Sprintf("[%d]", n+1)
}

// printNotes prints a table's notes, each wrapped at 100 characters.
func printNotes(w io.Writer, notes []string) {
	for i, n := range notes {
		fmt.Fprintln(w, Wrap(fmt.Sprintf("[%d] %s", i+1, n), 100))
	}
}

// JSON prints the report.
func (r *PaperReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints every row, one line each.
func (r *PaperReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"experiment", "figure", "row", "column", "unit", "paper", "ours", "range", "inside", "ratio", "why"})
	for _, s := range r.Sections {
		for _, row := range s.Rows {
			cw.Write([]string{s.Experiment, row.Figure, row.Row, row.Column, row.Unit, row.Paper, row.Ours, row.Range, row.Inside,
				strconv.FormatFloat(row.Ratio, 'f', 3, 64), row.Why})
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReproducePaper runs every experiment of the paper as the paper describes it and puts
// each published figure beside this project's.
func ReproducePaper(o PaperOptions) (*PaperReport, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	rep := &PaperReport{Suite: "paper", Engine: "sim", Device: o.Device, Seeds: o.Seeds}
	steps := []func(PaperOptions, *PaperReport) error{paperTraining, paperFairness, paperInference, paperTuning, paperOverhead, paperSharing}
	for _, step := range steps {
		if err := step(o, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// tensorflow is the device as the paper's TensorFlow 1.5 jobs use it: a job's
// start-up is GPU work of its first iteration (Device.StartupIsGPUWork).
func tensorflow(d device.Device) device.Device {
	d.StartupIsGPUWork = true
	return d
}

// figure finds a published figure by figure, row and column; it panics on a key
// PaperFigures lacks, which is a mistake of this file.
func figure(fig, row, col string) PaperFigure {
	for _, f := range PaperFigures {
		if f.Figure == fig && f.Row == row && f.Column == col {
			return f
		}
	}
	panic("eval: no paper figure " + fig + "/" + row + "/" + col)
}

// value is a figure's single number.
func (f PaperFigure) number() float64 {
	v, err := strconv.ParseFloat(f.Value, 64)
	if err != nil {
		panic("eval: paper figure " + f.Key() + " is not one number: " + f.Value)
	}
	return v
}

// numbers are a figure's values, split at "/" or "+".
func (f PaperFigure) numbers() []float64 {
	var out []float64
	for _, part := range strings.FieldsFunc(f.Value, func(r rune) bool { return r == '/' || r == '+' }) {
		v, err := strconv.ParseFloat(part, 64)
		if err != nil {
			panic("eval: paper figure " + f.Key() + " has a non-number: " + f.Value)
		}
		out = append(out, v)
	}
	return out
}

// spread is a value over seeds: its median, smallest and largest.
type spread struct{ median, lo, hi float64 }

// text is the spread as a row prints it: the median, and the range "lo to
// hi" (rangeOf reads it back), with prec decimals.
func (s spread) text(prec int) (median, rng string) {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return f(s.median), f(s.lo) + " to " + f(s.hi)
}

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{m, s[0], s[n-1]}
}

// seedRow is a row of values over seeds against the paper's value.
func seedRow(f PaperFigure, xs []float64, prec int, why string) PaperRow {
	s := spreadOf(xs)
	paper := f.number()
	row := PaperRow{Figure: f.Figure, Row: f.Row, Column: f.Column, Unit: f.Unit, Paper: f.Value, Ratio: s.median / paper, Inside: "no"}
	row.Ours, row.Range = s.text(prec)
	if s.lo <= paper && paper <= s.hi {
		row.Inside = "yes"
	}
	row.Why = explain(paper, s.median, why)
	return calibrate(row)
}

// oneRow is a row of one measured value against the paper's.
func oneRow(f PaperFigure, ours string, ratio float64, why string) PaperRow {
	row := PaperRow{Figure: f.Figure, Row: f.Row, Column: f.Column, Unit: f.Unit, Paper: f.Value, Ours: ours, Ratio: ratio}
	row.Why = why
	if ratio > 0 && math.Abs(ratio-1) <= 0.1 {
		row.Why = "agrees with the paper"
	}
	return calibrate(row)
}

// calibratedPrefix begins the Why of a row that is an identity by
// construction: the experiment was set up from the paper's own figure, so
// its agreeing tests nothing.
const calibratedPrefix = "calibrated: "

// calibratedRows are the figures the experiments are built from (figure /
// row / column), and how.
var calibratedRows = map[string]string{
	"Table 1/FIFO/makespan":                      "the paper trace's arrival window is FIFO's makespan less its longest JCT (303.4 - 254 min), and its mean job length is FIFO's average JCT less its queuing: FIFO's makespan follows",
	"Fig. 7/FIFO/longest_jct":                    "read from the paper's drawing to set the paper trace's arrival window (303.4 - 254 min)",
	"Fig. 10/42 jobs/gpus_tf":                    "one GPU per job without sharing, by definition",
	"Fig. 11/resnet50_50 x300/makespan_tf_fifo":  "the scale input: a job's iterations are chosen from the paper's one-by-one makespan",
	"Fig. 11/superres_128 x300/makespan_tf_fifo": "the scale input: a job's iterations are chosen from the paper's one-by-one makespan",
}

// calibrate marks row as calibrated where it is one of calibratedRows.
func calibrate(row PaperRow) PaperRow {
	if why, ok := calibratedRows[row.Figure+"/"+row.Row+"/"+row.Column]; ok {
		row.Why = calibratedPrefix + why
	}
	return row
}

// paperPolicy is a row of Table 1 and the scheme that runs it.
type paperPolicy struct {
	Row    string
	Scheme Scheme
}

// paperPolicies are Table 1's rows and the schemes that run them.
var paperPolicies = []paperPolicy{{"FIFO", Scheme{core.ModeExclusive, "fifo"}}, {"SRTF", Scheme{core.ModeSalus, "srtf"}},
	{"PACK", Scheme{core.ModeSalus, "pack"}}, {"FAIR", Scheme{core.ModeSalus, "fair"}}}

// paperRuns runs Table 1's policies on seeds 1..n of the paper trace on dev:
// runs[policy][seed]. With demand above 0, every job's compute demand is set to
// it (a sensitivity run: 1 lets no two iterations overlap without slowing).
func paperRuns(o PaperOptions, dev device.Device, demand float64) ([][]metrics.Result, error) {
	var schemes []Scheme
	for _, p := range paperPolicies {
		schemes = append(schemes, p.Scheme)
	}
	return schemeRuns(o, schemes, dev, demand)
}

// userSchemes are o's schemes that are not Table 1's.
func (o PaperOptions) userSchemes() []Scheme {
	var out []Scheme
	for _, sc := range o.Schemes {
		if !slices.ContainsFunc(paperPolicies, func(p paperPolicy) bool { return p.Scheme == sc }) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// schemeRuns runs schemes on seeds 1..n of the paper trace on dev, as
// paperRuns: runs[scheme][seed].
func schemeRuns(o PaperOptions, schemes []Scheme, dev device.Device, demand float64) ([][]metrics.Result, error) {
	type task struct{ p, seed int }
	var tasks []task
	for p := range schemes {
		for seed := range o.Seeds {
			tasks = append(tasks, task{p, seed})
		}
	}
	traces := make([]*workload.Trace, o.Seeds)
	for seed := range o.Seeds {
		t, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Paper, Seed: int64(seed + 1)})
		if err != nil {
			return nil, err
		}
		if demand > 0 {
			for i := range t.Jobs {
				// A copy: the profile is the catalog's, shared.
				t.Jobs[i] = t.Jobs[i].WithProfile(func(p *workload.Profile) { p.Demand = demand })
			}
		}
		traces[seed] = t
	}
	results, err := parallel(len(tasks), func(i int) (metrics.Result, error) {
		tk := tasks[i]
		run, err := Simulate(traces[tk.seed], schemes[tk.p], o.Modes, dev, "")
		return run.Result, err
	})
	if err != nil {
		return nil, err
	}
	out := make([][]metrics.Result, len(schemes))
	for i, tk := range tasks {
		if out[tk.p] == nil {
			out[tk.p] = make([]metrics.Result, o.Seeds)
		}
		out[tk.p][tk.seed] = results[i]
	}
	return out, nil
}

// Why Table 1's cells differ, by policy (a reason shows only where ours is more
// than 10% off; docs/evaluation.md, "The paper, figure by figure", shows each from the logs).
var table1Why = map[string]string{
	"FIFO": "the paper's one unpublished trace against 10 seeds of one that follows its description: FIFO's queuing depends on where the long jobs fall in the arrival order",
	"SRTF": "SRTF's queuing and JCT follow how many short jobs arrive behind long ones, which varies from seed to seed",
	"PACK": "the catalog's compute demands (each model's per-sample share of its batch line, 0.33 to 0.95) let lanes overlap more than the paper's did; with every demand 1 (the bound row below) PACK's ratio to FIFO holds the paper's",
	"FAIR": "FAIR here shares one lane by least attained service; the paper's FAIR queues its jobs 2x longer than SRTF, as ours does, but its JCTs are longer",
}

// paperTraining is Table 1 over seeds, its ratios with the start-up on and off
// the GPU, and Fig. 7's points of the JCT distribution.
func paperTraining(o PaperOptions, rep *PaperReport) error {
	tf, err := paperRuns(o, tensorflow(o.Device), 0)
	if err != nil {
		return err
	}
	off, err := paperRuns(o, o.Device, 0)
	if err != nil {
		return err
	}
	saturating, err := paperRuns(o, tensorflow(o.Device), 1)
	if err != nil {
		return err
	}
	min := func(s float64) float64 { return s / 60 }
	sec := PaperSection{Experiment: "training", Title: "Long-running training (Table 1): 100 jobs of the paper trace, seeds 1 to " + fmt.Sprint(o.Seeds),
		Setup: fmt.Sprintf("The paper trace (salus trace gen --kind paper: Table 2's workloads, Philly-shaped lengths averaging 3.0 min alone, arrivals over 49 min) on %s, "+
			"with each job's start-up run as GPU work in its first iteration, as TensorFlow 1.5's first session.run is (--startup-on-gpu). "+
			"Ours is the median over the seeds; the range is the smallest and largest; 'inside' says whether the published value lies in it.", o.Device.Name)}
	metricsOf := []struct {
		col string
		get func(metrics.Result) float64
	}{{"makespan", func(r metrics.Result) float64 { return r.MakespanS }}, {"avg_queuing", func(r metrics.Result) float64 { return r.AvgQueuingS }},
		{"avg_jct", func(r metrics.Result) float64 { return r.AvgJCTS }}, {"p95_jct", func(r metrics.Result) float64 { return r.P95JCTS }}}
	for p, pol := range paperPolicies {
		for _, m := range metricsOf {
			var xs []float64
			for _, r := range tf[p] {
				xs = append(xs, min(m.get(r)))
			}
			sec.Rows = append(sec.Rows, seedRow(figure("Table 1", pol.Row, m.col), xs, 1, table1Why[pol.Row]))
		}
	}
	// The user's schemes, on the same seeds: no published figure, their seeds'
	// range beside Table 1's, and FIFO's average JCT over theirs.
	users := o.userSchemes()
	mine, err := schemeRuns(o, users, tensorflow(o.Device), 0)
	if err != nil {
		return err
	}
	for u, sc := range users {
		row := userRow(sc)
		for _, m := range metricsOf {
			var xs []float64
			for _, r := range mine[u] {
				xs = append(xs, min(m.get(r)))
			}
			sec.Rows = append(sec.Rows, userSeedRow("Table 1", row, m.col, "min", xs, 1))
		}
		var xs []float64
		for seed := range o.Seeds {
			xs = append(xs, tf[0][seed].AvgJCTS/mine[u][seed].AvgJCTS)
		}
		r := userSeedRow("Table 1 (ratio)", "FIFO/"+strings.TrimSuffix(row, " (yours)")+" avg JCT", "start-up on GPU", "x", xs, 2)
		sec.Rows = append(sec.Rows, r)
	}
	// The ratios the paper's text gives, seed by seed, with the start-up on the
	// GPU (TensorFlow) and off it (a job that builds its model before it asks).
	ratio := func(runs [][]metrics.Result, num, den int, get func(metrics.Result) float64) []float64 {
		var xs []float64
		for seed := range o.Seeds {
			xs = append(xs, get(runs[num][seed])/get(runs[den][seed]))
		}
		return xs
	}
	jct := func(r metrics.Result) float64 { return r.AvgJCTS }
	span := func(r metrics.Result) float64 { return r.MakespanS }
	paperRatio := func(num, den, col string) float64 {
		return figure("Table 1", num, col).number() / figure("Table 1", den, col).number()
	}
	for _, rr := range []struct {
		name     string
		num, den int
		get      func(metrics.Result) float64
		col      string
		why      string
	}{
		{"FIFO/SRTF avg JCT", 0, 1, jct, "avg_jct", "the ratio of two seed-dependent means; the paper's lies inside our range"},
		{"FIFO/FAIR avg JCT", 0, 3, jct, "avg_jct", "the ratio of two seed-dependent means, as for SRTF; with the start-up off the GPU, short jobs' start-ups overlap the long ones' iterations"},
		{"FIFO/PACK avg JCT", 0, 2, jct, "avg_jct", table1Why["PACK"]},
		{"PACK/FIFO makespan", 2, 0, span, "makespan", "PACK's lanes overlap more here (see PACK's rows)"},
		{"SRTF/FIFO makespan", 1, 0, span, "makespan", "with the start-up off the GPU, Salus overlaps it with other jobs' iterations and SRTF ends 14% before FIFO; the paper's near-equal makespans say TensorFlow's start-up was GPU work"},
	} {
		f := PaperFigure{Experiment: "training", Figure: "Table 1 (ratio)", Row: rr.name, Column: "x", Unit: "x",
			Value: strconv.FormatFloat(paperRatio(paperPolicies[rr.num].Row, paperPolicies[rr.den].Row, rr.col), 'f', 3, 64)}
		row := seedRow(f, ratio(tf, rr.num, rr.den, rr.get), 2, rr.why)
		row.Column = "start-up on GPU"
		sec.Rows = append(sec.Rows, row)
		row = seedRow(f, ratio(off, rr.num, rr.den, rr.get), 2, rr.why)
		row.Column = "start-up off GPU"
		sec.Rows = append(sec.Rows, row)
		if rr.num == 2 || rr.den == 2 { // PACK's rows: how far the compute demands move them
			row = seedRow(f, ratio(saturating, rr.num, rr.den, rr.get), 2, "every demand 1 is a bound: no iteration leaves the GPU idle for another lane")
			row.Column = "demand 1 (bound)"
			sec.Rows = append(sec.Rows, row)
		}
	}
	rep.Sections = append(rep.Sections, sec)

	// Fig. 7: the distribution of JCTs. The paper prints no number; the reference
	// reads FIFO's longest JCT (about 254 min) and SRTF's median (about 18 min)
	// from its drawing.
	dist := PaperSection{Experiment: "training", Title: "The JCT distribution (Fig. 7): the points read from the paper's CDF, and ours",
		Setup: "Median over the seeds of each run's figure, start-up on the GPU as above. The report draws every policy's CDF on the paper's axes (0 to 300 min)."}
	quant := func(r metrics.Result, q float64) float64 {
		var js []float64
		for _, j := range r.Completion {
			js = append(js, j.JCTS)
		}
		slices.Sort(js)
		if q >= 1 {
			return js[len(js)-1]
		}
		return js[int(q*float64(len(js)))]
	}
	for p, pol := range paperPolicies {
		jcts := PolicyJCTs{Policy: pol.Row}
		var med, top []float64
		for _, r := range tf[p] {
			med = append(med, quant(r, 0.5)/60)
			top = append(top, quant(r, 1)/60)
			var js []float64
			for _, j := range r.Completion {
				js = append(js, j.JCTS)
			}
			jcts.Seeds = append(jcts.Seeds, js)
		}
		rep.JCTs = append(rep.JCTs, jcts)
		medFig := PaperFigure{Figure: "Fig. 7", Row: pol.Row, Column: "median_jct", Value: "-", Unit: "min"}
		topFig := PaperFigure{Figure: "Fig. 7", Row: pol.Row, Column: "longest_jct", Value: "-", Unit: "min"}
		switch pol.Row {
		case "SRTF":
			medFig.Value = "18"
		case "FIFO":
			topFig.Value = "254"
		}
		for _, pr := range []struct {
			f  PaperFigure
			xs []float64
		}{{medFig, med}, {topFig, top}} {
			if pr.f.Value == "-" {
				row := PaperRow{Figure: "Fig. 7", Row: pol.Row, Column: pr.f.Column, Unit: "min", Paper: "-", Why: "not read from the paper's drawing"}
				row.Ours, row.Range = spreadOf(pr.xs).text(1)
				dist.Rows = append(dist.Rows, row)
				continue
			}
			dist.Rows = append(dist.Rows, seedRow(pr.f, pr.xs, 1, table1Why[pol.Row]))
		}
	}
	for u, sc := range users {
		jcts := PolicyJCTs{Policy: userRow(sc)}
		var med []float64
		for _, r := range mine[u] {
			med = append(med, quant(r, 0.5)/60)
			var js []float64
			for _, j := range r.Completion {
				js = append(js, j.JCTS)
			}
			jcts.Seeds = append(jcts.Seeds, js)
		}
		rep.JCTs = append(rep.JCTs, jcts)
		dist.Rows = append(dist.Rows, userSeedRow("Fig. 7", jcts.Policy, "median_jct", "min", med, 1))
	}
	rep.Sections = append(rep.Sections, dist)
	return nil
}

// userRow is how a user's scheme is named in the paper's tables: its policy,
// and its mode where that is not the policy's own.
func userRow(sc Scheme) string {
	name := sc.Policy
	if p, err := core.Lookup(sc.Policy); err != nil || p.Mode != sc.Mode {
		name = sc.Mode + "/" + sc.Policy
	}
	return name + " (yours)"
}

// userSeedRow is a row of a user's scheme over the seeds: the paper has no
// figure for it.
func userSeedRow(fig, row, col, unit string, xs []float64, prec int) PaperRow {
	r := PaperRow{Figure: fig, Row: row, Column: col, Unit: unit, Paper: "-",
		Why: "your scheme (--policy, --mode), on the same seeds: the paper has no figure for it"}
	r.Ours, r.Range = spreadOf(xs).text(prec)
	return r
}

// sameJobs is n copies of one training job arriving at once.
func sameJobs(name, model string, batch, n, iterations int) (*workload.Trace, error) {
	p, err := workload.Default().Lookup(model, batch, workload.Train)
	if err != nil {
		return nil, err
	}
	t := &workload.Trace{Name: name}
	for i := range n {
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("%s-%03d", model, i+1), Model: model, Batch: batch,
			Kind: workload.Train, Iterations: iterations, Profile: &p})
	}
	return t, nil
}

// paperFairness is Fig. 9: inception3_50 alone, and two and three of them under
// FAIR, in images per second of each job while it runs.
func paperFairness(o PaperOptions, rep *PaperReport) error {
	sec := PaperSection{Experiment: "fairness", Title: "Fair sharing (Fig. 9): inception3_50 alone and two or three under FAIR",
		Setup: "Each job 1,000 iterations, all arriving at once, one lane under fair; images/s = batch x iterations / (JCT - start-up)."}
	for n, col := range []string{"images_per_s_alone", "images_per_s_two", "images_per_s_three"} {
		t, err := sameJobs("fairness", "inception3", 50, n+1, 1000)
		if err != nil {
			return err
		}
		run, err := Simulate(t, Scheme{core.ModeSalus, "fair"}, o.Modes, o.Device, "")
		if err != nil {
			return err
		}
		var parts []string
		var sum float64
		for _, j := range run.Completion {
			rate := float64(50*1000) / (j.JCTS - t.Jobs[0].Profile.StartupS)
			parts = append(parts, fmt.Sprintf("%.1f", rate))
			sum += rate
		}
		f := figure("Fig. 9", "inception3_50", col)
		var paperSum float64
		for _, v := range f.numbers() {
			paperSum += v
		}
		sec.Rows = append(sec.Rows, oneRow(f, strings.Join(parts, "+"), sum/paperSum,
			"the catalog's inception3_50 iteration (361.8 ms, from Salus's own 1/5/10-minute runs) is 7% faster than the 129 images/s of Fig. 9's run"))
	}
	rep.Sections = append(rep.Sections, sec)
	return nil
}

// paperInference is Fig. 10: GPUs needed for the 42 inference jobs, and each
// model's latency under Salus, TensorFlow alone and MPS.
func paperInference(o PaperOptions, rep *PaperReport) error {
	ir, err := Inference(InferenceOptions{Device: o.Device, Modes: o.Modes, Seed: 1})
	if err != nil {
		return err
	}
	sec := PaperSection{Experiment: "inference", Title: "Inference (Fig. 10): 42 jobs, 14 models x 3, low request rates",
		Setup: "The inference suite's jobs (100 requests each, batch 1, pauses seed 1). Latency: mean per model under salus (one lane, fcfs) / exclusive (TensorFlow alone) / mps."}
	byScheme := map[string]InferenceRun{}
	for _, r := range ir.Runs {
		byScheme[r.Scheme] = r
	}
	gpuWhy := map[string]string{
		"gpus_tf":    "one GPU per job without sharing",
		"gpus_salus": "all 42 fit one GPU's memory",
		"gpus_mps": fmt.Sprintf("MPS here is bound by the pre-Volta limit of %d clients a GPU, each client holding its peak plus %.0f MiB; the paper's 6 GPUs are 7 clients a GPU, about 2 GiB each: "+
			"TensorFlow reserves a fixed share of GPU memory per process (per_process_gpu_memory_fraction) rather than its peak, so the paper's MPS ran out of memory first", o.Modes.MPSMaxClients, o.Modes.MPSContextMiB),
	}
	for _, c := range []struct{ col, scheme string }{{"gpus_tf", core.ModeExclusive}, {"gpus_mps", core.ModeMPS}, {"gpus_salus", core.ModeSalus}} {
		f := figure("Fig. 10", "42 jobs", c.col)
		got := byScheme[c.scheme].GPUsNeeded
		sec.Rows = append(sec.Rows, oneRow(f, fmt.Sprint(got), float64(got)/f.number(), gpuWhy[c.col]))
	}
	latency := func(scheme, model string) float64 {
		for _, m := range byScheme[scheme].Models {
			if m.Model == model {
				return m.MeanS * 1e3
			}
		}
		return 0
	}
	for _, f := range PaperFigures {
		if f.Figure != "Fig. 10" || f.Column != "latency_salus_tf_mps" {
			continue
		}
		salus, tfl, mps := latency(core.ModeSalus, f.Row), latency(core.ModeExclusive, f.Row), latency(core.ModeMPS, f.Row)
		paper := f.numbers()
		sec.Rows = append(sec.Rows, oneRow(f, fmt.Sprintf("%.1f/%.1f/%.1f", salus, tfl, mps), salus/paper[0],
			"ours is the catalog's batch-1 estimate (no inference was measured) waiting behind the other jobs' requests in one lane; the paper's Salus adds its own per-request cost"))
	}
	rep.Sections = append(rep.Sections, sec)
	return nil
}

// paperTuning is Fig. 11: the tuning suite's two sets of 300 jobs, one by one
// (TensorFlow) and under Salus PACK, with TensorFlow's start-up on the GPU. A
// job's length comes from the paper's one-by-one makespan (an identity under
// FIFO); Salus's makespan is the prediction.
func paperTuning(o PaperOptions, rep *PaperReport) error {
	tr, err := Tuning(TuningOptions{Schemes: []Scheme{{core.ModeSalus, "pack"}}, Device: tensorflow(o.Device), Modes: o.Modes})
	if err != nil {
		return err
	}
	sec := PaperSection{Experiment: "tuning", Title: "Hyper-parameter exploration (Fig. 11): two sets of 300 jobs, one by one and under PACK",
		Setup: "The tuning suite's sets: 300 jobs at once, each as long alone as the paper's one-by-one makespan / 300 (the scale input, like Table 1's mean). " +
			"Start-up on the GPU as TensorFlow's. Salus = pack in Salus lanes."}
	for i, w := range TuningWorkloads {
		run := tr.Runs[i]
		row := strings.Replace(fmt.Sprintf("%s_%d x%d", w.Model, w.Batch, run.Jobs), "/", "_", 1)
		fifoFig, salusFig := figure("Fig. 11", row, "makespan_tf_fifo"), figure("Fig. 11", row, "makespan_salus")
		seq, got := run.SequentialS/60, run.Makespan/60
		why := tuningPaperWhy[w.Model]
		imp := PaperFigure{Experiment: "tuning", Figure: "Fig. 11 (ratio)", Row: row, Column: "improvement", Value: fmt.Sprintf("%.2f", w.PaperImprovement()), Unit: "x"}
		sec.Rows = append(sec.Rows,
			oneRow(fifoFig, fmt.Sprintf("%.1f", seq), seq/fifoFig.number(), "the scale input: a job's iterations are chosen from it"),
			oneRow(salusFig, fmt.Sprintf("%.1f", got), got/salusFig.number(), why),
			oneRow(imp, fmt.Sprintf("%.2f", run.Improvement), run.Improvement/w.PaperImprovement(), why))
	}
	rep.Sections = append(rep.Sections, sec)
	return nil
}

// tuningPaperWhy says why a set's PACK makespan differs from the paper's.
var tuningPaperWhy = map[string]string{
	"resnet50": "the catalog puts resnet50_50's compute demand at 0.89 from its batch line (11% of an iteration is fixed cost another lane can fill); the paper says computation becomes the bottleneck, leaving 7%",
	"superres": "superres's demand (0.37) is an estimate, Salus published no profile of it; lanes overlap its fixed cost more than the paper's executor did, whose CPU work for superres goes through Salus's own engine (Fig. 12: 1.83x)",
}

// paperOverhead is Fig. 12, which real processes measure (the overhead suite):
// the simulator takes the overhead as a parameter rather than measuring it.
func paperOverhead(o PaperOptions, rep *PaperReport) error {
	sec := PaperSection{Experiment: "overhead", Title: "Overhead (Fig. 12): per-iteration time under Salus over TensorFlow alone",
		Setup: "Measured by real processes, not the simulator: salus eval --suite overhead --engine live (PyTorch on this machine's CPU; docs/tutorials.md, PyTorch client, real jobs, and the overhead experiment), " +
			"and on a GPU by scripts/gpu-check.sh. The simulator's --iter-overhead is a parameter (default 0)."}
	for _, f := range PaperFigures {
		if f.Figure == "Fig. 12" {
			sec.Rows = append(sec.Rows, PaperRow{Figure: f.Figure, Row: f.Row, Column: f.Column, Unit: f.Unit, Paper: f.Value,
				Why: "measured by the overhead suite (--engine live), not here"})
		}
	}
	rep.Sections = append(rep.Sections, sec)
	return nil
}

// alexnetWhy is why two alexnet_25 jobs side by side finish sooner here.
const alexnetWhy = "the catalog's demand for alexnet_25 is 0.37 (63% of its iteration is batch-independent), so two overlap almost without slowing; the paper's 89 s is each slowed 1.5x, a demand near 0.76: most of that fixed part is GPU work"

// paperSharing is Fig. 13: two alexnet_25 jobs of one minute each, under static
// partitioning (two processes the GPU time-slices), static partitioning with MPS,
// unified-memory overcommit, and Salus.
func paperSharing(o PaperOptions, rep *PaperReport) error {
	p, err := workload.Default().Lookup("alexnet", 25, workload.Train)
	if err != nil {
		return err
	}
	t, err := sameJobs("sharing", "alexnet", 25, 2, p.Lengths["1min"])
	if err != nil {
		return err
	}
	dev := tensorflow(o.Device)
	sec := PaperSection{Experiment: "sharing", Title: "Sharing against partitioning (Fig. 13): two alexnet_25 jobs of one minute each",
		Setup: fmt.Sprintf("Both arrive at once, %d iterations each (Salus's 1-minute run). Static partitioning = two processes the GPU time-slices (timeslice); with MPS = mps; Salus = pack. Start-up on the GPU as TensorFlow's.", p.Lengths["1min"])}
	for _, c := range []struct {
		col    string
		scheme Scheme
		why    string
	}{
		{"avg_jct_static_partition", Scheme{core.ModeTimeslice, "fifo"}, "time-slicing here gives each resident iteration half the GPU for its whole length, idle part too; the paper's two processes filled each other's idle gaps"},
		{"avg_jct_static_partition_mps", Scheme{core.ModeMPS, "fifo"}, alexnetWhy},
		{"avg_jct_static_partition_mps_overcommit", Scheme{}, ""},
		{"avg_jct_salus", Scheme{core.ModeSalus, "pack"}, alexnetWhy},
	} {
		f := figure("Fig. 13", "2 x alexnet_25 (1 min each)", c.col)
		if c.scheme.Mode == "" {
			sec.Rows = append(sec.Rows, PaperRow{Figure: f.Figure, Row: f.Row, Column: f.Column, Unit: f.Unit, Paper: f.Value,
				Why: "unified-memory paging is not modelled: no mode oversubscribes memory"})
			continue
		}
		run, err := Simulate(t, c.scheme, o.Modes, dev, "")
		if err != nil {
			return err
		}
		sec.Rows = append(sec.Rows, oneRow(f, fmt.Sprintf("%.1f", run.AvgJCTS), run.AvgJCTS/f.number(), c.why))
	}
	rep.Sections = append(rep.Sections, sec)
	return nil
}

// Figures draws the JCT distribution of each of Table 1's policies, the jobs of
// every seed together, on the paper's Fig. 7 axes (0 to 300 min); package report
// draws it (its Drawer); prefix begins the figure's name.
func (r *PaperReport) Figures(prefix string) []plots.Figure {
	series := r.jctSeries()
	if len(series) == 0 {
		return nil
	}
	name := prefix + "jct-cdf" // prefix: the suite's slug and a dash, or empty
	return []plots.Figure{plots.CDFTo(name, "JCT distribution on the paper trace, on the axes of the paper's Fig. 7", "JCT (min)", series, 300)}
}

// jctSeries are each policy's JCTs, every seed's jobs together, sorted: a
// series each, in the order of JCTs.
func (r *PaperReport) jctSeries() []plots.Series {
	var series []plots.Series
	for _, p := range r.JCTs {
		var all []float64
		for _, js := range p.Seeds {
			all = append(all, js...)
		}
		slices.Sort(all)
		series = append(series, plots.Series{Label: fmt.Sprintf("%s (%d seeds, %d jobs)", p.Policy, len(p.Seeds), len(all)), Values: all})
	}
	return series
}
