package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

// liveTrace is three resnet50/50 jobs of 120, 20 and 40 iterations arriving a
// second apart: far enough apart in length that under every policy, on one GPU or
// two, consecutive jobs finish at least 5.5 s of trace time apart (165 ms live at
// --time-scale 0.03), so the completion order is a matter of several iterations,
// not of how busy the machine is (60 iterations left pack's c and a 2.5 s apart,
// and a loaded machine swapped them).
func liveTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "live3.csv")
	body := "job_id,model,batch_size,iterations,arrival_s\na,resnet50,50,120,0\nb,resnet50,50,20,1\nc,resnet50,50,40,2\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// liveStructure runs salus with args (a live run, --format json, --out DIR) and
// returns what of it does not depend on the machine's speed: each run's scheme,
// jobs finished and lost, and the completion order and GPUs used read from its
// event log.
func liveStructure(t *testing.T, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	got, err := run(t, append(args, "--format", "json", "--out", out)...)
	if err != nil {
		t.Fatalf("salus %v: %v\n%s", args, err, got)
	}
	var rep struct {
		Runs []struct {
			Scheme, Policy, Mode string
			Finished, Lost       int
			Log                  string
		}
	}
	if err := json.Unmarshal([]byte(got[strings.Index(got, "{"):]), &rep); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	var b strings.Builder
	for _, r := range rep.Runs {
		var order []string
		gpus := map[int]bool{}
		if err := eventlog.ReadFile(r.Log, func(e eventlog.Event) error {
			switch e.Kind {
			case eventlog.Finish:
				order = append(order, e.Job)
			case eventlog.Admit:
				gpus[e.GPUIndex] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s (policy %s, mode %s): %d finished, %d lost, in order %s, on %d GPUs\n", r.Scheme, r.Policy, r.Mode, r.Finished, r.Lost, strings.Join(order, " "), len(gpus))
	}
	return b.String()
}

// TestGoldenLiveStructure pins what salus replay does on the live engine, as far
// as it does not depend on the machine's speed (emulated live runs are not
// deterministic in time): the schemes run, the jobs finished and their
// completion order. salus eval --engine live is the same command and must print
// the same. After an intended change: go test ./cmd/salus -run TestGoldenLiveStructure -update
func TestGoldenLiveStructure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for a few seconds")
	}
	t.Setenv("SALUS_CMD_TEST_WORKER", "1")
	trace := liveTrace(t)
	for _, c := range []struct {
		name, golden string
		args         []string
	}{
		{"replay", "replay-structure", []string{"replay", "--trace", trace, "--time-scale", "0.03"}},
		{"eval-engine-live", "replay-structure", []string{"eval", "--engine", "live", "--trace", trace, "--time-scale", "0.03"}},
		{"replay-gpus2", "replay-structure-gpus2", []string{"replay", "--gpus", "2", "--trace", trace, "--time-scale", "0.03", "--policy", "pack,fair"}},
		{"eval-engine-live-gpus2", "replay-structure-gpus2", []string{"eval", "--engine", "live", "--gpus", "2", "--trace", trace, "--time-scale", "0.03", "--policy", "pack,fair"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := liveStructure(t, c.args...)
			path := filepath.Join("testdata", "golden", c.golden+".txt")
			if *update && strings.HasPrefix(c.name, "replay") {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if got != string(want) {
				t.Errorf("salus %v ran something else than %s:\n%s", c.args, path, got)
			}
		})
	}
}
