package eval

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/live"
)

// These tests run real PyTorch training jobs (examples/train.py) under an
// in-process daemon. They are skipped where /usr/bin/python3 cannot import torch.

func needTorch(t *testing.T) live.PyTorch {
	t.Helper()
	if testing.Short() {
		t.Skip("real PyTorch jobs are skipped in -short mode")
	}
	p := live.PyTorch{Device: "cpu", Threads: 1}
	if err := p.Available(); err != nil {
		t.Skip(err)
	}
	return p
}

func mustPolicy(t *testing.T, name string) core.Policy {
	t.Helper()
	p, err := core.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// threeJobs: a long job, then a medium and a short one arriving behind it, all the
// same model so that declared times are in proportion to iterations.
func threeJobs() []TraceJob {
	const iterS = 0.03
	jobs := []TraceJob{
		{ID: "A", Model: "mlp", Iterations: 40, ArrivalS: 0},
		{ID: "B", Model: "mlp", Iterations: 16, ArrivalS: 0.1},
		{ID: "C", Model: "mlp", Iterations: 6, ArrivalS: 0.2},
	}
	for i := range jobs {
		jobs[i].DeclaredS = float64(jobs[i].Iterations) * iterS
	}
	return jobs
}

// iterStarts returns, in log order, the job of every iteration start.
func iterStarts(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if e.Kind == eventlog.IterStart {
			out = append(out, e.Job)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// between counts the iterations of job other that started after job's first
// iteration and before its last.
func between(seq []string, job, other string) int {
	first, last := slices.Index(seq, job), -1
	for i, j := range seq {
		if j == job {
			last = i
		}
	}
	n := 0
	for _, j := range seq[first+1 : last] {
		if j == other {
			n++
		}
	}
	return n
}

func TestRealPyTorchJobsFollowThePolicy(t *testing.T) {
	p := needTorch(t)
	for _, tc := range []struct {
		policy string
		check  func(t *testing.T, seq []string)
	}{
		{"srtf", func(t *testing.T, seq []string) {
			// Once the shortest job runs, nothing else runs until it is done.
			if n := between(seq, "C", "A") + between(seq, "C", "B"); n != 0 {
				t.Errorf("srtf ran %d iterations of longer jobs inside C's run: %v", n, seq)
			}
		}},
		{"fair", func(t *testing.T, seq []string) {
			// Least attained service first: the long job keeps getting turns while B runs.
			if n := between(seq, "B", "A"); n < 2 {
				t.Errorf("fair gave A only %d iterations while B ran; want them to take turns: %v", n, seq)
			}
		}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "live.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// A grace window far longer than a worker's gap between iterations on a
			// busy machine: the lane waits for the job that just ran to ask again, so
			// what the test sees is the policy's order, not the scheduler's luck.
			run, err := RunPyTorchTrace(ctx, p, threeJobs(), TraceDaemon{Policy: mustPolicy(t, tc.policy), CapacityMiB: 16384, LogPath: logPath, Grace: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(run.Order, ","); got != "C,B,A" {
				t.Errorf("%s completion order %s, want C,B,A (shortest first)", tc.policy, got)
			}
			if run.Result.Finished != 3 || run.Result.Lost != 0 {
				t.Errorf("finished %d, lost %d; want 3 and 0", run.Result.Finished, run.Result.Lost)
			}
			for job, l := range run.Loss {
				if !(l[1] < l[0]) {
					t.Errorf("job %s did not train: loss %.4f -> %.4f", job, l[0], l[1])
				}
			}
			seq := iterStarts(t, logPath)
			t.Logf("%s: iterations in start order %s", tc.policy, strings.Join(seq, ""))
			tc.check(t, seq)
		})
	}
}

func TestKilledPyTorchWorkerFreesItsSession(t *testing.T) {
	p := needTorch(t)
	d, err := live.StartDaemon(live.DaemonConfig{Policy: mustPolicy(t, "fair"), CapacityMiB: 16384})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Iterations of a few hundred ms, so the kill lands inside one.
	pr, err := p.Start(ctx, "victim", "train.py", "--model", "resnet18", "--batch-size", "64", "--iterations", "100",
		"--salus", d.Addr, "--job", "victim")
	if err != nil {
		t.Fatal(err)
	}
	<-pr.Ready()
	if err := pr.Go(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ss := d.Server.Sessions()
		if pr.Iterations() >= 1 && len(ss) == 1 && ss[0].State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job never got into an iteration (sessions %v)", ss)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := pr.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if !d.WaitNoSessions(5 * time.Second) {
		t.Fatalf("the killed job's session is still there after 5 s: %v", d.Server.Sessions())
	}
	t.Logf("session freed %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
	pr.Wait()
	res, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 1 || res.Finished != 0 {
		t.Errorf("lost %d, finished %d; want the killed job lost", res.Lost, res.Finished)
	}
}

func TestNormalCloseLeavesNoSession(t *testing.T) {
	p := needTorch(t)
	d, err := live.StartDaemon(live.DaemonConfig{Policy: mustPolicy(t, "srtf"), CapacityMiB: 16384})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := p.RunJob(ctx, "tidy", "train.py", "--model", "mlp", "--iterations", "4", "--declared-s", "1", "--salus", d.Addr, "--job", "tidy")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Iters) != 4 {
		t.Errorf("%d iterations printed, want 4", len(out.Iters))
	}
	if ss := d.Server.Sessions(); len(ss) != 0 {
		t.Errorf("sessions left after a normal exit: %v", ss)
	}
	res, err := d.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != 1 || res.Lost != 0 {
		t.Errorf("finished %d, lost %d; want 1 and 0", res.Finished, res.Lost)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	its := []live.IterLine{{S: 9}, {S: 1}, {S: 2}, {S: 3}}
	if got := medianIter(its, 1); got != 2 {
		t.Errorf("medianIter after one warm-up = %v, want 2", got)
	}
}
