package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/salusgo/salus/metrics"
)

// pyGPULess is a team's own PyTorch-style loop on a machine without a GPU, under
// `salus serve --emulate p100`: the job says what an iteration costs on the P100
// (iter_time=, demand=), or names a catalog model at its batch size; its device
// is None, so model.to(sess.device or "cpu") stays on the CPU.
const pyGPULess = `
import json, sys
sys.path.insert(0, sys.argv[1])
import salus_client
out = {}
for name, kw in (("own", dict(persistent=200, ephemeral=300, iter_time=0.02, demand=0.5, total_time=0.1)),
                 ("catalog", dict(model="resnet50", batch_size=50, iterations=3))):
    with salus_client.Session(name=name, address=sys.argv[2], **kw) as s:
        for _ in range(3):
            with s.iteration():
                pass
        out[name] = {"device": s.device, "emulated": s.emulated, "done": s.iterations_done}
print(json.dumps(out))
`

// TestPythonJobWithoutAGPU follows the GPU-less set-up of client/python/README.md
// and docs/tutorials.md (salus serve --emulate p100): a Python job
// under an emulating daemon completes, whether it gives its iteration's cost or a
// catalog model, and its device is not cuda.
func TestPythonJobWithoutAGPU(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl")
	d := startDaemonProc(t, sock, "--policy", "fair", "--emulate", "p100", "--events", events)
	root, err := filepath.Abs("../../client/python")
	if err != nil {
		t.Fatal(err)
	}
	job := exec.Command(py, "-c", pyGPULess, root, sock)
	var out, stderr bytes.Buffer
	job.Stdout, job.Stderr = &out, &stderr
	if err := job.Run(); err != nil {
		t.Fatalf("the Python job: %v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Device   *string `json:"device"`
		Emulated bool    `json:"emulated"`
		Done     int     `json:"done"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, name := range []string{"own", "catalog"} {
		if g := got[name]; g.Device != nil || !g.Emulated || g.Done != 3 {
			t.Errorf("job %s: %+v, want 3 iterations on an emulated GPU with no cuda device", name, g)
		}
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()
	res, err := metrics.FromFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != 2 || res.Lost != 0 {
		t.Errorf("metrics: %d finished, %d lost; want both jobs finished", res.Finished, res.Lost)
	}
}
