package eval

import (
	"github.com/salusgo/salus/core"
)

// Scheme is a sharing mode and the policy that runs within it.
type Scheme struct {
	Mode   string `json:"mode"`
	Policy string `json:"policy"`
}

// String is the scheme's name in tables and figures, as its mode labels it.
func (s Scheme) String() string {
	m, err := core.LookupMode(s.Mode)
	if err != nil {
		return s.Mode + "-" + s.Policy
	}
	return m.SchemeLabel(s.Policy)
}

// TrainingSchemes is what the training suite runs by default: every registered
// mode with its default policies, in the registry's order (the paper's four
// policies, then today's alternatives).
var TrainingSchemes = defaultSchemes()

func defaultSchemes() []Scheme {
	var out []Scheme
	for _, name := range core.ModeNames() {
		m, _ := core.LookupMode(name)
		for _, p := range m.DefaultPolicies {
			out = append(out, Scheme{m.Name, p})
		}
	}
	return out
}

// AllSchemes is every registered scheme: each mode with each policy it
// accepts, in the registry's order.
func AllSchemes() []Scheme {
	var out []Scheme
	for _, s := range core.Schemes() {
		out = append(out, Scheme{s[0], s[1]})
	}
	return out
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
				mode, err := core.LookupMode(m)
				if err != nil {
					return nil, err
				}
				ps = mode.DefaultPolicies
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
