package traceimport

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/salusgo/salus/workload"
)

// csvSource streams a CSV file row by row, its fields found by column name.
type csvSource struct {
	file   string
	format string
	f      *os.File
	r      *csv.Reader
	col    map[string]int
	rec    []string
	line   int
	// pending is a first row that was data, not a header (headerless files).
	pending bool
}

// openCSV opens a CSV file whose first line is a header naming at least the
// required columns. When positional is not nil the header is optional: a first
// row that does not start with positional[0] is data, its columns in that order.
func openCSV(path, format string, required, positional []string) (*csvSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &csvSource{file: path, format: format, f: f, col: map[string]int{}}
	s.r = csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	s.r.ReuseRecord = true
	s.r.FieldsPerRecord = -1
	s.r.TrimLeadingSpace = true
	first, err := s.r.Read()
	if err == io.EOF {
		f.Close()
		return nil, &workload.FieldError{File: path, Line: 1, Msg: fmt.Sprintf("empty file: a %s trace has a header line (%s) and one line per job", format, strings.Join(required, ","))}
	}
	if err != nil {
		f.Close()
		return nil, s.parseError(err)
	}
	s.line, _ = s.r.FieldPos(0)
	first[0] = strings.TrimPrefix(first[0], "\ufeff")
	if positional != nil && strings.TrimSpace(first[0]) != positional[0] && !looksLikeHeader(first) {
		for i, c := range positional {
			s.col[c] = i
		}
		s.rec, s.pending = first, true
		return s, nil
	}
	for i, h := range first {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := s.col[h]; !dup {
			s.col[h] = i
		}
	}
	for _, c := range required {
		if _, ok := s.col[c]; !ok {
			f.Close()
			return nil, &workload.FieldError{File: path, Line: s.line, Field: c, Msg: wrongHeader(format, required, first)}
		}
	}
	return s, nil
}

// looksLikeHeader says whether a first row is a header rather than data: none
// of its fields is a number (a headerless PAI row has several).
func looksLikeHeader(rec []string) bool {
	for _, f := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			return false
		}
	}
	return len(rec) > 1
}

// wrongHeader is the message for a header that lacks a required column: which
// format's header it is, when it is one the importers know, or what it lacks.
func wrongHeader(format string, required, header []string) string {
	cols := map[string]bool{}
	for _, h := range header {
		cols[strings.ToLower(strings.TrimSpace(h))] = true
	}
	shown := strings.Join(header, ",")
	if len(shown) > 120 {
		shown = shown[:120] + "..."
	}
	if cols["name"] && cols["num_gpu"] && cols["gpu_milli"] && !cols["creation_time"] && !cols["scheduled_time"] && !cols["deletion_time"] {
		return fmt.Sprintf("header %s: an Alibaba 2023 pod list without times (as the multigpu lists, openb_pod_list_multigpu*.csv, are): "+
			"it says what each pod asks for, not when it arrived or how long it ran, so it cannot become a trace; "+
			"import a pod list with creation_time, scheduled_time and deletion_time, such as openb_pod_list_default.csv", shown)
	}
	for _, f := range NodeFormats() {
		ok := len(f.Columns) > 0
		for _, c := range f.Columns {
			ok = ok && (cols[c] || c == "gpu" && cols["num_gpu"])
		}
		if ok {
			return fmt.Sprintf("header %s: a node list of --format %s (the cluster's machines, not its jobs): "+
				"make the cluster file with salus trace cluster --format %s FILE --out cluster.yaml, "+
				"and import the trace's jobs onto it with salus trace import --cluster cluster.yaml", shown, f.Name, f.Name)
		}
	}
	best, bestN := "", 0
	for _, f := range Formats() {
		if len(f.Columns) == 0 || strings.HasPrefix(format, f.Name) {
			continue
		}
		ok := true
		for _, c := range f.Columns {
			ok = ok && cols[c]
		}
		if ok && len(f.Columns) > bestN {
			best, bestN = f.Name, len(f.Columns)
		}
	}
	if best != "" {
		return fmt.Sprintf("header %s: a trace of --format %s, not of %s: give --format %s", shown, best, format, best)
	}
	var missing []string
	for _, c := range required {
		if !cols[c] {
			missing = append(missing, c)
		}
	}
	return fmt.Sprintf("header %s lacks %s: the header of --format %s names %s; is this the right --format?", shown, strings.Join(missing, ", "), format, strings.Join(required, ", "))
}

