package interference

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// PairColumns are the columns of a pair file, in order: the format of the
// published co-location measurements (Gavel's, Lucid's) as the project keeps
// them. normalized_* is together_* / alone_*: 1, no slowdown beside the other.
var PairColumns = []string{"worker_type", "job_a", "batch_a", "job_b", "batch_b",
	"alone_a", "alone_b", "together_a", "together_b", "normalized_a", "normalized_b",
	"same_job", "clipped_a", "clipped_b"}

// requiredColumns are what every pair file must have: which jobs on which GPU.
// predict needs no more; fit needs the normalized figures (or alone and together).
var requiredColumns = []string{"worker_type", "job_a", "batch_a", "job_b", "batch_b"}

// Pair is one row of a pair file: two jobs measured (or to be predicted) side
// by side on one GPU of WorkerType.
type Pair struct {
	WorkerType string
	A, B       Job
	// AloneA/B and TogetherA/B are throughputs (any unit, the same for a job
	// alone and together); 0 where the file does not say.
	AloneA, AloneB, TogetherA, TogetherB float64
	// NormA and NormB are each job's throughput beside the other over alone;
	// Measured says they are known (a row of a prediction-only file has not).
	NormA, NormB float64
	Measured     bool
	// ClippedA/B: the source clipped together to alone (the figure is a floor).
	ClippedA, ClippedB bool
	// Line is the row's line in its file (1 is the header), for errors.
	Line int
}

// Job is one job type: a model and its batch size.
type Job struct {
	Name  string `json:"name"`
	Batch int    `json:"batch"`
}

func (j Job) String() string { return fmt.Sprintf("%s@%d", j.Name, j.Batch) }

// ReadPairsFile reads a pair file (see ReadPairs).
func ReadPairsFile(path string) ([]Pair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pairs, err := ReadPairs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pairs, nil
}

// ReadPairs reads a pair file: a CSV with a header naming at least
// worker_type, job_a, batch_a, job_b, batch_b; normalized_a and normalized_b
// (or alone_* and together_*, from which they are computed) make a row a
// measurement. Columns may come in any order; unknown ones are ignored. An
// error names the line and the column and says what is wrong.
func ReadPairs(r io.Reader) ([]Pair, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty pair file: want a header with " + strings.Join(requiredColumns, ", "))
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.ToLower(h))] = i
	}
	for _, c := range requiredColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("line 1: no column %q: a pair file's header names %s", c, strings.Join(PairColumns, ","))
		}
	}
	var pairs []Pair
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d", line, len(rec), len(header))
		}
		p, err := parsePair(rec, col, line)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, p)
	}
	if len(pairs) == 0 {
		return nil, errors.New("no pairs: the file has a header and no rows")
	}
	return pairs, nil
}

func parsePair(rec []string, col map[string]int, line int) (Pair, error) {
	get := func(name string) (string, bool) {
		i, ok := col[name]
		if !ok {
			return "", false
		}
		return strings.TrimSpace(rec[i]), true
	}
	p := Pair{Line: line}
	p.WorkerType, _ = get("worker_type")
	if p.WorkerType == "" {
		return p, fmt.Errorf("line %d: worker_type is empty: name the GPU the pair ran on (p100, v100, ...)", line)
	}
	p.WorkerType = strings.ToLower(p.WorkerType)
	for _, side := range []struct {
		job      *Job
		name, bs string
	}{{&p.A, "job_a", "batch_a"}, {&p.B, "job_b", "batch_b"}} {
		side.job.Name, _ = get(side.name)
		if side.job.Name == "" {
			return p, fmt.Errorf("line %d: %s is empty: name the job", line, side.name)
		}
		s, _ := get(side.bs)
		if s == "" {
			s = "0" // no batch size (A3C, CycleGAN in Gavel's set)
		}
		b, err := strconv.Atoi(s)
		if err != nil || b < 0 {
			return p, fmt.Errorf("line %d: %s %q is not a batch size (a whole number; empty or 0 if none)", line, side.bs, s)
		}
		side.job.Batch = b
	}
	num := func(name string) (float64, bool, error) {
		s, ok := get(name)
		if !ok || s == "" {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v != v {
			return 0, false, fmt.Errorf("line %d: %s %q is not a number at least 0", line, name, s)
		}
		return v, true, nil
	}
	var err error
	var okNA, okNB, okAA, okAB, okTA, okTB bool
	if p.AloneA, okAA, err = num("alone_a"); err != nil {
		return p, err
	}
	if p.AloneB, okAB, err = num("alone_b"); err != nil {
		return p, err
	}
	if p.TogetherA, okTA, err = num("together_a"); err != nil {
		return p, err
	}
	if p.TogetherB, okTB, err = num("together_b"); err != nil {
		return p, err
	}
	if p.NormA, okNA, err = num("normalized_a"); err != nil {
		return p, err
	}
	if p.NormB, okNB, err = num("normalized_b"); err != nil {
		return p, err
	}
	if !okNA && okAA && okTA && p.AloneA > 0 {
		p.NormA, okNA = p.TogetherA/p.AloneA, true
	}
	if !okNB && okAB && okTB && p.AloneB > 0 {
		p.NormB, okNB = p.TogetherB/p.AloneB, true
	}
	if okNA != okNB {
		return p, fmt.Errorf("line %d: one job of the pair has a normalized figure and the other none: give both or neither", line)
	}
	p.Measured = okNA
	if p.Measured && (p.NormA > 4 || p.NormB > 4) {
		return p, fmt.Errorf("line %d: normalized_a %g / normalized_b %g: a job beside another at more than 4x its speed alone is not a measurement of sharing; check the units of alone and together", line, p.NormA, p.NormB)
	}
	if s, _ := get("clipped_a"); s == "1" {
		p.ClippedA = true
	}
	if s, _ := get("clipped_b"); s == "1" {
		p.ClippedB = true
	}
	return p, nil
}

// WritePairs writes pairs in the pair-file format (PairColumns), measured
// figures with six significant digits.
func WritePairs(w io.Writer, pairs []Pair) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PairColumns); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	for _, p := range pairs {
		same := p.A.Name == p.B.Name
		if err := cw.Write([]string{p.WorkerType, p.A.Name, strconv.Itoa(p.A.Batch), p.B.Name, strconv.Itoa(p.B.Batch),
			f(p.AloneA), f(p.AloneB), f(p.TogetherA), f(p.TogetherB), f(p.NormA), f(p.NormB),
			b(same), b(p.ClippedA), b(p.ClippedB)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
