package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A catalog file adds profiles to a catalog, or replaces some: the team's own models.
// It is YAML (.yaml, .yml) or JSON (.json), chosen by the file's extension:
//
//	profiles:
//	  - model: transformer      # required
//	    batch_size: 32          # required, >= 1
//	    kind: train             # train (default) or infer
//	    iter_s: 0.21            # required: one iteration alone, seconds (> 0)
//	    startup_s: 9            # default 0
//	    persistent_mib: 1900    # required
//	    ephemeral_mib: 5200     # or peak_mib (>= persistent_mib): ephemeral = peak - persistent
//	    demand: 0.9             # share of the GPU one iteration keeps busy alone, (0, 1]; default 1
//	    source: "our A100 runs, 2026-11"  # where the figures come from (optional)
//
// A JSON file has the same shape: {"profiles": [{"model": ..., ...}]}. A file may
// also be the bare list of profiles. Errors name the file, the line and the field.

// FileProfile is one profile as a catalog file gives it.
type FileProfile struct {
	Model         string   `json:"model" yaml:"model"`
	Batch         int      `json:"batch_size" yaml:"batch_size"`
	Kind          string   `json:"kind,omitempty" yaml:"kind,omitempty"`
	IterS         float64  `json:"iter_s" yaml:"iter_s"`
	StartupS      float64  `json:"startup_s" yaml:"startup_s"`
	PersistentMiB float64  `json:"persistent_mib" yaml:"persistent_mib"`
	EphemeralMiB  *float64 `json:"ephemeral_mib,omitempty" yaml:"ephemeral_mib,omitempty"`
	PeakMiB       *float64 `json:"peak_mib,omitempty" yaml:"peak_mib,omitempty"`
	Demand        float64  `json:"demand,omitempty" yaml:"demand,omitempty"`
	Source        string   `json:"source,omitempty" yaml:"source,omitempty"`
	// Jobs and Iterations are what salus profile saw the figures over: informational.
	Jobs       int `json:"jobs,omitempty" yaml:"jobs,omitempty"`
	Iterations int `json:"iterations,omitempty" yaml:"iterations,omitempty"`
}

// CatalogFile is the whole of a catalog file.
type CatalogFile struct {
	Profiles []FileProfile `json:"profiles" yaml:"profiles"`
}

// catalogKeys are the keys a profile of a catalog file may have.
var catalogKeys = []string{"model", "batch_size", "kind", "iter_s", "startup_s", "persistent_mib", "ephemeral_mib", "peak_mib", "demand", "source", "jobs", "iterations"}

// LoadCatalogFile reads a catalog file and returns a new catalog: base's profiles
// with the file's added, a file's profile replacing base's of the same model, batch
// size and kind. base is not changed (the default catalog stays as it is).
func LoadCatalogFile(path string, base *Catalog) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseCatalogFile(data, path, base)
}

// ParseCatalogFile is LoadCatalogFile of data; file names the source in errors
// and, by its extension, the format (.json is JSON; anything else is YAML, of which
// JSON is a part).
func ParseCatalogFile(data []byte, file string, base *Catalog) (*Catalog, error) {
	var (
		profiles []FileProfile
		lines    []int
		err      error
	)
	if strings.EqualFold(filepath.Ext(file), ".json") {
		profiles, lines, err = jsonCatalog(data, file)
	} else {
		profiles, lines, err = yamlCatalog(data, file)
	}
	if err != nil {
		return nil, err
	}
	if len(profiles) == 0 {
		return nil, &FieldError{File: file, Line: 1, Field: "profiles", Msg: "no profiles: give a list of profiles (model, batch_size, iter_s, persistent_mib, ephemeral_mib)"}
	}
	c := base.clone()
	seen := map[string]int{}
	for i, fp := range profiles {
		p, err := fp.profile(file, lines[i])
		if err != nil {
			return nil, err
		}
		if first, dup := seen[p.Key()]; dup {
			return nil, &FieldError{File: file, Line: lines[i], Field: "model", Msg: fmt.Sprintf("%s is given twice (first on line %d): keep one", p.Key(), first)}
		}
		seen[p.Key()] = lines[i]
		c.put(p)
	}
	sort.Strings(c.keys)
	return c, nil
}

