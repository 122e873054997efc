package traceimport

import (
	"math"

	"github.com/salusgo/salus/workload"
)

// Sia's (and Pollux's) simulator workloads (the sia-osdi22-artifact and
// petuum/adaptdl osdi21-artifact simulator's workloads/*.csv): one job a row, with
// a header name,time,application,num_replicas,batch_size; time is the submission
// in seconds. Their jobs run until their application's convergence target, so the
// rows carry no duration: the import takes a duration column where a file has one,
// else samples / batch_size iterations (the converted Philly workloads carry
// samples), else the length Options.Lengths (--length) gives the row's
// application; an application it does not size stops the import.
var siaColumns = []string{"name", "time", "application", "num_replicas"}

func init() {
	register(Format{
		Name:    "sia",
		Summary: "Sia / Pollux simulator workloads (name,time,application,num_replicas,batch_size[,duration][,samples]; --length sizes each application)",
		Args:    "FILE",
		Example: "salus trace import --format sia workload-1.csv --length cifar10=1800,imagenet=36000,ncf=600,deepspeech2=7200,yolov3=14400,bert=3600 --out sia1.csv",
		Columns: siaColumns,
		Read:    readSia,
	})
}

func readSia(files []string, sink Sink) error {
	s, err := openCSV(files[0], "sia", siaColumns, nil)
	if err != nil {
		return err
	}
	return s.eachRow(sink, func() (Record, string, *workload.FieldError) {
		r := Record{ID: s.get("name"), Model: s.get("application")}
		if r.ID == "" {
			return r, "", s.bad("name", "empty: every job needs a name")
		}
		var ferr *workload.FieldError
		if r.GPUs, ferr = s.count("num_replicas"); ferr != nil {
			return r, "", ferr
		}
		if r.GPUs == 0 {
			return r, DropNoGPU, nil
		}
		submit, ok, ferr := s.number("time")
		if ferr != nil {
			return r, "", ferr
		}
		if !ok {
			return r, "", s.bad("time", "empty: every job needs its submission time (seconds)")
		}
		r.SubmitS = submit
		batch, ferr := s.count("batch_size")
		if ferr != nil {
			return r, "", ferr
		}
		r.Batch = batch
		d, hasDuration, ferr := s.number("duration")
		if ferr != nil {
			return r, "", ferr
		}
		samples, hasSamples, ferr := s.number("samples")
		if ferr != nil {
			return r, "", ferr
		}
		switch {
		case hasDuration:
			if r.DurationS = d; d <= 0 {
				return r, DropNoDuration, nil
			}
		case hasSamples && batch > 0:
			if samples <= 0 {
				return r, DropNoDuration, nil
			}
			r.Iterations = int(math.Min(math.Ceil(samples/float64(batch)), 1e12))
		case r.Model == "":
			return r, "", s.bad("application", "empty: a row with no duration is sized by its application (--length)")
		default:
			r.LengthKey = r.Model
		}
		return r, "", nil
	})
}
