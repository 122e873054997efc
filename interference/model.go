package interference

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Mechanism is how the measured (or modelled) jobs shared the GPU's compute.
type Mechanism string

const (
	// TimeSlicing: separate processes on one GPU under the driver's default
	// time-slicing (no MPS).
	TimeSlicing Mechanism = "timeslice"
	// MPS: separate processes through CUDA's Multi-Process Service, whose
	// kernels run at once.
	MPS Mechanism = "mps"
	// Lanes: jobs in one process on concurrent streams, as Salus's lanes run.
	Lanes Mechanism = "lanes"
)

// Mechanisms lists the mechanisms a model can hold.
var Mechanisms = []Mechanism{TimeSlicing, MPS, Lanes}

// ParseMechanism reads a mechanism's name.
func ParseMechanism(s string) (Mechanism, error) {
	for _, m := range Mechanisms {
		if string(m) == strings.ToLower(strings.TrimSpace(s)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown sharing mechanism %q: want one of timeslice, mps, lanes", s)
}

// Model is a co-location model: one DeviceModel per device and mechanism.
type Model struct {
	// Name says which model this is ("measured-pairs" for the built-in one).
	Name string `json:"name"`
	// Form is the model's form, in words.
	Form    string         `json:"form"`
	Devices []*DeviceModel `json:"devices"`
}

// DeviceModel is the co-location model of one device under one mechanism.
//
// Each job type i has a sensitivity vector s_i (how much it suffers) and a
// pressure vector p_i (how much it inflicts), of Rank components each. Beside
// job j alone, job i runs at 1/(1 + x_ij) of its speed alone, where x_ij is
// the measured figure's 1/normalized - 1 if the pair was measured, else
// s_i . p_j. Beside several jobs at once the terms add (pressures add, as each
// job's kernels and copies queue beside i's): 1/(1 + sum_j x_ij). There are no
// public measurements of three jobs on one GPU: the additive rule is an
// assumption, stated and tested, not a measurement.
type DeviceModel struct {
	Device    string    `json:"device"`
	Mechanism Mechanism `json:"mechanism"`
	// Source says where the measurements came from.
	Source string `json:"source"`
	Rank   int    `json:"rank"`
	// Lambda is the fit's regularization (see Fit).
	Lambda float64 `json:"lambda"`
	// Jobs are the job types measured, each with its parameters.
	Jobs []JobParams `json:"jobs"`
	// Unknown are the parameters of a job type the model has not seen: the
	// medians of Jobs' components.
	Unknown JobParams `json:"unknown"`
	// Measured are the measured pairs, used as measured.
	Measured []MeasuredPair `json:"measured"`
	// Error is the fit's error: in sample and cross-validated, per job, beside
	// today's rule fitted to the same pairs.
	Error *FitReport `json:"error,omitempty"`

	index map[Job]int
	terms [][]float64 // x_ij, by index in Jobs; the last row and column are Unknown's
	fixed []int64     // terms in fixed point (Slowdown), row by row: x_ij at i*n+j
	n     int         // the rows
}

// JobParams are one job type's parameters on a device.
type JobParams struct {
	Job
	S []float64 `json:"s"`
	P []float64 `json:"p"`
	// Pairs is how many measured pairs the job was in.
	Pairs int `json:"pairs"`
}

// MeasuredPair is a measured pair: each job's throughput beside the other
// over alone.
type MeasuredPair struct {
	A     Job     `json:"a"`
	B     Job     `json:"b"`
	NormA float64 `json:"norm_a"`
	NormB float64 `json:"norm_b"`
}

// Load reads a model written by Save.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Read reads a model (JSON) and checks it.
func Read(r io.Reader) (*Model, error) {
	var m Model
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a co-location model (salus interference fit writes one): %w", err)
	}
	if len(m.Devices) == 0 {
		return nil, fmt.Errorf("the model has no devices")
	}
	for i, d := range m.Devices {
		if err := d.prepare(); err != nil {
			return nil, fmt.Errorf("devices[%d] (%s, %s): %w", i, d.Device, d.Mechanism, err)
		}
	}
	return &m, nil
}

// Save writes m as indented JSON.
func (m *Model) Save(path string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// prepare checks d and builds its index and its table of terms.
func (d *DeviceModel) prepare() error {
	if d.Device == "" {
		return fmt.Errorf("no device name")
	}
	if _, err := ParseMechanism(string(d.Mechanism)); err != nil {
		return err
	}
	if d.Rank < 1 {
		return fmt.Errorf("rank %d: want at least 1", d.Rank)
	}
	check := func(p JobParams) error {
		if len(p.S) != d.Rank || len(p.P) != d.Rank {
			return fmt.Errorf("job %s: want %d components of s and of p", p.Job, d.Rank)
		}
		for _, v := range append(slices.Clone(p.S), p.P...) {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("job %s: parameter %v is not a finite number at least 0", p.Job, v)
			}
		}
		return nil
	}
	d.index = make(map[Job]int, len(d.Jobs))
	for i, p := range d.Jobs {
		if err := check(p); err != nil {
			return err
		}
		if _, dup := d.index[p.Job]; dup {
			return fmt.Errorf("job %s twice", p.Job)
		}
		d.index[p.Job] = i
	}
	if err := check(d.Unknown); err != nil {
		return fmt.Errorf("unknown: %w", err)
	}
	n := len(d.Jobs) + 1
	d.terms = make([][]float64, n)
	params := func(i int) JobParams {
		if i == n-1 {
			return d.Unknown
		}
		return d.Jobs[i]
	}
	for i := range n {
		d.terms[i] = make([]float64, n)
		for j := range n {
			d.terms[i][j] = dot(params(i).S, params(j).P)
		}
	}
	for _, mp := range d.Measured {
		a, okA := d.index[mp.A]
		b, okB := d.index[mp.B]
		if !okA || !okB {
			return fmt.Errorf("measured pair %s, %s: a job without parameters", mp.A, mp.B)
		}
		if !(mp.NormA > 0) || !(mp.NormB > 0) {
			return fmt.Errorf("measured pair %s, %s: normalized figures must be above 0", mp.A, mp.B)
		}
		if a == b {
			// Two copies of one job type: which copy is which is noise, so both
			// take the mean of the two figures.
			d.terms[a][a] = termOf((mp.NormA + mp.NormB) / 2)
			continue
		}
		d.terms[a][b] = termOf(mp.NormA)
		d.terms[b][a] = termOf(mp.NormB)
	}
	// One array, not a slice a row: each change of job of two lanes side
	// by side (sim) reads two terms, at one load each.
	d.fixed, d.n = make([]int64, n*n), n
	for i := range n {
		for j := range n {
			// Bounded well inside int64 even summed over thousands of jobs.
			d.fixed[i*n+j] = int64(math.Round(min(max(d.terms[i][j], -1), 1<<20) * fixedScale))
		}
	}
	return nil
}

// termOf is the term x of a measured normalized throughput n: 1/(1+x) = n.
// A figure above 1 (noise, or another baseline: a fifth of Lucid's) gives a
// term below 0, a job faster beside the other than alone, as measured.
func termOf(n float64) float64 { return 1/n - 1 }

// minSlowdown bounds a job's slowdown below: terms below 0 (measured figures
// above 1) never make it run more than 4x its speed alone, the most a pair
// file may say (ReadPairs).
const minSlowdown = 0.25

func dot(a, b []float64) float64 {
	var s float64
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}

// Lookup is the device model for device under mechanism, and whether it was
// measured under that mechanism. Where it was not, the device's model under
// another mechanism stands in (see Fallback); nil where the device has none.
func (m *Model) Lookup(device string, mech Mechanism) (d *DeviceModel, exact bool) {
	device = strings.ToLower(device)
	for _, want := range Fallback(mech) {
		for _, dm := range m.Devices {
			if dm.Device == device && dm.Mechanism == want {
				return dm, want == mech
			}
		}
	}
	return nil, false
}

// Fallback is the order in which mechanisms stand in for mech where a device
// was not measured under it. Lanes and MPS both run kernels at once, so each
// stands in for the other first; time-slicing, which overlaps only what a job
// leaves idle, stands in last, and the other way round for time-slicing.
func Fallback(mech Mechanism) []Mechanism {
	switch mech {
	case Lanes:
		return []Mechanism{Lanes, MPS, TimeSlicing}
	case MPS:
		return []Mechanism{MPS, Lanes, TimeSlicing}
	default:
		return []Mechanism{TimeSlicing, MPS, Lanes}
	}
}

// Index is job's index in d (its row in Term): its own where d measured it,
// else the measured job that stands in for it, else Unknown's (resolve).
func (d *DeviceModel) Index(j Job) int {
	i, _ := d.resolve(j)
	return i
}

// Term is x_ij: the term job i's slowdown takes from job j beside it (by
// index, Index).
func (d *DeviceModel) Term(i, j int) float64 { return d.terms[i][j] }

// Slowdown is how much longer than alone job i's work takes while the jobs
// others run beside it: 1 + the sum of their terms.
//
// The terms are summed in fixed point (1/2^32), so that the sum does not
// depend on the order the others come in: the simulator's engines list a
// GPU's works in different orders, and must agree to the nanosecond.
func (d *DeviceModel) Slowdown(i int, others []int) float64 {
	var sum int64
	row := d.fixed[i*d.n : (i+1)*d.n]
	for _, j := range others {
		sum += row[j]
	}
	return SlowdownOf(sum)
}

// FixedTerm is Term in fixed point: what Slowdown sums.
func (d *DeviceModel) FixedTerm(i, j int) int64 { return d.fixed[i*d.n+j] }

// SlowdownOf is the slowdown of a sum of fixed-point terms (FixedTerm).
func SlowdownOf(sum int64) float64 {
	s := 1 + float64(sum)*(1.0/fixedScale) // a power of two: exact as the division
	if s < minSlowdown {
		return minSlowdown
	}
	return s
}

// fixedScale is the fixed point of the terms.
const fixedScale = 1 << 32

// PredictPair is each job's throughput beside the other over alone, from the
// model's parameters, or the measurement where the pair was measured (two
// copies of one job type: the mean of their two figures).
func (d *DeviceModel) PredictPair(a, b Job) (float64, float64) {
	i, j := d.Index(a), d.Index(b)
	return 1 / d.Slowdown(i, []int{j}), 1 / d.Slowdown(j, []int{i})
}