// clone copies the catalog (nil: an empty one).
func (c *Catalog) clone() *Catalog {
	out := &Catalog{byKey: map[string]*Profile{}}
	if c == nil {
		return out
	}
	for k, p := range c.byKey {
		out.byKey[k] = p
	}
	out.keys = append([]string(nil), c.keys...)
	out.Throughput, out.MinFixedS = c.Throughput, c.MinFixedS
	out.fromFile = map[string]string{}
	for k, f := range c.fromFile {
		out.fromFile[k] = f
	}
	return out
}

// put adds or replaces a profile from a file. A replaced profile's Lengths (the
// iterations of the generated trace's duration classes) stay: the generated trace
// keeps its mix of jobs, with the file's figures.
func (c *Catalog) put(p Profile) {
	if old, ok := c.byKey[p.Key()]; !ok {
		c.keys = append(c.keys, p.Key())
	} else if len(old.Lengths) > 0 {
		p.Lengths = old.Lengths
	}
	c.byKey[p.Key()] = &p
	if c.fromFile == nil {
		c.fromFile = map[string]string{}
	}
	c.fromFile[p.Key()] = p.Source.Iter
}

// FromFile reports whether the profile of key came from a catalog file.
func (c *Catalog) FromFile(key string) bool { _, ok := c.fromFile[key]; return ok }

// profile checks a file's profile and turns it into a Profile.
func (fp FileProfile) profile(file string, line int) (Profile, error) {
	bad := func(field, msg string) error { return &FieldError{File: file, Line: line, Field: field, Msg: msg} }
	if strings.TrimSpace(fp.Model) == "" {
		return Profile{}, bad("model", "missing: every profile names its model")
	}
	if strings.ContainsAny(fp.Model, "/,\n") {
		return Profile{}, bad("model", fmt.Sprintf("%q: a model name has no '/', ',' or newline", fp.Model))
	}
	if fp.Batch < 1 {
		return Profile{}, bad("batch_size", fmt.Sprintf("%d: give the batch size, a whole number >= 1 (1 for inference requests of one sample)", fp.Batch))
	}
	kind := strings.ToLower(fp.Kind)
	switch kind {
	case "", "training":
		kind = Train
	case "inference":
		kind = Infer
	case Train, Infer:
	default:
		return Profile{}, bad("kind", fmt.Sprintf("%q: use train or infer", fp.Kind))
	}
	finite := func(field string, v float64, max float64, unit string) error {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return bad(field, "not a finite number")
		case v < 0:
			return bad(field, fmt.Sprintf("%v is negative", v))
		case v > max:
			return bad(field, fmt.Sprintf("%v %s is more than %g: is the unit right (%s)?", v, unit, max, unit))
		}
		return nil
	}
	if fp.IterS == 0 {
		return Profile{}, bad("iter_s", "missing or 0: give one iteration's standalone time, seconds")
	}
	for _, f := range []struct {
		name string
		v    float64
		max  float64
		unit string
	}{{"iter_s", fp.IterS, 1e6, "s"}, {"startup_s", fp.StartupS, 1e6, "s"}, {"persistent_mib", fp.PersistentMiB, 1 << 30, "MiB"}} {
		if err := finite(f.name, f.v, f.max, f.unit); err != nil {
			return Profile{}, err
		}
	}
	if fp.PersistentMiB == 0 {
		return Profile{}, bad("persistent_mib", "missing or 0: give the memory a job holds between iterations (weights, optimizer state), MiB")
	}
	var eph float64
	switch {
	case fp.EphemeralMiB != nil && fp.PeakMiB != nil:
		return Profile{}, bad("peak_mib", "give ephemeral_mib or peak_mib, not both")
	case fp.EphemeralMiB != nil:
		if err := finite("ephemeral_mib", *fp.EphemeralMiB, 1<<30, "MiB"); err != nil {
			return Profile{}, err
		}
		eph = *fp.EphemeralMiB
	case fp.PeakMiB != nil:
		if err := finite("peak_mib", *fp.PeakMiB, 1<<30, "MiB"); err != nil {
			return Profile{}, err
		}
		if *fp.PeakMiB < fp.PersistentMiB {
			return Profile{}, bad("peak_mib", fmt.Sprintf("%v is below persistent_mib %v: the peak includes the persistent memory", *fp.PeakMiB, fp.PersistentMiB))
		}
		eph = *fp.PeakMiB - fp.PersistentMiB
	default:
		return Profile{}, bad("ephemeral_mib", "missing: give ephemeral_mib (the memory one iteration adds, MiB), or peak_mib")
	}
	demand, demandSrc := fp.Demand, ""
	switch {
	case math.IsNaN(demand) || demand < 0 || demand > 1:
		return Profile{}, bad("demand", fmt.Sprintf("%v: demand is the share of the GPU one iteration keeps busy alone, in (0, 1]", demand))
	case demand == 0:
		demand, demandSrc = 1, "not given: 1, the whole GPU"
	}
	src := fmt.Sprintf("catalog file %s, line %d", file, line)
	if fp.Source != "" {
		src += ": " + fp.Source
	}
	if demandSrc == "" {
		demandSrc = src
	}
	return Profile{
		Model: fp.Model, Batch: fp.Batch, Kind: kind,
		IterS: fp.IterS, StartupS: fp.StartupS,
		PeakMiB: fp.PersistentMiB + eph, PersistentMiB: fp.PersistentMiB, EphemeralMiB: eph,
		Demand: demand,
		Source: Source{Iter: src, Startup: src, Peak: src, Persistent: src, Ephemeral: src, Demand: demandSrc},
	}, nil
}

