package traceimport

import (
	"fmt"
	"sort"
	"strings"
)

// Format is one source trace format.
type Format struct {
	// Name is what --format takes, e.g. "alibaba2023".
	Name string
	// Summary says in one line what the source is and which of its files to give.
	Summary string
	// Args names the files the format reads, for usage lines: "FILE" or "TASKS [JOBS]".
	Args string
	// MaxFiles is how many files Read takes (at least one).
	MaxFiles int
	// Example is a command line importing this format.
	Example string
	// Columns are the columns a CSV source's header names (nil for others): an
	// import given a file of another format says which format its header is.
	Columns []string
	// Priorities says the source gives jobs priorities (a priority column is
	// written), Shares that it gives shares of a GPU (a demand column).
	Priorities, Shares bool
	// GPUModels says the source's GPU type is the job's constraint, the models
	// it may run on (Alibaba 2023's gpu_spec): a gpu_models column is written.
	// Queues says the source gives each job's own scheduling delay (Record.QueueS):
	// trace_queue_s and trace_run_s columns are written.
	GPUModels, Queues bool
	// Read streams the files' rows into s.
	Read func(files []string, s Sink) error
}

var registry = map[string]Format{}

// register adds a format; each format's file calls it from init.
func register(f Format) {
	if _, dup := registry[f.Name]; dup {
		panic("traceimport: format registered twice: " + f.Name)
	}
	if f.MaxFiles < 1 {
		f.MaxFiles = 1
	}
	registry[f.Name] = f
}

// Formats returns every format, sorted by name.
func Formats() []Format {
	out := make([]Format, 0, len(registry))
	for _, f := range registry {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the formats' names, sorted.
func Names() []string {
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	return names
}

// Lookup returns the format called name (case-insensitive).
func Lookup(name string) (Format, error) {
	f, ok := registry[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Format{}, fmt.Errorf("unknown trace format %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	return f, nil
}
