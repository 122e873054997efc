package eval

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/engine"
)

// A Suite is one experiment of salus eval --suite NAME. Each suite is one file that
// registers itself (Register, in an init function); the command line, its help and
// --suite all take the suites from the registry.
type Suite interface {
	Name() string
	// Description is one line for the help text.
	Description() string
	// Run runs the suite. A result with some failed runs comes back with an error
	// (a *RunsFailed): the result holds a row for each failed run.
	Run(Options) (Result, error)
}

// Flagged is implemented by a suite with flags of its own: AddFlags defines them
// on fs, bound to o's section for the suite (o is what the command line then
// passes to RunSuite), and CheckFlags checks them once parsed. The command line
// refuses them under another suite.
type Flagged interface {
	AddFlags(fs *pflag.FlagSet, o *Options)
	CheckFlags(o Options) error
}

// Reader is implemented by a suite that reads some of the common flags of salus
// eval (CommonFlags): their names. A suite without it reads none of them, and
// the command line refuses them under it.
type Reader interface {
	Reads() []string
}

// CommonFlags are the flags of salus eval that only some suites read (Reader):
// the trace's, the schemes', the node's.
var CommonFlags = []string{"trace", "catalog", "load", "seed", "trace-kind", "resample", "policy", "mode", "gpus", "gpu-placement"}

// Reads are the common flags suite s reads.
func Reads(s Suite) []string {
	if r, ok := s.(Reader); ok {
		return r.Reads()
	}
	return nil
}

// TraceOptional is implemented by a suite that reads --trace but runs jobs of
// its own without one (inference, tuning): the command line then generates no
// trace for it.
type TraceOptional interface {
	TraceOptional()
}

// MeasuresReal is implemented by a suite that measures real processes (overhead):
// the simulator's device-model flags do nothing to it.
type MeasuresReal interface {
	MeasuresReal()
}

// Schemer is implemented by a suite that runs schemes: those it runs with o
// (nil: not known before the run).
type Schemer interface {
	Schemes(o Options) []Scheme
}

// Selected are the suites --suite name runs: the one, or with "all" those of
// --suite all; nil for an unknown name.
func Selected(name string) []Suite {
	if name == AllName {
		return allSuites()
	}
	if s, err := Lookup(name); err == nil {
		return []Suite{s}
	}
	return nil
}

// RunsOn is implemented by a suite that runs on other engines than the simulator:
// it says why it cannot run on e, or nil. A suite without it runs on the
// reference engine (the simulator) only.
type RunsOn interface {
	RunsOn(e engine.Engine) error
}

// CheckEngine says why suite s cannot run on e (nil: the reference engine), or nil.
func CheckEngine(s Suite, e engine.Engine) error {
	if e == nil {
		return nil
	}
	if r, ok := s.(RunsOn); ok {
		return r.RunsOn(e)
	}
	if ref := engine.Reference(); ref == nil || e.Name() != ref.Name() {
		return fmt.Errorf("the %s suite runs on the %s engine only, not %s", s.Name(), engineName(engine.Reference()), e.Name())
	}
	return nil
}

func engineName(e engine.Engine) string {
	if e == nil {
		return "reference"
	}
	return e.Name()
}

// InAll is implemented by the suites --suite all runs; they run in the order of
// AllOrder, lowest first. A suite that needs more than the simulator (overhead:
// PyTorch) is not one of them.
type InAll interface {
	AllOrder() int
}

// A Result is a suite's outcome: it prints itself as a table, JSON and CSV, and says
// how it compares with the paper (its suite carries the published figures).
// Package report draws it.
type Result interface {
	Output
	// SuiteName is the suite that produced the result.
	SuiteName() string
	// Headlines are the paper's figures beside the measured ones (none: nil).
	Headlines() []Headline
}

// Options are what a suite may take from the command line. Each suite reads the
// common fields it needs and its own section; a new suite may add a section.
type Options struct {
	Context context.Context // nil: context.Background()
	// Engine runs the suite's runs; nil: the reference engine, the simulator.
	// A suite runs on an engine or refuses it by its own declaration (RunsOn).
	Engine engine.Engine
	Device device.Device
	Modes  core.ModeParams
	// OutDir, when set, receives the suite's event logs and files.
	OutDir string
	// Progress receives progress lines; nil: nowhere.
	Progress io.Writer
	// Policies are --policy's names (the overhead suite's trace policies).
	Policies []string
	// Schemes are --policy and --mode resolved (ResolveSchemes), for every suite
	// that reads either (Reader); nil when neither is given: the suite's own.
	Schemes []Scheme
	// PaperSeeds is how many seeds of the paper trace the paper suite runs; 0:
	// PaperSeeds.
	PaperSeeds int
	// Seed is --seed, for the suites that read it (0: each suite's own).
	Seed int64
	// TraceFile is --trace as given ("": none), whose jobs are Training.Trace: a
	// suite that runs its own jobs without it (TraceOptional) reads the trace
	// only then.
	TraceFile string
	// Suite is --suite as given: under "all", --trace is the training suite's
	// (OwnTrace).
	Suite string
	// Repeat is --repeat: how many times a live suite runs each scheme (0 or 1:
	// once), for intervals and a judgement of the machine's noise.
	Repeat int
	// CapacityMiB is --capacity-mib as given (0: not given), for a suite that
	// runs its own device (overhead).
	CapacityMiB float64

	Training  TrainingOptions
	Tuning    TuningOptions
	Inference InferenceOptions
	Overhead  OverheadOptions
}

