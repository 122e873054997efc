package traceimport

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/salusgo/salus/workload"
)

// Record is one job as a source trace describes it, in the source's own terms.
type Record struct {
	// File and Line locate the row (Philly: the line where the job's object begins).
	File string
	Line int
	ID   string
	// SubmitS is when the job was submitted, seconds on the source's clock (Unix
	// seconds for the sources that write dates).
	SubmitS float64
	// DurationS is how long the job ran, seconds. Iterations is the source's own
	// iteration count, used only when the source gives no duration (Sia's samples
	// over batch size).
	DurationS  float64
	Iterations int
	// GPUs is how many GPUs the job held at once (at least 1).
	GPUs int
	// Share is the share of each GPU the job asked for, in (0, 1]; 0 means a whole GPU.
	Share float64
	// GPUType is the source's GPU type ("" when unknown); it chooses the device when
	// no --device is given.
	GPUType string
	// Status is the source's final status of the job, for --status.
	Status string
	// StatusMissing says the file has no status column: --status cannot filter it.
	StatusMissing bool
	// Model and Batch are the source's model name and batch size, when it gives them.
	Model string
	Batch int
	// Priority is the job's priority (smaller is more urgent), from the source's
	// QoS class (Alibaba 2023's qos); QoS is that class, for --qos.
	Priority int
	QoS      string
	// Censored says the job was still running when the trace was cut: its end is
	// the cut, not its own. When Open, the reader does not know the cut: the job
	// ran DurationS before OpenS and from OpenS to the cut, which the conversion
	// takes as the latest LastS of the file's jobs.
	Censored bool
	Open     bool
	OpenS    float64
	// QueueS is the job's scheduling delay in the source (scheduled - created),
	// when Queued says the source gives it.
	QueueS float64
	Queued bool
	// LastS is the latest time the row states, on the source's clock.
	LastS float64
	// LengthKey, for a source whose rows carry no length (Sia's and Pollux's
	// workloads), is what Options.Lengths sizes the job by: its application.
	LengthKey string
}

// Sink receives what a format's reader finds in its files.
type Sink interface {
	// Record takes a row that describes a GPU job that ran.
	Record(Record) error
	// Drop counts a well-formed row that is not such a job (no GPU, never ran, no
	// end time), by reason.
	Drop(reason string)
	// Bad takes a malformed row: it returns the error, or, under SkipBad, counts
	// the row and returns nil.
	Bad(err *workload.FieldError) error
}

// Reasons a row is dropped, as the summary prints them.
const (
	DropNoGPU      = "no GPU requested"
	DropNeverRan   = "never ran (no start time)"
	DropCensored   = "censored: still running when the trace was cut (--censored keep runs them to the cut)"
	DropNoDuration = "ran for no time (end not after start)"
	DropStatus     = "status not in --status"
	DropBefore     = "submitted before --since"
	DropAfter      = "submitted after --until"
	DropDuplicate  = "duplicate job id (the first one is kept)"
	DropBad        = "malformed (--skip-bad)"
	DropLimit      = "beyond --limit"
	DropTooWide    = "more than 1024 GPUs"
	DropWider      = "wider than --max-gpus"
	DropQoS        = "qos not in --qos"
	DropShort      = "shorter than its profile's start-up and half an iteration (--short keep makes it one iteration)"
)

// Ways to treat censored jobs and jobs shorter than their profile's start-up
// (Options.Censored, Options.Short).
const (
	Drop = "drop"
	Keep = "keep"
)

// MemoryProfile and MemoryRequest are the ways a job's memory is set (Options.Memory).
const (
	// MemoryProfile gives each job its matched catalog profile's memory.
	MemoryProfile = "profile"
	// MemoryRequest gives each job its GPU request: the profile's persistent and
	// ephemeral memory scaled so that their sum is the requested share of the
	// device's usable memory (inline persistent_mib and ephemeral_mib columns).
	MemoryRequest = "request"
)

