package server

import (
	"fmt"
	"math"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/protocol"
)

// The bounds of the numbers a client may send (docs/protocol.md, "Numbers"). Every
// number is checked at the API edge, before it reaches the core or the event log:
// a value outside them is refused with bad_request naming the field, so nothing
// the daemon logs or adds up can overflow.
const (
	// MaxMiB bounds every memory figure (persistent_mib, ephemeral_mib, peak_mib):
	// 2^30 MiB, a pebibyte.
	MaxMiB = 1 << 30
	// MaxIterations bounds a job's planned iterations.
	MaxIterations = 1e12
	// Times in seconds (declared_s, startup_s, iter_s, duration_s) are bounded by
	// core.MaxSeconds; priorities by the int32 range.
)

// checkMiB refuses a memory figure that is not a finite number in [0, MaxMiB].
func checkMiB(op, job, field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > MaxMiB {
		return errorf(protocol.CodeBadRequest, "%s %q: field %s is %v: give a number of MiB between 0 and %d", op, job, field, v, MaxMiB)
	}
	return nil
}

// checkSeconds refuses a time that is not a finite number in [0, core.MaxSeconds].
func checkSeconds(op, job, field string, v float64) (time.Duration, error) {
	d, err := core.Seconds(v)
	if err != nil {
		return 0, errorf(protocol.CodeBadRequest, "%s %q: field %s: %v", op, job, field, err)
	}
	return d, nil
}

// checkOpen checks every number of an open request as the client sent it.
func checkOpen(req OpenRequest) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"persistent_mib", req.PersistentMiB}, {"ephemeral_mib", req.EphemeralMiB}} {
		if err := checkMiB("open", req.Job, f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"declared_s", req.DeclaredS}, {"startup_s", req.StartupS}, {"iter_s", req.IterS}} {
		if _, err := checkSeconds("open", req.Job, f.name, f.v); err != nil {
			return err
		}
	}
	if req.Batch < 0 || req.Batch > MaxBatch {
		return errorf(protocol.CodeBadRequest, "open %q: field batch_size is %d: give a whole number between 1 and %d, or leave it out", req.Job, req.Batch, MaxBatch)
	}
	if req.Iterations < 0 || req.Iterations > MaxIterations {
		return errorf(protocol.CodeBadRequest, "open %q: field iterations is %d: give a whole number between 0 and %g", req.Job, req.Iterations, float64(MaxIterations))
	}
	if req.Priority < math.MinInt32 || req.Priority > math.MaxInt32 {
		return errorf(protocol.CodeBadRequest, "open %q: field priority is %d: give a whole number within 32 bits (%d to %d)", req.Job, req.Priority, math.MinInt32, math.MaxInt32)
	}
	if req.GPUs < 0 {
		return errorf(protocol.CodeBadRequest, "open %q: field gpus is %d: give how many GPUs the job needs at once (1, or more for a gang), or leave it out", req.Job, req.GPUs)
	}
	if err := core.CheckShare(fmt.Sprintf("open %q: field share", req.Job), req.Share); err != nil {
		return errorf(protocol.CodeBadRequest, "%v", err)
	}
	if math.IsNaN(req.Demand) || req.Demand < 0 || req.Demand > 1 {
		return errorf(protocol.CodeBadRequest, "open %q: field demand is %v: give the share of the GPU one iteration keeps busy alone, above 0 and at most 1", req.Job, req.Demand)
	}
	return nil
}

// checkEnd checks the numbers of an end: the client's duration (a hint) and peak
// memory (informational), which are bounded all the same.
func checkEnd(job string, durS, peakMiB float64) error {
	if _, err := checkSeconds("end", job, "duration_s", durS); err != nil {
		return err
	}
	return checkMiB("end", job, "peak_mib", peakMiB)
}
