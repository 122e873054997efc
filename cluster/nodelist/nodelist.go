// Package nodelist turns a public trace's node list (traceimport.NodeRow: one
// machine a row, as Alibaba 2023's openb_node_list_gpu_node.csv and PAI 2020's
// pai_machine_spec.csv give them) into a cluster file: the machines grouped into
// shapes, each GPU type of the trace declared as a model of its own name like
// the device preset device.Match finds for it. Keeping the trace's names means a
// job's GPU-model constraint (its gpu_spec, gpu_models) names the cluster's
// models as they are; the preset gives them figures.
package nodelist

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload/traceimport"
)

// DefaultUnknown is the preset a GPU type no preset matches is taken like:
// Alibaba 2023's undisclosed G1, G2, G3 and PAI 2020's MISC. The V100 (32 GB)
// is a guess, not a finding: the traces' GPU nodes of eight GPUs and 96 to 128
// CPUs are the host shape of their V100M32 nodes, and the V100 is the middle of
// the presets' speeds. --like G2=a100 overrides it per type.
const DefaultUnknown = "v100"

// Options say how the trace's GPU types become devices.
type Options struct {
	// Like maps a GPU type of the trace to the preset it is taken like, before
	// device.Match is asked ("G2": "a100").
	Like map[string]string
	// Unknown is the preset for a type neither Like nor device.Match knows;
	// empty: DefaultUnknown.
	Unknown string
}

// Model is how one GPU type of the trace became a device.
type Model struct {
	// Name is the trace's ("V100M32", "G2"); Like the preset it is taken like.
	Name, Like string
	// Why says how Like was chosen: "device.Match", "--like", or the guess.
	Why string
}

// Shapes groups the machines into shapes (GPUs, GPU type, CPUs, memory), in the
// order each shape first appears, and resolves each GPU type to a preset.
func Shapes(rows []traceimport.NodeRow, o Options) ([]cluster.FileShape, []Model, error) {
	unknown := o.Unknown
	if unknown == "" {
		unknown = DefaultUnknown
	}
	if _, err := device.Preset(unknown); err != nil {
		return nil, nil, fmt.Errorf("the preset for unknown GPU types: %w", err)
	}
	for t, p := range o.Like {
		if _, err := device.Preset(p); err != nil {
			return nil, nil, fmt.Errorf("--like %s=%s: %w", t, p, err)
		}
	}
	var shapes []cluster.FileShape
	at := map[string]int{}
	var models []Model
	for _, r := range rows {
		if r.GPUs > 0 && !slices.ContainsFunc(models, func(m Model) bool { return m.Name == r.Model }) {
			models = append(models, resolve(r.Model, o.Like, unknown))
		}
		s := cluster.FileShape{GPUs: r.GPUs, Model: r.Model, CPUs: r.CPUs, MemoryGiB: r.MemoryMiB / 1024}
		s.Name = shapeName(s)
		if i, ok := at[s.Name]; ok {
			shapes[i].Count++
			continue
		}
		s.Count = 1
		at[s.Name] = len(shapes)
		shapes = append(shapes, s)
	}
	return shapes, models, nil
}

// resolve finds the preset of one GPU type.
func resolve(name string, like map[string]string, unknown string) Model {
	if p, ok := like[name]; ok {
		return Model{Name: name, Like: p, Why: "--like"}
	}
	if p, err := device.Match(name, 0); err == nil {
		return Model{Name: name, Like: p, Why: "device.Match"}
	}
	return Model{Name: name, Like: unknown, Why: "unknown to the presets: a guess (" + DefaultUnknown + " unless --unknown-like)"}
}

// shapeName names a shape by what it is: "8xG2-96c-384g", "cpu-64c-256g".
func shapeName(s cluster.FileShape) string {
	gpus := "cpu"
	if s.GPUs > 0 {
		gpus = fmt.Sprintf("%dx%s", s.GPUs, s.Model)
	}
	return fmt.Sprintf("%s-%sc-%sg", gpus, num(s.CPUs), num(s.MemoryGiB))
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// WriteYAML writes a cluster file of the shapes and models; header is written
// first as comment lines (the source and the command that made the file).
func WriteYAML(w io.Writer, header []string, shapes []cluster.FileShape, models []Model) error {
	var b strings.Builder
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	nodes, gpus := 0, 0
	for _, s := range shapes {
		nodes += s.Count
		gpus += s.Count * s.GPUs
	}
	fmt.Fprintf(&b, "# %d nodes, %d GPUs.\n", nodes, gpus)
	if len(models) > 0 {
		b.WriteString("models:\n")
		sorted := slices.Clone(models)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		for _, m := range sorted {
			fmt.Fprintf(&b, "  %s: {like: %s}  # %s\n", quote(m.Name), m.Like, m.Why)
		}
	}
	b.WriteString("shapes:\n")
	for _, s := range shapes {
		fmt.Fprintf(&b, "  - {name: %s, count: %d, gpus: %d", quote(s.Name), s.Count, s.GPUs)
		if s.GPUs > 0 {
			fmt.Fprintf(&b, ", model: %s", quote(s.Model))
		}
		fmt.Fprintf(&b, ", cpus: %s, memory_gib: %s}\n", num(s.CPUs), num(s.MemoryGiB))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// quote writes a name as a YAML string: plain when it is a plain word.
func quote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return strconv.Quote(s)
		}
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil || s == "" {
		return strconv.Quote(s)
	}
	return s
}

// GPUFor is an import's device of a GPU type (traceimport.Options.GPUFor) with
// the cluster's models first: a type the cluster names (V100M32, G2) is that
// model's device, so that a job is timed on the GPUs it may run on; any other
// type is fallback's.
func GPUFor(c *cluster.Cluster, fallback func(string) (traceimport.GPU, error)) func(string) (traceimport.GPU, error) {
	byModel := map[string]traceimport.GPU{}
	for _, n := range c.Nodes {
		if n.GPUs() > 0 {
			d := n.Device
			byModel[n.Model] = traceimport.GPU{Name: d.Name, CapacityMiB: d.CapacityMiB, Speed: d.Speed}
		}
	}
	return func(t string) (traceimport.GPU, error) {
		if g, ok := byModel[t]; ok {
			return g, nil
		}
		return fallback(t)
	}
}
