package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// PyTorch says how to launch the example PyTorch jobs of examples/ (train.py,
// infer.py) as real worker processes.
type PyTorch struct {
	// Python is the interpreter; default /usr/bin/python3 (Debian's python3-torch).
	Python string
	// Examples is the directory holding train.py; default "examples", looked up
	// from the working directory upwards.
	Examples string
	// Threads is each job's torch.set_num_threads; default 2.
	Threads int
	// Device is auto, cpu or cuda; default auto.
	Device string
}

func (p PyTorch) python() string {
	if p.Python != "" {
		return p.Python
	}
	return "/usr/bin/python3"
}

// examples finds the examples directory.
func (p PyTorch) examples() (string, error) {
	if p.Examples != "" {
		return p.Examples, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "examples")
		if _, err := os.Stat(filepath.Join(cand, "train.py")); err == nil {
			return cand, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("cannot find examples/train.py above the working directory: run from the repository or pass the examples directory")
		}
		dir = up
	}
}

// Available returns nil when the interpreter can import torch, else an error that
// says how to install it.
func (p PyTorch) Available() error {
	out, err := exec.Command(p.python(), "-c", "import torch").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import torch (%v: %s): install it with `apt-get install -y python3-torch python3-numpy`",
			p.python(), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// IterLine is one iteration (or inference request) a job printed.
type IterLine struct {
	I      int      `json:"i"`
	S      float64  `json:"s"`
	WaitUS *float64 `json:"wait_us"`
	Loss   float64  `json:"loss"`
	// Gated says the iteration ran under the daemon (train.py --alternate).
	Gated bool `json:"gated"`
}

// DoneLine is a job's last line.
type DoneLine struct {
	Iterations int     `json:"iterations"`
	MedianS    float64 `json:"median_s"`
	LossFirst  float64 `json:"loss_first"`
	LossLast   float64 `json:"loss_last"`
	P99S       float64 `json:"p99_s"` // roundtrip.py only
	// On CUDA: the allocator's peak reserved memory and the job's lane, MiB.
	PeakMiB float64 `json:"peak_mib"`
	LaneMiB float64 `json:"lane_mib"`
}

// Proc is one running example job.
type Proc struct {
	Job   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	iters  []IterLine
	fin    *DoneLine
	gone   string
	stderr strings.Builder
	err    error
}

// Command is the command line of examples/SCRIPT with args (plus --threads and
// --device) and --wait-go: the job starts up, then waits for Go before it opens
// its session.
func (p PyTorch) Command(job, script string, args ...string) (Command, error) {
	dir, err := p.examples()
	if err != nil {
		return Command{}, err
	}
	threads := p.Threads
	if threads <= 0 {
		threads = 2
	}
	device := p.Device
	if device == "" {
		device = "auto"
	}
	argv := append([]string{filepath.Join(dir, script), "--wait-go", "--threads", fmt.Sprint(threads), "--device", device}, args...)
	return Command{Job: job, Path: p.python(), Args: argv}, nil
}

// Start launches p.Command(job, script, args...).
func (p PyTorch) Start(ctx context.Context, job, script string, args ...string) (*Proc, error) {
	c, err := p.Command(job, script, args...)
	if err != nil {
		return nil, err
	}
	cmd := c.Exec(ctx)
	pr := &Proc{Job: job, cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = &syncWriter{mu: &pr.mu, w: &pr.stderr}
	if pr.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("job %s: start %s: %w", job, p.python(), err)
	}
	go pr.read(stdout)
	return pr, nil
}

func (pr *Proc) read(r io.Reader) {
	defer close(pr.done)
	sc := bufio.NewScanner(r)
	readyClosed := false
	for sc.Scan() {
		line := sc.Bytes()
		var head struct {
			Ev    string `json:"ev"`
			Error string `json:"error"`
		}
		if json.Unmarshal(line, &head) != nil {
			continue
		}
		pr.mu.Lock()
		switch head.Ev {
		case "ready":
			if !readyClosed {
				close(pr.ready)
				readyClosed = true
			}
		case "iter", "request":
			var it IterLine
			if json.Unmarshal(line, &it) == nil {
				pr.iters = append(pr.iters, it)
			}
		case "done":
			var d DoneLine
			if json.Unmarshal(line, &d) == nil {
				pr.fin = &d
			}
		case "daemon_gone":
			pr.gone = head.Error
		}
		pr.mu.Unlock()
	}
	pr.err = pr.cmd.Wait()
}

// Exited is closed once the job's output has ended and its process exited.
func (pr *Proc) Exited() <-chan struct{} { return pr.done }

// Ready is closed once the job has started up and waits for Go.
func (pr *Proc) Ready() <-chan struct{} { return pr.ready }

// Go lets the job open its session and run.
func (pr *Proc) Go() error {
	_, err := io.WriteString(pr.stdin, "go\n")
	return err
}

// Iterations returns how many iterations the job has printed so far.
func (pr *Proc) Iterations() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return len(pr.iters)
}

// Kill sends SIGKILL.
func (pr *Proc) Kill() error { return pr.cmd.Process.Kill() }

// JobRun is a finished job's output.
type JobRun struct {
	Job   string
	Iters []IterLine
	Done  *DoneLine
	// DaemonGone is the error the job printed when the daemon went away.
	DaemonGone string
	Stderr     string
}

// Wait waits for the job to exit and returns what it printed; a job that exited
// with an error is an error that quotes the end of its stderr.
func (pr *Proc) Wait() (*JobRun, error) {
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	run := &JobRun{Job: pr.Job, Iters: pr.iters, Done: pr.fin, DaemonGone: pr.gone, Stderr: pr.stderr.String()}
	if pr.err != nil {
		tail := run.Stderr
		if len(tail) > 800 {
			tail = "..." + tail[len(tail)-800:]
		}
		return run, fmt.Errorf("job %s: %v: %s", pr.Job, pr.err, strings.TrimSpace(tail))
	}
	if run.Done == nil {
		return run, fmt.Errorf("job %s exited without its done line", pr.Job)
	}
	return run, nil
}

// RunJob starts a job, lets it go as soon as it is ready, and waits for it.
func (p PyTorch) RunJob(ctx context.Context, job, script string, args ...string) (*JobRun, error) {
	pr, err := p.Start(ctx, job, script, args...)
	if err != nil {
		return nil, err
	}
	select {
	case <-pr.Ready():
		if err := pr.Go(); err != nil {
			return nil, fmt.Errorf("job %s: %w", job, err)
		}
	case <-pr.done:
	}
	return pr.Wait()
}
