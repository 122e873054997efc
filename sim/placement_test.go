package sim

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

var updatePlacement = flag.Bool("update-placement", false, "rewrite testdata/placement-results.txt")

// placementTrace is salus100 at a high load with some gangs of 2 and 3, so
// that every GPU placement meets full GPUs, refusals and gangs.
func placementTrace(t testing.TB, seed int64, gpus int) *workload.Trace {
	t.Helper()
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed, Jobs: 50, Load: 3 * float64(gpus)})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	for i := range tr.Jobs {
		if k := 1 + rng.IntN(6); k <= 3 && k <= gpus {
			tr.Jobs[i].GPUs = k
		}
	}
	return tr
}

// placementSchemes are the schemes of the placement results: lanes side by
// side, one lane, a whole GPU, separate processes, suspend/resume.
var placementSchemes = [][2]string{{"exclusive", "fifo"}, {"salus", "srtf"}, {"salus", "pack"}, {"salus", "fair"}, {"mps", "fifo"}, {"suspend", "srtf"}}

// placementResults is, for each GPU placement, scheme, GPU count and seed, the
// SHA-256 of what placement decides: each admission's job, lane and GPUs, and
// each job's end, in the order they happen.
func placementResults(t testing.TB, wrap func(core.GPUPlacement) core.GPUPlacement) string {
	var out strings.Builder
	for _, name := range core.GPUPlacementNames() {
		gp, _ := core.LookupGPUPlacement(name)
		if wrap != nil {
			gp = wrap(gp)
		}
		for _, ms := range placementSchemes {
			p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
			if err != nil {
				t.Fatal(err)
			}
			for _, gpus := range []int{2, 3, 8} {
				for seed := int64(1); seed <= 2; seed++ {
					var buf bytes.Buffer
					w := eventlog.NewWriter(&buf)
					sink := placedOnly{w}
					if err := Run(placementTrace(t, seed, gpus), Options{Policy: p, Device: device.DefaultDevice(), GPUs: gpus, GPUPlacement: gp, Sink: sink}); err != nil {
						t.Fatal(err)
					}
					w.Flush()
					fmt.Fprintf(&out, "%s %s/%s gpus=%d seed=%d %x\n", name, ms[0], ms[1], gpus, seed, sha256.Sum256(buf.Bytes()))
				}
			}
		}
	}
	return out.String()
}

// placedOnly passes on the admissions and ends.
type placedOnly struct{ s eventlog.Sink }

func (p placedOnly) Emit(e eventlog.Event) {
	if e.Kind == eventlog.Admit || e.Kind == eventlog.Finish {
		p.s.Emit(e)
	}
}

// TestPlacementResults pins what every GPU placement decides on one node, as
// it was when placements sorted every GPU at each decision (recorded before
// the indexes of gpuindex.go replaced the sorts): the indexes must give the
// same decisions. Only a deliberate change of placement rewrites the file:
//
//	go test ./sim -run TestPlacementResults -update-placement
func TestPlacementResults(t *testing.T) {
	got := placementResults(t, nil)
	path := filepath.Join("testdata", "placement-results.txt")
	if *updatePlacement {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("placement results differ:\n got %s\nwant %s", gl[i], wl[i])
			}
		}
		t.Fatal("placement results changed (-update-placement only if that is deliberate)")
	}
}
