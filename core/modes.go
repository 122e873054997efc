package core

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Names of the built-in sharing modes (modebuiltin.go).
const (
	ModeExclusive = "exclusive" // no sharing: one job at a time
	ModeSalus     = "salus"     // Salus lanes, switching at iteration boundaries
	ModeMPS       = "mps"       // NVIDIA MPS: every job resident with its full peak, kernels concurrent
	ModeTimeslice = "timeslice" // CUDA time-slicing: every job resident, the GPU alternates
	ModeSuspend   = "suspend"   // suspend/resume: only the running job resident
)

// ComputeSharing is how iterations in flight at the same time share the GPU's
// compute.
type ComputeSharing int

const (
	// ByDemand: concurrent iterations (of lanes, or of MPS clients) run side by side;
	// when their demands sum to more than one, each slows by the sum.
	ByDemand ComputeSharing = iota
	// TimeSliced: the GPU runs one process at a time, so n resident iterations each
	// get a 1/n share of the slices, less the context switches.
	TimeSliced
)

// Sharing is what a mode decides for the policies it runs: everything an engine
// (the scheduler, the simulator, the daemon) asks about how the device is shared.
// Compose sets it on the policy; no engine looks at a mode's name.
type Sharing struct {
	// StartupOnGPU is true when a job holds its lane from admission through its
	// start-up, as plain TensorFlow does when jobs run one after another; otherwise
	// start-up runs off the GPU from the job's arrival.
	StartupOnGPU bool
	// AdmitInOrder admits strictly in arrival order: a job that does not fit blocks
	// the later ones (separate processes started one after another).
	AdmitInOrder bool
	// Quantum, when positive, lets the job that runs keep its lane at iteration
	// boundaries until it has had the lane this long (suspend/resume's time slice).
	Quantum time.Duration
	// Swapped is true when only the running job of a lane is resident: the others'
	// persistent memory is copied out and back in when they run.
	Swapped bool
	// Gated is true when a scheduler grants every iteration, so each pays the round
	// trip; without sharing, or with separate processes, nothing stands in between.
	Gated bool
	// Compute is how concurrent iterations share compute.
	Compute ComputeSharing
}

// Mode is a sharing mode: how memory and compute are shared on the device, and so
// how a policy's order is carried out. Register one with RegisterMode.
type Mode struct {
	Name        string
	Description string
	// Sharing is set on every policy the mode runs; its Quantum comes from Quantum.
	Sharing Sharing
	// Quantum, when set, gives Sharing.Quantum from the parameters.
	Quantum func(ModeParams) (time.Duration, error)
	// Placement, when set, replaces the policy's placement.
	Placement func(base Policy, mp ModeParams) Placement
	// Describe, when set, gives the composed policy's description.
	Describe func(base Policy) string
	// Accepts, when set, returns an error that says why the mode cannot run a policy.
	Accepts func(base Policy) error
	// DefaultPolicies are the policies the mode runs when none is named.
	DefaultPolicies []string
	// Label, when set, names a policy run in this mode in tables and figures;
	// otherwise "mode-policy".
	Label func(policy string) string
	// Live is true when the live engine (the daemon and its workers) can carry the
	// mode out; the others run only in the simulator.
	Live bool
	// Params are the mode's own parameters: the command line defines a flag for
	// each, and refuses it when no run uses the mode.
	Params []Param
	// DeviceParams name the device model's flags that act under this mode only
	// (time-slicing's slice length): they are refused when no run uses it.
	DeviceParams []string
}

// Param is a parameter a mode declares: its name (the flag --NAME), its help and
// its default, which a value left 0 in ModeParams takes. A negative value says
// "none" (ModeParams.Param gives 0).
type Param struct {
	Name    string
	Help    string
	Default float64
	// Int is true for a whole number (a count).
	Int bool
	// Get and Set reach the parameter's field of ModeParams (the built-in
	// modes'); nil: the parameter is ModeParams.Extra[Name].
	Get func(ModeParams) float64
	Set func(*ModeParams, float64)
}

func (p Param) get(mp ModeParams) float64 {
	if p.Get != nil {
		return p.Get(mp)
	}
	return mp.Extra[p.Name]
}

func (p Param) set(mp *ModeParams, v float64) {
	if p.Set != nil {
		p.Set(mp, v)
		return
	}
	if mp.Extra == nil {
		mp.Extra = map[string]float64{}
	}
	mp.Extra[p.Name] = v
}

// ModeParam is a parameter and the mode that declares it.
type ModeParam struct {
	Mode string
	Param
}

