// Package workload describes what jobs ask of a GPU: profiles, the catalog, traces
// and the trace generator.
//
// A Profile is one workload (a model at a batch size, training or inference) alone on
// the reference P100: iteration time, start-up, persistent and ephemeral memory,
// compute demand, and for every figure a Source saying where it came from or how it
// was estimated. The Catalog (Default) is built from the Salus authors' reference
// measurements (measurements.go) and published model figures (figures.go).
//
// A Trace is a list of Jobs in arrival order, each pointing to its profile: the
// catalog's, shared by every job of it, or the job's own when the trace gives
// figures of it. ParseTrace and ReadTraceFile read CSV (with a header) or JSON
// Lines, sorting rows out of arrival order (stably); unknown columns or models,
// negative or non-numeric values and duplicate ids are errors (*FieldError) that
// name the file, the line and the field. Generate builds the seeded traces of the
// paper's 100-job experiment (Paper, as the paper describes it; Salus100, the
// earlier stand-in), and TraceStats summarizes what a trace asks of a GPU before
// anything runs it. A Stream gives a trace's jobs one at a time, for a run that
// should hold the jobs alive rather than the trace: OpenTrace streams a file,
// GenerateStream a generated trace.
//
// It must not guess: a missing or bad figure is an error, never a silent default.
// It holds no scheduling, simulation or metrics, does no I/O beyond reading the
// trace file it is given, and its only randomness is the generator's and the
// resampling's (Trace.Resample), each from its seed. Trace.ScaleLoad scales a
// trace's arrival rate, for what-if runs on one's own trace.
package workload
