package main

import (
	"context"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"path/filepath"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
)

// TestSIGTERMRestartKeepsTheJob: a polite restart for an upgrade costs no
// training run. SIGTERM to `salus serve --events` with a job training: the job's
// client is told "restarting", the journal keeps its session open (nothing is
// logged lost), a daemon started on the journal restores it, and the client
// resumes and finishes with its iteration count intact (every iteration of its
// loop ran once). With --on-stop end the same SIGTERM ends the job.
func TestSIGTERMRestartKeepsTheJob(t *testing.T) {
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl")
	args := []string{"--policy", "fair", "--events", events, "--recover-window", "30s"}
	a := startDaemonProc(t, sock, args...)
	const iters = 80
	job := startTraining(sock, iters)
	deadline := time.Now().Add(30 * time.Second)
	for iterEnds(t, events) < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the daemon stopped with %v\n%s", err, a.stderr.String())
	}
	if !strings.Contains(a.stderr.String(), "sessions_kept=1") {
		t.Errorf("the daemon's log does not say it kept the session:\n%s", a.stderr.String())
	}
	lost := 0
	if err := eventlog.ReadFile(events, func(e eventlog.Event) error {
		if e.Kind == eventlog.Lost {
			lost++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if lost != 0 {
		t.Fatalf("the restart logged %d sessions lost; want none", lost)
	}
	b := startDaemonProc(t, sock, args...)
	job.resumesAndFinishes(t, b, events, iters, "the restarted daemon")
	// The iteration in flight at the stop ran in the job but its end reached no
	// daemon, as after a crash: the journal has it or not, never twice.
	if ends := iterEnds(t, events); ends != iters && ends != iters-1 {
		t.Errorf("the journal has %d iteration ends, want %d (or %d: the one in flight at the stop)", ends, iters, iters-1)
	}

	// --on-stop end: the same SIGTERM ends the job.
	events2 := filepath.Join(dir, "end.jsonl")
	c := startDaemonProc(t, filepath.Join(dir, "e.sock"), "--policy", "fair", "--events", events2, "--on-stop", "end")
	s, err := client.Open(context.Background(), "unix:"+filepath.Join(dir, "e.sock"), client.Options{Job: "ended", PersistentMiB: 100, EphemeralMiB: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
	if r, err := metrics.FromFile(events2); err != nil || r.Lost != 1 {
		t.Errorf("--on-stop end: %+v, %v; want the job lost", r, err)
	}
}

// training is a client's loop of iters iterations against the daemon at
// sock, run in the background: done counts the iterations it ran, result
// receives how it ended, and resumed (read once result has) whether its
// session was resumed by a restarted daemon.
type training struct {
	done    atomic.Int64
	result  chan error
	resumed bool
}

func startTraining(sock string, iters int) *training {
	job := &training{result: make(chan error, 1)}
	go func() {
		s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "train", PersistentMiB: 100, EphemeralMiB: 100})
		if err != nil {
			job.result <- err
			return
		}
		if err := s.Begin(); err != nil {
			job.result <- err
			return
		}
		for i := 1; i < iters; i++ {
			client.Wait(2 * time.Millisecond)
			if err := s.Next(0, 0); err != nil {
				job.result <- err
				return
			}
			job.done.Add(1)
		}
		if err := s.End(0, 0); err != nil {
			job.result <- err
			return
		}
		job.done.Add(1)
		job.resumed = s.Resumed
		job.result <- s.Close(true)
	}()
	return job
}

// resumesAndFinishes waits for the job to end under daemon d (under names it),
// having resumed its session and run each of its iters iterations once; it
// then stops d and checks that the log, events, holds the one job, finished.
func (job *training) resumesAndFinishes(t *testing.T, d *daemonProc, events string, iters int, under string) {
	t.Helper()
	select {
	case err := <-job.result:
		if err != nil {
			t.Fatalf("the job under %s: %v", under, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the job did not finish under %s", under)
	}
	if !job.resumed || job.done.Load() != int64(iters) {
		t.Errorf("the job resumed %v with %d iterations done, want resumed and %d", job.resumed, job.done.Load(), iters)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()
	res, err := metrics.FromFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 1 || res.Finished != 1 || res.Lost != 0 {
		t.Errorf("metrics over the run: %d jobs, %d finished, %d lost; want the one job finished", res.Jobs, res.Finished, res.Lost)
	}
}