// Options control the conversion.
type Options struct {
	// Catalog holds the profiles jobs are mapped onto; nil means workload.Default().
	Catalog *workload.Catalog
	// Device, when set, is the GPU every job's GPU request is a share of and its
	// duration is timed on.
	Device *GPU
	// GPUFor, used when Device is nil, is the GPU of a job by the source's GPU
	// type: the first alternative of a list ("V100M16" of "V100M16|V100M32"), ""
	// where the source names none. An error says it knows no device by that type:
	// the GPU it returns is used all the same, and the jobs on it are counted in
	// Stats.UnknownGPUs, the error in the summary. The command line resolves types
	// with the device presets (device.Match); importers know sources, not devices.
	// Convert needs Device or GPUFor.
	GPUFor func(gpuType string) (GPU, error)
	// Model and Batch, when Model is not empty, give every job that one training
	// profile instead of matching one.
	Model string
	Batch int
	// Memory is MemoryProfile (default) or MemoryRequest.
	Memory string
	// Since and Until, when set, keep only jobs submitted in [Since, Until), on the
	// source's clock.
	Since, Until *float64
	// Limit, when positive, keeps the first Limit jobs by arrival.
	Limit int
	// Statuses, when not empty, keeps only jobs whose status is one of them
	// (case-insensitive).
	Statuses []string
	// QoS, when not empty, keeps only jobs whose QoS class is one of them
	// (case-insensitive; Alibaba 2023's LS, Guaranteed, Burstable, BE).
	QoS []string
	// MaxGPUs, when positive, drops (and counts) jobs on more GPUs than that: the
	// largest node's, so that a simulation of that many GPUs takes the trace.
	MaxGPUs int
	// Censored is Drop (default) or Keep: whether jobs still running when the
	// trace was cut are dropped, counted, or run until the cut, counted in
	// Stats.Censored.
	Censored string
	// Short is Drop (default) or Keep: whether a job that ran for less than its
	// profile's start-up and half an iteration is dropped, counted, or kept at one
	// iteration (longer than it ran), counted in Stats.Short.
	Short string
	// Lengths sizes the jobs of sources whose rows carry no length (Sia's and
	// Pollux's workloads): seconds each application's job runs, by application
	// (lower case). A row of an application it lacks stops the import.
	Lengths map[string]float64
	// SkipBad counts malformed rows instead of failing on the first one.
	SkipBad bool
	// GPUModels writes each job's GPU-type constraint (a format with
	// Format.GPUModels: Alibaba 2023's gpu_spec) as its gpu_models, the models it
	// may run on: for a run on the trace's own cluster, whose models keep the
	// trace's names (salus trace cluster). Off, the jobs run on any GPU.
	GPUModels bool
	// Output is "csv" (default) or "jsonl".
	Output string
}

// GPU is what an import needs of the device a job ran on: its usable memory, of
// which the job's GPU request is a share, and its compute speed relative to the
// P100 the catalog was measured on (0 means 1), which times its iterations.
type GPU struct {
	Name        string
	CapacityMiB float64
	Speed       float64
}

// IterS is how long an iteration of p100S seconds on the P100 takes on g.
func (g GPU) IterS(p100S float64) float64 {
	if g.Speed <= 0 {
		return p100S
	}
	return p100S / g.Speed
}

// ErrNoJobs is the error of an import that kept no job.
var ErrNoJobs = errors.New("no job was kept")

// Stats says what an import read, kept and dropped.
type Stats struct {
	Rows    int            // rows (jobs, for Philly) read
	Kept    int            // jobs written
	Dropped map[string]int // rows dropped, by reason
	// FirstSubmitS is the source time of the first kept job: arrival 0.
	FirstSubmitS float64
	// Streamed says the jobs were written as they were read: the output was a
	// file and the source was sorted by submission.
	Streamed bool
	// UnknownGPUs counts the jobs, by the source's GPU type, of a type
	// Options.GPUFor knows no device by.
	UnknownGPUs map[string]int
	unknownWhy  map[string]string // GPUFor's error, by type
	// Censored counts the kept jobs that were still running when the trace was
	// cut (--censored keep), run to the cut; Short the kept jobs shorter than
	// their profile's start-up, at one iteration (--short keep).
	Censored, Short int
	// CutS is the cut the open-ended censored jobs ran to, on the source's clock.
	CutS float64
}