// OwnTrace says whether the user's --trace is given to a TraceOptional suite:
// given, and the suite run alone (under --suite all it is the training suite's).
func (o Options) OwnTrace() bool { return o.TraceFile != "" && o.Suite != AllName }

func (o Options) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

var (
	suitesMu sync.RWMutex
	suites   = map[string]Suite{}
)

// AllName is --suite all: every suite that implements InAll.
const AllName = "all"

// Register adds a suite; a second suite of the same name, or one named "all",
// panics.
func Register(s Suite) {
	suitesMu.Lock()
	defer suitesMu.Unlock()
	name := s.Name()
	if name == "" || name == AllName {
		panic(fmt.Sprintf("eval: cannot register a suite named %q", name))
	}
	if _, dup := suites[name]; dup {
		panic("eval: suite " + name + " registered twice")
	}
	suites[name] = s
}

// Unregister removes a suite (for tests that register a throwaway one).
func Unregister(name string) {
	suitesMu.Lock()
	defer suitesMu.Unlock()
	delete(suites, name)
}

// Names lists the registered suites: those of --suite all in their order, then the
// others sorted, then "all".
func Names() []string {
	var names []string
	for _, s := range registered() {
		names = append(names, s.Name())
	}
	return append(names, AllName)
}

// Describe lists the suites for a help text: "name (description)".
func Describe() string {
	var parts []string
	for _, s := range registered() {
		parts = append(parts, s.Name()+" ("+s.Description()+")")
	}
	var all []string
	for _, s := range allSuites() {
		all = append(all, s.Name())
	}
	parts = append(parts, AllName+" ("+strings.Join(all, ", ")+")")
	return strings.Join(parts, ", ")
}

func registered() []Suite {
	suitesMu.RLock()
	defer suitesMu.RUnlock()
	out := make([]Suite, 0, len(suites))
	for _, s := range suites {
		out = append(out, s)
	}
	rank := func(s Suite) (bool, int) {
		a, ok := s.(InAll)
		if !ok {
			return false, 0
		}
		return true, a.AllOrder()
	}
	sort.Slice(out, func(i, j int) bool {
		ai, oi := rank(out[i])
		aj, oj := rank(out[j])
		switch {
		case ai != aj:
			return ai
		case oi != oj:
			return oi < oj
		}
		return out[i].Name() < out[j].Name()
	})
	return out
}

func allSuites() []Suite {
	var out []Suite
	for _, s := range registered() {
		if _, ok := s.(InAll); ok {
			out = append(out, s)
		}
	}
	return out
}

// Lookup finds a registered suite.
func Lookup(name string) (Suite, error) {
	suitesMu.RLock()
	s, ok := suites[name]
	suitesMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown suite %q: choose %s", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// RunSuite runs the named suite, or with "all" every suite of --suite all.
func RunSuite(name string, o Options) (Result, error) {
	if name == AllName {
		return RunAll(o)
	}
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := CheckEngine(s, o.Engine); err != nil {
		return nil, err
	}
	return s.Run(o)
}

// SuitesFailed is --suite all's error when some suites failed or had failed runs:
// the report holds the others, and a section for each failure.
type SuitesFailed struct {
	Failed []string
	First  error
}

func (e *SuitesFailed) Error() string {
	return fmt.Sprintf("suite %s failed; the first: %v", strings.Join(e.Failed, ", "), e.First)
}

func (e *SuitesFailed) Unwrap() error { return e.First }

// RunAll runs every suite of --suite all, in order, and keeps going when one fails:
// a failed suite becomes a section with its error, and RunAll returns the report
// with a *SuitesFailed.
func RunAll(o Options) (*AllReport, error) {
	var results []Result
	var failed SuitesFailed
	for _, s := range allSuites() {
		if err := CheckEngine(s, o.Engine); err != nil {
			return nil, fmt.Errorf("--suite all: %w", err)
		}
	}
	for _, s := range allSuites() {
		res, err := s.Run(o)
		if err != nil {
			failed.Failed = append(failed.Failed, s.Name())
			if failed.First == nil {
				failed.First = err
			}
			var partial *RunsFailed
			if res == nil || !errors.As(err, &partial) {
				res = &FailedSuite{Suite: s.Name(), Error: err.Error()}
			}
		}
		results = append(results, res)
	}
	rep := All(results...)
	if len(failed.Failed) > 0 {
		return rep, &failed
	}
	return rep, nil
}

// FailedSuite stands for a suite of --suite all that failed.
type FailedSuite struct {
	Suite string `json:"suite"`
	Error string `json:"error"`
	// Runs is always empty: it marks the failure as a suite for readers of the JSON.
	Runs []struct{} `json:"runs"`
}

func (f *FailedSuite) SuiteName() string     { return f.Suite }
func (f *FailedSuite) Headlines() []Headline { return nil }
func (f *FailedSuite) Table(w io.Writer) error {
	_, err := fmt.Fprintf(w, "Suite %s failed: %s\n", f.Suite, f.Error)
	return err
}
func (f *FailedSuite) JSON(w io.Writer) error { return writeJSON(w, f) }
func (f *FailedSuite) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "error"})
	cw.Write([]string{f.Suite, f.Error})
	cw.Flush()
	return cw.Error()
}
