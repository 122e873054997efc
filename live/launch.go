package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// Command is the command line of one worker process: an emulated job (salus
// worker: EmulatedCommand) or a real PyTorch one (examples/*.py: PyTorch.Command).
// Every worker process of the live engine is started from one.
type Command struct {
	Job  string
	Path string
	Args []string
	// Env is added to the process's environment.
	Env []string
}

// Exec returns the process to run, not started; ctx kills it.
func (c Command) Exec(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	return cmd
}

// EmulatedCommand runs job j as `exe worker ...` against the daemon at addr, its
// times scaled, opening its session at openAt (zero: at once).
func EmulatedCommand(exe string, j workload.Job, addr string, scale float64, openAt time.Time, env []string) Command {
	return Command{Job: j.ID, Path: exe, Args: append([]string{"worker"}, WorkerArgs(j, addr, scale, openAt)...), Env: env}
}

// Launch starts one worker process per job of t against the daemon at addr, each
// at its (scaled) arrival time, and waits for all of them. On the in-process
// daemon (RunLive), jobs that arrive at the same instant arrive in the trace's
// order, as the simulator takes them: each worker waits to open its session
// until the daemon has logged the arrival of the one before (or that one's
// worker has ended), which the launcher tells it by closing a pipe.
func Launch(ctx context.Context, t *workload.Trace, addr string, o Options) error {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("live: cannot find this program to run workers: %w; pass the salus binary", err)
		}
	}
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	jobs := slices.Clone(t.Jobs)
	slices.SortStableFunc(jobs, func(a, b workload.Job) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	t0 := time.Now().Add(o.Prelaunch)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	outMu := &sync.Mutex{}
	var after *os.File // the read end of the pipe from the job before, released at its arrival
	defer func() {
		if after != nil {
			after.Close()
		}
	}()
	for k, j := range jobs {
		openAt := t0.Add(time.Duration(j.ArrivalS * o.TimeScale * float64(time.Second)))
		select {
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case <-time.After(time.Until(openAt.Add(-o.Prelaunch))):
		}
		c := EmulatedCommand(exe, j, addr, o.TimeScale, openAt, o.Env)
		var files []*os.File // the worker's descriptors from 3 on
		if after != nil {
			files = append(files, after)
			c.Args = append(c.Args, "--after-fd", strconv.Itoa(2+len(files)))
		}
		var next, release *os.File // the next job's after, and what releases it
		// Every job opens after the one before it has arrived, as the trace orders
		// them: at the same instant (which the simulator takes in trace order), or a
		// few milliseconds apart (which a loaded machine's process start-ups swap).
		if k+1 < len(jobs) && chainable && o.arrivals != nil {
			// Without a pipe (out of descriptors) the two race, as without chaining.
			if r, w, err := os.Pipe(); err == nil {
				next, release = r, w
			}
		}
		cmd := c.Exec(ctx)
		cmd.ExtraFiles = files
		cmd.Stdout = &syncWriter{mu: outMu, w: out}
		cmd.Stderr = cmd.Stdout
		err := cmd.Start()
		for _, f := range files {
			f.Close() // the worker holds its own copies; a worker that did not start frees the next job
		}
		after = next
		exited := make(chan struct{})
		if release != nil {
			go func() {
				select {
				case <-o.arrivals.of(j.ID):
				case <-exited:
				}
				release.Close()
			}()
		}
		if err != nil {
			close(exited)
			mu.Lock()
			errs = append(errs, fmt.Errorf("job %s: start worker %s: %w", j.ID, exe, err))
			mu.Unlock()
			continue
		}
		if o.OnStart != nil {
			o.OnStart(j.ID, cmd.Process)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			close(exited)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("job %s: worker: %w", j.ID, err))
				mu.Unlock()
			}
			if o.OnExit != nil {
				o.OnExit(j.ID, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// arrivals is a sink of the daemon's events that tells when each job arrived.
type arrivals struct {
	mu   sync.Mutex
	chs  map[string]chan struct{}
	seen map[string]bool
}

func newArrivals() *arrivals {
	return &arrivals{chs: map[string]chan struct{}{}, seen: map[string]bool{}}
}

// of is closed once job has arrived.
func (a *arrivals) of(job string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ch(job)
}

func (a *arrivals) ch(job string) chan struct{} {
	c, ok := a.chs[job]
	if !ok {
		c = make(chan struct{})
		a.chs[job] = c
	}
	return c
}

// Emit notes an arrival.
func (a *arrivals) Emit(e eventlog.Event) {
	if e.Kind != eventlog.Arrive {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seen[e.Job] {
		a.seen[e.Job] = true
		close(a.ch(e.Job))
	}
}

// chainable is whether worker processes inherit descriptors beyond stderr
// (exec.Cmd.ExtraFiles), which ordering simultaneous arrivals needs.
const chainable = runtime.GOOS != "windows"

// WorkerArgs are the arguments of `salus worker` that run job j, its times scaled.
// They carry the profile's compute demand, for a daemon that emulates the GPU.
func WorkerArgs(j workload.Job, addr string, scale float64, openAt time.Time) []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	p := j.Profile
	args := []string{
		"--server", addr, "--job", j.ID, "--iterations", strconv.Itoa(j.Iterations),
		"--persistent-mib", f(p.PersistentMiB), "--ephemeral-mib", f(p.EphemeralMiB),
		"--iter-s", f(p.IterS * scale), "--startup-s", f(p.StartupS * scale),
		"--declared-s", f(j.Declared() * scale),
	}
	if p.Demand > 0 {
		args = append(args, "--demand", f(p.Demand))
	}
	if p.Model != "" {
		args = append(args, "--model-name", p.Model)
	}
	if j.Batch > 0 {
		args = append(args, "--batch", strconv.Itoa(j.Batch))
	}
	if j.Priority != 0 {
		args = append(args, "--priority", strconv.Itoa(j.Priority))
	}
	if j.Share != 0 {
		args = append(args, "--share", f(j.Share))
	}
	if j.Kind != "" {
		args = append(args, "--kind", j.Kind)
	}
	if j.GPUs > 1 {
		args = append(args, "--gpus", strconv.Itoa(j.GPUs))
	}
	if j.PauseS > 0 {
		args = append(args, "--pause-s", f(j.PauseS*scale))
	}
	if !openAt.IsZero() {
		args = append(args, "--open-at", strconv.FormatInt(openAt.UnixNano(), 10))
	}
	return args
}
