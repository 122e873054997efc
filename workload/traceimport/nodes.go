package traceimport

import (
	"fmt"
	"sort"
	"strings"

	"github.com/salusgo/salus/workload"
)

// NodeRow is one machine of a trace's node list, in the trace's own terms: the
// caller resolves its GPU model to a device (the importers know sources, not
// devices) and groups the rows into a cluster.
type NodeRow struct {
	// File and Line locate the row.
	File string
	Line int
	Name string
	// GPUs is how many GPUs it has (0: a CPU-only machine); Model is the trace's
	// GPU type, "" when it has none.
	GPUs  int
	Model string
	// CPUs is its CPU cores, MemoryMiB its host memory.
	CPUs      float64
	MemoryMiB float64
}

// NodeFormat is the node list of one public trace.
type NodeFormat struct {
	// Name is what --format takes ("alibaba2023-nodes").
	Name string
	// Summary says in one line which file of the trace it reads.
	Summary string
	// Columns are the header's columns the format needs (a headerless file is
	// read in this order).
	Columns []string
	// Read reads the file's machines, in file order.
	Read func(path string) ([]NodeRow, error)
}

var nodeFormats = map[string]NodeFormat{}

func registerNodes(f NodeFormat) { nodeFormats[f.Name] = f }

// NodeFormats returns the node-list formats, sorted by name.
func NodeFormats() []NodeFormat {
	var out []NodeFormat
	for _, f := range nodeFormats {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupNodes returns the node-list format called name (case-insensitive).
func LookupNodes(name string) (NodeFormat, error) {
	f, ok := nodeFormats[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		var names []string
		for _, f := range NodeFormats() {
			names = append(names, f.Name)
		}
		return NodeFormat{}, fmt.Errorf("unknown node-list format %q: choose one of %s", name, strings.Join(names, ", "))
	}
	return f, nil
}

func init() {
	// Alibaba 2023 (clusterdata cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv
	// and openb_node_list_all_node.csv): sn,cpu_milli,memory_mib,gpu,model. The
	// README calls the GPU column num_gpu in places: either is taken. A node
	// without GPUs has gpu 0 and model nan.
	registerNodes(NodeFormat{
		Name:    "alibaba2023-nodes",
		Summary: "Alibaba 2023 node list (cluster-trace-gpu-v2023, openb_node_list_gpu_node.csv or openb_node_list_all_node.csv)",
		Columns: []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"},
		Read: func(path string) ([]NodeRow, error) {
			return readNodes(path, "alibaba2023 node list", []string{"sn", "cpu_milli", "memory_mib", "model"}, nil, func(s *csvSource) (NodeRow, *workload.FieldError) {
				gpuCol := "gpu"
				if !s.has(gpuCol) {
					gpuCol = "num_gpu"
				}
				if !s.has(gpuCol) {
					return NodeRow{}, &workload.FieldError{File: s.file, Line: 1, Field: "gpu", Msg: "missing column: the node list's header is sn,cpu_milli,memory_mib,gpu,model"}
				}
				return nodeRow(s, "sn", gpuCol, "model", "cpu_milli", 1000, "memory_mib", 1)
			})
		},
	})
	// PAI 2020 (clusterdata cluster-trace-gpu-v2020, pai_machine_spec.csv, released
	// without a header like the other tables): machine,gpu_type,cap_cpu,cap_mem,cap_gpu;
	// cap_cpu in cores, cap_mem in GB. CPU-only machines have gpu_type CPU.
	paiMachine := []string{"machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"}
	registerNodes(NodeFormat{
		Name:    "pai2020-machines",
		Summary: "Alibaba PAI 2020 machine spec (cluster-trace-gpu-v2020, pai_machine_spec.csv)",
		Columns: paiMachine,
		Read: func(path string) ([]NodeRow, error) {
			return readNodes(path, "pai2020 machine spec", paiMachine, paiMachine, func(s *csvSource) (NodeRow, *workload.FieldError) {
				return nodeRow(s, "machine", "cap_gpu", "gpu_type", "cap_cpu", 1, "cap_mem", 1024)
			})
		},
	})
}

// readNodes reads a node list, one row at a time.
func readNodes(path, format string, required, positional []string, row func(*csvSource) (NodeRow, *workload.FieldError)) ([]NodeRow, error) {
	s, err := openCSV(path, format, required, positional)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []NodeRow
	for {
		ok, err := s.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if ferr := s.short(); ferr != nil {
			return nil, ferr
		}
		r, ferr := row(s)
		if ferr != nil {
			return nil, ferr
		}
		r.File, r.Line = path, s.line
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, &workload.FieldError{File: path, Line: 1, Msg: "no machines: a node list has a line per machine"}
	}
	return out, nil
}

// nodeRow reads one machine; cpuPer is the CPU column's unit per core (1000 for
// milli-CPUs), memMiB the memory column's unit in MiB.
func nodeRow(s *csvSource, nameCol, gpuCol, modelCol, cpuCol string, cpuPer float64, memCol string, memMiB float64) (NodeRow, *workload.FieldError) {
	r := NodeRow{Name: s.get(nameCol), Model: s.get(modelCol)}
	if r.Name == "" {
		return r, s.bad(nameCol, "empty: every machine has a name")
	}
	var ferr *workload.FieldError
	if r.GPUs, ferr = s.count(gpuCol); ferr != nil {
		return r, ferr
	}
	cpu, _, ferr := s.number(cpuCol)
	if ferr != nil {
		return r, ferr
	}
	mem, _, ferr := s.number(memCol)
	if ferr != nil {
		return r, ferr
	}
	if cpu < 0 || mem < 0 {
		return r, s.bad(cpuCol+" or "+memCol, "negative: a machine's CPUs and memory are 0 or more")
	}
	r.CPUs, r.MemoryMiB = cpu/cpuPer, mem*memMiB
	switch m := strings.ToLower(r.Model); {
	case r.GPUs == 0:
		r.Model = ""
	case m == "" || m == "nan" || m == "cpu":
		return r, s.bad(modelCol, fmt.Sprintf("%q for a machine of %d GPUs: name its GPU type", r.Model, r.GPUs))
	}
	return r, nil
}