// Summary writes the counts on one line per reason, for stderr.
func (s Stats) Summary(w io.Writer) {
	total := 0
	for _, n := range s.Dropped {
		total += n
	}
	fmt.Fprintf(w, "imported %d jobs from %d rows; dropped %d\n", s.Kept, s.Rows, total)
	reasons := make([]string, 0, len(s.Dropped))
	for r := range s.Dropped {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := s.Dropped[reasons[i]], s.Dropped[reasons[j]]
		return a > b || (a == b && reasons[i] < reasons[j])
	})
	for _, r := range reasons {
		fmt.Fprintf(w, "  %8d  %s\n", s.Dropped[r], r)
	}
	types := make([]string, 0, len(s.UnknownGPUs))
	for t := range s.UnknownGPUs {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Fprintf(w, "warning: %d jobs on GPU type %q: %s; give --device to choose\n", s.UnknownGPUs[t], t, s.unknownWhy[t])
	}
	if s.Censored > 0 {
		fmt.Fprintf(w, "note: %d kept jobs were still running when the trace was cut: they run until the cut (--censored keep)\n", s.Censored)
	}
	if s.Short > 0 {
		fmt.Fprintf(w, "note: %d kept jobs ran for less than their profile's start-up: one iteration each, longer than they ran (--short keep)\n", s.Short)
	}
}

// entry is a kept job, compact: the conversion holds one per job until it can sort
// them and write them out.
type entry struct {
	id     string
	submit float64
	iters  int64
	reqMiB float32 // requested memory, MiB (MemoryRequest only)
	demand float32 // compute demand, the GPU share (0: the profile's)
	prof   uint16  // index into converter.profiles
	gpus   uint16
	prio   int8
	// models is the source's GPU type, the job's constraint (Format.GPUModels);
	// queue and run its own scheduling delay and run, seconds (Format.Queues; queue
	// -1: not given).
	models     string
	queue, run float64
}

type converter struct {
	o        Options
	profiles []workload.Profile // the catalog's training profiles, by peak memory
	byModel  map[string][]int   // model -> indices into profiles
	fixed    int                // index of Options.Model's profile, or -1
	devices  map[string]GPU     // by the source's GPU type
	types    map[string]string  // the GPU types, interned
	statuses map[string]bool
	qos      map[string]bool
	// format is the source's (priorities, shares: which columns to write).
	format Format
	ids    map[string]struct{}
	// pending are the open-ended censored jobs kept, waiting for the cut, the
	// latest LastS seen.
	pending []Record
	cut     float64
	entries []entry
	stats   Stats
	// stream, when not nil, writes each kept job as it is read; lastSubmit is the
	// last one's submission, started whether there was one.
	stream     *rowWriter
	lastSubmit float64
	started    bool
}

// Convert reads files in format f and writes the trace to w. The summary of what
// was dropped is in the returned Stats, also when an error stops the import.
//
// When w is a regular file written at its end (standard output redirected to a
// file, or --out), jobs are written as they are read for as long as the
// source is sorted by submission, and nothing is kept of them but their ids. At
// the first job out of order the file is emptied and the import starts over,
// keeping a compact entry per job to sort and write at the end; that is also how
// it goes for any other writer.
func Convert(f Format, files []string, o Options, w io.Writer) (Stats, error) {
	c, err := newConverter(o)
	c.format = f
	if err != nil {
		return c.stats, err
	}
	if len(files) == 0 || len(files) > f.MaxFiles {
		return c.stats, fmt.Errorf("format %s reads %s: got %d files", f.Name, f.Args, len(files))
	}
	if file, ok := w.(*os.File); ok {
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			// Only at the end of the file: what comes before is not the import's to
			// empty (a file opened to append reports offset 0).
			start, err := file.Seek(0, io.SeekCurrent)
			if err == nil && start == fi.Size() {
				c.stream = c.newRowWriter(file)
				err = f.Read(files, c)
				switch {
				case errors.Is(err, errUnsorted):
					if err := file.Truncate(start); err != nil {
						return c.stats, err
					}
					if _, err := file.Seek(start, io.SeekStart); err != nil {
						return c.stats, err
					}
					c, _ = newConverter(o)
					c.format = f
				case err != nil:
					return c.stats, err
				case c.stats.Kept == 0:
					return c.stats, c.noJobs()
				default:
					c.stats.Streamed = true
					return c.stats, c.stream.flush()
				}
			}
		}
	}
	if err := f.Read(files, c); err != nil {
		return c.stats, err
	}
	if err := c.resolvePending(); err != nil {
		return c.stats, err
	}
	return c.stats, c.write(w)
}

