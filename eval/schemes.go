package eval

import (
	"fmt"

	"github.com/salusgo/salus/core"
)

// Scheme is a sharing mode and the policy that runs within it.
type Scheme struct {
	Mode   string `json:"mode"`
	Policy string `json:"policy"`
}

func (s Scheme) String() string {
	switch s.Mode {
	case core.ModeSalus, core.ModeExclusive:
		return s.Policy
	case core.ModeMPS, core.ModeTimeslice:
		return s.Mode
	}
	return s.Mode + "-" + s.Policy
}

// modeDefaults are the policies each mode runs when none is named.
var modeDefaults = map[string][]string{
	core.ModeExclusive: {"fifo"},
	core.ModeSalus:     {"srtf", "pack", "fair"},
	core.ModeMPS:       {"fifo"},
	core.ModeTimeslice: {"fifo"},
	core.ModeSuspend:   {"fair", "srtf"},
}

// TrainingSchemes is what the training suite runs by default: the paper's four
// policies, then today's alternatives.
var TrainingSchemes = []Scheme{
	{core.ModeExclusive, "fifo"}, {core.ModeSalus, "srtf"}, {core.ModeSalus, "pack"}, {core.ModeSalus, "fair"},
	{core.ModeMPS, "fifo"}, {core.ModeTimeslice, "fifo"}, {core.ModeSuspend, "fair"}, {core.ModeSuspend, "srtf"},
}

// ResolveSchemes turns --policy and --mode flags into schemes. No flags: all of
// TrainingSchemes. Policies alone: each in its own mode (fifo exclusive, the others
// in Salus lanes). Modes alone: each mode with its usual policies. Both: every pair,
// and a pair that makes no sense is an error.
func ResolveSchemes(policies, modes []string, mp core.ModeParams) ([]Scheme, error) {
	var out []Scheme
	switch {
	case len(policies) == 0 && len(modes) == 0:
		out = append(out, TrainingSchemes...)
	case len(modes) == 0:
		for _, name := range policies {
			p, err := core.Lookup(name)
			if err != nil {
				return nil, err
			}
			out = append(out, Scheme{p.Mode, p.Name})
		}
	default:
		for _, m := range modes {
			ps := policies
			if len(ps) == 0 {
				ps = modeDefaults[m]
				if ps == nil {
					return nil, fmt.Errorf("unknown mode %q: choose one of %v", m, core.Modes)
				}
			}
			for _, p := range ps {
				out = append(out, Scheme{m, p})
			}
		}
	}
	for _, s := range out {
		if _, err := core.Compose(s.Mode, s.Policy, mp); err != nil {
			return nil, err
		}
	}
	return out, nil
}
