package cluster

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/salusgo/salus/device"
	"go.yaml.in/yaml/v3"
)

// A cluster file lists node shapes: how many nodes of each, their GPUs and
// their host. In YAML:
//
//	models:            # GPU models no preset knows (optional)
//	  G1: {like: v100-16g}                # a preset's figures under its own name
//	  G9: {memory_gib: 24, speed: 1.5}    # or its own (the P100's overheads)
//	shapes:
//	  - {name: 8xA100, count: 10, gpus: 8, model: a100, cpus: 96, memory_gib: 1024}
//	  - {name: cpu, count: 4, gpus: 0, cpus: 64}
//
// or as CSV with the header shape,count,gpus,model,cpus,memory_gib (the last
// two may be empty or left out). A model is a device preset's key (salus
// devices), or one declared under models.

// FileShape is one shape of a cluster file.
type FileShape struct {
	Name      string  `yaml:"name"`
	Count     int     `yaml:"count"`
	GPUs      int     `yaml:"gpus"`
	Model     string  `yaml:"model"`
	CPUs      float64 `yaml:"cpus"`
	MemoryGiB float64 `yaml:"memory_gib"`
}

// Model declares a GPU model the presets do not know.
type Model struct {
	// Like is the preset whose figures it takes; empty: the P100's overheads.
	Like string `yaml:"like"`
	// MemoryGiB and Speed override Like's (speed relative to the P100).
	MemoryGiB float64 `yaml:"memory_gib"`
	Speed     float64 `yaml:"speed"`
}

type fileYAML struct {
	Models map[string]Model `yaml:"models"`
	Shapes []yaml.Node      `yaml:"shapes"`
}

// Load reads a cluster file, YAML or CSV (by its extension: .csv is CSV).
func Load(path string) (*Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return ParseCSV(bytes.NewReader(data), path, nil)
	}
	c, err := ParseYAML(data, path)
	if err != nil {
		// A node list given under another extension reads as one string of YAML.
		first, _, _ := bytes.Cut(data, []byte("\n"))
		if bytes.Count(first, []byte(",")) >= 2 && !bytes.Contains(first, []byte(":")) {
			return nil, fmt.Errorf("%s: not a cluster file (YAML, or CSV with a .csv name): %s", path, nodeListHint(string(first)))
		}
	}
	return c, err
}

// nodeListHint says, for a file whose first line is header (or a headerless
// first row), that a trace's node list becomes a cluster file with salus trace
// cluster, naming the list's format when its header is one.
func nodeListHint(header string) string {
	cols := map[string]bool{}
	for _, h := range strings.Split(header, ",") {
		cols[strings.ToLower(strings.TrimSpace(h))] = true
	}
	switch {
	case cols["sn"] && cols["model"] && (cols["gpu"] || cols["num_gpu"]):
		return "this is Alibaba 2023's node list (sn,cpu_milli,memory_mib,gpu,model): make the cluster file with salus trace cluster --format alibaba2023-nodes FILE --out cluster.yaml"
	case cols["machine"] && cols["gpu_type"]:
		return "this is PAI 2020's machine spec (machine,gpu_type,cap_cpu,cap_mem,cap_gpu): make the cluster file with salus trace cluster --format pai2020-machines FILE --out cluster.yaml"
	}
	return "a trace's node list (Alibaba 2023's openb_node_list_*.csv, PAI 2020's pai_machine_spec.csv) becomes a cluster file with salus trace cluster --format alibaba2023-nodes|pai2020-machines FILE --out cluster.yaml"
}

// ParseYAML reads a cluster file in YAML; name is for messages.
func ParseYAML(data []byte, name string) (*Cluster, error) {
	var f fileYAML
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (see docs/traces.md#cluster-files)", name, err)
	}
	if len(f.Shapes) == 0 {
		return nil, fmt.Errorf("%s: no shapes: list the nodes under shapes: (see docs/traces.md#cluster-files)", name)
	}
	var shapes []FileShape
	var lines []int
	for _, n := range f.Shapes {
		var s FileShape
		if err := n.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s:%d: shape: %w", name, n.Line, err)
		}
		shapes = append(shapes, s)
		lines = append(lines, n.Line)
	}
	return Build(name, shapes, lines, f.Models)
}

