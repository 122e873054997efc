package traceimport

import (
	"fmt"
	"math"
	"strings"

	"github.com/salusgo/salus/workload"
)

// Alibaba's 2023 GPU sharing trace (github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv): one pod a row, with a header.
// Times are seconds from the trace's start (the first pod is created at 0);
// gpu_milli is the share of each GPU in thousandths; qos is the pod's class.
var alibaba2023Columns = []string{"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"}

func init() {
	register(Format{
		Name:       "alibaba2023",
		Summary:    "Alibaba GPU sharing trace 2023 (clusterdata cluster-trace-gpu-v2023, openb_pod_list_*.csv)",
		Args:       "FILE",
		Example:    "salus trace import --format alibaba2023 openb_pod_list_default.csv --out openb.csv",
		Columns:    alibaba2023Columns,
		Priorities: true,
		Shares:     true,
		GPUModels:  true,
		Queues:     true,
		Read:       readAlibaba2023,
	})
}

// qosPriority is the priority of a pod's QoS class, smaller more urgent: latency
// sensitive services first, then Kubernetes's Guaranteed, Burstable and best
// effort classes, in Kubernetes's order.
var qosPriority = map[string]int{"ls": 0, "guaranteed": 1, "burstable": 2, "be": 3, "besteffort": 3}

func readAlibaba2023(files []string, sink Sink) error {
	// The cut: the latest time of the file. A pod still Running there, or with
	// no deletion time, was cut, not ended.
	cut, err := maxTime(files[0], "alibaba2023", "creation_time", "deletion_time", "scheduled_time")
	if err != nil {
		return err
	}
	s, err := openCSV(files[0], "alibaba2023", alibaba2023Columns, nil)
	if err != nil {
		return err
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		r := Record{ID: s.get("name"), GPUType: s.get("gpu_spec"), Status: s.get("pod_phase"), QoS: s.get("qos"),
			StatusMissing: !s.has("pod_phase")}
		if r.ID == "" {
			return r, "", s.bad("name", "empty: every pod needs a name")
		}
		if s.has("qos") {
			p, ok := qosPriority[strings.ToLower(r.QoS)]
			if !ok {
				return r, "", s.bad("qos", fmt.Sprintf("%q is no QoS class of the trace's: LS, Guaranteed, Burstable, BE", r.QoS))
			}
			r.Priority = p
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
		// 0 is a time: the trace's clock starts at 0, with its first pod.
		scheduled, ok, ferr := s.time("scheduled_time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, DropNeverRan, nil
		}
		deleted, ended, ferr := s.time("deletion_time")
		if ferr != nil {
			return r, "", ferr
		}
		r.LastS = math.Max(created, scheduled)
		// The trace's own scheduling delay, which a study puts beside the simulated one.
		r.QueueS, r.Queued = math.Max(0, scheduled-created), true
		switch {
		case !ended:
			r.Censored, r.DurationS = true, cut-scheduled
		case strings.EqualFold(r.Status, "Running") && deleted >= cut:
			r.Censored, r.DurationS = true, deleted-scheduled
		default:
			r.DurationS = deleted - scheduled
		}
		if ended {
			r.LastS = math.Max(r.LastS, deleted)
		}
		if r.DurationS <= 0 && !r.Censored {
			return r, DropNoDuration, nil
		}
		return r, "", nil
	})
}
