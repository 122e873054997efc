package eval

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// Headline is one of the paper's headline figures beside what this project measures.
type Headline struct {
	Claim       string  `json:"claim"`
	Paper       float64 `json:"paper"`
	Measured    float64 `json:"measured"`
	Explanation string  `json:"explanation"`
}

// AllReport holds the results of --suite all and the paper's headlines.
type AllReport struct {
	Suite  string     `json:"suite"`
	Runs   []Result   `json:"runs"`
	Claims []Headline `json:"headlines"`
}

// All combines suites' results: each result's table, then every headline.
func All(results ...Result) *AllReport {
	r := &AllReport{Suite: AllName, Runs: results}
	for _, res := range results {
		r.Claims = append(r.Claims, res.Headlines()...)
	}
	return r
}

// SuiteName is "all".
func (r *AllReport) SuiteName() string { return r.Suite }

// Headlines are the suites' headlines.
func (r *AllReport) Headlines() []Headline { return r.Claims }

// explain returns why when measured and published differ by more than 10%.
func explain(paper, measured float64, why string) string {
	if paper > 0 && math.Abs(measured-paper)/paper <= 0.1 {
		return "agrees with the paper"
	}
	return why
}

// WideOutput is a result whose table has more columns than fit 120 characters:
// WideTable prints them all (-o wide).
type WideOutput interface {
	WideTable(io.Writer) error
}

// Table prints every suite's table, then the headlines.
func (r *AllReport) Table(w io.Writer) error { return r.table(w, false) }

// WideTable is Table with every suite's wide table.
func (r *AllReport) WideTable(w io.Writer) error { return r.table(w, true) }

func (r *AllReport) table(w io.Writer, wide bool) error {
	for _, run := range r.Runs {
		print := run.Table
		if wo, ok := run.(WideOutput); ok && wide {
			print = wo.WideTable
		}
		if err := print(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "The paper's headlines and this project's figures")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "claim\tpaper\tmeasured\twhy they differ")
	var notes []string // each reason once, under the table
	for _, h := range r.Claims {
		why := h.Explanation
		if why != "agrees with the paper" {
			why = note(&notes, why)
		}
		fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t%s\n", h.Claim, h.Paper, h.Measured, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printNotes(w, notes)
	return nil
}

// JSON prints the suites and the headlines as one object.
func (r *AllReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints the headlines (each suite's own CSV is in its results).
func (r *AllReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"claim", "paper", "measured", "explanation"})
	for _, h := range r.Claims {
		cw.Write([]string{h.Claim, num(h.Paper), num(h.Measured), h.Explanation})
	}
	cw.Flush()
	return cw.Error()
}

// JobsCSV prints the per-job results of the suites that have them (the training
// suite's), under one header.
func (r *AllReport) JobsCSV(w io.Writer) error {
	for _, res := range r.Runs {
		if rep, ok := res.(*Report); ok {
			return rep.JobsCSV(w)
		}
	}
	return (&Report{}).JobsCSV(w)
}
