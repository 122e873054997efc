package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
)

// modesSuite is a throwaway suite, registered by the test alone as the extension
// test registers one, that declares it reads --mode: it runs the schemes it is
// given (Options.Schemes), else every registered one, and its result lists them.
type modesSuite struct{}

func (modesSuite) Name() string        { return "modes-test" }
func (modesSuite) Description() string { return "a throwaway suite of the tests that reads --mode" }
func (modesSuite) Reads() []string     { return []string{"mode"} }
func (modesSuite) Run(o eval.Options) (eval.Result, error) {
	schemes := o.Schemes
	if schemes == nil {
		for _, s := range core.Schemes() {
			schemes = append(schemes, eval.Scheme{Mode: s[0], Policy: s[1]})
		}
	}
	r := &schemesResult{}
	for _, s := range schemes {
		r.Ran = append(r.Ran, fmt.Sprintf("%s/%s", s.Mode, s.Policy))
	}
	return r, nil
}

type schemesResult struct{ Ran []string }

func (*schemesResult) SuiteName() string          { return "modes-test" }
func (*schemesResult) Headlines() []eval.Headline { return nil }
func (r *schemesResult) Table(w io.Writer) error {
	_, err := fmt.Fprintln(w, strings.Join(r.Ran, " "))
	return err
}
func (r *schemesResult) JSON(w io.Writer) error { return r.Table(w) }
func (r *schemesResult) CSV(w io.Writer) error  { return r.Table(w) }

// TestASuiteThatReadsModeRunsOnlyTheModeGiven: a suite is one file that declares
// the common flags it reads; --mode then reaches it (Options.Schemes), and it runs
// that mode's schemes and no other. --policy, which it does not declare, is refused.
func TestASuiteThatReadsModeRunsOnlyTheModeGiven(t *testing.T) {
	eval.Register(modesSuite{})
	t.Cleanup(func() { eval.Unregister("modes-test") })

	all, err := run(t, "eval", "--suite", "modes-test")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(strings.Fields(all)); got != len(core.Schemes()) {
		t.Errorf("without --mode the suite runs its own %d schemes; it ran %d: %s", len(core.Schemes()), got, all)
	}
	for _, mode := range core.ModeNames() {
		out, err := run(t, "eval", "--suite", "modes-test", "--mode", mode)
		if err != nil {
			t.Fatalf("--mode %s: %v", mode, err)
		}
		ran := strings.Fields(out)
		if len(ran) == 0 {
			t.Errorf("--mode %s ran nothing", mode)
		}
		for _, s := range ran {
			if !strings.HasPrefix(s, mode+"/") {
				t.Errorf("--mode %s ran %s: %s", mode, s, out)
			}
		}
	}
	if _, err := run(t, "eval", "--suite", "modes-test", "--policy", "pack"); err == nil || !strings.Contains(err.Error(), "--policy applies to") {
		t.Errorf("--policy under a suite that does not read it: %v", err)
	}
}