// Params lists the parameters of every registered mode, in the modes' order.
func Params() []ModeParam {
	var out []ModeParam
	for _, name := range modeOrder {
		for _, p := range modeRegistry[name].ext.Params {
			out = append(out, ModeParam{name, p})
		}
	}
	return out
}

func lookupParam(name string) (Param, bool) {
	for _, p := range Params() {
		if p.Name == name {
			return p.Param, true
		}
	}
	return Param{}, false
}

// Param is the value of the named mode parameter as it acts: its default where
// mp leaves it 0, and 0 where it is negative ("none"). An unknown name is 0.
func (mp ModeParams) Param(name string) float64 {
	p, ok := lookupParam(name)
	if !ok {
		return 0
	}
	v := p.get(mp)
	if v == 0 {
		v = p.Default
	}
	return max(v, 0)
}

// SetParam sets the named mode parameter (0: its default; negative: none).
func (mp *ModeParams) SetParam(name string, v float64) error {
	p, ok := lookupParam(name)
	if !ok {
		return fmt.Errorf("unknown mode parameter %q", name)
	}
	p.set(mp, v)
	return nil
}

// SchemeLabel names policy run in mode m, as tables and figures show it.
func (m Mode) SchemeLabel(policy string) string {
	if m.Label != nil {
		return m.Label(policy)
	}
	return m.Name + "-" + policy
}

// compose returns base run within m.
func (m Mode) compose(base Policy, mp ModeParams) (Policy, error) {
	if m.Accepts != nil {
		if err := m.Accepts(base); err != nil {
			return Policy{}, err
		}
	}
	p := base
	p.Mode, p.Sharing = m.Name, m.Sharing
	if m.Quantum != nil {
		q, err := m.Quantum(mp)
		if err != nil {
			return Policy{}, err
		}
		p.Quantum = q
	}
	if m.Placement != nil {
		p.Placement = m.Placement(base, mp)
	}
	if m.Describe != nil {
		p.Description = m.Describe(base)
	}
	return p, nil
}

// The mode registry: each mode registers itself in its own file (RegisterModeAt,
// in an init function) with its place in the lists users read (and the order
// the training suite runs them in); RegisterMode puts one after the others.
var (
	modeRegistry = map[string]registered[Mode]{}
	modeOrder    []string
)

// RegisterModeAt adds a sharing mode at place order in ModeNames (lower first).
// It panics when the name is taken: modes are registered at start-up (or in a
// test, with UnregisterMode after).
func RegisterModeAt(order int, m Mode) {
	name := strings.ToLower(m.Name)
	if _, dup := modeRegistry[name]; dup || name == "" {
		panic(fmt.Sprintf("core: mode %q registered twice or unnamed", m.Name))
	}
	m.Name = name
	modeRegistry[name] = registered[Mode]{order, m}
	modeOrder = insertByOrder(modeOrder, name, order, func(n string) int { return modeRegistry[n].order })
}

// RegisterMode adds a sharing mode after every one registered.
func RegisterMode(m Mode) {
	last := 0
	for _, r := range modeRegistry {
		last = max(last, r.order+1)
	}
	RegisterModeAt(last, m)
}

// UnregisterMode removes a registered mode (for tests).
func UnregisterMode(name string) {
	name = strings.ToLower(name)
	delete(modeRegistry, name)
	modeOrder = slices.DeleteFunc(modeOrder, func(n string) bool { return n == name })
}

// LookupMode returns the named sharing mode.
func LookupMode(name string) (Mode, error) {
	r, ok := modeRegistry[strings.ToLower(name)]
	if !ok {
		return Mode{}, fmt.Errorf("unknown mode %q: choose one of %s", name, strings.Join(ModeNames(), ", "))
	}
	return r.ext, nil
}

// ModeNames lists the registered modes in the order they were registered.
func ModeNames() []string { return slices.Clone(modeOrder) }

