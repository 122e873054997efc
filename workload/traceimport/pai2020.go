package traceimport

import (
	"fmt"
	"math"

	"github.com/salusgo/salus/workload"
)

// Alibaba PAI's 2020 trace (github.com/alibaba/clusterdata, cluster-trace-gpu-v2020):
// pai_task_table.csv and pai_job_table.csv, released without a header row (the
// columns are in the .header files beside them; a file with the header is taken
// too). One task a row; plan_gpu is per instance, in percent of a GPU.
var (
	paiTaskColumns = []string{"job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"}
	paiJobColumns  = []string{"job_name", "inst_id", "user", "status", "start_time", "end_time"}
)

func init() {
	register(Format{
		Name:     "pai2020",
		Summary:  "Alibaba PAI 2020 (clusterdata cluster-trace-gpu-v2020): pai_task_table.csv, optionally pai_job_table.csv",
		Args:     "TASKS [JOBS]",
		MaxFiles: 2,
		Example:  "salus trace import --format pai2020 pai_task_table.csv pai_job_table.csv --status Terminated --out pai.csv",
		Columns:  paiTaskColumns,
		Shares:   true,
		Read:     readPAI2020,
	})
}

// paiJob is what the task import takes from the job table: submission and status.
type paiJob struct {
	submit float64
	status string
}

func readPAI2020(files []string, sink Sink) error {
	var jobs map[string]paiJob
	if len(files) == 2 {
		var err error
		if jobs, err = readPAIJobs(files[1], sink); err != nil {
			return err
		}
	}
	s, err := openCSV(files[0], "pai2020 task table", paiTaskColumns, paiTaskColumns)
	if err != nil {
		return err
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		job, task := s.get("job_name"), s.get("task_name")
		r := Record{ID: job + "/" + task, Status: s.get("status"), GPUType: s.get("gpu_type")}
		if job == "" {
			return r, "", s.bad("job_name", "empty: every task names its job")
		}
		if task == "" {
			return r, "", s.bad("task_name", "empty: every task has a name")
		}
		pct, _, ferr := s.number("plan_gpu")
		if ferr != nil {
			return r, "", ferr
		}
		if pct < 0 {
			return r, "", s.bad("plan_gpu", fmt.Sprintf("%v: GPUs are requested in percent, >= 0", pct))
		}
		insts, ferr := s.count("inst_num")
		if ferr != nil {
			return r, "", ferr
		}
		if pct == 0 || insts == 0 {
			return r, DropNoGPU, nil
		}
		perInst := math.Ceil(pct / 100)
		r.GPUs = int(perInst) * insts
		r.Share = pct / 100 / perInst
		start, started, ferr := s.time("start_time")
		if ferr != nil {
			return r, "", ferr
		}
		r.SubmitS = start
		if j, ok := jobs[job]; ok {
			r.SubmitS, r.Status = j.submit, j.status
		} else if jobs != nil {
			return r, DropNoJob, nil
		}
		// Empty is never started; 0 is a time like any other.
		if !started {
			return r, DropNeverRan, nil
		}
		end, ended, ferr := s.time("end_time")
		if ferr != nil {
			return r, "", ferr
		}
		r.LastS = math.Max(start, r.SubmitS)
		if !ended {
			r.Censored, r.Open, r.OpenS = true, true, start
			return r, "", nil
		}
		r.LastS = math.Max(r.LastS, end)
		if r.DurationS = end - start; r.DurationS <= 0 {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}

// DropNoJob is the reason for a task whose job the job table lacks.
const DropNoJob = "task of a job the job table lacks"

// readPAIJobs loads the job table's submission times and statuses by job name.
func readPAIJobs(path string, sink Sink) (map[string]paiJob, error) {
	s, err := openCSV(path, "pai2020 job table", paiJobColumns, paiJobColumns)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	jobs := map[string]paiJob{}
	for {
		ok, err := s.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return jobs, nil
		}
		ferr := s.short()
		name := s.get("job_name")
		var submit float64
		if ferr == nil {
			var started bool
			submit, started, ferr = s.time("start_time")
			if ferr == nil && !started {
				ferr = s.bad("start_time", "empty: the job table gives every job's submission time")
			}
		}
		if ferr == nil && name == "" {
			ferr = s.bad("job_name", "empty: every job has a name")
		}
		if ferr != nil {
			ferr.Msg += " (in the job table)"
			if err := sink.Bad(ferr); err != nil {
				return nil, err
			}
			continue
		}
		jobs[name] = paiJob{submit: submit, status: s.get("status")}
	}
}
