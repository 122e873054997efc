package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
)

// daemonProc is `salus serve` in a process of its own (the test binary, see
// TestMain), to be killed.
type daemonProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}

func startDaemonProc(t *testing.T, sock string, args ...string) *daemonProc {
	t.Helper()
	d := &daemonProc{cmd: exec.Command(os.Args[0], append([]string{"serve", "--socket", sock, "--addr", "", "--fast-addr", ""}, args...)...)}
	d.cmd.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
	d.cmd.Stderr = &d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return d
		}
		if i == 500 {
			t.Fatalf("the daemon never listened: %s", d.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillTheDaemonUnderLoad: kill -9 of `salus serve --events` while four jobs
// iterate under fair, then a restart on the same log. The old log is intact and
// reads back (every event it wrote is there; a line cut by the kill would be
// reported); the restart appends to it, never truncates; the jobs' clients
// reconnect and resume their sessions (same arrival, same attained time) and
// finish; the metrics of the whole run come from the one log.
func TestKillTheDaemonUnderLoad(t *testing.T) {
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl")
	args := []string{"--policy", "fair", "--events", events, "--recover-window", "10s", "--lease", "3s"}
	a := startDaemonProc(t, sock, args...)

	const jobs, iters = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	resumed := make([]bool, jobs)
	for j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: fmt.Sprint("job", j), PersistentMiB: 100, EphemeralMiB: 100})
			if err != nil {
				errs <- err
				return
			}
			if s.RecoverMS != 10000 {
				errs <- fmt.Errorf("open reply says recover_ms %d, want 10000", s.RecoverMS)
			}
			if err := s.Begin(); err != nil {
				errs <- err
				return
			}
			for i := 1; i < iters; i++ {
				client.Wait(2 * time.Millisecond)
				if err := s.Next(0, 0); err != nil {
					errs <- fmt.Errorf("job%d, iteration %d: %w", j, i, err)
					return
				}
			}
			s.End(0, 0)
			resumed[j] = s.Resumed
			if err := s.Close(true); err != nil {
				errs <- err
			}
		}()
	}
	// Kill it once the jobs are well into their iterations.
	deadline := time.Now().Add(10 * time.Second)
	for iterEnds(t, events) < 100 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	old, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	n, err := countEvents(events)
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("the killed daemon's log does not read back: %v", err)
	}
	if n < 100 {
		t.Fatalf("the killed daemon's log has %d events", n)
	}
	time.Sleep(300 * time.Millisecond) // the clients retry meanwhile
	t0 := time.Now()
	b := startDaemonProc(t, sock, args...)
	t.Logf("restarted daemon listening %v after its start, on a log of %d events (%d bytes)", time.Since(t0).Round(time.Millisecond), n, len(old))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("restarted daemon: %v\n%s", err, b.stderr.String())
	}
	for j, r := range resumed {
		if !r {
			t.Errorf("job%d did not resume its session", j)
		}
	}
	whole, _ := os.ReadFile(events)
	if !bytes.HasPrefix(whole, old) || len(whole) <= len(old) {
		t.Fatalf("the restart did not append to the log (%d bytes, then %d)", len(old), len(whole))
	}
	if !strings.Contains(b.stderr.String(), "sessions recovered") {
		t.Errorf("the restarted daemon did not say it recovered sessions:\n%s", b.stderr.String())
	}
	// The whole run, from the one log: every job finished once, arrived once, and
	// kept its arrival.
	arrivals := map[string]float64{}
	var runs []eventlog.Event
	eventlog.ReadFile(events, func(e eventlog.Event) error {
		switch e.Kind {
		case eventlog.Arrive:
			if _, dup := arrivals[e.Job]; dup {
				t.Errorf("%s arrived twice", e.Job)
			}
			arrivals[e.Job] = e.T
		case eventlog.Run:
			runs = append(runs, e)
		}
		return nil
	})
	if len(runs) != 2 || runs[1].Reason != "restart" {
		t.Errorf("run headers %+v, want a second one for the restart", runs)
	}
	res, err := metrics.FromFile(events)
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("metrics of the whole run: %v", err)
	}
	if res.Jobs != jobs || res.Finished != jobs || res.Lost != 0 {
		t.Errorf("metrics: %d jobs, %d finished, %d lost; want %d finished", res.Jobs, res.Finished, res.Lost, jobs)
	}
	for _, r := range res.Completion {
		if r.ArrivalS != arrivals[r.ID] || r.GPUS < 0.002*(iters-2) {
			t.Errorf("%s: arrival %v (logged %v), GPU time %v s", r.ID, r.ArrivalS, arrivals[r.ID], r.GPUS)
		}
	}
}

func countEvents(path string) (int, error) {
	n := 0
	err := eventlog.ReadFile(path, func(eventlog.Event) error { n++; return nil })
	return n, err
}

func iterEnds(t *testing.T, path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte(`"ev":"iter_end"`))
}

// pyResume is the Python client's job for TestPythonClientResumesAfterKill: it
// iterates until told to stop (the file STOP appears), across the daemon's
// death and restart, then says what it saw.
const pyResume = `
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import salus_client
s = salus_client.Session(name="py", persistent=10, ephemeral=10, address=sys.argv[2])
n = 0
while not os.path.exists(sys.argv[3]):
    with s.iteration():
        time.sleep(0.002)
    n += 1
print(json.dumps({"resumed": s.resumed, "iterations": n, "closed": s.close()}))
`

// TestPythonClientResumesAfterKill: the Python client, under a real salus
// serve that is killed (SIGKILL) and restarted on its journal, reconnects and
// resumes its session with the resume token it sent with its first open, and
// carries on to a clean close; a stranger's resume without the token is
// refused meanwhile.
func TestPythonClientResumesAfterKill(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	sock, events, stop := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl"), filepath.Join(dir, "STOP")
	args := []string{"--policy", "fair", "--events", events, "--recover-window", "20s"}
	a := startDaemonProc(t, sock, args...)
	root, err := filepath.Abs("../../client/python")
	if err != nil {
		t.Fatal(err)
	}
	job := exec.Command(py, "-c", pyResume, root, sock, stop)
	var out, stderr bytes.Buffer
	job.Stdout, job.Stderr = &out, &stderr
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Process.Kill(); job.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for iterEnds(t, events) < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	before := iterEnds(t, events)
	b := startDaemonProc(t, sock, args...)
	var e *client.Error
	if _, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "py", PersistentMiB: 10, EphemeralMiB: 10, Resume: true}); err == nil ||
		!(errors.As(err, &e) && (e.Code == "resume_denied" || e.Code == "rejected")) {
		t.Errorf("a stranger's resume of the Python job's session: %v, want it refused", err)
	}
	for iterEnds(t, events) < before+20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	os.WriteFile(stop, nil, 0o644)
	if err := job.Wait(); err != nil {
		t.Fatalf("the Python job: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.Contains(got, `"resumed": true`) || !strings.Contains(got, `"closed": true`) {
		t.Errorf("the Python job said %s (stderr %s); want it resumed and closed", got, stderr.String())
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("restarted daemon: %v\n%s", err, b.stderr.String())
	}
	res, err := metrics.FromFile(events)
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatal(err)
	}
	if res.Jobs != 1 || res.Finished != 1 || res.Lost != 0 {
		t.Errorf("metrics: %d jobs, %d finished, %d lost; want the one job finished", res.Jobs, res.Finished, res.Lost)
	}
}

// runWithin runs cmd to its end, killing it past limit, and returns its output.
func runWithin(cmd *exec.Cmd, limit time.Duration) (string, error) {
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
	}
	return string(out), err
}
