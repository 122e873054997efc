package core

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// JobView is what a policy may look at when it orders the ready jobs of a lane:
// what changes as the job runs, in its fields, and what the job is (memory,
// GPUs, model, batch, share), through its methods, which read the job's
// static record (shared by jobs alike) so that the scheduler's hot state does
// not grow with what policies may read.
type JobView struct {
	ID         string
	Seq        int           // arrival order, from 0
	Arrival    time.Duration // since the start of the run
	Declared   time.Duration // declared GPU time (start-up excluded)
	Attained   time.Duration // GPU time received so far
	Iterations int           // iterations completed
	RequestSeq uint64        // order in which the pending iteration request was made
	// Asked is when the job asked for its pending iteration (its arrival at the
	// scheduler, before its first request). A ready job's place in its lane does
	// not change while it waits (queue.go), so what a policy reads of time is
	// read as of then: see Waiting.
	Asked time.Duration
	// Priority: a smaller number is more urgent (0 runs before 1). Every lane
	// runs its more urgent ready jobs first, then the others in the policy's order;
	// admission too takes the more urgent waiting jobs first.
	Priority int
	// Credit is GPU time the job is counted as having had though it did not: what
	// a Rejoiner (floor) credits a job that comes back from idle, so that it
	// does not claim back the time its share was lent to others. 0 otherwise.
	Credit time.Duration
	// need is the job's static record; nil in a view made by hand (ViewOf
	// makes one with it).
	need *need
}

// ViewOf is the view of job j as it arrives first, with arrival number seq:
// nothing attained, asked at its arrival. For tests and tools that call a
// policy's order outside a scheduler.
func ViewOf(j Job, seq int) JobView {
	n := &need{persistent: j.Persistent, ephemeral: j.Ephemeral, laneCap: j.LaneCap, gpus: j.GPUs, share: ShareOf(j),
		model: j.Model, batch: j.Batch, pinned: j.Pinned, models: j.GPUModels}
	return JobView{ID: j.ID, Seq: seq, Arrival: j.Arrival, Declared: j.Declared, Priority: j.Priority, Asked: j.Arrival, need: n}
}

// Remaining is the declared GPU time not yet received, as SRTF sees it.
func (v JobView) Remaining() time.Duration { return v.Declared - v.Attained }

// Waiting is the time the job had spent without GPU service when it asked for
// its pending iteration: from its arrival to then (Asked), less the GPU time
// it attained; start-up and admission included, never below 0. Under one
// lane, where one job runs at a time at the GPU's full speed, it is exactly
// the time the job was not running.
func (v JobView) Waiting() time.Duration { return max(v.Asked-v.Arrival-v.Attained, 0) }

// Share is the job's scheduling weight (Job.Share; 1 when it gave none).
func (v JobView) Share() float64 {
	if v.need == nil {
		return 1
	}
	return v.need.share
}

// Persistent is the job's persistent memory (MiB): what stays on the GPU
// across its iterations.
func (v JobView) Persistent() float64 {
	if v.need == nil {
		return 0
	}
	return v.need.persistent
}

// Ephemeral is the job's ephemeral memory (MiB): its peak within an iteration
// above the persistent floor.
func (v JobView) Ephemeral() float64 {
	if v.need == nil {
		return 0
	}
	return v.need.ephemeral
}

// GPUs is how many GPUs the job needs at once, at least 1.
func (v JobView) GPUs() int {
	if v.need == nil {
		return 1
	}
	return max(v.need.gpus, 1)
}

// Model is the job's workload (Job.Model), "" when unknown.
func (v JobView) Model() string {
	if v.need == nil {
		return ""
	}
	return v.need.model
}

// Batch is the job's batch size (Job.Batch), 0 when unknown.
func (v JobView) Batch() int {
	if v.need == nil {
		return 0
	}
	return v.need.batch
}

// Policy is a scheduling policy, run within a sharing mode: where jobs are admitted
// and who runs next. The registered policies (see Lookup) are each run in their own
// mode; Compose runs one within another. A constructor (FIFO, SRTF, ...) makes the
// policy before a mode sets its Sharing: use Lookup or Compose to run one.
type Policy struct {
	Name        string
	Description string
	// Mode names the sharing mode the policy runs in. A registered policy's
	// constructor names its own mode (the one Lookup and an empty --mode give it);
	// Compose sets the mode it runs in. Engines never look at it: they ask Sharing.
	Mode      string
	Placement Placement
	// Order orders the ready jobs of one lane.
	Order Order
	// Admission is the order waiting jobs are admitted in (admission.go); Compose
	// sets it from ModeParams.
	Admission Admission
	// UsesDeclared is true when Order reads the jobs' declared GPU time: a job must
	// then declare one (the daemon refuses or estimates a missing one).
	UsesDeclared bool
	// Defrag splits or merges Salus lanes at iteration boundaries (defrag.go);
	// it acts only with the SalusLanes placement.
	Defrag Defragmentation
	// Migrate lets a job that waits for its turn move to a GPU of its node on
	// which nothing runs, at its iteration boundary (migrate.go); Compose sets
	// it from ModeParams.Migrate.
	Migrate bool
	// Sharing is set by the mode (see Mode): how the engines carry the policy out.
	Sharing
}

