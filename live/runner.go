package live

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

// RunnerOptions configure Runner.
type RunnerOptions struct {
	// Device is the GPU the in-process daemon emulates; the trace's iteration
	// times are converted to it before the workers declare them.
	Device device.Device
	// TimeScale shrinks the trace (see Options.TimeScale); the results are
	// converted back to the trace's own time.
	TimeScale float64
	// Server, when not empty, is a running daemon's fast-path address to run on
	// instead of an in-process one; ServerLog is its event log, which the results
	// are computed from.
	Server, ServerLog string
	// Output receives the workers' output; nil discards it.
	Output io.Writer
	// GPUs is how many GPUs of Device the in-process daemon's node has (0: one);
	// GPUPlacement orders them for a job (nil: the core's default).
	GPUs         int
	GPUPlacement core.GPUPlacement
	// Hook, when not nil, is called with each run's Options before it starts
	// (to watch its workers, as a progress bar does) and returns what to call
	// when the run has ended.
	Hook func(scheme string, jobs int, o *Options) func()
}

// Outcome is one scheme's run on the live engine.
type Outcome struct {
	Result metrics.Result
	// Policy is the policy a running daemon (RunnerOptions.Server) reports in
	// its log; empty for an in-process daemon.
	Policy string
	// Log is the event log's path, when there is one.
	Log string
	// Emulation is what the in-process daemon measured of its emulated device;
	// nil with RunnerOptions.Server or after a failed run.
	Emulation *server.EmulationStats
}

// Runner returns what runs one scheme (named scheme, with policy p) on the live
// engine: the trace's workers against an in-process daemon that emulates
// o.Device, writing its event log to outDir/events-live-SCHEME.jsonl.gz when
// outDir is not empty, or against the daemon at o.Server. The results are in
// the trace's own time.
func Runner(o RunnerOptions) func(ctx context.Context, t *workload.Trace, scheme string, p core.Policy, outDir string) (Outcome, error) {
	return func(ctx context.Context, t *workload.Trace, scheme string, p core.Policy, outDir string) (Outcome, error) {
		var out Outcome
		t = o.Device.Emulate(t) // the workers declare the device's iteration times, not the P100's
		ro := Options{Policy: p, Device: o.Device, CapacityMiB: o.Device.CapacityMiB, TimeScale: o.TimeScale, Output: o.Output,
			GPUs: o.GPUs, GPUPlacement: o.GPUPlacement}
		if o.Hook != nil {
			done := o.Hook(scheme, len(t.Jobs), &ro)
			defer done()
		}
		if o.Server != "" {
			res, policy, err := RunRemote(ctx, t, o.Server, o.ServerLog, ro)
			out.Result, out.Policy, out.Log = Unscale(res, o.TimeScale), policy, o.ServerLog
			return out, err
		}
		if outDir != "" {
			out.Log = filepath.Join(outDir, "events-live-"+scheme+".jsonl.gz")
			ro.LogPath = out.Log
		}
		l, err := RunLive(ctx, t, ro)
		if err != nil {
			return out, fmt.Errorf("%s (live): %w", scheme, err)
		}
		out.Result = Unscale(l.Result, o.TimeScale)
		out.Emulation = &l.Emulation
		return out, nil
	}
}