// errUnsorted stops a streaming import at the first job out of order.
var errUnsorted = errors.New("the source is not sorted by submission")

// streamEntry writes a kept job at once, while the source is sorted.
func (c *converter) streamEntry(e entry) error {
	if c.started && e.submit < c.lastSubmit {
		return errUnsorted
	}
	if !c.started {
		c.started, c.stats.FirstSubmitS = true, e.submit
	}
	c.lastSubmit = e.submit
	if c.o.Limit > 0 && c.stats.Kept >= c.o.Limit {
		c.stats.Dropped[DropLimit]++
		return nil
	}
	c.stats.Kept++
	return c.stream.write(e)
}

func newConverter(o Options) (*converter, error) {
	c := &converter{o: o, fixed: -1, byModel: map[string][]int{}, devices: map[string]GPU{},
		ids: map[string]struct{}{}, stats: Stats{Dropped: map[string]int{}}}
	if c.o.Catalog == nil {
		c.o.Catalog = workload.Default()
	}
	switch c.o.Memory {
	case "":
		c.o.Memory = MemoryProfile
	case MemoryProfile, MemoryRequest:
	default:
		return c, fmt.Errorf("--memory %q: choose %s or %s", o.Memory, MemoryProfile, MemoryRequest)
	}
	switch c.o.Output {
	case "":
		c.o.Output = "csv"
	case "csv", "jsonl":
	default:
		return c, fmt.Errorf("--output-format %q: choose csv or jsonl", o.Output)
	}
	for _, p := range c.o.Catalog.Profiles() {
		if p.Kind == workload.Train {
			c.profiles = append(c.profiles, p)
		}
	}
	sort.SliceStable(c.profiles, func(i, j int) bool { return c.profiles[i].PeakMiB < c.profiles[j].PeakMiB })
	if len(c.profiles) == 0 || len(c.profiles) > math.MaxUint16 {
		return c, fmt.Errorf("the catalog has %d training profiles: importing needs at least one", len(c.profiles))
	}
	for i, p := range c.profiles {
		c.byModel[p.Model] = append(c.byModel[p.Model], i)
	}
	if o.Model != "" {
		p, err := c.o.Catalog.Lookup(o.Model, o.Batch, workload.Train)
		if err != nil {
			return c, fmt.Errorf("--model %s --batch %d: %w", o.Model, o.Batch, err)
		}
		c.fixed = slices.IndexFunc(c.profiles, func(q workload.Profile) bool { return q.Key() == p.Key() })
	}
	switch {
	case o.Device != nil && !(o.Device.CapacityMiB > 0 && o.Device.Speed >= 0):
		return c, fmt.Errorf("device %+v: give its usable memory in MiB and a speed of 0 or more", *o.Device)
	case o.Device == nil && o.GPUFor == nil:
		return c, errors.New("traceimport: Options has neither a Device nor a GPUFor: give the device the jobs ran on")
	}
	if len(o.QoS) > 0 {
		c.qos = map[string]bool{}
		for _, s := range o.QoS {
			c.qos[strings.ToLower(strings.TrimSpace(s))] = true
		}
	}
	for _, m := range []struct{ flag, v string }{{"censored", o.Censored}, {"short", o.Short}} {
		if m.v != "" && m.v != Drop && m.v != Keep {
			return c, fmt.Errorf("--%s %q: choose %s or %s", m.flag, m.v, Drop, Keep)
		}
	}
	if o.MaxGPUs < 0 {
		return c, fmt.Errorf("--max-gpus %d: give the largest node's GPUs, or 0 for no limit", o.MaxGPUs)
	}
	for app, l := range o.Lengths {
		if !(l > 0) || math.IsInf(l, 0) {
			return c, fmt.Errorf("--length %s=%v: give a positive number of seconds", app, l)
		}
	}
	if len(o.Statuses) > 0 {
		c.statuses = map[string]bool{}
		for _, s := range o.Statuses {
			c.statuses[strings.ToLower(strings.TrimSpace(s))] = true
		}
	}
	if o.Since != nil && o.Until != nil && *o.Until <= *o.Since {
		return c, fmt.Errorf("--until %v is not after --since %v: the window would keep no job", *o.Until, *o.Since)
	}
	if o.Limit < 0 {
		return c, fmt.Errorf("--limit %d: give a positive number of jobs, or 0 for all", o.Limit)
	}
	return c, nil
}

