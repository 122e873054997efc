package workload

import (
	"fmt"
	"math"
	"strconv"
)

// Inline is a job's own profile figures, given in optional trace columns. Each one
// that is set overrides the catalog's figure; a model the catalog does not have
// needs iter_s, persistent_mib and ephemeral_mib (start-up defaults to 0 s and
// demand to 1, the whole GPU: the cautious guess when nothing was measured).
type Inline struct {
	IterS         *float64 `json:"iter_s,omitempty"`
	StartupS      *float64 `json:"startup_s,omitempty"`
	PersistentMiB *float64 `json:"persistent_mib,omitempty"`
	EphemeralMiB  *float64 `json:"ephemeral_mib,omitempty"`
	Demand        *float64 `json:"demand,omitempty"`
}

// inlineColumns are the trace columns of Inline, in the order files write them.
var inlineColumns = []string{"iter_s", "startup_s", "persistent_mib", "ephemeral_mib", "demand"}

func (in *Inline) field(col string) **float64 {
	switch col {
	case "iter_s":
		return &in.IterS
	case "startup_s":
		return &in.StartupS
	case "persistent_mib":
		return &in.PersistentMiB
	case "ephemeral_mib":
		return &in.EphemeralMiB
	case "demand":
		return &in.Demand
	}
	panic("workload: no inline column " + col)
}

// Empty reports whether no figure is given.
func (in Inline) Empty() bool {
	return in.IterS == nil && in.StartupS == nil && in.PersistentMiB == nil && in.EphemeralMiB == nil && in.Demand == nil
}

// parseInline reads the inline columns of a row; bad names the field of an error.
func parseInline(fields map[string]string, bad func(field, msg string) error) (Inline, error) {
	var in Inline
	for _, col := range inlineColumns {
		s := fields[col]
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return in, bad(col, fmt.Sprintf("%q is not a number", s))
		}
		switch {
		case f < 0:
			return in, bad(col, fmt.Sprintf("%s is negative", s))
		case col == "iter_s" && f == 0:
			return in, bad(col, "an iteration takes time: give a positive number of seconds")
		case col == "demand" && (f == 0 || f > 1):
			return in, bad(col, fmt.Sprintf("%s: demand is the share of the GPU one iteration keeps busy alone, in (0, 1]", s))
		case (col == "iter_s" || col == "startup_s") && f > 1e6:
			return in, bad(col, fmt.Sprintf("%s s is more than a million seconds: is the unit right?", s))
		case (col == "persistent_mib" || col == "ephemeral_mib") && f > 1<<30:
			return in, bad(col, fmt.Sprintf("%s MiB is more than any device holds: memory is in MiB", s))
		}
		*in.field(col) = &f
	}
	return in, nil
}

// apply returns the profile with the inline figures over base; known says whether
// base came from the catalog. where names the source for the profile's Source.
func (in Inline) apply(base Profile, known bool, where string) (Profile, error) {
	p := base
	if !known {
		var missing []string
		for _, col := range []string{"iter_s", "persistent_mib", "ephemeral_mib"} {
			if *in.field(col) == nil {
				missing = append(missing, col)
			}
		}
		if len(missing) > 0 {
			return p, fmt.Errorf("needs %v", missing)
		}
		p.StartupS, p.Demand = 0, 1
		p.Source = Source{Startup: "not given: 0 s", Demand: "not given: 1, the whole GPU"}
	}
	set := func(v *float64, dst *float64, src *string) {
		if v != nil {
			*dst, *src = *v, where
		}
	}
	set(in.IterS, &p.IterS, &p.Source.Iter)
	set(in.StartupS, &p.StartupS, &p.Source.Startup)
	set(in.PersistentMiB, &p.PersistentMiB, &p.Source.Persistent)
	set(in.EphemeralMiB, &p.EphemeralMiB, &p.Source.Ephemeral)
	set(in.Demand, &p.Demand, &p.Source.Demand)
	if !in.Empty() {
		p.PeakMiB = p.PersistentMiB + p.EphemeralMiB
		p.Source.Peak = "persistent + ephemeral"
		p.Estimated = false
	}
	return p, nil
}

// values formats the figures for a CSV row, empty where not given.
func (in Inline) values() []string {
	out := make([]string, len(inlineColumns))
	for i, col := range inlineColumns {
		if v := *in.field(col); v != nil {
			out[i] = formatFloat(*v)
		}
	}
	return out
}
