// Package engine is what runs a trace under one policy: the interface the two
// engines implement (the simulator, package sim, on a virtual clock; the live
// engine, package live, a daemon and worker processes on the wall clock), and
// their registry. It speaks only core, device, cluster, workload, eventlog and metrics
// types: an engine knows no suite, no command line and no other engine.
//
// Each engine registers itself in its own package (Register, in an init
// function) with its place in the lists users read. An engine with flags of its
// own implements Flagged; the command line attaches them, and refuses them under
// another engine, without knowing the engine by name.
package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// Run is one run: a trace under one composed policy on a device.
type Run struct {
	Trace  *workload.Trace
	Policy core.Policy
	// Scheme names the run in logs and progress (default: the policy's name).
	Scheme string
	// Device is the device (and, with Device.GPUs, the node) to run on.
	Device device.Device
	// Cluster, when set, is the nodes to run on instead (Device is then the
	// reference device: the simulator's sim.Options.Cluster), and NodePlacement
	// the node placement's name ("": the default). An engine that runs one node
	// refuses it.
	Cluster       *cluster.Cluster
	NodePlacement string
	// LogPath, when set, is the file the run's event log is written to (gzipped
	// when it ends in .gz).
	LogPath string
	// Sink, when set, receives the run's events in the trace's own time, besides
	// the log. An engine whose events are in another time (the live engine's, on
	// a shrunk trace) does not send them.
	Sink eventlog.Sink
	// Output, when set, receives the engine's warnings and progress.
	Output io.Writer
}

// Outcome is what a run gave.
type Outcome struct {
	// Result is computed from the run's event log by package metrics, in the
	// trace's own time.
	Result metrics.Result
	// Policy is the policy that ran when the engine says another than asked (a
	// running daemon's own); empty otherwise.
	Policy string
	// Log is the event log's path, when there is one.
	Log string
	// SinkFed says Run.Sink received the run's events.
	SinkFed bool
}

// Engine runs traces.
type Engine interface {
	// Name is what --engine takes.
	Name() string
	// Description is one line for help texts.
	Description() string
	// Run runs r; a run that failed returns what it has with the error.
	Run(ctx context.Context, r Run) (Outcome, error)
}

// Accepter is implemented by an engine that cannot carry out every policy: Accepts
// says why it cannot run p. Suites leave such schemes out of their defaults and
// refuse them when asked.
type Accepter interface {
	Accepts(p core.Policy) error
}

// Planner is implemented by an engine that checks a suite's runs before any
// starts (the live engine: its node, its time scale) and may cut them (a running
// daemon runs its own policy, once). It returns the policies to run.
type Planner interface {
	Plan(t *workload.Trace, dev device.Device, policies []core.Policy, warn io.Writer) ([]core.Policy, error)
}

// Serial is implemented by an engine whose runs share the machine, so that they
// run one after another; a suite runs the others' runs in parallel.
type Serial interface {
	Serial()
}

// Flagged is implemented by an engine with flags of its own: AddFlags defines
// them on fs, and CheckFlags checks them once parsed.
type Flagged interface {
	AddFlags(fs *pflag.FlagSet)
	CheckFlags() error
}

// Annotator is implemented by an engine that says more of its runs than their
// metrics, beside a comparison with the reference engine: a column (Column its
// heading, Note a run's cell, by scheme) and a paragraph after (Footnote; "":
// none).
type Annotator interface {
	Column() string
	Note(scheme string) string
	Footnote() string
}

// IsSerial says whether e's runs go one at a time.
func IsSerial(e Engine) bool {
	_, ok := e.(Serial)
	return ok
}

// Check says why e cannot run p, or nil.
func Check(e Engine, p core.Policy) error {
	if a, ok := e.(Accepter); ok {
		return a.Accepts(p)
	}
	return nil
}

type entry struct {
	order int
	e     Engine
}

var (
	mu       sync.RWMutex
	registry []entry
)

// Register adds an engine at its place in the lists (lower first; the first is
// the reference engine, the default of --engine). A second engine of a name
// panics.
func Register(order int, e Engine) {
	mu.Lock()
	defer mu.Unlock()
	if e.Name() == "" {
		panic("engine: an engine needs a name")
	}
	for _, r := range registry {
		if r.e.Name() == e.Name() {
			panic("engine: " + e.Name() + " registered twice")
		}
	}
	registry = append(registry, entry{order, e})
	slices.SortStableFunc(registry, func(a, b entry) int { return a.order - b.order })
}

// Unregister removes an engine (for tests that register a throwaway one).
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	registry = slices.DeleteFunc(registry, func(r entry) bool { return r.e.Name() == name })
}

// All lists the registered engines in order.
func All() []Engine {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Engine, len(registry))
	for i, r := range registry {
		out[i] = r.e
	}
	return out
}

// Names lists the registered engines' names in order.
func Names() []string {
	var out []string
	for _, e := range All() {
		out = append(out, e.Name())
	}
	return out
}

// Reference is the first engine, which the others are compared with (the
// simulator); nil when none is registered.
func Reference() Engine {
	if all := All(); len(all) > 0 {
		return all[0]
	}
	return nil
}

// Lookup finds a registered engine.
func Lookup(name string) (Engine, error) {
	for _, e := range All() {
		if e.Name() == name {
			return e, nil
		}
	}
	return nil, fmt.Errorf("unknown engine %q: choose %s", name, strings.Join(Names(), " or "))
}

// Describe lists the engines for a help text: "name (description)".
func Describe() string {
	var parts []string
	for _, e := range All() {
		parts = append(parts, e.Name()+" ("+e.Description()+")")
	}
	return strings.Join(parts, ", ")
}
