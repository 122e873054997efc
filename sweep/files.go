package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload"
)

// The files of a sweep directory.
const (
	GridFile    = "grid.json"     // the grid, written first (what --resume reads)
	SamplesFile = "samples.jsonl" // one finished run a line, appended as runs finish
	CSVFile     = "sweep.csv"     // one line per cell: mean and 95% interval of each metric
	JSONFile    = "sweep.json"    // the grid and every cell's statistics
)

// Journal appends finished samples to DIR/samples.jsonl, one line each, so
// nothing finished is lost when the sweep stops.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (creating or appending to) the sample journal in dir. A last
// line cut short by a killed sweep is removed first, so appends start on a line
// of their own.
func OpenJournal(dir string) (*Journal, error) {
	path := filepath.Join(dir, SamplesFile)
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 && data[len(data)-1] != '\n' {
		if err := os.Truncate(path, int64(bytes.LastIndexByte(data, '\n')+1)); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &Journal{f: f}, nil
}

// Add appends one sample.
func (j *Journal) Add(s Sample) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.f.Write(append(b, '\n'))
	return err
}

// Close closes the journal.
func (j *Journal) Close() error { return j.f.Close() }

// WriteGrid writes DIR/grid.json.
func WriteGrid(dir string, g Grid) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, GridFile), append(b, '\n'), 0o644)
}

// Load reads a sweep directory's grid and the samples finished so far. A last
// line cut short (the sweep was killed while writing it) is ignored; any other
// bad line is an error naming it.
func Load(dir string) (Grid, []Sample, error) {
	var g Grid
	b, err := os.ReadFile(filepath.Join(dir, GridFile))
	if err != nil {
		return g, nil, fmt.Errorf("%s is not a sweep directory: %w", dir, err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, nil, fmt.Errorf("%s: %w", filepath.Join(dir, GridFile), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, SamplesFile))
	if errors.Is(err, os.ErrNotExist) {
		return g, nil, nil
	}
	if err != nil {
		return g, nil, err
	}
	var samples []Sample
	lines := bytes.Split(data, []byte("\n"))
	for i, text := range lines {
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var s Sample
		if err := json.Unmarshal(text, &s); err != nil {
			if i == len(lines)-1 {
				break // the last line, cut short: that run is done again
			}
			return g, nil, fmt.Errorf("%s:%d: %v", filepath.Join(dir, SamplesFile), i+1, err)
		}
		samples = append(samples, s)
	}
	return g, samples, nil
}

// Result is what sweep.json holds.
type Result struct {
	Grid        Grid      `json:"grid"`
	Runs        int       `json:"runs"`
	Planned     int       `json:"planned"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Cells       []Summary `json:"cells"`
	// Recommendations say which scheme is best on which metric, at each trace,
	// load and capacity.
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// Interval says how the cells' intervals were computed (IntervalNote).
	Interval string `json:"interval,omitempty"`
}

// IntervalNote is the line under every table of the sweep: the seeds and the
// method of its intervals (eval.IntervalNote), for the most seeds a cell ran.
func (r Result) IntervalNote() string {
	n := 0
	for _, c := range r.Cells {
		n = max(n, c.Runs)
	}
	return eval.IntervalNote(n)
}

// WriteResults writes sweep.json and sweep.csv into dir.
func WriteResults(dir string, r Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CSVFile), buf.Bytes(), 0o644)
}

// WriteCSV writes one line per cell: its coordinates (the trace, generated or
// a file; the GPUs of each run's node), its runs (the seeds its intervals are
// over) and the interval's method, for each metric its mean and the bounds of
// its 95% interval, and where it came from (r.Grid.Provenance:
// provenanceColumns; empty when nil).
func WriteCSV(w io.Writer, r Result) error {
	prov := r.Grid.Provenance
	cw := csv.NewWriter(w)
	head := []string{"policy", "mode", "load", "capacity_mib", "runs", "failed", "trace", "kind", "gpus", "interval"}
	metrics := Metrics
	if r.Grid.SeveralGPUs() {
		metrics = append(slices.Clip(metrics), PerGPUColumns...)
	}
	for _, m := range metrics {
		head = append(head, m+"_mean", m+"_low", m+"_high")
	}
	cw.Write(append(head, provenanceColumns...))
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	gpus := r.Grid.GPUsLabel()
	for _, c := range r.Cells {
		kind := c.Kind
		if c.Trace == "" && kind == "" {
			kind = workload.Salus100
		}
		row := []string{c.Policy, c.ModeName(), f(c.Load), f(c.CapacityMiB), strconv.Itoa(c.Runs), strconv.Itoa(c.Failed), c.Trace, kind, gpus,
			"95% " + eval.IntervalMethod}
		for _, m := range metrics {
			s := c.Metrics[m]
			row = append(row, f(s.Mean), f(s.Low), f(s.High))
		}
		cw.Write(append(row, provenanceCells(prov, c.Trace, c.Kind)...))
	}
	cw.Flush()
	return cw.Error()
}
