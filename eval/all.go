package eval

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Headline is one of the paper's headline figures beside what this project measures.
type Headline struct {
	Claim       string  `json:"claim"`
	Paper       float64 `json:"paper"`
	Measured    float64 `json:"measured"`
	Explanation string  `json:"explanation"`
}

// AllReport holds every suite and the paper's headlines.
type AllReport struct {
	Suite     string     `json:"suite"`
	Runs      []Output   `json:"runs"`
	Headlines []Headline `json:"headlines"`
}

// All combines the training, tuning and inference reports.
func All(tr *Report, tu *TuningReport, in *InferenceReport) *AllReport {
	r := &AllReport{Suite: "all", Runs: []Output{tr, tu, in}}
	r.Headlines = append(r.Headlines, Headline{Claim: "training: average JCT, SRTF over FIFO", Paper: tr.Paper.Value, Measured: tr.Paper.Measured,
		Explanation: explain(tr.Paper.Value, tr.Paper.Measured,
			"the paper's trace, arrival process and seed were never published; SRTF's gain grows with how often short jobs queue behind long ones, which salus100's Poisson arrivals at load 1 make less often")})
	best := ""
	for _, run := range tu.Runs {
		if run.Scheme == "pack" && run.Improvement == tu.Paper.Measured {
			best = run.Workload
		}
	}
	r.Headlines = append(r.Headlines, Headline{Claim: "tuning: utilization, PACK over one by one (best workload: " + best + ")", Paper: tu.Paper.Value, Measured: tu.Paper.Measured,
		Explanation: explain(tu.Paper.Value, tu.Paper.Measured,
			"lanes here overlap until the jobs' compute demands fill the GPU, with no executor or CPU contention; the small jobs' times and demands are estimates, since Salus published none")})
	for _, h := range in.Headlines {
		why := "no sharing needs a GPU per job; one Salus lane holds every job's persistent memory plus the largest ephemeral peak"
		if strings.Contains(h.Claim, "MPS") {
			why = "MPS here is bound by its 16-client limit (pre-Volta) and each job's measured peak plus a 100 MiB client context; TensorFlow processes under MPS reserve more than their peak"
		}
		r.Headlines = append(r.Headlines, Headline{Claim: "inference: " + h.Claim, Paper: h.Value, Measured: h.Measured, Explanation: explain(h.Value, h.Measured, why)})
	}
	return r
}

// explain returns why when measured and published differ by more than 10%.
func explain(paper, measured float64, why string) string {
	if paper > 0 && math.Abs(measured-paper)/paper <= 0.1 {
		return "agrees with the paper"
	}
	return why
}

// Table prints every suite's table, then the headlines.
func (r *AllReport) Table(w io.Writer) error {
	for _, run := range r.Runs {
		if err := run.Table(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "The paper's headlines and this project's figures")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "claim\tpaper\tmeasured\twhy they differ")
	for _, h := range r.Headlines {
		fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t%s\n", h.Claim, h.Paper, h.Measured, h.Explanation)
	}
	return tw.Flush()
}

// JSON prints the suites and the headlines as one object.
func (r *AllReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints the headlines (each suite's own CSV is in its results).
func (r *AllReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"claim", "paper", "measured", "explanation"})
	for _, h := range r.Headlines {
		cw.Write([]string{h.Claim, num(h.Paper), num(h.Measured), h.Explanation})
	}
	cw.Flush()
	return cw.Error()
}