// ModeParams are the memory-side parameters of the sharing modes. The simulator's
// device model holds the time-side ones (slices, context switches, PCIe bandwidth).
//
// The zero value is the defaults (DefaultModeParams): a field left 0 takes its
// default in WithDefaults, which Compose applies. A negative number says "none":
// no context memory, no client limit, no quantum.
type ModeParams struct {
	// ContextMiB is the memory a CUDA context takes per process (time-slicing: each
	// job is its own process with its own context). 0: the default; negative: none.
	ContextMiB float64 `json:"context_mib"`
	// MPSContextMiB is the per-client memory under MPS, which shares one context.
	// 0: the default; negative: none.
	MPSContextMiB float64 `json:"mps_context_mib"`
	// MPSMaxClients is MPS's per-GPU client limit. 0: the default; negative: no
	// limit.
	MPSMaxClients int `json:"mps_max_clients"`
	// SuspendQuantumS is how long a job keeps the GPU under suspend/resume before the
	// policy may switch to another at an iteration boundary. 0: the default;
	// negative: none (the policy may switch at every boundary).
	SuspendQuantumS float64 `json:"suspend_quantum_s"`
	// Admission is the order of admission of the lane-based policies: "arrival"
	// (or empty, the default) or "policy" (admission.go).
	Admission string `json:"admission,omitempty"`
	// StarveFactor is K of policy-ordered admission: a waiting job may be passed
	// over during its first K x its declared GPU time of waiting. 0 is
	// DefaultStarveFactor.
	StarveFactor float64 `json:"starve_factor,omitempty"`
	// Migrate lets a job waiting for its turn in a lane move to an idle GPU of
	// its node at its iteration boundary (migrate.go). Off by default.
	Migrate bool `json:"migrate,omitempty"`
	// Extra holds the parameters of modes that have no field here (a mode
	// registered outside this package), by name: see Param.
	Extra map[string]float64 `json:"extra,omitempty"`
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
func DefaultModeParams() ModeParams { return ModeParams{}.WithDefaults() }

// WithDefaults is mp with every parameter left zero set to its default (each
// mode declares its own, Mode.Params): the one step that makes the zero value
// (or a partly filled one) mean the defaults. Admission "" is arrival order and
// StarveFactor 0 DefaultStarveFactor, as they read. Negative numbers ("none")
// stay as they are.
func (mp ModeParams) WithDefaults() ModeParams {
	mp.Extra = maps.Clone(mp.Extra)
	for _, p := range Params() {
		if p.get(mp) == 0 {
			p.set(&mp, p.Default)
		}
	}
	return mp
}

// ParamError says which mode parameter is wrong and why; Param is its name as
// ModeParams's JSON spells it (starve_factor), which a command line turns into its
// flag's name.
type ParamError struct {
	Param  string
	Value  any
	Reason string
}

func (e *ParamError) Error() string {
	if s, ok := e.Value.(string); ok {
		return fmt.Sprintf("%s %q: %s", strings.ReplaceAll(e.Param, "_", " "), s, e.Reason)
	}
	return fmt.Sprintf("%s %v: %s", strings.ReplaceAll(e.Param, "_", " "), e.Value, e.Reason)
}

// Validate checks mp, the one check of the mode parameters (Compose makes it):
// numbers must be finite, the admission order one of AdmissionOrders, the
// starve factor not negative (0: DefaultStarveFactor).
func (mp ModeParams) Validate() error {
	if math.IsNaN(mp.StarveFactor) || math.IsInf(mp.StarveFactor, 0) {
		return &ParamError{"starve_factor", mp.StarveFactor, "give a finite number"}
	}
	for _, p := range Params() {
		if v := p.get(mp); math.IsNaN(v) || math.IsInf(v, 0) {
			return &ParamError{strings.ReplaceAll(p.Name, "-", "_"), v, "give a finite number"}
		}
	}
	switch strings.ToLower(mp.Admission) {
	case "", AdmitByArrival, AdmitByPolicy:
	default:
		return &ParamError{"admission", mp.Admission, "choose " + strings.Join(AdmissionOrders, " or ")}
	}
	if mp.StarveFactor < 0 {
		return &ParamError{"starve_factor", mp.StarveFactor, fmt.Sprintf("give a positive number of job lengths (0: the default, %g)", DefaultStarveFactor)}
	}
	return nil
}

// orNone is a parameter as it acts: its value, or 0 where it is negative ("none").
func orNone[T int | float64](v T) T { return max(v, 0) }

// Compose returns the policy that runs policy within a sharing mode; an empty mode
// is the policy's own. Modes that cannot run a policy say why in their error.
func Compose(mode, policy string, mp ModeParams) (Policy, error) {
	mp = mp.WithDefaults()
	base, err := lookupBase(policy)
	if err != nil {
		return Policy{}, err
	}
	if mode == "" {
		mode = base.Mode
	}
	m, err := LookupMode(mode)
	if err != nil {
		return Policy{}, err
	}
	p, err := m.compose(base, mp)
	if err != nil {
		return Policy{}, err
	}
	if p.Admission, err = admissionOf(p, mp); err != nil {
		return Policy{}, err
	}
	p.Migrate = mp.Migrate
	return p, nil
}
