package traceimport

import "github.com/salusgo/salus/workload"

// The Tiresias simulator's sample workloads (github.com/SymbioticLab/Tiresias,
// simulator/60_job.csv and the like): one job a row, with a header; submit_time
// and duration in seconds; model_name a CNN, several of them in the catalog.
var tiresiasColumns = []string{"job_id", "num_gpu", "submit_time", "model_name", "duration"}

func init() {
	register(Format{
		Name:    "tiresias",
		Summary: "Tiresias sample workloads (SymbioticLab/Tiresias simulator/*.csv: job_id,num_gpu,submit_time,iterations,model_name,duration,interval)",
		Args:    "FILE",
		Example: "salus trace import --format tiresias 60_job.csv --out tiresias60.csv",
		Columns: tiresiasColumns,
		Read:    readTiresias,
	})
}

func readTiresias(files []string, sink Sink) error {
	s, err := openCSV(files[0], "tiresias", tiresiasColumns, nil)
	if err != nil {
		return err
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		r := Record{ID: s.get("job_id"), Model: s.get("model_name")}
		if r.ID == "" {
			return r, "", s.bad("job_id", "empty: every job needs an id")
		}
		var ferr *workload.FieldError
		if r.GPUs, ferr = s.count("num_gpu"); ferr != nil {
			return r, "", ferr
		}
		if r.GPUs == 0 {
			return r, DropNoGPU, nil
		}
		submit, ok, ferr := s.number("submit_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, "", s.bad("submit_time", "empty: every job needs its submission time (seconds)")
		}
		r.SubmitS = submit
		d, ok, ferr := s.number("duration")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, "", s.bad("duration", "empty: every job needs its duration (seconds)")
		}
		if r.DurationS = d; d <= 0 {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}
