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
	// Model and Batch are the source's model name and batch size, when it gives them.
	Model string
	Batch int
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
	DropNoEnd      = "no end time (still running when the trace ended)"
	DropNoDuration = "ran for no time (end not after start)"
	DropStatus     = "status not in --status"
	DropBefore     = "submitted before --since"
	DropAfter      = "submitted after --until"
	DropDuplicate  = "duplicate job id (the first one is kept)"
	DropBad        = "malformed (--skip-bad)"
	DropLimit      = "beyond --limit"
	DropTooWide    = "more than 1024 GPUs"
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
	// SkipBad counts malformed rows instead of failing on the first one.
	SkipBad bool
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
}

// entry is a kept job, compact: the conversion holds one per job until it can sort
// them and write them out.
type entry struct {
	id     string
	submit float64
	iters  int64
	reqMiB float32 // requested memory, MiB (MemoryRequest only)
	prof   uint16  // index into converter.profiles
	gpus   uint16
}

type converter struct {
	o        Options
	profiles []workload.Profile // the catalog's training profiles, by peak memory
	byModel  map[string][]int   // model -> indices into profiles
	fixed    int                // index of Options.Model's profile, or -1
	devices  map[string]GPU     // by the source's GPU type
	statuses map[string]bool
	ids      map[string]struct{}
	entries  []entry
	stats    Stats
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
	drop := func(reason string) error {
		c.stats.Dropped[reason]++
		return nil
	}
	switch {
	case r.GPUs < 1 || r.Share < 0:
		return drop(DropNoGPU)
	case r.GPUs > 1024:
		return drop(DropTooWide)
	case c.statuses != nil && !c.statuses[strings.ToLower(r.Status)]:
		return drop(DropStatus)
	case c.o.Since != nil && r.SubmitS < *c.o.Since:
		return drop(DropBefore)
	case c.o.Until != nil && r.SubmitS >= *c.o.Until:
		return drop(DropAfter)
	case r.DurationS <= 0 && r.Iterations <= 0:
		return drop(DropNoDuration)
	}
	if _, dup := c.ids[r.ID]; dup {
		return drop(DropDuplicate)
	}
	// A copy: the reader's id may share memory with its whole line.
	r.ID = strings.Clone(r.ID)
	c.ids[r.ID] = struct{}{}
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
		iters = 1
	}
	if iters > 1e12 {
		iters = 1e12
	}
	e := entry{id: r.ID, submit: r.SubmitS, iters: iters, reqMiB: float32(req), prof: uint16(pi), gpus: uint16(r.GPUs)}
	if c.stream != nil {
		return c.streamEntry(e)
	}
	c.entries = append(c.entries, e)
	return nil
}

// device is the GPU a job of the source's GPU type ran on: Options.Device, else
// GPUFor's for the type's first alternative.
func (c *converter) device(gpuType string) GPU {
	if c.o.Device != nil {
		return *c.o.Device
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
	if c.o.Memory == MemoryRequest {
		rw.header = append(rw.header, "persistent_mib", "ephemeral_mib")
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
			Kind: workload.Train, GPUs: int(e.gpus)}
		if request {
			per, eph := c.memory(e)
			j.PersistentMiB, j.EphemeralMiB = &per, &eph
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
	if request {
		per, eph := c.memory(e)
		rec[7], rec[8] = strconv.FormatFloat(per, 'f', -1, 64), strconv.FormatFloat(eph, 'f', -1, 64)
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
