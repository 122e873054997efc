package workload

import (
	"math"
	"testing"
)

func TestCatalogCoversTheReference(t *testing.T) {
	c := Default()
	if n := len(c.Measured()); n != 33 {
		t.Errorf("%d measured training profiles, want 33", n)
	}
	for _, m := range []string{"vgg11", "vgg16", "vgg19", "resnet50", "resnet101", "resnet152", "overfeat",
		"inception3", "inception4", "googlenet", "alexnet", "seq2seq", "vae", "superres"} {
		if _, err := c.Lookup(m, 1, Infer); err != nil {
			t.Errorf("inference profile: %v", err)
		}
	}
	for _, key := range [][2]any{{"vae", 64}, {"superres", 128}, {"speech", 50}, {"mnist", 100}, {"seq2seq-large", 20}} {
		p, err := c.Lookup(key[0].(string), key[1].(int), Train)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Estimated {
			t.Errorf("%s: iteration time was never measured, so it must be marked estimated", p.Key())
		}
	}
	for _, p := range c.Profiles() {
		if p.IterS <= 0 || p.StartupS <= 0 || p.PersistentMiB <= 0 || p.EphemeralMiB <= 0 || p.Demand < 0.05 || p.Demand > 1 {
			t.Errorf("%s: implausible figures %+v", p.Key(), p)
		}
		if math.Abs(p.PersistentMiB+p.EphemeralMiB-p.PeakMiB) > 1e-6 {
			t.Errorf("%s: persistent + ephemeral != peak", p.Key())
		}
		s := p.Source
		if s.Iter == "" || s.Startup == "" || s.Peak == "" || s.Persistent == "" || s.Ephemeral == "" || s.Demand == "" {
			t.Errorf("%s: a figure has no source: %+v", p.Key(), s)
		}
	}
}

func TestMeasuredFigures(t *testing.T) {
	// vgg11 at batch 25: (606.446 - 67.059) / (5659 - 565) s per iteration.
	p, err := Default().Lookup("vgg11", 25, Train)
	if err != nil {
		t.Fatal(err)
	}
	if want := (606.446 - 67.059) / (5659 - 565); math.Abs(p.IterS-want) > 1e-12 {
		t.Errorf("iter %v, want %v", p.IterS, want)
	}
	if want := 67.059 - p.IterS*565; math.Abs(p.StartupS-want) > 1e-9 {
		t.Errorf("start-up %v, want %v", p.StartupS, want)
	}
	if want := 132.9e6 * 12 / (1 << 20); math.Abs(p.PersistentMiB-want) > 1e-9 {
		t.Errorf("persistent %v, want 12 bytes x 132.9M parameters = %v", p.PersistentMiB, want)
	}
	// Demand grows with batch size: bigger batches keep the GPU busier.
	small, _ := Default().Lookup("alexnet", 25, Train)
	big, _ := Default().Lookup("alexnet", 100, Train)
	if !(small.Demand < big.Demand) {
		t.Errorf("alexnet demand %v at 25 should be below %v at 100", small.Demand, big.Demand)
	}
}

func TestLookupErrorsSayWhatExists(t *testing.T) {
	_, err := Default().Lookup("resnet50", 64, Train)
	if err == nil || !contains(err.Error(), "25, 50, 75") {
		t.Errorf("error %v should list the known batch sizes", err)
	}
	if _, err := Default().Lookup("gpt5", 1, Train); err == nil || !contains(err.Error(), "salus models") {
		t.Errorf("error %v should point at salus models", err)
	}
}