func (c *converter) Drop(reason string) {
	c.stats.Rows++
	c.stats.Dropped[reason]++
}

func (c *converter) Bad(err *workload.FieldError) error {
	if c.o.SkipBad {
		c.Drop(DropBad)
		return nil
	}
	c.stats.Rows++
	err.Msg += " (fix the row, or give --skip-bad to count such rows and go on)"
	return err
}

func (c *converter) Record(r Record) error {
	c.stats.Rows++
	c.cut = math.Max(c.cut, r.LastS)
	drop := func(reason string) error {
		c.stats.Dropped[reason]++
		return nil
	}
	switch {
	case r.GPUs < 1 || r.Share < 0:
		return drop(DropNoGPU)
	case r.GPUs > 1024:
		return drop(DropTooWide)
	case c.o.MaxGPUs > 0 && r.GPUs > c.o.MaxGPUs:
		return drop(DropWider)
	case c.statuses != nil && r.StatusMissing:
		return fmt.Errorf("%s: --status filters on the jobs' final status, and this file has no status column (state): leave --status out", r.File)
	case c.statuses != nil && !c.statuses[strings.ToLower(r.Status)]:
		return drop(DropStatus)
	case c.qos != nil && !c.qos[strings.ToLower(r.QoS)]:
		return drop(DropQoS)
	case c.o.Since != nil && r.SubmitS < *c.o.Since:
		return drop(DropBefore)
	case c.o.Until != nil && r.SubmitS >= *c.o.Until:
		return drop(DropAfter)
	case r.Censored && c.o.Censored != Keep:
		return drop(DropCensored)
	case !r.Open && r.DurationS <= 0 && r.Iterations <= 0 && r.LengthKey == "":
		return drop(DropNoDuration)
	}
	if _, dup := c.ids[r.ID]; dup {
		return drop(DropDuplicate)
	}
	// A copy: the reader's id may share memory with its whole line.
	r.ID = strings.Clone(r.ID)
	c.ids[r.ID] = struct{}{}
	if r.DurationS <= 0 && r.Iterations <= 0 && r.LengthKey != "" {
		l, ok := c.o.Lengths[strings.ToLower(r.LengthKey)]
		if !ok {
			return c.noLength(r)
		}
		r.DurationS = l
	}
	if r.Open {
		// Its length is known at the end, with the cut: a stream starts over, buffered.
		if c.stream != nil {
			return errUnsorted
		}
		c.pending = append(c.pending, r)
		return nil
	}
	return c.add(r)
}

// noLength is the error for a row with no length whose application --length
// does not size.
func (c *converter) noLength(r Record) error {
	given := "none given"
	if len(c.o.Lengths) > 0 {
		var apps []string
		for a := range c.o.Lengths {
			apps = append(apps, a)
		}
		sort.Strings(apps)
		given = "given for " + strings.Join(apps, ", ")
	}
	return &workload.FieldError{File: r.File, Line: r.Line, Field: "application",
		Msg: fmt.Sprintf("%q: the row has no duration, and a job runs until its application converges: give each application's length in seconds with --length %s=SECONDS,... (%s; docs/traces.md, Public traces, sia)", r.LengthKey, strings.ToLower(r.LengthKey), given)}
}