// ParseCSV reads a cluster file in CSV; models declares models no preset knows.
func ParseCSV(r io.Reader, name string, models map[string]Model) (*Cluster, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: want a header shape,count,gpus,model,cpus,memory_gib", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, need := range []string{"count", "gpus"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s:1: no %q column: want a header shape,count,gpus,model,cpus,memory_gib; %s", name, need, nodeListHint(strings.Join(header, ",")))
		}
	}
	var shapes []FileShape
	var lines []int
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		get := func(c string) string {
			if i, ok := col[c]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		num := func(c string) (float64, error) {
			v := get(c)
			if v == "" {
				return 0, nil
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 {
				return 0, fmt.Errorf("%s:%d: field %s: %q is not a number of 0 or more", name, line, c, v)
			}
			return x, nil
		}
		var s FileShape
		s.Name, s.Model = get("shape"), get("model")
		var vals [4]float64
		for i, c := range []string{"count", "gpus", "cpus", "memory_gib"} {
			if vals[i], err = num(c); err != nil {
				return nil, err
			}
		}
		s.Count, s.GPUs, s.CPUs, s.MemoryGiB = int(vals[0]), int(vals[1]), vals[2], vals[3]
		shapes = append(shapes, s)
		lines = append(lines, line)
	}
	return Build(name, shapes, lines, models)
}

// Build expands shapes into nodes; lines (may be nil) are the shapes' lines for
// messages.
func Build(name string, shapes []FileShape, lines []int, models map[string]Model) (*Cluster, error) {
	var nodes []Node
	for i, s := range shapes {
		at := name
		if i < len(lines) {
			at = fmt.Sprintf("%s:%d", name, lines[i])
		}
		if s.Count < 1 {
			return nil, fmt.Errorf("%s: field count: %d: a shape has at least one node", at, s.Count)
		}
		if s.GPUs < 0 {
			return nil, fmt.Errorf("%s: field gpus: %d is negative", at, s.GPUs)
		}
		var d device.Device
		if s.GPUs > 0 {
			if s.Model == "" {
				return nil, fmt.Errorf("%s: field model: empty: name the GPU model (a device preset: %s; or one declared under models:)", at, strings.Join(device.Names(), ", "))
			}
			var err error
			if d, err = Resolve(s.Model, models); err != nil {
				return nil, fmt.Errorf("%s: field model: %w", at, err)
			}
			d.GPUs = s.GPUs
		}
		shape := s.Name
		if shape == "" {
			shape = fmt.Sprintf("%dx%s", s.GPUs, s.Model)
		}
		for k := range s.Count {
			nodes = append(nodes, Node{Name: fmt.Sprintf("%s-%d", shape, k), Shape: shape, Model: s.Model,
				Device: d, CPUs: s.CPUs, MemoryMiB: s.MemoryGiB * 1024})
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	c := New(name, nodes)
	if c.GPUCount() == 0 {
		return nil, fmt.Errorf("%s: no node has a GPU", name)
	}
	return c, nil
}

// Resolve is the device of a model: a declared one, or a preset.
func Resolve(model string, models map[string]Model) (device.Device, error) {
	if m, ok := models[model]; ok {
		base := m.Like
		if base == "" {
			base = "p100"
		}
		d, err := device.Preset(base)
		if err != nil {
			return device.Device{}, fmt.Errorf("model %s: like: %w", model, err)
		}
		d.Name = model
		if m.MemoryGiB > 0 {
			d.TotalMiB = m.MemoryGiB * 1024
			d.CapacityMiB = d.TotalMiB * 7 / 8
		}
		if m.Speed > 0 {
			d.Speed = m.Speed
		}
		return d, nil
	}
	d, err := device.Preset(model)
	if err != nil {
		return device.Device{}, fmt.Errorf("%w; or declare it under models (with like, or memory_gib and speed)", err)
	}
	return d, nil
}