// yamlCatalog decodes a YAML catalog, keeping each profile's line.
func yamlCatalog(data []byte, file string) ([]FileProfile, []int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: not YAML: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil, &FieldError{File: file, Line: 1, Msg: "empty file: give profiles: followed by a list of profiles"}
	}
	root := doc.Content[0]
	list := root
	if root.Kind == yaml.MappingNode {
		list = nil
		for i := 0; i+1 < len(root.Content); i += 2 {
			k := root.Content[i]
			if k.Value != "profiles" {
				return nil, nil, &FieldError{File: file, Line: k.Line, Field: k.Value, Msg: "unknown key: a catalog file has one key, profiles"}
			}
			list = root.Content[i+1]
		}
		if list == nil {
			return nil, nil, &FieldError{File: file, Line: root.Line, Field: "profiles", Msg: "missing: give profiles: followed by a list of profiles"}
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, nil, &FieldError{File: file, Line: list.Line, Field: "profiles", Msg: "not a list: give a list of profiles, each starting with - model: NAME"}
	}
	var out []FileProfile
	var lines []int
	for _, n := range list.Content {
		if n.Kind != yaml.MappingNode {
			return nil, nil, &FieldError{File: file, Line: n.Line, Msg: "a profile is a mapping of keys (model, batch_size, iter_s, ...)"}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !knownKey(k.Value) {
				return nil, nil, &FieldError{File: file, Line: k.Line, Field: k.Value, Msg: "unknown key: use " + strings.Join(catalogKeys, ", ")}
			}
			var probe FileProfile
			if err := v.Decode(fieldHolder(&probe, k.Value)); err != nil {
				return nil, nil, &FieldError{File: file, Line: v.Line, Field: k.Value, Msg: fmt.Sprintf("%q is not a %s", v.Value, keyType(k.Value))}
			}
		}
		var fp FileProfile
		if err := n.Decode(&fp); err != nil {
			return nil, nil, &FieldError{File: file, Line: n.Line, Msg: err.Error()}
		}
		out = append(out, fp)
		lines = append(lines, n.Line)
	}
	return out, lines, nil
}

