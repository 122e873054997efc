package live

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
)

// TestLivePriorityInference runs, on a daemon that emulates a P100 under fcfs
// (one lane, requests in the order made), four training jobs of 50 ms iterations
// at priority 1 and an inference job at priority 0 that makes 30 requests of
// 5 ms, 20 ms apart, from in-process clients. Each request of the inference job
// must wait, on average, less than two of the training iterations before its
// iteration starts (measured by the client: from asking to being granted). Under
// request order without priorities it would queue behind up to four of them.
func TestLivePriorityInference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon for about two seconds")
	}
	pol, err := core.Lookup("fcfs")
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	d, err := StartDaemon(DaemonConfig{Policy: pol, CapacityMiB: 10000, Emulate: &dev, Trace: "priority"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const trainIter = 50 * time.Millisecond
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	started := make(chan struct{}, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- train(ctx, d.FastAddr(), fmt.Sprintf("train%d", i), trainIter, &stop, started)
		}()
	}
	for range 4 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the training jobs did not start")
		}
	}
	mean, err := infer(ctx, d.FastAddr(), 30, 5*time.Millisecond, 20*time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		if e != nil {
			t.Error(e)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("priority-0 inference among 4 priority-1 training jobs (fcfs, %v iterations): mean wait %v", trainIter, mean)
	if mean > 2*trainIter {
		t.Errorf("mean wait %v before an inference request's iteration starts: want at most 2 training iterations (%v)", mean, 2*trainIter)
	}
}

// train runs a priority-1 training job of iterations of iter until stop is set.
func train(ctx context.Context, addr, id string, iter time.Duration, stop *atomic.Bool, started chan<- struct{}) error {
	s, err := client.Open(ctx, addr, client.Options{Job: id, PersistentMiB: 500, EphemeralMiB: 500, Priority: 1, Kind: "train",
		Iterations: 1000000, IterS: iter.Seconds(), Demand: 1, DeclaredS: 1000})
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	defer s.Abort()
	if err := s.Begin(); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	started <- struct{}{}
	for !stop.Load() {
		if !s.Emulated || s.Alone() {
			client.Wait(iter)
		}
		if err := s.Next(iter, 0); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
	}
	if err := s.End(iter, 0); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	return s.Close(true)
}

// infer runs a priority-0 inference job of requests iterations of iter, pause
// apart, and returns its mean wait from asking for an iteration to its start.
func infer(ctx context.Context, addr string, requests int, iter, pause time.Duration) (time.Duration, error) {
	s, err := client.Open(ctx, addr, client.Options{Job: "infer", PersistentMiB: 100, EphemeralMiB: 100, Priority: 0, Kind: "infer",
		Iterations: requests, IterS: iter.Seconds(), Demand: 0.1, DeclaredS: float64(requests) * iter.Seconds()})
	if err != nil {
		return 0, err
	}
	defer s.Abort()
	var waited time.Duration
	for range requests {
		asked := time.Now()
		if err := s.Begin(); err != nil {
			return 0, err
		}
		waited += time.Since(asked)
		if !s.Emulated || s.Alone() {
			client.Wait(iter)
		}
		if err := s.End(iter, 0); err != nil {
			return 0, err
		}
		client.Wait(pause)
	}
	return waited / time.Duration(requests), s.Close(true)
}
