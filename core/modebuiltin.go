package core

import (
	"fmt"
	"time"
)

// The built-in sharing modes, in the order they are listed (and run by default).
// A new mode is a function in its own file that registers itself there.
func init() {
	RegisterModeAt(0, exclusiveMode())
	RegisterModeAt(10, salusMode())
	RegisterModeAt(20, mpsMode())
	RegisterModeAt(30, timesliceMode())
	RegisterModeAt(40, suspendMode())
}

func ownName(policy string) string { return policy }

// exclusiveMode gives the whole GPU to one job at a time, from its start-up on.
func exclusiveMode() Mode {
	return Mode{
		Name:        ModeExclusive,
		Description: "no sharing: one job at a time, holding the GPU from its start-up on",
		Sharing:     Sharing{StartupOnGPU: true},
		Accepts: func(base Policy) error {
			if base.Mode != ModeExclusive {
				return fmt.Errorf("mode exclusive runs only fifo (no sharing), not %s", base.Name)
			}
			return nil
		},
		DefaultPolicies: []string{"fifo"},
		Label:           ownName,
		Live:            true,
	}
}

// salusMode runs the policy's lanes, granting every iteration.
func salusMode() Mode {
	return Mode{
		Name:        ModeSalus,
		Description: "Salus lanes, switching at iteration boundaries",
		Sharing:     Sharing{Gated: true},
		Accepts: func(base Policy) error {
			if base.Mode != ModeSalus {
				return fmt.Errorf("policy %s does not share the GPU: run it in mode exclusive", base.Name)
			}
			return nil
		},
		DefaultPolicies: []string{"srtf", "pack", "fair"},
		Label:           ownName,
		Live:            true,
	}
}

// separateProcesses is what MPS and time-slicing share: separate processes,
// admitted in arrival order, each in its own lane, never preempted; the device
// decides how their kernels share the GPU.
func separateProcesses(name, description string) Mode {
	return Mode{
		Name:        name,
		Description: description,
		Sharing:     Sharing{AdmitInOrder: true},
		Accepts: func(base Policy) error {
			if base.Mode != ModeExclusive {
				return fmt.Errorf("mode %s runs every resident job at once and reorders nothing: use policy fifo", name)
			}
			return nil
		},
		Describe:        func(Policy) string { return description },
		DefaultPolicies: []string{"fifo"},
		Label:           func(string) string { return name },
	}
}

// mpsMode is NVIDIA MPS: clients share one context; kernels run concurrently.
func mpsMode() Mode {
	m := separateProcesses(ModeMPS, "NVIDIA MPS: every job resident with its full peak; kernels run concurrently")
	m.Params = []Param{
		{Name: "mps-context-mib", Help: "MPS: device memory per client, MiB", Default: 100,
			Get: func(mp ModeParams) float64 { return mp.MPSContextMiB }, Set: func(mp *ModeParams, v float64) { mp.MPSContextMiB = v }},
		{Name: "mps-clients", Help: "MPS: clients per GPU (16 before Volta, 48 after)", Default: 16, Int: true,
			Get: func(mp ModeParams) float64 { return float64(mp.MPSMaxClients) }, Set: func(mp *ModeParams, v float64) { mp.MPSMaxClients = int(v) }},
	}
	m.Placement = func(_ Policy, mp ModeParams) Placement {
		return PerProcess{ContextMiB: orNone(mp.MPSContextMiB), MaxClients: orNone(mp.MPSMaxClients)}
	}
	return m
}

// timesliceMode is CUDA time-slicing: a context per process; the GPU alternates.
func timesliceMode() Mode {
	m := separateProcesses(ModeTimeslice, "CUDA time-slicing: every job resident with its full peak and a context; the GPU alternates")
	m.Placement = func(_ Policy, mp ModeParams) Placement { return PerProcess{ContextMiB: orNone(mp.ContextMiB)} }
	m.Sharing.Compute = TimeSliced
	m.Params = []Param{{Name: "context-mib", Help: "time-slicing: device memory of one process's CUDA context, MiB", Default: 300,
		Get: func(mp ModeParams) float64 { return mp.ContextMiB }, Set: func(mp *ModeParams, v float64) { mp.ContextMiB = v }}}
	m.DeviceParams = []string{"slice", "context-switch"}
	return m
}

// suspendMode is suspend/resume at iteration boundaries: only the running job is
// resident, and it keeps the GPU for a quantum.
func suspendMode() Mode {
	return Mode{
		Name:        ModeSuspend,
		Description: "suspend/resume at iteration boundaries: only the running job resident",
		Sharing:     Sharing{Swapped: true, Gated: true},
		Quantum: func(mp ModeParams) (time.Duration, error) {
			q, err := Seconds(orNone(mp.SuspendQuantumS))
			if err != nil {
				return 0, fmt.Errorf("suspend quantum: %w", err)
			}
			return q, nil
		},
		Placement: func(Policy, ModeParams) Placement { return Swapped{} },
		Describe: func(base Policy) string {
			return "suspend/resume at iteration boundaries: only the running job resident; " + base.Name + " order, switching after a quantum"
		},
		Accepts: func(base Policy) error {
			if _, packs := base.Placement.(SalusLanes); packs {
				return fmt.Errorf("mode suspend keeps one job resident, so it cannot pack: use fifo, srtf or fair")
			}
			return nil
		},
		DefaultPolicies: []string{"fair", "srtf"},
		Params: []Param{{Name: "suspend-quantum", Help: "suspend/resume: seconds a job keeps the GPU before a switch", Default: 10,
			Get: func(mp ModeParams) float64 { return mp.SuspendQuantumS }, Set: func(mp *ModeParams, v float64) { mp.SuspendQuantumS = v }}},
		DeviceParams: []string{"pcie-gbps"},
	}
}