// fieldHolder returns a pointer to the field of p a key decodes into.
func fieldHolder(p *FileProfile, key string) any {
	switch key {
	case "model":
		return &p.Model
	case "batch_size":
		return &p.Batch
	case "jobs":
		return &p.Jobs
	case "iterations":
		return &p.Iterations
	case "kind":
		return &p.Kind
	case "source":
		return &p.Source
	case "iter_s":
		return &p.IterS
	case "startup_s":
		return &p.StartupS
	case "persistent_mib":
		return &p.PersistentMiB
	case "ephemeral_mib":
		return &p.EphemeralMiB
	case "peak_mib":
		return &p.PeakMiB
	}
	return &p.Demand
}

func keyType(key string) string {
	switch key {
	case "model", "kind", "source":
		return "string"
	case "batch_size", "jobs", "iterations":
		return "whole number"
	}
	return "number"
}

func knownKey(k string) bool {
	for _, c := range catalogKeys {
		if c == k {
			return true
		}
	}
	return false
}

// jsonCatalog decodes a JSON catalog; a profile's line is that of its opening brace.
func jsonCatalog(data []byte, file string) ([]FileProfile, []int, error) {
	lineOf := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, jsonError(file, data, err, lineOf)
	}
	start := int64(bytes.IndexAny(data, "{["))
	trimmed := bytes.TrimSpace(raw)
	var items []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, nil, jsonError(file, data, err, lineOf)
		}
	} else {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &top); err != nil {
			return nil, nil, jsonError(file, data, err, lineOf)
		}
		for k := range top {
			if k != "profiles" {
				return nil, nil, &FieldError{File: file, Line: lineOf(int64(bytes.Index(data, []byte(`"`+k+`"`)))), Field: k, Msg: "unknown key: a catalog file has one key, profiles"}
			}
		}
		if err := json.Unmarshal(top["profiles"], &items); err != nil {
			return nil, nil, &FieldError{File: file, Line: lineOf(start), Field: "profiles", Msg: "not a list of profiles"}
		}
	}
	var out []FileProfile
	var lines []int
	from := 0
	for _, it := range items {
		// Each item's text appears in data in order: find its line from where the last ended.
		at := bytes.Index(data[from:], bytes.TrimSpace(it))
		line := lineOf(start)
		if at >= 0 {
			line = lineOf(int64(from + at))
			from += at + len(it)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(it, &keys); err != nil {
			return nil, nil, &FieldError{File: file, Line: line, Msg: "a profile is an object of keys (model, batch_size, iter_s, ...)"}
		}
		for k := range keys {
			if !knownKey(k) {
				return nil, nil, &FieldError{File: file, Line: line, Field: k, Msg: "unknown key: use " + strings.Join(catalogKeys, ", ")}
			}
			var probe FileProfile
			if err := json.Unmarshal(keys[k], fieldHolder(&probe, k)); err != nil {
				return nil, nil, &FieldError{File: file, Line: line, Field: k, Msg: fmt.Sprintf("%s is not a %s", keys[k], keyType(k))}
			}
		}
		var fp FileProfile
		if err := json.Unmarshal(it, &fp); err != nil {
			return nil, nil, &FieldError{File: file, Line: line, Msg: err.Error()}
		}
		out = append(out, fp)
		lines = append(lines, line)
	}
	return out, lines, nil
}

func jsonError(file string, data []byte, err error, lineOf func(int64) int) error {
	if se, ok := err.(*json.SyntaxError); ok {
		return &FieldError{File: file, Line: lineOf(se.Offset), Msg: "not JSON: " + se.Error()}
	}
	return fmt.Errorf("%s: not a catalog file: %w", file, err)
}

// WriteCatalogYAML writes profiles as a catalog file in YAML.
func WriteCatalogYAML(w io.Writer, f CatalogFile) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return err
	}
	return enc.Close()
}
