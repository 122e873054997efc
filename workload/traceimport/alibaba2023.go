package traceimport

import (
	"fmt"

	"github.com/salusgo/salus/workload"
)

// Alibaba's 2023 GPU sharing trace (github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv): one pod a row, with a header.
// Times are seconds; gpu_milli is the share of each GPU in thousandths.
var alibaba2023Columns = []string{"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"}

func init() {
	register(Format{
		Name:    "alibaba2023",
		Summary: "Alibaba GPU sharing trace 2023 (clusterdata cluster-trace-gpu-v2023, openb_pod_list_*.csv)",
		Args:    "FILE",
		Example: "salus trace import --format alibaba2023 openb_pod_list_default.csv --out openb.csv",
		Read:    readAlibaba2023,
	})
}

func readAlibaba2023(files []string, sink Sink) error {
	s, err := openCSV(files[0], "alibaba2023", alibaba2023Columns, nil)
	if err != nil {
		return err
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		r := Record{ID: s.get("name"), GPUType: s.get("gpu_spec"), Status: s.get("pod_phase")}
		if r.ID == "" {
			return r, "", s.bad("name", "empty: every pod needs a name")
		}
		var ferr *workload.FieldError
		if r.GPUs, ferr = s.count("num_gpu"); ferr != nil {
			return r, "", ferr
		}
		milli, _, ferr := s.number("gpu_milli")
		if ferr != nil {
			return r, "", ferr
		}
		if milli < 0 || milli > 1000 {
			return r, "", s.bad("gpu_milli", fmt.Sprintf("%v: the share of a GPU is in thousandths, 0 to 1000", milli))
		}
		if r.GPUs == 0 {
			return r, DropNoGPU, nil
		}
		// gpu_milli details the share of a GPU-sharing pod; a pod of whole GPUs
		// that leaves it empty or 0 gets them whole.
		r.Share = milli / 1000
		created, ok, ferr := s.time("creation_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, "", s.bad("creation_time", "empty: every pod needs its creation time (seconds)")
		}
		r.SubmitS = created
		scheduled, ok, ferr := s.time("scheduled_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok || scheduled <= 0 {
			return r, DropNeverRan, nil
		}
		deleted, ok, ferr := s.time("deletion_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok || deleted <= 0 {
			return r, DropNoEnd, nil
		}
		if r.DurationS = deleted - scheduled; r.DurationS <= 0 {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}
