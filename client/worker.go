package client

import (
	"context"
	"fmt"
	"time"
)

// Worker is an emulated training job for machines without a GPU: it opens a
// session and runs its iterations of Options.IterS seconds (already scaled). When
// the daemon emulates the GPU (the open reply says so) the worker spends no time
// itself: it ends each iteration as soon as it is granted, and the daemon answers
// when its device model has done the work, beside whatever else runs. Otherwise
// each iteration takes IterS of wall time (a sleep finished by a short spin, so
// iterations of a few milliseconds stay accurate).
type Worker struct {
	Options
	// Addr is the daemon's fast-path address (see Dial).
	Addr string
	// OpenAt, when set, is the wall-clock time to open the session at: a launcher
	// starts the process a little early so process start-up does not skew arrivals.
	OpenAt time.Time
	// PauseS is, for an inference job, the pause after each request before it asks
	// for the next, seconds (already scaled): the job holds no iteration meanwhile,
	// so the daemon may give its lane to others, as the simulator does.
	PauseS float64
	// BeforeOpen, when set, is called just before the session opens (after
	// OpenAt): a launcher holds there the jobs that arrive at the same instant
	// until the one before has arrived, so that they arrive in the trace's order.
	BeforeOpen func()
	// Log, when set, is told what the worker does.
	Log func(format string, args ...any)
}

// spinWindow is how much of each wait is spun rather than slept: sleeps overshoot
// by tens of microseconds, which adds up over thousands of short iterations.
const spinWindow = 2 * time.Millisecond

// Wait blocks for d: a sleep, then a spin for the last spinWindow.
func Wait(d time.Duration) { WaitUntil(time.Now().Add(d)) }

// WaitUntil blocks until t.
func WaitUntil(t time.Time) {
	if d := time.Until(t) - spinWindow; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
	}
}

// Run runs the job: open, start-up (on the GPU after admission when the policy says
// so, otherwise overlapping the wait for admission), the iterations, close.
func (w *Worker) Run(ctx context.Context) error {
	if w.Iterations <= 0 {
		return fmt.Errorf("worker %q: %d iterations: give at least 1", w.Job, w.Iterations)
	}
	if !w.OpenAt.IsZero() {
		WaitUntil(w.OpenAt)
	}
	if w.BeforeOpen != nil {
		w.BeforeOpen()
	}
	arrived := time.Now()
	s, err := Open(ctx, w.Addr, w.Options)
	if err != nil {
		return fmt.Errorf("worker %q: %w", w.Job, err)
	}
	defer s.Abort()
	startup := time.Duration(w.StartupS * float64(time.Second))
	if s.StartupOnGPU {
		Wait(startup)
	} else {
		WaitUntil(arrived.Add(startup))
	}
	if w.Log != nil {
		gpu := s.VisibleDevices()
		if gpu == "" {
			gpu = "-" // a daemon that does not say
		}
		w.Log("worker %s: admitted to lane %d (%.0f MiB) on GPU %s under %s (emulated GPU: %v)", w.Job, s.Lane, s.LaneMiB, gpu, s.Policy, s.Emulated)
	}
	iter := time.Duration(w.IterS * float64(time.Second))
	pause := time.Duration(w.PauseS * float64(time.Second))
	if err := s.Begin(); err != nil {
		return fmt.Errorf("worker %q: iteration 1: %w", w.Job, err)
	}
	for i := 1; ; i++ {
		if !s.Emulated || s.Alone() { // alone, nobody emulates the GPU: the worker spends the time
			Wait(iter)
		}
		// Report the emulated GPU time, as a real job would report what the device
		// did, not the scheduling noise of this machine.
		if i == w.Iterations {
			if err := s.End(iter, 0); err != nil {
				return fmt.Errorf("worker %q: iteration %d: %w", w.Job, i, err)
			}
			break
		}
		if err := ctx.Err(); err != nil {
			s.End(iter, 0)
			s.Close(false)
			return fmt.Errorf("worker %q: stopped after %d iterations: %w", w.Job, i, err)
		}
		if pause > 0 {
			// Between requests the job holds no iteration: end this one, wait for
			// the next request, then ask for its iteration.
			if err := s.EndRelease(iter, 0); err != nil {
				return fmt.Errorf("worker %q: iteration %d: %w", w.Job, i, err)
			}
			Wait(pause)
			if err := s.Begin(); err != nil {
				return fmt.Errorf("worker %q: iteration %d: %w", w.Job, i+1, err)
			}
			continue
		}
		if err := s.Next(iter, 0); err != nil {
			return fmt.Errorf("worker %q: iteration %d: %w", w.Job, i+1, err)
		}
	}
	if err := s.Close(true); err != nil {
		return fmt.Errorf("worker %q: close: %w", w.Job, err)
	}
	return nil
}
