package sweep

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/workload"
)

// generated is the generated trace a run of the grid at a kind (a cell's:
// empty is salus100), seed and load runs.
func generated(g Grid, cat *workload.Catalog, kind string, seed int64, load float64) (*workload.Trace, error) {
	if kind == "" {
		kind = workload.Salus100
	}
	return workload.Generate(cat, workload.GenOptions{Kind: kind, Seed: seed, Jobs: g.Jobs, Load: load})
}

// Inputs fills in p what the grid reads: its seeds, its traces (each file by
// the sha256 of its bytes; the generated trace by that of each seed's canonical
// CSV at load 1, as salus trace gen writes it) and its co-location model.
func Inputs(g Grid, p *provenance.Record) error {
	p.Seeds = slices.Clone(g.Seeds)
	p.Traces = nil
	var kinds []string
	for _, src := range g.sources() {
		if src.trace == "" {
			kinds = append(kinds, cmp.Or(src.kind, workload.Salus100))
		}
	}
	if len(kinds) > 0 {
		cat, err := Catalog(g)
		if err != nil {
			return err
		}
		for _, kind := range kinds {
			for _, seed := range g.Seeds {
				t, err := generated(g, cat, kind, seed, 1)
				if err != nil {
					return err
				}
				tr, err := provenance.Generated(t, fmt.Sprintf("salus trace gen --kind %s --seed %d --jobs %d", kind, seed, len(t.Jobs)))
				if err != nil {
					return err
				}
				p.Traces = append(p.Traces, tr)
			}
		}
	}
	for _, path := range g.Traces {
		tr, err := provenance.File(path)
		if err != nil {
			return err
		}
		p.Traces = append(p.Traces, tr)
	}
	var err error
	p.Interference, err = provenance.ModelOf(g.Interference)
	return err
}

// SameInputs says how the inputs of two records differ (the traces, the seeds,
// the co-location model): "" when they are alike.
func SameInputs(a, b provenance.Record) string {
	switch {
	case !slices.Equal(a.Traces, b.Traces):
		for i := range max(len(a.Traces), len(b.Traces)) {
			if i >= len(a.Traces) || i >= len(b.Traces) || a.Traces[i] != b.Traces[i] {
				return fmt.Sprintf("the traces differ (%s against %s)", traceWord(a.Traces, i), traceWord(b.Traces, i))
			}
		}
	case !slices.Equal(a.Seeds, b.Seeds):
		return fmt.Sprintf("the seeds differ (%v against %v)", a.Seeds, b.Seeds)
	case a.Interference != b.Interference:
		return fmt.Sprintf("the co-location models differ (%s against %s)", a.Interference, b.Interference)
	}
	return ""
}

func traceWord(ts []provenance.Trace, i int) string {
	if i >= len(ts) {
		return "none"
	}
	t := ts[i]
	name := t.Path
	if name == "" {
		name = t.Generated
	}
	return fmt.Sprintf("%s, sha256 %s", name, t.SHA256[:min(12, len(t.SHA256))])
}

// provenanceColumns are the columns of sweep.csv that say where each line came
// from, after the metrics': the same on every line of a sweep, so that the
// file stays a plain CSV that any reader takes, and lines of several sweeps put
// together still say which is whose.
var provenanceColumns = []string{"salus_version", "salus_commit", "trace_sha256", "seeds", "interference", "interference_sha256", "command"}

// provenanceCells are a line's provenance columns: trace_sha256 is the cell's
// trace file's, or for a generated trace (of kind: empty is salus100) the
// sha256 of its seeds' sha256s, one a line (as sweep.json lists them).
func provenanceCells(p *provenance.Record, trace, kind string) []string {
	if p == nil {
		return make([]string, len(provenanceColumns))
	}
	var sum string
	if trace != "" {
		for _, t := range p.Traces {
			if t.Path == trace {
				sum = t.SHA256
			}
		}
	} else {
		var lines []byte
		for _, t := range p.Traces {
			if t.Path == "" && strings.Contains(t.Generated+" ", " --kind "+cmp.Or(kind, workload.Salus100)+" ") {
				lines = append(lines, t.SHA256+"\n"...)
			}
		}
		h := sha256.Sum256(lines)
		sum = hex.EncodeToString(h[:])
	}
	seeds := make([]string, len(p.Seeds))
	for i, s := range p.Seeds {
		seeds[i] = strconv.FormatInt(s, 10)
	}
	commit := p.Commit
	if p.Modified {
		commit += "+dirty"
	}
	return []string{p.Version, commit, sum, strings.Join(seeds, ";"), p.Interference.Name, p.Interference.SHA256, strings.Join(p.Command, " ")}
}