// The policy registry: each policy registers itself in its own file
// (RegisterPolicyAt, in an init function), with its place in the lists users
// read; RegisterPolicy puts one after all the others.
var (
	policyRegistry = map[string]registered[func() Policy]{}
	policyOrder    []string
)

// registered is an extension and its place in its registry's order.
type registered[T any] struct {
	order int
	ext   T
}

// RegisterPolicyAt adds a policy by its name at place order in Names (lower
// first; equal orders keep the order of registration). It panics when the name
// is taken: policies are registered at start-up (or in a test, with
// UnregisterPolicy after).
func RegisterPolicyAt(order int, mk func() Policy) {
	name := strings.ToLower(mk().Name)
	if _, dup := policyRegistry[name]; dup || name == "" {
		panic(fmt.Sprintf("core: policy %q registered twice or unnamed", name))
	}
	policyRegistry[name] = registered[func() Policy]{order, mk}
	policyOrder = insertByOrder(policyOrder, name, order, func(n string) int { return policyRegistry[n].order })
}

// RegisterPolicy adds a policy after every one registered.
func RegisterPolicy(mk func() Policy) {
	last := 0
	for _, r := range policyRegistry {
		last = max(last, r.order+1)
	}
	RegisterPolicyAt(last, mk)
}

// insertByOrder inserts name into names, kept sorted by orderOf, after the
// names of the same order.
func insertByOrder(names []string, name string, order int, orderOf func(string) int) []string {
	i := len(names)
	for i > 0 && orderOf(names[i-1]) > order {
		i--
	}
	return slices.Insert(names, i, name)
}

// UnregisterPolicy removes a registered policy (for tests).
func UnregisterPolicy(name string) {
	name = strings.ToLower(name)
	delete(policyRegistry, name)
	policyOrder = slices.DeleteFunc(policyOrder, func(n string) bool { return n == name })
}

// lookupBase returns the named policy as its constructor makes it, before a mode
// sets its Sharing.
func lookupBase(name string) (Policy, error) {
	r, ok := policyRegistry[strings.ToLower(name)]
	if !ok {
		return Policy{}, fmt.Errorf("unknown policy %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	return r.ext(), nil
}

// Lookup returns the named policy, run in its own mode.
func Lookup(name string) (Policy, error) {
	return Compose("", name, DefaultModeParams())
}

// Accepts lists the registered policies that mode runs, in Names' order.
func Accepts(mode string) []string {
	var out []string
	for _, n := range Names() {
		if _, err := Compose(mode, n, DefaultModeParams()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Schemes lists every registered scheme, each mode (in ModeNames' order)
// with each policy it runs (Accepts), as {mode, policy}.
func Schemes() [][2]string {
	var out [][2]string
	for _, m := range ModeNames() {
		for _, p := range Accepts(m) {
			out = append(out, [2]string{m, p})
		}
	}
	return out
}

// Names lists the registered policies in their registry order.
func Names() []string { return slices.Clone(policyOrder) }

// Order is a policy's order of the ready jobs of one lane: with Placement, one of a
// policy's two extension points.
type Order interface {
	// Less is true when a should run before b. Ties (neither is less) go to the
	// earlier arrival.
	Less(a, b JobView) bool
}

// KeyOrder is an Order by an integer key, smallest first: Less(a, b) is exactly
// Key(a) < Key(b). A ready job's key does not change while it waits, so the
// scheduler computes it once, when the job joins its lane's queue.
type KeyOrder interface {
	Order
	Key(v JobView) int64
}

// OrderFunc makes a function an Order.
type OrderFunc func(a, b JobView) bool

// Less calls f.
func (f OrderFunc) Less(a, b JobView) bool { return f(a, b) }

// The orders of the built-in policies.
type (
	// ByArrival runs the earliest arrival first.
	ByArrival struct{}
	// ByRequest serves iteration requests in the order they were made.
	ByRequest struct{}
	// ByRemaining runs the least remaining declared GPU time first (SRTF).
	ByRemaining struct{}
	// ByAttained runs the least GPU time received so far first (fair).
	ByAttained struct{}
)

var (
	_ Order    = ByArrival{}
	_ Order    = ByRequest{}
	_ Order    = ByRemaining{}
	_ Order    = ByAttained{}
	_ Order    = OrderFunc(nil)
	_ KeyOrder = ByArrival{}
	_ KeyOrder = ByRequest{}
	_ KeyOrder = ByRemaining{}
	_ KeyOrder = ByAttained{}
)

// Less implements Order.
func (ByArrival) Less(a, b JobView) bool { return a.Seq < b.Seq }

// Less implements Order.
func (ByRequest) Less(a, b JobView) bool { return a.RequestSeq < b.RequestSeq }

// Less implements Order.
func (ByRemaining) Less(a, b JobView) bool { return a.Remaining() < b.Remaining() }

// Less implements Order.
func (ByAttained) Less(a, b JobView) bool { return a.Attained < b.Attained }

// Key implements KeyOrder.
func (ByArrival) Key(v JobView) int64 { return int64(v.Seq) }

// Key implements KeyOrder.
func (ByRequest) Key(v JobView) int64 { return int64(v.RequestSeq) }

// Key implements KeyOrder.
func (ByRemaining) Key(v JobView) int64 { return int64(v.Remaining()) }

// Key implements KeyOrder.
func (ByAttained) Key(v JobView) int64 { return int64(v.Attained) }