// resolvePending sizes the open-ended censored jobs to the cut and keeps them.
func (c *converter) resolvePending() error {
	if len(c.pending) > 0 {
		c.stats.CutS = c.cut
	}
	for _, r := range c.pending {
		r.DurationS += c.cut - r.OpenS
		if r.DurationS <= 0 {
			c.stats.Dropped[DropNoDuration]++
			delete(c.ids, r.ID)
			continue
		}
		if err := c.add(r); err != nil {
			return err
		}
	}
	c.pending = nil
	return nil
}

// add maps a kept job onto its profile and device, and keeps it.
func (c *converter) add(r Record) error {
	dev := c.device(r.GPUType)
	share := r.Share
	if share == 0 || share > 1 {
		share = 1
	}
	req := share * dev.CapacityMiB
	pi := c.match(r.Model, r.Batch, req)
	p := c.profiles[pi]
	iters := int64(r.Iterations)
	if r.DurationS > 0 {
		iters = int64(math.Round((r.DurationS - p.StartupS) / dev.IterS(p.IterS)))
	}
	if iters < 1 {
		if c.o.Short != Keep {
			c.stats.Dropped[DropShort]++
			delete(c.ids, r.ID)
			return nil
		}
		c.stats.Short++
		iters = 1
	}
	if iters > 1e12 {
		iters = 1e12
	}
	if r.Censored {
		c.stats.Censored++
	}
	e := entry{id: r.ID, submit: r.SubmitS, iters: iters, reqMiB: float32(req), prof: uint16(pi), gpus: uint16(r.GPUs),
		prio: int8(max(-128, min(127, r.Priority))), queue: -1}
	if c.models() {
		e.models = c.intern(r.GPUType)
	}
	if c.format.Queues && r.Queued {
		e.queue, e.run = r.QueueS, r.DurationS
	}
	// A pod's share of a GPU is its compute as well as its memory: it keeps at
	// most that much of the GPU busy (and at most what its model would).
	if share < 1 && share < p.Demand {
		e.demand = float32(share)
	}
	if c.stream != nil {
		return c.streamEntry(e)
	}
	c.entries = append(c.entries, e)
	return nil
}

// models says the jobs' GPU models are written.
func (c *converter) models() bool { return c.o.GPUModels && c.format.GPUModels }

// timedOn is a job's timed_on when its models are written: a job without a
// GPU type ran its recorded run on a model the source does not name, so it is
// timed on the device its iterations were counted on (the reference device)
// whatever GPU it is placed on, and replays in its recorded run anywhere; a
// job of a type is timed on the GPU it runs on, a model of that type.
func (c *converter) timedOn(e entry) string {
	if !c.models() || len(splitModels(e.models)) > 0 {
		return ""
	}
	return workload.TimedOnReference
}

// intern is the GPU types' one copy each: a reader's field may share memory
// with its whole line, and a million jobs name a handful of types.
func (c *converter) intern(t string) string {
	t = strings.TrimSpace(t)
	if absent(t) {
		return ""
	}
	if v, ok := c.types[t]; ok {
		return v
	}
	if c.types == nil {
		c.types = map[string]string{}
	}
	v := strings.Clone(t)
	c.types[v] = v
	return v
}

