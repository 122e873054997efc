// Package traceimport converts public GPU-cluster traces (Alibaba's 2023 GPU
// sharing trace and PAI 2020 trace, Microsoft Philly, SenseTime Helios, the
// Tiresias and Sia workloads) into this project's trace format (workload.Trace's
// CSV or JSON Lines), so that the simulator can replay them.
//
// Each format is one file here with a reader that streams the source row by row
// and hands each row to the converter (convert.go) as a Record, in the source's own
// terms: submission time, how long it ran, how many GPUs and what share of each.
// The converter filters the rows, maps each kept one onto a catalog profile
// (iterations from its duration, memory and compute demand from its GPU share,
// priority from its QoS class), counts every row it drops by reason (censored
// jobs, still running when the trace was cut, are flagged so and dropped, or run
// to the cut under Options.Censored), and writes the jobs sorted by arrival: as it reads them when
// the source is sorted and the output a file, else from one compact entry per
// kept job, sorted at the end. Formats are found by name in a small registry
// (Formats, Lookup). The device a job ran on (its memory, its speed) comes from
// the caller (Options.Device, Options.GPUFor), so that the importers import no
// device package: the command line resolves a source's GPU types with the
// device presets.
//
// It must not simulate, schedule or guess silently: every choice the mapping makes
// is documented in docs/traces.md, "Public traces", a malformed row is an
// error naming the file, line and field (or, when asked, a counted drop), and it
// never holds a whole workload.Trace.
package traceimport
