package main

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
)

// registerKnobMode registers, for one test, a mode that declares one parameter:
// suspend/resume whose quantum is its own --knob-quantum (default 5 s). That is
// all a new mode with a parameter takes: the command line defines its flag,
// refuses it where no run uses the mode, and lists both in its help.
func registerKnobMode(t *testing.T) {
	t.Helper()
	core.RegisterMode(core.Mode{
		Name:            "knob",
		Description:     "a test mode: suspend/resume with a quantum of --knob-quantum",
		Sharing:         core.Sharing{Swapped: true, Gated: true},
		Quantum:         func(mp core.ModeParams) (time.Duration, error) { return core.Seconds(mp.Param("knob-quantum")) },
		Placement:       func(core.Policy, core.ModeParams) core.Placement { return core.Swapped{} },
		Params:          []core.Param{{Name: "knob-quantum", Help: "knob: seconds a job keeps the GPU before a switch", Default: 5}},
		DefaultPolicies: []string{"fair"},
	})
	t.Cleanup(func() { core.UnregisterMode("knob") })
}

// figures are the numbers of the one run of eval --format csv.
func figures(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := run(t, append([]string{"eval", "--format", "csv"}, args...)...)
	if err != nil {
		t.Fatalf("salus eval %v: %v\n%s", args, err, out)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("salus eval %v: %v\n%s", args, err, out)
	}
	i := slices.Index(rows[0], "mode")
	return rows[1][i+1:]
}

func TestAModeWithAParameter(t *testing.T) {
	registerKnobMode(t)
	help, err := run(t, "eval", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--knob-quantum", "knob: seconds a job keeps the GPU", "knob"} {
		if !strings.Contains(help, want) {
			t.Errorf("salus eval --help lacks %q", want)
		}
	}
	// Its parameter reaches it, with its default when not given.
	knob := figures(t, "--mode", "knob", "--policy", "fair")
	if want := figures(t, "--mode", "suspend", "--policy", "fair", "--suspend-quantum", "5"); !slices.Equal(knob, want) {
		t.Errorf("knob at its default quantum (5 s): %v; suspend-fair at 5 s: %v", knob, want)
	}
	knob10 := figures(t, "--mode", "knob", "--policy", "fair", "--knob-quantum", "10")
	if want := figures(t, "--mode", "suspend", "--policy", "fair"); !slices.Equal(knob10, want) {
		t.Errorf("knob at --knob-quantum 10: %v; suspend-fair at its 10 s: %v", knob10, want)
	}
	if slices.Equal(knob, knob10) {
		t.Errorf("the quantum changes nothing: %v", knob)
	}
	// Where no run uses the mode, its parameter is refused.
	if _, err := run(t, "eval", "--mode", "salus", "--knob-quantum", "3"); err == nil || !strings.Contains(err.Error(), "--knob-quantum applies to the knob mode only") {
		t.Errorf("--knob-quantum without the knob mode: %v", err)
	}
}

// knobSuite is a suite with one flag of its own (--knob-count) that reads one
// common flag (--seed): all in this one type and its Register line.
type knobSuite struct {
	count int
	seen  *eval.Options
}

func (*knobSuite) Name() string        { return "knob" }
func (*knobSuite) Description() string { return "a test suite with its own --knob-count" }
func (*knobSuite) Reads() []string     { return []string{"seed"} }
func (k *knobSuite) AddFlags(f *pflag.FlagSet, _ *eval.Options) {
	f.IntVar(&k.count, "knob-count", 1, "knob suite: how many knobs")
}
func (k *knobSuite) CheckFlags(eval.Options) error {
	if k.count < 1 {
		return fmt.Errorf("--knob-count %d: give at least 1", k.count)
	}
	return nil
}
func (k *knobSuite) Run(o eval.Options) (eval.Result, error) {
	k.seen = &o
	return &eval.FailedSuite{Suite: "knob", Error: fmt.Sprintf("%d knobs, seed %d", k.count, o.Seed)}, nil
}

func TestASuiteWithAFlag(t *testing.T) {
	k := &knobSuite{}
	eval.Register(k)
	t.Cleanup(func() { eval.Unregister("knob") })
	help, err := run(t, "eval", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--knob-count", "knob suite: how many knobs", "knob (a test suite with its own --knob-count)"} {
		if !strings.Contains(help, want) {
			t.Errorf("salus eval --help lacks %q", want)
		}
	}
	out, err := run(t, "eval", "--suite", "knob", "--knob-count", "3", "--seed", "7")
	if err != nil || !strings.Contains(out, "3 knobs, seed 7") {
		t.Errorf("eval --suite knob --knob-count 3 --seed 7: %v\n%s", err, out)
	}
	for args, want := range map[string]string{
		"--knob-count 3":                  "--knob-count applies to the knob suite (--suite knob) only",
		"--suite knob --knob-count 0":     "--knob-count 0: give at least 1",
		"--suite knob --trace-kind paper": "--trace-kind applies to the training suite (and all) only",
		"--suite knob --engine live":      "the knob suite runs on the sim engine only, not live",
	} {
		if _, err := run(t, append([]string{"eval"}, strings.Fields(args)...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("eval %s: %v, want %q", args, err, want)
		}
	}
}
