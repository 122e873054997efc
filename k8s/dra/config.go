package dra

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// ConfigAPIVersion and ConfigKind name the claim configuration that a
// ResourceClaim passes to this driver as opaque parameters.
const (
	ConfigAPIVersion = DriverName + "/v1alpha1"
	ConfigKind       = "ClaimConfig"
)

// ClaimConfig is what a claim tells the daemon about the session it opens: the
// numbers a client would otherwise send when it opens a session itself. Zero
// means not given: the daemon's defaults (or the client's own figures) apply.
type ClaimConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	DeclaredS     float64 `json:"declaredS,omitempty"`     // how long the job expects to run, in seconds
	Priority      int     `json:"priority,omitempty"`      // smaller runs first (0 before 1)
	PersistentMiB float64 `json:"persistentMiB,omitempty"` // memory held across iterations (weights, optimiser state)
	EphemeralMiB  float64 `json:"ephemeralMiB,omitempty"`  // memory an iteration takes and gives back
	GPUs          int     `json:"gpus,omitempty"`          // GPUs the job needs at once (0 or 1: one; more: a gang)
}

// configFields are the JSON names of ClaimConfig's fields, exactly as spelt.
var configFields = []string{"apiVersion", "kind", "declaredS", "priority", "persistentMiB", "ephemeralMiB", "gpus"}

// ParseClaimConfig reads a claim's opaque parameters strictly: one JSON object
// of apiVersion gpu.salus.dev/v1alpha1 and kind ClaimConfig, with no field this
// version does not know (names matched exactly, case included), and every
// number finite and not negative (a priority may be negative, within 32 bits,
// as the daemon allows).
func ParseClaimConfig(raw []byte) (ClaimConfig, error) {
	var cfg ClaimConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return ClaimConfig{}, fmt.Errorf("claim config: %w: give one JSON object with apiVersion %q, kind %q and only the fields declaredS, priority, persistentMiB, ephemeralMiB, gpus", err, ConfigAPIVersion, ConfigKind)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ClaimConfig{}, fmt.Errorf("claim config: something follows the object: give exactly one JSON object")
	}
	// encoding/json matches field names regardless of case; the admission
	// policy (and Kubernetes) does not: "persistentMib" is a misspelling.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return ClaimConfig{}, fmt.Errorf("claim config: %w", err)
	}
	for name := range fields {
		if !slices.Contains(configFields, name) {
			return ClaimConfig{}, fmt.Errorf("claim config: unknown field %q: give one JSON object with apiVersion %q, kind %q and only the fields declaredS, priority, persistentMiB, ephemeralMiB, gpus (spelt so)", name, ConfigAPIVersion, ConfigKind)
		}
	}
	if cfg.APIVersion != ConfigAPIVersion || cfg.Kind != ConfigKind {
		return ClaimConfig{}, fmt.Errorf("claim config: apiVersion %q, kind %q: this driver reads apiVersion %q, kind %q", cfg.APIVersion, cfg.Kind, ConfigAPIVersion, ConfigKind)
	}
	return cfg, cfg.Validate()
}

// Validate checks every number of the configuration; the error names the field
// and says what to give instead.
func (c ClaimConfig) Validate() error {
	for _, f := range []struct {
		name, what string
		v          float64
	}{
		{"declaredS", "the seconds the job expects to run", c.DeclaredS},
		{"persistentMiB", "the MiB the job keeps allocated across iterations", c.PersistentMiB},
		{"ephemeralMiB", "the MiB one iteration allocates and frees", c.EphemeralMiB},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("claim config: field %s is %v: give %s, a finite number not below 0, or leave it out", f.name, f.v, f.what)
		}
	}
	if c.Priority < math.MinInt32 || c.Priority > math.MaxInt32 {
		return fmt.Errorf("claim config: field priority is %d: give a whole number within 32 bits (%d to %d), or leave it out", c.Priority, math.MinInt32, math.MaxInt32)
	}
	if c.GPUs < 0 {
		return fmt.Errorf("claim config: field gpus is %d: give how many GPUs the job needs at once (1, or more for a gang), or leave it out", c.GPUs)
	}
	return nil
}

// Fits says whether the claim's memory fits on the GPU: its persistent and
// ephemeral memory together must not exceed the GPU's.
func Fits(gpu GPU, cfg ClaimConfig) error {
	need := cfg.PersistentMiB + cfg.EphemeralMiB
	if need > gpu.MemoryMiB {
		return fmt.Errorf("claim needs %v MiB (persistentMiB %v + ephemeralMiB %v), more than the %v MiB of GPU %d (%s): lower them, or claim a GPU with more memory",
			need, cfg.PersistentMiB, cfg.EphemeralMiB, gpu.MemoryMiB, gpu.Index, gpu.Model)
	}
	return nil
}