// splitModels is a job's GPU models: the source's type list, | separated (Alibaba's
// "V100M16|V100M32"; commas and semicolons taken as well).
func splitModels(t string) []string {
	if t == "" {
		return nil
	}
	var out []string
	for _, m := range strings.FieldsFunc(t, func(r rune) bool { return r == '|' || r == ',' || r == ';' }) {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// device is the GPU a job of the source's GPU type ran on: Options.Device, else
// GPUFor's for the type's first alternative.
func (c *converter) device(gpuType string) GPU {
	if c.o.Device != nil {
		return *c.o.Device
	}
	// No type ("nan", empty: Alibaba's README says no constraint) is the
	// resolver's default, the GPU the catalog was measured on, and no warning.
	if absent(strings.TrimSpace(gpuType)) {
		gpuType = ""
	}
	if d, ok := c.devices[gpuType]; ok {
		if _, unknown := c.stats.UnknownGPUs[gpuType]; unknown {
			c.stats.UnknownGPUs[gpuType]++
		}
		return d
	}
	t := strings.TrimSpace(gpuType)
	if i := strings.IndexAny(t, "|,;"); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	d, err := c.o.GPUFor(t)
	if err != nil {
		if c.stats.UnknownGPUs == nil {
			c.stats.UnknownGPUs, c.stats.unknownWhy = map[string]int{}, map[string]string{}
		}
		c.stats.UnknownGPUs[gpuType]++
		c.stats.unknownWhy[gpuType] = err.Error()
	}
	c.devices[gpuType] = d
	return d
}

// modelAliases are source model names that differ from the catalog's.
var modelAliases = map[string]string{"inceptionv3": "inception3", "inception_v3": "inception3", "inceptionv4": "inception4",
	"inception_v4": "inception4", "resnet-50": "resnet50", "resnet-101": "resnet101", "resnet-152": "resnet152"}

// match picks the profile for a job: --model's; else, among the source model's
// profiles when the catalog has that model (all training profiles when not), the
// one at the source's batch size if there is one, else the largest whose peak
// memory fits the request, else the smallest.
func (c *converter) match(model string, batch int, reqMiB float64) int {
	if c.fixed >= 0 {
		return c.fixed
	}
	model = strings.ToLower(model)
	if a, ok := modelAliases[model]; ok {
		model = a
	}
	cands := c.byModel[model]
	if len(cands) > 0 && batch > 0 {
		for _, i := range cands {
			if c.profiles[i].Batch == batch {
				return i
			}
		}
	}
	best := -1
	visit := func(i int) {
		if c.profiles[i].PeakMiB <= reqMiB && (best < 0 || c.profiles[i].PeakMiB > c.profiles[best].PeakMiB) {
			best = i
		}
	}
	if len(cands) > 0 {
		for _, i := range cands {
			visit(i)
		}
		if best < 0 {
			best = cands[0]
		}
		return best
	}
	// profiles are sorted by peak: the last one that fits.
	n := sort.Search(len(c.profiles), func(i int) bool { return c.profiles[i].PeakMiB > reqMiB })
	if n == 0 {
		return 0
	}
	return n - 1
}

// write sorts the kept jobs by submission (stably: ties keep the source's order),
// applies --limit and writes them, arrivals relative to the first.
func (c *converter) write(w io.Writer) error {
	if !slices.IsSortedFunc(c.entries, cmpSubmit) {
		slices.SortStableFunc(c.entries, cmpSubmit)
	}
	if c.o.Limit > 0 && len(c.entries) > c.o.Limit {
		c.stats.Dropped[DropLimit] += len(c.entries) - c.o.Limit
		c.entries = c.entries[:c.o.Limit]
	}
	c.stats.Kept = len(c.entries)
	if len(c.entries) == 0 {
		return c.noJobs()
	}
	c.stats.FirstSubmitS = c.entries[0].submit
	rw := c.newRowWriter(w)
	for _, e := range c.entries {
		if err := rw.write(e); err != nil {
			return err
		}
	}
	return rw.flush()
}

func (c *converter) noJobs() error {
	return fmt.Errorf("%w (%d rows read): see the counts of dropped rows", ErrNoJobs, c.stats.Rows)
}

func cmpSubmit(a, b entry) int {
	switch {
	case a.submit < b.submit:
		return -1
	case a.submit > b.submit:
		return 1
	}
	return 0
}

func (c *converter) arrival(e entry) float64 {
	return math.Round((e.submit-c.stats.FirstSubmitS)*1e3) / 1e3
}

// memory is the inline memory of a job under MemoryRequest: the profile's split
// scaled to the request, to a tenth of a MiB.
func (c *converter) memory(e entry) (persistent, ephemeral float64) {
	p := c.profiles[e.prof]
	scale := float64(e.reqMiB) / p.PeakMiB
	return math.Round(p.PersistentMiB*scale*10) / 10, math.Round(p.EphemeralMiB*scale*10) / 10
}

// demand is the job's compute demand, its GPU share, to a thousandth.
func (c *converter) demand(e entry) float64 {
	return math.Round(float64(e.demand)*1e3) / 1e3
}

// rowWriter writes jobs one at a time, the header before the first.
type rowWriter struct {
	c      *converter
	bw     *bufio.Writer
	cw     *csv.Writer
	enc    *json.Encoder
	rec    []string
	header []string
	wrote  bool
}

func (c *converter) newRowWriter(w io.Writer) *rowWriter {
	rw := &rowWriter{c: c, bw: bufio.NewWriterSize(w, 1<<16)}
	if c.o.Output == "jsonl" {
		rw.enc = json.NewEncoder(rw.bw)
		return rw
	}
	rw.cw = csv.NewWriter(rw.bw)
	rw.header = []string{"job_id", "model", "batch_size", "iterations", "arrival_s", "kind", "gpus"}
	if c.format.Priorities {
		rw.header = append(rw.header, "priority")
	}
	if c.o.Memory == MemoryRequest {
		rw.header = append(rw.header, "persistent_mib", "ephemeral_mib")
	}
	if c.format.Shares {
		rw.header = append(rw.header, "demand")
	}
	if c.models() {
		rw.header = append(rw.header, "gpu_models", "timed_on")
	}
	if c.format.Queues {
		rw.header = append(rw.header, "trace_queue_s", "trace_run_s")
	}
	rw.rec = make([]string, len(rw.header))
	return rw
}

func (rw *rowWriter) write(e entry) error {
	c := rw.c
	p := c.profiles[e.prof]
	request := c.o.Memory == MemoryRequest
	if rw.enc != nil {
		j := workload.Job{ID: e.id, Model: p.Model, Batch: p.Batch, Iterations: int(e.iters), ArrivalS: c.arrival(e),
			Kind: workload.Train, GPUs: int(e.gpus), Priority: int(e.prio)}
		if request {
			per, eph := c.memory(e)
			j.PersistentMiB, j.EphemeralMiB = &per, &eph
		}
		if e.demand > 0 {
			d := c.demand(e)
			j.Demand = &d
		}
		j.GPUModels = splitModels(e.models)
		j.TimedOn = c.timedOn(e)
		if e.queue >= 0 {
			q, r := e.queue, e.run
			j.TraceQueueS, j.TraceRunS = &q, &r
		}
		return rw.enc.Encode(j)
	}
	if !rw.wrote {
		rw.wrote = true
		if err := rw.cw.Write(rw.header); err != nil {
			return err
		}
	}
	rec := rw.rec
	rec[0], rec[1], rec[2] = e.id, p.Model, strconv.Itoa(p.Batch)
	rec[3] = strconv.FormatInt(e.iters, 10)
	rec[4] = strconv.FormatFloat(c.arrival(e), 'f', -1, 64)
	rec[5], rec[6] = workload.Train, strconv.Itoa(int(e.gpus))
	i := 7
	if c.format.Priorities {
		rec[i] = strconv.Itoa(int(e.prio))
		i++
	}
	if request {
		per, eph := c.memory(e)
		rec[i], rec[i+1] = strconv.FormatFloat(per, 'f', -1, 64), strconv.FormatFloat(eph, 'f', -1, 64)
		i += 2
	}
	if c.format.Shares {
		rec[i] = ""
		if e.demand > 0 {
			rec[i] = strconv.FormatFloat(c.demand(e), 'f', -1, 64)
		}
		i++
	}
	if c.models() {
		rec[i], rec[i+1] = strings.Join(splitModels(e.models), "|"), c.timedOn(e)
		i += 2
	}
	if c.format.Queues {
		rec[i], rec[i+1] = "", ""
		if e.queue >= 0 {
			rec[i], rec[i+1] = strconv.FormatFloat(e.queue, 'f', -1, 64), strconv.FormatFloat(e.run, 'f', -1, 64)
		}
	}
	return rw.cw.Write(rec)
}

func (rw *rowWriter) flush() error {
	if rw.cw != nil {
		rw.cw.Flush()
		if err := rw.cw.Error(); err != nil {
			return err
		}
	}
	return rw.bw.Flush()
}
