package traceimport

import "github.com/salusgo/salus/workload"

// SenseTime's Helios traces (github.com/S-Lab-System-Group/HeliosData,
// data/CLUSTER/cluster_log.csv): one Slurm job a row, with a header; times are
// dates, duration is end_time - start_time in seconds.
var heliosColumns = []string{"job_id", "gpu_num", "state", "submit_time"}

func init() {
	register(Format{
		Name:    "helios",
		Summary: "SenseTime Helios (HeliosData, data/CLUSTER/cluster_log.csv)",
		Args:    "FILE",
		Example: "salus trace import --format helios Venus/cluster_log.csv --status COMPLETED --out venus.csv",
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
		r := Record{ID: s.get("job_id"), Status: s.get("state")}
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
		if d, ok, ferr := s.number("duration"); ferr != nil {
			return r, "", ferr
		} else if ok {
			r.DurationS = d
		} else {
			end, ended, ferr := s.time("end_time")
			if ferr != nil {
				return r, "", ferr
			}
			if !ended {
				return r, DropNoEnd, nil
			}
			r.DurationS = end - start
		}
		if r.DurationS <= 0 {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}
