package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/salusgo/salus/core"
)

// Job is one job of a trace, with its catalog profile resolved.
type Job struct {
	ID         string  `json:"job_id"`
	Model      string  `json:"model"`
	Batch      int     `json:"batch_size"`
	Iterations int     `json:"iterations"`
	ArrivalS   float64 `json:"arrival_s"`
	// DeclaredS is the GPU time the job declares (SRTF's estimate): its iterations'
	// time, start-up excluded. Zero means "not given": Declared then returns
	// iterations x iteration time.
	DeclaredS float64 `json:"declared_s,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	Priority  int     `json:"priority,omitempty"`
	// PauseS is, for inference jobs, the pause after each request before the next.
	PauseS float64 `json:"pause_s,omitempty"`
	// GPUs is how many GPUs the job needs at once (data-parallel training): they are
	// allocated together and its iterations start on all of them together. Zero
	// means one.
	GPUs int `json:"gpus,omitempty"`
	// Share is the job's scheduling weight under wfair and floor: its share of
	// the GPU's time beside the others (0: 1). Not its compute demand, which is
	// the profile's.
	Share float64 `json:"share,omitempty"`
	// GPUModels, when not empty, is the GPU models the job may run on (a
	// cluster node's model, as its cluster file names it), and the only ones.
	// In CSV, models separated by |; in JSON, a list or such a string.
	GPUModels []string `json:"gpu_models,omitempty"`
	// TimedOn is the GPU the job's iterations are timed on: empty, the GPU it
	// runs on (a cluster's faster model runs it faster); TimedOnReference, the
	// run's reference device (--device) whatever GPU it runs on, for a job whose
	// recorded run happened on a model its source does not name (an imported
	// pod without a GPU type): its length is then its recorded run on any node.
	TimedOn string `json:"timed_on,omitempty"`
	// TraceQueueS and TraceRunS are, for a job imported from a public trace, what
	// the trace itself recorded: its scheduling delay (scheduled - created) and
	// its run (end - scheduled), seconds; nil when the trace does not say. A study
	// puts the simulated delay and run beside them; the engines ignore them.
	TraceQueueS *float64 `json:"trace_queue_s,omitempty"`
	TraceRunS   *float64 `json:"trace_run_s,omitempty"`
	// Inline holds the profile figures the trace gives for this job itself.
	Inline
	// Profile is shared: the catalog's, which every job of its model, batch size
	// and kind points to, or the job's own when the trace gives figures of it
	// (Inline). Never change it through the pointer: give the job a changed copy
	// (WithProfile), so that no other job sees the change.
	Profile *Profile `json:"-"`
}

// WithProfile returns the job with its own copy of its profile, changed by f.
func (j Job) WithProfile(f func(*Profile)) Job {
	p := *j.Profile
	f(&p)
	j.Profile = &p
	return j
}

// TimedOnReference is the TimedOn of a job timed on the reference device
// whatever GPU it runs on.
const TimedOnReference = "reference"

// GPUCount is how many GPUs the job needs, at least one.
func (j Job) GPUCount() int { return max(j.GPUs, 1) }

// Declared is the job's declared GPU time on the reference P100, seconds:
// DeclaredS when given, else iterations x iteration time (the start-up is over
// before the job competes for the GPU, so it does not count).
func (j Job) Declared() float64 { return j.DeclaredOn(j.Profile.IterS) }

// DeclaredOn is Declared on a device where one iteration takes iterS seconds: a
// declared_s given in the trace is the user's own figure and is kept as it is.
func (j Job) DeclaredOn(iterS float64) float64 {
	if j.DeclaredS > 0 {
		return j.DeclaredS
	}
	return float64(j.Iterations) * iterS
}

// CoreJob is what the scheduling core needs of the job, its times on the P100.
// Times beyond core.MaxSeconds (which a trace file cannot hold) are clamped.
func (j Job) CoreJob() core.Job {
	return core.Job{ID: j.ID, Arrival: clampSeconds(j.ArrivalS), Persistent: j.Profile.PersistentMiB,
		Ephemeral: j.Profile.EphemeralMiB, Declared: clampSeconds(j.Declared()), Priority: j.Priority, GPUs: j.GPUCount(),
		Share: j.Share, GPUModels: j.GPUModels, Model: j.Model, Batch: j.Batch}
}

func clampSeconds(s float64) time.Duration {
	d, err := core.Seconds(s)
	if err != nil && s > 0 {
		return core.MustSeconds(core.MaxSeconds)
	}
	return d
}

// Trace is an ordered list of jobs.
type Trace struct {
	Name string `json:"name"`
	Seed int64  `json:"seed,omitempty"`
	// Kind is the generator's kind (Paper, Salus100) for a generated trace; empty
	// for a trace read from a file.
	Kind string `json:"kind,omitempty"`
	// Load is the factor ScaleLoad scaled the arrival rate by; 0 means unscaled.
	Load float64 `json:"load,omitempty"`
	// ResampledBy is the method Resample drew this trace with (seeded by Seed); empty
	// for a trace as read or generated.
	ResampledBy string `json:"resample,omitempty"`
	Jobs        []Job  `json:"jobs"`
}

// Columns of the trace formats: the required ones first.
var (
	requiredColumns = []string{"job_id", "model", "batch_size", "iterations", "arrival_s"}
	optionalColumns = append([]string{"declared_s", "kind", "priority", "pause_s", "gpus", "share", "gpu_models", "timed_on", "trace_queue_s", "trace_run_s"}, inlineColumns...)
)

// FieldError is a problem with one field of one line of a trace file.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: field %q: %s", e.File, e.Line, e.Field, e.Msg)
}

// ReadTraceFile reads a trace in CSV (with a header) or JSON Lines, chosen by the
// file's extension (.csv, .jsonl, .json) or, failing that, by its first character.
func ReadTraceFile(path string, cat *Catalog) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return ParseTrace(data, path, name, cat)
}

// ParseTrace parses trace data; file names the source in errors. Rows become
// jobs as they are read: memory holds the jobs, not the rows. Rows out of arrival
// order are sorted, stably: jobs that arrive together keep the file's order.
func ParseTrace(data []byte, file, name string, cat *Catalog) (*Trace, error) {
	// A job a line, at most: no regrowing of a list of a million jobs.
	lines := bytes.Count(data, []byte{'\n'}) + 1
	t := &Trace{Name: name, Jobs: make([]Job, 0, lines)}
	c := newRowChecks(file, lines)
	err := eachJob(data, file, cat, func(j Job, line int) error {
		if err := c.add(j, line); err != nil {
			return err
		}
		t.Jobs = append(t.Jobs, j)
		return nil
	})
	if err == nil {
		err = c.end()
	}
	if err != nil {
		return nil, err
	}
	if !c.sorted {
		slices.SortStableFunc(t.Jobs, func(a, b Job) int { return cmp.Compare(a.ArrivalS, b.ArrivalS) })
	}
	return t, nil
}

// checkTrace checks every row of trace data as ParseTrace does, keeping no job,
// and says whether the rows are in arrival order.
func checkTrace(data []byte, file string, cat *Catalog) (sorted bool, err error) {
	c := newRowChecks(file, 0)
	err = eachJob(data, file, cat, c.add)
	if err == nil {
		err = c.end()
	}
	return c.sorted, err
}

// TraceCheck is what CheckTraceFile found in a trace file.
type TraceCheck struct {
	// Jobs counts the good rows; FirstS and LastS are their earliest and latest
	// arrivals.
	Jobs          int
	FirstS, LastS float64
	// Problems are the first problems found, in the file's order, each a
	// *FieldError naming the line (and the field, where one is at fault);
	// Count is how many there are in all.
	Problems []error
	Count    int
}

// CheckTraceFile checks every row of a trace file as ReadTraceFile does, but
// goes on past a bad row, keeping the first limit problems (all, with limit <= 0)
// and counting the rest. A problem of the file as a whole (an empty file, a
// bad header) is its one problem; error is for a file it cannot read.
func CheckTraceFile(path string, cat *Catalog, limit int) (TraceCheck, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return TraceCheck{}, err
	}
	var tc TraceCheck
	problem := func(err error) error {
		if limit <= 0 || len(tc.Problems) < limit {
			tc.Problems = append(tc.Problems, err)
		}
		tc.Count++
		return nil
	}
	c := newRowChecks(path, 0)
	err = eachRow(data, path, cat, func(j Job, line int) error {
		if err := c.add(j, line); err != nil {
			return err
		}
		if tc.Jobs == 0 || j.ArrivalS < tc.FirstS {
			tc.FirstS = j.ArrivalS
		}
		if tc.Jobs == 0 || j.ArrivalS > tc.LastS {
			tc.LastS = j.ArrivalS
		}
		tc.Jobs++
		return nil
	}, problem)
	if err == nil && tc.Count == 0 {
		err = c.end()
	}
	if err != nil {
		problem(err)
	}
	return tc, nil
}

// rowChecks are the checks across the rows of a file: every id once, at least one
// job; and whether the rows are in arrival order.
type rowChecks struct {
	file   string
	ids    map[string]int // the line of each id
	last   float64
	sorted bool
}

func newRowChecks(file string, size int) *rowChecks {
	return &rowChecks{file: file, ids: make(map[string]int, size), sorted: true}
}

func (c *rowChecks) add(j Job, line int) error {
	if first, dup := c.ids[j.ID]; dup {
		return &FieldError{File: c.file, Line: line, Field: "job_id", Msg: fmt.Sprintf("duplicate id %q (first on line %d): give every job its own id", j.ID, first)}
	}
	if len(c.ids) > 0 && j.ArrivalS < c.last {
		c.sorted = false
	}
	c.ids[j.ID], c.last = line, j.ArrivalS
	return nil
}

func (c *rowChecks) end() error {
	if len(c.ids) == 0 {
		return &FieldError{File: c.file, Line: 1, Msg: "the trace has no jobs"}
	}
	return nil
}

// errStopped ends eachJob early when its reader wants no more jobs.
var errStopped = errors.New("workload: stopped")

// eachJob calls each on every row of trace data made a job, in the file's order,
// with the row's line: CSV or JSON Lines, chosen by the file's extension (.csv,
// .jsonl, .json, .ndjson) or, failing that, by its first character.
func eachJob(data []byte, file string, cat *Catalog, each func(j Job, line int) error) error {
	return eachRow(data, file, cat, each, func(err error) error { return err })
}

// eachRow is eachJob that hands a bad row's error to bad and goes on to the
// next row when bad returns nil; an error of the file as a whole (its header,
// an unreadable line) still ends it.
func eachRow(data []byte, file string, cat *Catalog, each func(j Job, line int) error, bad func(error) error) error {
	do := func(r row) error {
		j, err := r.job(file, cat)
		if err != nil {
			return err
		}
		return each(j, r.line)
	}
	switch ext := strings.ToLower(filepath.Ext(file)); {
	case ext == ".csv":
		return csvRows(data, file, do, bad)
	case ext == ".jsonl" || ext == ".json" || ext == ".ndjson":
		return jsonRows(data, file, do, bad)
	case bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")):
		return jsonRows(data, file, do, bad)
	default:
		return csvRows(data, file, do, bad)
	}
}

type row struct {
	line   int
	fields map[string]string
}

// csvRows calls each on every row of CSV data, in order; a row's error, each's
// or a line's of the wrong width, goes to bad.
func csvRows(data []byte, file string, each func(row) error, bad func(error) error) error {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err == io.EOF {
		return &FieldError{File: file, Line: 1, Msg: "empty file: a trace needs a header line (" + strings.Join(requiredColumns, ",") + ") and one line per job"}
	}
	if err != nil {
		return csvError(file, err)
	}
	line, _ := r.FieldPos(0)
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		header[i] = h
		if !known(h) {
			return &FieldError{File: file, Line: line, Field: h, Msg: "unknown column; known columns are " + strings.Join(append(append([]string{}, requiredColumns...), optionalColumns...), ", ")}
		}
		if seen[h] {
			return &FieldError{File: file, Line: line, Field: h, Msg: "column appears twice"}
		}
		seen[h] = true
	}
	for _, c := range requiredColumns {
		if !seen[c] {
			return &FieldError{File: file, Line: line, Field: c, Msg: "missing column: the header must name " + strings.Join(requiredColumns, ", ")}
		}
	}
	r.FieldsPerRecord = len(header)
	r.ReuseRecord = true
	fields := map[string]string{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// The reader goes on from the next record after a parse error.
			if err := bad(csvError(file, err)); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return csvError(file, err)
		}
		line, _ := r.FieldPos(0)
		for i, h := range header {
			fields[h] = strings.TrimSpace(rec[i])
		}
		if err := each(row{line: line, fields: fields}); err != nil {
			if err := bad(err); err != nil {
				return err
			}
		}
	}
}

func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FieldError{File: file, Line: pe.Line, Msg: pe.Err.Error() + ": every line needs one value per header column"}
	}
	return fmt.Errorf("%s: %w", file, err)
}

// jsonRows calls each on every row of JSON Lines data, in order; a row's error
// goes to bad.
func jsonRows(data []byte, file string, each func(row) error, bad func(error) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if err := jsonRow(text, file, line, each); err != nil {
			if err := bad(err); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return &FieldError{File: file, Line: line + 1, Msg: err.Error()}
	}
	return nil
}

// jsonRow calls each on one line of JSON Lines data.
func jsonRow(text []byte, file string, line int, each func(row) error) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(text, &obj); err != nil {
		return &FieldError{File: file, Line: line, Msg: "not a JSON object: " + err.Error()}
	}
	fields := map[string]string{}
	for k, v := range obj {
		if !known(k) {
			return &FieldError{File: file, Line: line, Field: k, Msg: "unknown field; known fields are " + strings.Join(append(append([]string{}, requiredColumns...), optionalColumns...), ", ")}
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			s = string(v) // a number, or something the field parser will reject
		}
		fields[k] = s
	}
	for _, c := range requiredColumns {
		if _, ok := fields[c]; !ok {
			return &FieldError{File: file, Line: line, Field: c, Msg: "missing field: every job needs " + strings.Join(requiredColumns, ", ")}
		}
	}
	return each(row{line: line, fields: fields})
}

func known(col string) bool {
	return slices.Contains(requiredColumns, col) || slices.Contains(optionalColumns, col)
}

func (r row) job(file string, cat *Catalog) (Job, error) {
	bad := func(field, msg string) error {
		return &FieldError{File: file, Line: r.line, Field: field, Msg: msg}
	}
	j := Job{ID: r.fields["job_id"], Model: r.fields["model"], Kind: strings.ToLower(r.fields["kind"])}
	if j.ID == "" {
		return j, bad("job_id", "empty: every job needs an id")
	}
	if j.Model == "" {
		return j, bad("model", "empty: name a model from `salus models`")
	}
	var err error
	if j.Batch, err = positiveInt(r.fields["batch_size"]); err != nil {
		return j, bad("batch_size", err.Error())
	}
	if j.Iterations, err = positiveInt(r.fields["iterations"]); err != nil {
		return j, bad("iterations", err.Error())
	}
	if j.ArrivalS, err = nonNegative(r.fields["arrival_s"]); err != nil {
		return j, bad("arrival_s", err.Error())
	}
	if s := r.fields["declared_s"]; s != "" {
		if j.DeclaredS, err = nonNegative(s); err != nil {
			return j, bad("declared_s", err.Error())
		}
		if j.DeclaredS == 0 {
			return j, bad("declared_s", fmt.Sprintf("%s: a declared GPU time must be positive; leave the field empty for iterations x iteration time", s))
		}
	}
	if s := r.fields["pause_s"]; s != "" {
		if j.PauseS, err = nonNegative(s); err != nil {
			return j, bad("pause_s", err.Error())
		}
	}
	if s := r.fields["gpus"]; s != "" {
		if j.GPUs, err = positiveInt(s); err != nil {
			return j, bad("gpus", err.Error())
		}
		if j.GPUs > 1024 {
			return j, bad("gpus", fmt.Sprintf("%d GPUs for one job: at most 1024", j.GPUs))
		}
	}
	if s := r.fields["share"]; s != "" {
		if j.Share, err = strconv.ParseFloat(s, 64); err != nil || j.Share == 0 {
			return j, bad("share", fmt.Sprintf("%q is not a share: give a number between %g and %g (shares are relative: 1 and 3 get GPU time 1:3), or leave the field empty for 1", s, float64(core.MinShare), float64(core.MaxShare)))
		}
		if err := core.CheckShare("the share", j.Share); err != nil {
			return j, bad("share", err.Error())
		}
	}
	if s := r.fields["gpu_models"]; s != "" {
		if j.GPUModels, err = gpuModels(s); err != nil {
			return j, bad("gpu_models", err.Error())
		}
	}
	switch s := strings.ToLower(strings.TrimSpace(r.fields["timed_on"])); s {
	case "":
	case TimedOnReference:
		j.TimedOn = s
	default:
		return j, bad("timed_on", fmt.Sprintf("%q: give %s (the job's iterations take the reference device's time on any GPU: its recorded run is of a model the trace does not name) or leave it empty (timed on the GPU it runs on)", r.fields["timed_on"], TimedOnReference))
	}
	if s := r.fields["priority"]; s != "" {
		if j.Priority, err = strconv.Atoi(s); err != nil {
			return j, bad("priority", fmt.Sprintf("%q is not a whole number", s))
		}
	}
	for _, f := range []struct {
		col string
		to  **float64
	}{{"trace_queue_s", &j.TraceQueueS}, {"trace_run_s", &j.TraceRunS}} {
		if s := r.fields[f.col]; s != "" {
			v, err := nonNegative(s)
			if err != nil {
				return j, bad(f.col, err.Error())
			}
			*f.to = &v
		}
	}
	switch j.Kind {
	case "":
		j.Kind = Train
	case Train, Infer:
	default:
		return j, bad("kind", fmt.Sprintf("%q is neither train nor infer", j.Kind))
	}
	if j.Inline, err = parseInline(r.fields, bad); err != nil {
		return j, err
	}
	shared, lookupErr := cat.Shared(j.Model, j.Batch, j.Kind)
	if lookupErr == nil && j.Inline.Empty() {
		j.Profile = shared // the catalog's: a million jobs of it hold one profile
		return j, nil
	}
	base := Profile{Model: j.Model, Batch: j.Batch, Kind: j.Kind}
	if lookupErr == nil {
		base = *shared
	}
	own, err := j.Inline.apply(base, lookupErr == nil, fmt.Sprintf("trace %s, line %d", file, r.line))
	j.Profile = &own
	if err != nil || (lookupErr != nil && j.Inline.Empty()) {
		field := "model"
		if strings.Contains(lookupErr.Error(), "batch size") {
			field = "batch_size"
		}
		msg := lookupErr.Error()
		if err != nil {
			msg += "; a job's own profile " + err.Error()
		}
		return j, bad(field, msg)
	}
	return j, nil
}

func positiveInt(s string) (int, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e12 {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if f < 1 {
		return 0, fmt.Errorf("%s must be at least 1", s)
	}
	return int(f), nil
}

func nonNegative(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number (seconds)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative; times are seconds from the start of the trace, >= 0", s)
	}
	if f > core.MaxSeconds {
		return 0, fmt.Errorf("%s s is more than %g s (31 years), the longest time the engines accept", s, float64(core.MaxSeconds))
	}
	return f, nil
}

// WriteCSV writes the trace as CSV with a header. The gpus, share, gpu_models,
// timed_on, trace figures and inline profile columns are written only when some job uses
// them.
func (t *Trace) WriteCSV(w io.Writer) error {
	gang, shares, models, timed, traced, inline := false, false, false, false, false, false
	for _, j := range t.Jobs {
		gang = gang || j.GPUs > 1
		shares = shares || j.Share != 0
		models = models || len(j.GPUModels) > 0
		timed = timed || j.TimedOn != ""
		traced = traced || j.TraceQueueS != nil || j.TraceRunS != nil
		inline = inline || !j.Inline.Empty()
	}
	header := append(append([]string{}, requiredColumns...), "declared_s", "kind", "priority", "pause_s")
	if gang {
		header = append(header, "gpus")
	}
	if shares {
		header = append(header, "share")
	}
	if models {
		header = append(header, "gpu_models")
	}
	if timed {
		header = append(header, "timed_on")
	}
	if traced {
		header = append(header, "trace_queue_s", "trace_run_s")
	}
	if inline {
		header = append(header, inlineColumns...)
	}
	cw := csv.NewWriter(w)
	cw.Write(header)
	for _, j := range t.Jobs {
		rec := []string{j.ID, j.Model, strconv.Itoa(j.Batch), strconv.Itoa(j.Iterations),
			formatFloat(j.ArrivalS), optional(j.DeclaredS), j.Kind, strconv.Itoa(j.Priority), optional(j.PauseS)}
		if gang {
			rec = append(rec, strconv.Itoa(j.GPUCount()))
		}
		if shares {
			rec = append(rec, optional(j.Share))
		}
		if models {
			rec = append(rec, strings.Join(j.GPUModels, "|"))
		}
		if timed {
			rec = append(rec, j.TimedOn)
		}
		if traced {
			rec = append(rec, optionalPtr(j.TraceQueueS), optionalPtr(j.TraceRunS))
		}
		if inline {
			rec = append(rec, j.Inline.values()...)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSONL writes the trace as JSON Lines, one job a line.
func (t *Trace) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, j := range t.Jobs {
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

// gpuModels parses a gpu_models field: models separated by |, or a JSON list.
func gpuModels(s string) ([]string, error) {
	var ms []string
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &ms); err != nil {
			return nil, fmt.Errorf("%s: not a list of model names: %v", s, err)
		}
	} else {
		ms = strings.Split(s, "|")
	}
	for i, m := range ms {
		if ms[i] = strings.TrimSpace(m); ms[i] == "" {
			return nil, fmt.Errorf("%q: an empty model name: list GPU models separated by | (a100|v100)", s)
		}
	}
	return ms, nil
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// optionalPtr formats a figure that is absent when nil.
func optionalPtr(f *float64) string {
	if f == nil {
		return ""
	}
	return formatFloat(*f)
}

// optional formats a figure that is absent when zero.
func optional(f float64) string {
	if f == 0 {
		return ""
	}
	return formatFloat(f)
}
