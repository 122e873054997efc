package interference

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

// DefaultMechanism is the mechanism a pair file's pairs on worker are taken to
// have run under where the user does not say: MPS on the V100 (Gavel's worker
// turned MPS on for V100 workers only), time-slicing elsewhere (two processes
// on one GPU without MPS: Gavel's P100 and K80 workers, Lucid's co_collect.py).
func DefaultMechanism(worker string) Mechanism {
	if strings.ToLower(worker) == "v100" {
		return MPS
	}
	return TimeSlicing
}

// FitPairs fits a model to pairs, one device model per worker type (only
// device's when device is set), each under mech or, where mech is empty, its
// DefaultMechanism. source names where the pairs came from.
func FitPairs(name, source string, pairs []Pair, device string, mech Mechanism, o FitOptions) (*Model, error) {
	byWorker := map[string][]Pair{}
	var workers []string
	device = strings.ToLower(device)
	for _, p := range pairs {
		if device != "" && p.WorkerType != device {
			continue
		}
		if _, ok := byWorker[p.WorkerType]; !ok {
			workers = append(workers, p.WorkerType)
		}
		byWorker[p.WorkerType] = append(byWorker[p.WorkerType], p)
	}
	if len(workers) == 0 {
		if device != "" {
			return nil, fmt.Errorf("no pairs with worker_type %q", device)
		}
		return nil, fmt.Errorf("no pairs")
	}
	slices.Sort(workers)
	m := &Model{Name: name, Form: FormDescription}
	for _, w := range workers {
		mm := mech
		if mm == "" {
			mm = DefaultMechanism(w)
		}
		d, err := Fit(w, mm, source, byWorker[w], o)
		if err != nil {
			return nil, err
		}
		m.Devices = append(m.Devices, d)
	}
	return m, nil
}

// FormDescription says the model's form in one line.
const FormDescription = "job i beside jobs J runs at 1/(1 + sum over j in J of x_ij) of its speed alone; x_ij measured where the pair was, else s_i . p_j (sensitivity and pressure vectors of the fitted rank)"

//go:embed builtin.json
var builtinFS embed.FS

// BuiltinName is the built-in model's name (what --interference takes).
const BuiltinName = "measured"

// Builtin is the built-in model: fitted by salus interference fit to the
// published pairs (see BuiltinSources), one device model per GPU measured.
func Builtin() *Model {
	f, err := builtinFS.Open("builtin.json")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		panic("interference: the built-in model: " + err.Error())
	}
	return m
}

// BuiltinSources are the published pair sets the built-in model was fitted
// to, by file name in the reference folder, with where they come from.
var BuiltinSources = map[string]string{
	"gavel-p100.csv":    "Gavel (Narayanan et al., OSDI 2020), stanford-futuredata/gavel at c4fa400, scheduler/simulation_throughputs.json, key p100: measured throughputs of two PyTorch jobs as two processes on one P100 (calibration half)",
	"gavel-v100.csv":    "Gavel (Narayanan et al., OSDI 2020), stanford-futuredata/gavel at c4fa400, scheduler/simulation_throughputs.json, key v100: two processes on one V100, MPS on for V100 workers (calibration half)",
	"gavel-k80.csv":     "Gavel (Narayanan et al., OSDI 2020), stanford-futuredata/gavel at c4fa400, scheduler/simulation_throughputs.json, key k80: two processes on one K80 (calibration half)",
	"lucid-rtx3090.csv": "Lucid (Hu et al., ASPLOS 2023), S-Lab-System-Group/Lucid at 63685a3, simulation/data/colocate_info.csv: two processes on one RTX 3090 (calibration half)",
}

// FitBuiltin fits the built-in model to the published pair sets in dir (the
// files of BuiltinSources), each file under its DefaultMechanism.
func FitBuiltin(dir string) (*Model, error) {
	names := make([]string, 0, len(BuiltinSources))
	for n := range BuiltinSources {
		names = append(names, n)
	}
	slices.Sort(names)
	m := &Model{Name: BuiltinName, Form: FormDescription}
	for _, n := range names {
		pairs, err := ReadPairsFile(dir + "/" + n)
		if err != nil {
			return nil, err
		}
		fm, err := FitPairs(BuiltinName, BuiltinSources[n], pairs, "", "", FitOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		m.Devices = append(m.Devices, fm.Devices...)
	}
	slices.SortFunc(m.Devices, func(a, b *DeviceModel) int { return strings.Compare(a.Device, b.Device) })
	return m, nil
}

// RuleName names today's rule where a model is chosen by name: one share per
// GPU by the jobs' demands, no co-location model.
const RuleName = "rule"

// Named is the model name stands for: nil for RuleName (or ""), the built-in
// model for BuiltinName, else the model file at that path.
func Named(name string) (*Model, error) {
	switch name {
	case "", RuleName:
		return nil, nil
	case BuiltinName:
		return Builtin(), nil
	}
	m, err := Load(name)
	if err != nil {
		return nil, fmt.Errorf("co-location model: %w (or name %s or %s)", err, RuleName, BuiltinName)
	}
	return m, nil
}
