package interference

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite builtin.json from the published pairs in ../../shared/reference/colocation")

// referenceDir is the published pair sets beside the checkout (shared/), absent
// from a bare clone.
const referenceDir = "../../shared/reference/colocation"

func haveReference(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(referenceDir, "gavel-p100.csv")); err != nil {
		t.Skipf("no published pairs at %s: %v", referenceDir, err)
	}
}

// The built-in model is what salus interference fit makes of the published
// pairs, nothing else: refitting them gives it again.
func TestBuiltinIsFittedFromThePublishedPairs(t *testing.T) {
	haveReference(t)
	m, err := FitBuiltin(referenceDir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := m.Save("builtin.json"); err != nil {
			t.Fatal(err)
		}
		t.Skip("rewrote builtin.json: run again without -update to check it")
	}
	b := Builtin()
	if len(b.Devices) != len(m.Devices) {
		t.Fatalf("built-in model has %d devices, the fit %d", len(b.Devices), len(m.Devices))
	}
	close := func(x, y float64) bool { return math.Abs(x-y) <= 1e-3*max(math.Abs(x), math.Abs(y), 1e-3) }
	for i, d := range m.Devices {
		bd := b.Devices[i]
		if bd.Device != d.Device || bd.Mechanism != d.Mechanism || bd.Rank != d.Rank || len(bd.Jobs) != len(d.Jobs) || len(bd.Measured) != len(d.Measured) {
			t.Fatalf("%s: built-in %s/%s rank %d with %d jobs and %d pairs; the fit %s/%s rank %d with %d and %d (go test ./interference -run Builtin -update)",
				d.Device, bd.Device, bd.Mechanism, bd.Rank, len(bd.Jobs), len(bd.Measured), d.Device, d.Mechanism, d.Rank, len(d.Jobs), len(d.Measured))
		}
		for j := range d.Jobs {
			for k := range d.Rank {
				if !close(bd.Jobs[j].S[k], d.Jobs[j].S[k]) || !close(bd.Jobs[j].P[k], d.Jobs[j].P[k]) {
					t.Errorf("%s %s: built-in s %v p %v, the fit %v %v", d.Device, d.Jobs[j].Job, bd.Jobs[j].S, bd.Jobs[j].P, d.Jobs[j].S, d.Jobs[j].P)
				}
			}
		}
		for j, p := range d.Measured {
			if bd.Measured[j] != p {
				t.Errorf("%s: measured pair %d: built-in %+v, the file %+v", d.Device, j, bd.Measured[j], p)
			}
		}
	}
}
