package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

func TestSpeedFlag(t *testing.T) {
	// One job alone: --speed 2 halves its iterations, not its start-up.
	path := filepath.Join(t.TempDir(), "one.csv")
	os.WriteFile(path, []byte("job_id,model,batch_size,iterations,arrival_s\na,resnet50,50,100,0\n"), 0o644)
	p, err := workload.Default().Lookup("resnet50", 50, workload.Train)
	if err != nil {
		t.Fatal(err)
	}
	makespan := func(wantSpeed float64, args ...string) float64 {
		t.Helper()
		out, err := run(t, append([]string{"eval", "--trace", path, "--policy", "fifo", "--format", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Device struct {
				Speed float64 `json:"speed"`
			} `json:"device"`
			Runs []struct {
				MakespanS float64 `json:"makespan_s"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 {
			t.Fatalf("json %v: %s", err, out)
		}
		if rep.Device.Speed != wantSpeed {
			t.Errorf("%v: report's device speed %v, want %v", args, rep.Device.Speed, wantSpeed)
		}
		return rep.Runs[0].MakespanS
	}
	one, two := makespan(1), makespan(2, "--speed", "2")
	if math.Abs(one-p.StandaloneS(100)) > 1e-6 {
		t.Errorf("speed 1: makespan %v, want %v", one, p.StandaloneS(100))
	}
	if got, want := two-p.StartupS, (one-p.StartupS)/2; math.Abs(got-want) > 1e-6 {
		t.Errorf("--speed 2: iterations take %v s, want %v", got, want)
	}

	out, err := run(t, "simulate", "--device", "h100", "--speed", "3")
	if err != nil || !strings.Contains(out, "H100-80GB") || !strings.Contains(out, "speed 3x P100") {
		t.Errorf("simulate --speed 3: %v\n%s", err, out)
	}
	out, err = run(t, "simulate", "--device", "h100")
	if err != nil || !strings.Contains(out, "speed 5.5x P100") {
		t.Errorf("simulate --device h100 should print the preset's speed: %v\n%s", err, out)
	}
	for _, cmd := range []string{"eval", "simulate"} {
		if _, err := run(t, cmd, "--speed", "-1"); err == nil || !strings.Contains(err.Error(), "--speed") {
			t.Errorf("%s --speed -1: error %v", cmd, err)
		}
	}
}
