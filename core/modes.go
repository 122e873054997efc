package core

import (
	"fmt"
	"strings"
)

// Sharing modes: how memory and compute are shared on the device.
const (
	ModeExclusive = "exclusive" // no sharing: one job at a time
	ModeSalus     = "salus"     // Salus lanes, switching at iteration boundaries
	ModeMPS       = "mps"       // NVIDIA MPS: every job resident with its full peak, kernels concurrent
	ModeTimeslice = "timeslice" // CUDA time-slicing: every job resident, the GPU alternates
	ModeSuspend   = "suspend"   // suspend/resume: only the running job resident
)

// Modes lists the sharing modes.
var Modes = []string{ModeExclusive, ModeSalus, ModeMPS, ModeTimeslice, ModeSuspend}

// ModeParams are the memory-side parameters of the sharing modes. The simulator's
// device model holds the time-side ones (slices, context switches, PCIe bandwidth).
type ModeParams struct {
	// ContextMiB is the memory a CUDA context takes per process (time-slicing: each
	// job is its own process with its own context).
	ContextMiB float64 `json:"context_mib"`
	// MPSContextMiB is the per-client memory under MPS, which shares one context.
	MPSContextMiB float64 `json:"mps_context_mib"`
	// MPSMaxClients is MPS's per-GPU client limit.
	MPSMaxClients int `json:"mps_max_clients"`
	// SuspendQuantumS is how long a job keeps the GPU under suspend/resume before the
	// policy may switch to another at an iteration boundary.
	SuspendQuantumS float64 `json:"suspend_quantum_s"`
}

// DefaultModeParams are the defaults, for a Pascal GPU like the reference P100:
//   - a CUDA context costs about 300 MiB of device memory per process (driver state,
//     module images, the default heap and stack reservations; commonly 250 to 500 MiB
//     on Pascal with the deep-learning libraries loaded);
//   - MPS clients share the server's context and pay for their own modules and
//     library workspaces, taken as 100 MiB each;
//   - pre-Volta MPS serves at most 16 clients per GPU (48 on Volta and newer);
//   - suspend/resume switches every 10 s of service, a few times longer than the
//     longest copy of persistent state, so copies cost a few percent.
func DefaultModeParams() ModeParams {
	return ModeParams{ContextMiB: 300, MPSContextMiB: 100, MPSMaxClients: 16, SuspendQuantumS: 10}
}

// Compose returns the policy that runs policy within a sharing mode. Modes that
// only make sense with one order say so in their error.
func Compose(mode, policy string, mp ModeParams) (Policy, error) {
	mode = strings.ToLower(mode)
	base, err := Lookup(policy)
	if err != nil {
		return Policy{}, err
	}
	switch mode {
	case "", ModeSalus, ModeExclusive:
		if mode == ModeExclusive && base.Mode != ModeExclusive {
			return Policy{}, fmt.Errorf("mode exclusive runs only fifo (no sharing), not %s", base.Name)
		}
		if mode == ModeSalus && base.Mode != ModeSalus {
			return Policy{}, fmt.Errorf("policy %s does not share the GPU: run it in mode exclusive", base.Name)
		}
		return base, nil
	case ModeMPS, ModeTimeslice:
		// Separate processes: admitted in arrival order, each in its own lane, never
		// preempted; the device decides how their kernels share the GPU.
		if base.Name != "fifo" {
			return Policy{}, fmt.Errorf("mode %s runs every resident job at once and reorders nothing: use policy fifo", mode)
		}
		p := Policy{Name: "fifo", Mode: mode, Less: byArrival, AdmitInOrder: true,
			Placement: PerProcess{ContextMiB: mp.ContextMiB}}
		p.Description = "CUDA time-slicing: every job resident with its full peak and a context; the GPU alternates"
		if mode == ModeMPS {
			p.Placement = PerProcess{ContextMiB: mp.MPSContextMiB, MaxClients: mp.MPSMaxClients}
			p.Description = "NVIDIA MPS: every job resident with its full peak; kernels run concurrently"
		}
		return p, nil
	case ModeSuspend:
		if base.Name == "pack" {
			return Policy{}, fmt.Errorf("mode suspend keeps one job resident, so it cannot pack: use fifo, srtf or fair")
		}
		q, err := Seconds(mp.SuspendQuantumS)
		if err != nil {
			return Policy{}, fmt.Errorf("suspend quantum: %w", err)
		}
		p := base
		p.Mode, p.Placement, p.Swapped, p.Quantum = ModeSuspend, Swapped{}, true, q
		p.StartupOnGPU = false
		p.Description = "suspend/resume at iteration boundaries: only the running job resident; " + base.Name + " order, switching after a quantum"
		return p, nil
	}
	return Policy{}, fmt.Errorf("unknown mode %q: choose one of %s", mode, strings.Join(Modes, ", "))
}
