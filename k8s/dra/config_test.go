package dra

import (
	"math"
	"strings"
	"testing"
)

const head = `"apiVersion": "gpu.salus.dev/v1alpha1", "kind": "ClaimConfig"`

func TestParseClaimConfig(t *testing.T) {
	cfg, err := ParseClaimConfig([]byte(`{` + head + `, "declaredS": 600, "priority": -2, "persistentMiB": 1024.5, "ephemeralMiB": 2048, "gpus": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ClaimConfig{APIVersion: ConfigAPIVersion, Kind: ConfigKind, DeclaredS: 600, Priority: -2, PersistentMiB: 1024.5, EphemeralMiB: 2048, GPUs: 2}
	if cfg != want {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
	if cfg, err := ParseClaimConfig([]byte(`{` + head + `}`)); err != nil || cfg.DeclaredS != 0 || cfg.GPUs != 0 {
		t.Errorf("the bare config: %+v, %v", cfg, err)
	}
}

// Each bad configuration is refused with an error that names what is wrong.
func TestParseClaimConfigRefuses(t *testing.T) {
	for _, c := range []struct{ name, raw, want string }{
		{"empty", ``, "one JSON object"},
		{"not an object", `[1]`, "one JSON object"},
		{"unknown field", `{` + head + `, "declared_s": 5}`, `unknown field "declared_s"`},
		{"a field in the wrong case", `{` + head + `, "persistentMib": 5}`, `unknown field "persistentMib"`},
		{"wrong type", `{` + head + `, "gpus": 1.5}`, "gpus"},
		{"trailing", `{` + head + `} {}`, "exactly one JSON object"},
		{"no apiVersion", `{"kind": "ClaimConfig"}`, "gpu.salus.dev/v1alpha1"},
		{"wrong kind", `{"apiVersion": "gpu.salus.dev/v1alpha1", "kind": "Claim"}`, `kind "Claim"`},
		{"negative declaredS", `{` + head + `, "declaredS": -1}`, "field declaredS is -1"},
		{"negative persistentMiB", `{` + head + `, "persistentMiB": -0.5}`, "field persistentMiB is -0.5"},
		{"negative ephemeralMiB", `{` + head + `, "ephemeralMiB": -3}`, "field ephemeralMiB is -3"},
		{"huge priority", `{` + head + `, "priority": 4294967296}`, "field priority is 4294967296"},
		{"negative gpus", `{` + head + `, "gpus": -1}`, "field gpus is -1"},
		{"overflowing number", `{` + head + `, "declaredS": 1e400}`, "declaredS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseClaimConfig([]byte(c.raw))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestFits(t *testing.T) {
	gpu := GPU{Index: 1, Model: "T4", MemoryMiB: 15360}
	for _, c := range []struct {
		p, e float64
		ok   bool
	}{{0, 0, true}, {10000, 5360, true}, {10000, 5361, false}, {15361, 0, false}} {
		err := Fits(gpu, ClaimConfig{PersistentMiB: c.p, EphemeralMiB: c.e})
		if (err == nil) != c.ok {
			t.Errorf("persistent %v + ephemeral %v on %v MiB: %v", c.p, c.e, gpu.MemoryMiB, err)
		}
		if err != nil {
			for _, s := range []string{"persistentMiB", "ephemeralMiB", "15360 MiB of GPU 1"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		}
	}
}

// A configuration built in Go rather than parsed can hold what JSON cannot.
func TestValidateNonFinite(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []ClaimConfig{{DeclaredS: inf}, {EphemeralMiB: inf - inf}} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "finite") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
