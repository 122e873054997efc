package traceimport

import (
	"math"

	"github.com/salusgo/salus/workload"
)

// SenseTime's Helios traces (github.com/S-Lab-System-Group/HeliosData,
// data/CLUSTER/cluster_log.csv): one Slurm job a row, with a header; times are
// dates, duration is end_time - start_time in seconds. Acme (AcmeTrace,
// data/job_trace/trace_seren.csv and trace_kalos.csv) has the same columns and
// more, its dates with their offset: 2023-03-01 00:18:22+08:00.
var heliosColumns = []string{"job_id", "gpu_num", "submit_time"}

func init() {
	register(Format{
		Name:    "helios",
		Summary: "SenseTime Helios (HeliosData, data/CLUSTER/cluster_log.csv) and Acme (AcmeTrace, trace_seren.csv, trace_kalos.csv)",
		Args:    "FILE",
		Example: "salus trace import --format helios Venus/cluster_log.csv --status COMPLETED --out venus.csv",
		Columns: heliosColumns,
		Read:    readHelios,
	})
}

func readHelios(files []string, sink Sink) error {
	s, err := openCSV(files[0], "helios", heliosColumns, nil)
	if err != nil {
		return err
	}
	if !s.has("duration") && !(s.has("start_time") && s.has("end_time")) {
		s.Close()
		return &workload.FieldError{File: s.file, Line: s.line, Field: "duration",
			Msg: "missing column: a helios trace needs duration, or start_time and end_time"}
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		r := Record{ID: s.get("job_id"), Status: s.get("state"), StatusMissing: !s.has("state")}
		if r.ID == "" {
			return r, "", s.bad("job_id", "empty: every job needs an id")
		}
		var ferr *workload.FieldError
		if r.GPUs, ferr = s.count("gpu_num"); ferr != nil {
			return r, "", ferr
		}
		if r.GPUs == 0 {
			return r, DropNoGPU, nil
		}
		submit, ok, ferr := s.time("submit_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, "", s.bad("submit_time", "empty: every job needs its submission time")
		}
		r.SubmitS = submit
		start, started, ferr := s.time("start_time")
		if ferr != nil {
			return r, "", ferr
		}
		if s.has("start_time") && !started {
			return r, DropNeverRan, nil
		}
		r.LastS = math.Max(submit, start)
		end, ended, ferr := s.time("end_time")
		if ferr != nil {
			return r, "", ferr
		}
		if ended {
			r.LastS = math.Max(r.LastS, end)
		}
		d, hasDuration, ferr := s.number("duration")
		if ferr != nil {
			return r, "", ferr
		}
		switch {
		case s.has("end_time") && !ended:
			// Still running when the trace was cut (Acme's RUNNING jobs): from its
			// start to the cut.
			r.Censored, r.Open, r.OpenS = true, true, start
			return r, "", nil
		case hasDuration:
			r.DurationS = d
		case !ended:
			r.Censored, r.Open, r.OpenS = true, true, start
			return r, "", nil
		default:
			r.DurationS = end - start
		}
		if r.DurationS <= 0 {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}
