package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/plots"
	"gonum.org/v1/plot/vg"
)

// A suite registered in this test alone, touching no other file, runs through salus
// eval --suite NAME (table, JSON, CSV), --out (results and the report page) and the
// help text.

type echoSuite struct{}

func (echoSuite) Name() string        { return "echo-test" }
func (echoSuite) Description() string { return "a throwaway suite of the tests" }
func (echoSuite) Run(o eval.Options) (eval.Result, error) {
	return &echoResult{Suite: "echo-test", Device: o.Device.Name, Runs: []echoRun{{Name: "a", Value: 1.5}, {Name: "b", Value: 3}}}, nil
}

type echoRun struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

type echoResult struct {
	Suite  string    `json:"suite"`
	Device string    `json:"device"`
	Runs   []echoRun `json:"runs"`
}

func (r *echoResult) SuiteName() string { return r.Suite }
func (r *echoResult) Headlines() []eval.Headline {
	return []eval.Headline{{Claim: "echo: b over a", Paper: 2, Measured: r.Runs[1].Value / r.Runs[0].Value, Explanation: "a test"}}
}
func (r *echoResult) Table(w io.Writer) error {
	for _, run := range r.Runs {
		fmt.Fprintf(w, "%s\t%.2f\n", run.Name, run.Value)
	}
	return nil
}
func (r *echoResult) JSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }
func (r *echoResult) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"name", "value"})
	for _, run := range r.Runs {
		cw.Write([]string{run.Name, fmt.Sprint(run.Value)})
	}
	cw.Flush()
	return cw.Error()
}

// Figures draws the result's own picture in the report.
func (r *echoResult) Figures(prefix string) []plots.Figure {
	var cats []string
	var vals []float64
	for _, run := range r.Runs {
		cats, vals = append(cats, run.Name), append(vals, run.Value)
	}
	return []plots.Figure{plots.Bars(prefix+"echo-bars", "Echo values", 4*vg.Inch,
		plots.Panel{Title: "value", Y: "x", Categories: cats, Groups: []plots.Series{{Values: vals}}})}
}

func TestThrowawaySuite(t *testing.T) {
	eval.Register(echoSuite{})
	t.Cleanup(func() { eval.Unregister("echo-test") })

	out, err := run(t, "eval", "--suite", "echo-test")
	if err != nil || out != "a\t1.50\nb\t3.00\n" {
		t.Fatalf("table: %v\n%q", err, out)
	}
	out, err = run(t, "eval", "--suite", "echo-test", "--format", "json", "--device", "h100")
	if err != nil || !strings.Contains(out, `"device":"H100`) {
		t.Fatalf("json: %v\n%s", err, out)
	}
	out, err = run(t, "eval", "--suite", "echo-test", "-o", "csv")
	if err != nil || out != "name,value\na,1.5\nb,3\n" {
		t.Fatalf("csv: %v\n%q", err, out)
	}
	dir := t.TempDir()
	if _, err := run(t, "eval", "--suite", "echo-test", "--out", dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"results.json", "results.csv", "echo-bars.png", "echo-bars.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Suite echo-test", "echo-test runs", "echo: b over a", "Echo values"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
	// The help and the errors list it, from the registry; --suite all leaves it out.
	help, _ := run(t, "eval", "--help")
	if !strings.Contains(help, "echo-test") || !strings.Contains(help, "overhead") {
		t.Errorf("eval --help does not list echo-test and overhead:\n%s", help)
	}
	if _, err := run(t, "eval", "--suite", "nope"); err == nil || !strings.Contains(err.Error(), "echo-test") {
		t.Errorf("unknown suite: %v", err)
	}
}

// --suite all keeps going past a failure: every suite's table is printed, the
// failed run is a row, and the command fails.
func TestEvalAllKeepsGoing(t *testing.T) {
	out, err := run(t, "eval", "--suite", "all", "--mps-context-mib", "2000", "--tuning-jobs", "10", "--requests", "5")
	if err == nil {
		t.Fatalf("no error; printed:\n%s", out)
	}
	for _, s := range []string{"Suite training", "mps failed", "Suite tuning", "Suite inference", "The paper's headlines"} {
		if !strings.Contains(out, s) {
			t.Errorf("the output lacks %q:\n%s", s, out)
		}
	}
}
