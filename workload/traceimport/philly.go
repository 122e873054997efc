package traceimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/salusgo/salus/workload"
)

// Microsoft's Philly trace (github.com/msr-fiddle/philly-traces, trace-data's
// cluster_job_log): one JSON array of jobs, read a job at a time. A job's GPUs are
// those of its last attempt; it ran for the sum of its attempts' spans.

func init() {
	register(Format{
		Name:    "philly",
		Summary: "Microsoft Philly (philly-traces, cluster_job_log: a JSON array of jobs)",
		Args:    "FILE",
		Example: "salus trace import --format philly cluster_job_log --since '2017-10-03 00:00:00' --until '2017-10-04 00:00:00' --out philly.csv",
		Read:    readPhilly,
	})
}

type phillyJob struct {
	Status    string  `json:"status"`
	JobID     string  `json:"jobid"`
	Submitted *string `json:"submitted_time"`
	Attempts  []struct {
		Start  *string `json:"start_time"`
		End    *string `json:"end_time"`
		Detail []struct {
			GPUs []string `json:"gpus"`
		} `json:"detail"`
	} `json:"attempts"`
}

func readPhilly(files []string, sink Sink) error {
	path := files[0]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := &lineReader{r: bufio.NewReaderSize(f, 1<<16), curLine: 1}
	dec := json.NewDecoder(lr)
	fail := func(msg string) error {
		return &workload.FieldError{File: path, Line: lr.lineAt(dec.InputOffset()), Msg: msg}
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return &workload.FieldError{File: path, Line: 1, Msg: "empty file: a philly cluster_job_log is a JSON array of jobs"}
	}
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '[' {
		return fail("not a JSON array: a philly cluster_job_log is [ {\"jobid\": ..., \"attempts\": [...]}, ... ]")
	}
	for dec.More() {
		start := dec.InputOffset()
		var j phillyJob
		err := dec.Decode(&j)
		line := lr.lineAt(start + leadingSpace(lr, start))
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			// The value was read whole: the row is bad, the stream goes on.
			if err := sink.Bad(&workload.FieldError{File: path, Line: line, Field: te.Field, Msg: fmt.Sprintf("a JSON %s where the job needs a %s", te.Value, te.Type)}); err != nil {
				return err
			}
			continue
		case err != nil:
			return fail("not JSON: " + err.Error())
		}
		r, reason, ferr := phillyRecord(j, path, line)
		switch {
		case ferr != nil:
			if err := sink.Bad(ferr); err != nil {
				return err
			}
		case reason != "":
			sink.Drop(reason)
		default:
			r.File, r.Line = path, line
			if err := sink.Record(r); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("the job array does not end: " + err.Error())
	}
	return nil
}

func phillyRecord(j phillyJob, path string, line int) (Record, string, *workload.FieldError) {
	r := Record{ID: j.JobID, Status: j.Status}
	bad := func(field, msg string) *workload.FieldError {
		return &workload.FieldError{File: path, Line: line, Field: field, Msg: msg}
	}
	if r.ID == "" {
		return r, "", bad("jobid", "empty: every job needs an id")
	}
	if j.Submitted == nil || absent(*j.Submitted) {
		return r, "", bad("submitted_time", "missing: every job needs its submission time")
	}
	var err error
	if r.SubmitS, err = ParseTime(*j.Submitted); err != nil {
		return r, "", bad("submitted_time", err.Error())
	}
	r.LastS = r.SubmitS
	if len(j.Attempts) == 0 {
		return r, DropNeverRan, nil
	}
	for _, d := range j.Attempts[len(j.Attempts)-1].Detail {
		r.GPUs += len(d.GPUs)
	}
	if r.GPUs == 0 {
		return r, DropNoGPU, nil
	}
	for i, a := range j.Attempts {
		last := i == len(j.Attempts)-1
		if a.Start == nil || absent(*a.Start) {
			if last {
				return r, DropNeverRan, nil
			}
			continue // an attempt the log lost: it adds nothing
		}
		start, err := ParseTime(*a.Start)
		if err != nil {
			return r, "", bad(fmt.Sprintf("attempts[%d].start_time", i), err.Error())
		}
		r.LastS = math.Max(r.LastS, start)
		if a.End == nil || absent(*a.End) {
			if last {
				// Still running when the log was cut: from its start to the cut.
				r.Censored, r.Open, r.OpenS = true, true, start
				return r, "", nil
			}
			continue
		}
		end, err := ParseTime(*a.End)
		if err != nil {
			return r, "", bad(fmt.Sprintf("attempts[%d].end_time", i), err.Error())
		}
		r.LastS = math.Max(r.LastS, end)
		if end > start {
			r.DurationS += end - start
		}
	}
	if r.DurationS <= 0 {
		return r, DropNoDuration, nil
	}
	return r, "", nil
}

// leadingSpace is how many separator bytes (white space and the comma between
// values) follow offset in what lr still holds, so that a job's line is where its
// object begins.
func leadingSpace(lr *lineReader, offset int64) int64 {
	i := offset - lr.bufStart
	if i < 0 {
		return 0
	}
	n := int64(0)
	for ; i+n < int64(len(lr.buf)); n++ {
		if c := lr.buf[i+n]; c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != ',' {
			break
		}
	}
	return n
}

// lineReader passes bytes through and remembers the last few MiB of them, so that
// a decoder's byte offset can be turned into a line number. Offsets asked for
// grow, so it counts newlines from the last one asked for on.
type lineReader struct {
	r        io.Reader
	buf      []byte // the bytes from bufStart on
	bufStart int64
	cur      int64 // the offset lineAt last counted to
	curLine  int   // the line at cur
}

// lineWindow is how many bytes lineReader keeps, at least (at most twice that).
var lineWindow = 4 << 20

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if len(l.buf)+n > 2*lineWindow {
		drop := int64(len(l.buf) - lineWindow)
		if l.cur < l.bufStart+drop {
			l.curLine += bytes.Count(l.buf[l.cur-l.bufStart:drop], []byte{'\n'})
			l.cur = l.bufStart + drop
		}
		l.bufStart += drop
		l.buf = append(l.buf[:0], l.buf[drop:]...)
	}
	l.buf = append(l.buf, p[:n]...)
	return n, err
}

// lineAt is the line of the byte at offset, or 0 when it is no longer held.
// Counting moves forward from the last offset asked for.
func (l *lineReader) lineAt(offset int64) int {
	switch {
	case offset < l.bufStart || offset > l.bufStart+int64(len(l.buf)):
		return 0
	case offset < l.cur:
		return l.curLine - bytes.Count(l.buf[offset-l.bufStart:l.cur-l.bufStart], []byte{'\n'})
	}
	l.curLine += bytes.Count(l.buf[l.cur-l.bufStart:offset-l.bufStart], []byte{'\n'})
	l.cur = offset
	return l.curLine
}
