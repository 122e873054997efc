package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/salusgo/salus/provenance"
)

// Shard is one of Count shares of a grid's runs, Index from 0: the k-th run of the
// grid, in grid order (cells, then seeds), belongs to shard k mod Count. Each shard
// of a cluster's sweep runs as its own process (a Kubernetes Indexed Job gives it
// its index), and Merge puts their samples together.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard reads "I/N" (0 <= I < N).
func ParseShard(s string) (*Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || count < 1 || index < 0 || index >= count {
		return nil, fmt.Errorf("shard %q: give I/N with 0 <= I < N, e.g. 0/4 (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX is I)", s)
	}
	return &Shard{Index: index, Count: count}, nil
}

func (sh *Shard) String() string { return fmt.Sprintf("%d/%d", sh.Index, sh.Count) }

// has reports whether the k-th run of the grid is the shard's; every run is a
// sweep's without a shard.
func (sh *Shard) has(k int) bool { return sh == nil || k%sh.Count == sh.Index }

// Merge reads the sweep directories of a grid's shards and returns the grid
// (without a shard) and every run's sample, in grid order, as one sweep over the
// whole grid would have them. The directories must hold the same grid, and
// together every run of it: Merge says which runs are missing, and from which
// shard, rather than summarize part of a grid.
func Merge(dirs []string, applicable func(policy, mode string) (string, bool)) (Grid, []Sample, error) {
	var grid Grid
	var gridJSON []byte
	shards := 0 // the shard count the directories were run with, when known
	var first *provenance.Record
	var parts [][]string
	byKey := map[string]Sample{}
	for i, dir := range dirs {
		g, samples, err := Load(dir)
		if err != nil {
			return grid, nil, err
		}
		if g.Shard != nil {
			shards = g.Shard.Count
		}
		g.Shard = nil
		prov := g.Provenance
		g.Provenance = nil // compared on its own: the shards' commands differ
		b, _ := json.Marshal(g)
		if i == 0 {
			grid, gridJSON = g, b
			first = prov
		} else if err := SameSweep(first, prov); err != nil { // first: it says what differs
			return grid, nil, fmt.Errorf("%s and %s are not shards of one sweep: %v; merge the shards of one sweep, run with one build on the same inputs", dirs[0], dir, err)
		} else if !bytes.Equal(b, gridJSON) {
			return grid, nil, fmt.Errorf("%s holds another grid than %s: merge the shards of one sweep", dir, dirs[0])
		}
		if prov != nil {
			parts = append(parts, prov.Parts...)
			if len(prov.Parts) == 0 {
				parts = append(parts, prov.Command)
			}
		}
		for _, s := range samples {
			key := Task{Cell: s.Cell, Seed: s.Seed}.key()
			if _, dup := byKey[key]; !dup {
				byKey[key] = s
			}
		}
	}
	var all []Sample
	var missing []string
	k := 0
	for _, c := range grid.Cells(applicable) {
		for _, seed := range grid.Seeds {
			if s, ok := byKey[Task{Cell: c, Seed: seed}.key()]; ok {
				all = append(all, s)
			} else {
				where := fmt.Sprintf("run %d", k)
				if shards > 0 {
					where += fmt.Sprintf(", shard %d/%d", k%shards, shards)
				}
				missing = append(missing, fmt.Sprintf("%s seed %d (%s)", c, seed, where))
			}
			k++
		}
	}
	if len(missing) > 0 {
		return grid, nil, fmt.Errorf("%d of %d runs are in none of the directories (first: %s): run the missing shards, or resume them (salus sweep --resume DIR)",
			len(missing), k, missing[0])
	}
	if first != nil { // the shards' own, with their commands as its parts
		p := *first
		p.Parts = parts
		grid.Provenance = &p
	}
	return grid, all, nil
}

// SameSweep refuses two records of one sweep's parts (shards, or runs of a
// resumed sweep) that ran different builds or read different inputs; a grid
// without a record (written before them) agrees with any.
func SameSweep(a, b *provenance.Record) error {
	if a == nil || b == nil {
		return nil
	}
	if ok, how := provenance.SameBuild(*a, *b); !ok {
		return fmt.Errorf("they ran different builds (%s)", how)
	}
	if how := SameInputs(*a, *b); how != "" {
		return errors.New(how)
	}
	return nil
}