// maxTime is the latest time any row of the file gives in the columns, read in a
// pass of its own (malformed fields are left to the import's own pass).
func maxTime(path, format string, cols ...string) (float64, error) {
	s, err := openCSV(path, format, nil, nil)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	cut := math.Inf(-1)
	for {
		ok, err := s.next()
		if err != nil {
			return 0, err
		}
		if !ok {
			return cut, nil
		}
		for _, c := range cols {
			if v, ok, ferr := s.time(c); ferr == nil && ok {
				cut = math.Max(cut, v)
			}
		}
	}
}

func (s *csvSource) Close() error { return s.f.Close() }

// next reads the next row; it returns false at the end of the file.
func (s *csvSource) next() (bool, error) {
	if s.pending {
		s.pending = false
		return true, nil
	}
	rec, err := s.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, s.parseError(err)
	}
	s.rec = rec
	s.line, _ = s.r.FieldPos(0)
	return true, nil
}

func (s *csvSource) parseError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &workload.FieldError{File: s.file, Line: pe.Line, Msg: "not CSV: " + pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", s.file, err)
}

// has reports whether the file has the column.
func (s *csvSource) has(col string) bool { _, ok := s.col[col]; return ok }

// get is the row's field in the column, trimmed; "" when the column or the field
// is missing.
func (s *csvSource) get(col string) string {
	i, ok := s.col[col]
	if !ok || i >= len(s.rec) {
		return ""
	}
	return strings.TrimSpace(s.rec[i])
}

// bad is an error about the row's field.
func (s *csvSource) bad(col, msg string) *workload.FieldError {
	return &workload.FieldError{File: s.file, Line: s.line, Field: col, Msg: msg}
}

// short checks that the row has every column the header named.
func (s *csvSource) short() *workload.FieldError {
	if want := len(s.col); len(s.rec) < want {
		return &workload.FieldError{File: s.file, Line: s.line, Msg: fmt.Sprintf("%d fields where the %s header has %d columns", len(s.rec), s.format, want)}
	}
	return nil
}

// absent says whether a field holds no value: empty, or a missing-value marker.
func absent(v string) bool {
	switch strings.ToLower(v) {
	case "", "nan", "none", "null", "na", "n/a", "\\n":
		return true
	}
	return false
}

// number parses the column's field as a finite number; ok is false when it is
// absent.
func (s *csvSource) number(col string) (v float64, ok bool, err *workload.FieldError) {
	f := s.get(col)
	if absent(f) {
		return 0, false, nil
	}
	v, perr := strconv.ParseFloat(f, 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, s.bad(col, fmt.Sprintf("%q is not a number", f))
	}
	return v, true, nil
}

// count parses the column's field as a whole number >= 0 (absent: 0).
func (s *csvSource) count(col string) (int, *workload.FieldError) {
	v, _, err := s.number(col)
	if err != nil {
		return 0, err
	}
	if v < 0 || v != math.Trunc(v) || v > 1e9 {
		return 0, s.bad(col, fmt.Sprintf("%q is not a whole number >= 0", s.get(col)))
	}
	return int(v), nil
}

// dateLayouts are the date formats the sources write (UTC assumed: only
// differences matter).
// Acme's are local times with their offset (2023-03-01 00:18:22+08:00): read
// with it, so that they are Unix seconds too.
var dateLayouts = []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05", "2006-01-02 15:04:05 MST", "2006-01-02"}

// ParseTime reads a time as the sources write it: seconds (a number), or a date
// like "2017-10-03 02:56:49" (UTC) or "2023-03-01 00:18:22+08:00" (at its
// offset), which becomes Unix seconds.
func ParseTime(v string) (float64, error) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, nil
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return float64(t.Unix()), nil
		}
	}
	return 0, fmt.Errorf("%q is neither seconds nor a date like 2017-10-03 02:56:49", v)
}

// time parses the column's field with ParseTime; ok is false when it is absent.
func (s *csvSource) time(col string) (v float64, ok bool, err *workload.FieldError) {
	f := s.get(col)
	if absent(f) {
		return 0, false, nil
	}
	v, perr := ParseTime(f)
	if perr != nil {
		return 0, false, s.bad(col, perr.Error())
	}
	return v, true, nil
}

// eachRow runs row for every row of the file, stopping at the first error.
func (s *csvSource) eachRow(sink Sink, row func() (Record, string, *workload.FieldError)) error {
	defer s.Close()
	for {
		ok, err := s.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		var r Record
		var reason string
		ferr := s.short()
		if ferr == nil {
			r, reason, ferr = row()
		}
		switch {
		case ferr != nil:
			if err := sink.Bad(ferr); err != nil {
				return err
			}
		case reason != "":
			sink.Drop(reason)
		default:
			r.File, r.Line = s.file, s.line
			if err := sink.Record(r); err != nil {
				return err
			}
		}
	}
}
