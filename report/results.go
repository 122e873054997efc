package report

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Kinds of run the report knows how to draw; anything else is only tabulated.
const (
	KindTraining  = "training"  // policy runs on a trace: makespan, JCTs, an event log
	KindTuning    = "tuning"    // a workload under a scheme against running its jobs one by one
	KindInference = "inference" // a scheme hosting inference jobs: GPUs needed, latencies
	KindOther     = "other"
)

// Suite is one report of eval's results: a suite's runs.
type Suite struct {
	Name   string
	Engine string
	Fields map[string]any // the report's other fields (trace, device, paper, ...)
	Runs   []Run
}

// Run is one run, read loosely: the fields the pictures use are picked out and
// everything is kept in Fields, so runs of suites and modes this package does not
// know are still tabulated.
type Run struct {
	Kind                                 string
	Label                                string
	Policy, Mode, Workload, Scheme       string
	MakespanS, AvgJCTS, P95JCTS          float64
	SequentialS, Improvement, GPUsNeeded float64
	Latency                              []ModelLatency
	Log                                  string
	Fields                               map[string]any
	Keys                                 []string // Fields' keys in their JSON order
}

// ModelLatency is one model's request latency under a scheme.
type ModelLatency struct {
	Model               string
	MeanS, P99S, AloneS float64
}

// Parse reads eval's results (the value itself, or its JSON) into suites. Any
// object with a "runs" array is a suite, wherever it is nested, so one report and
// a report of several suites both work.
func Parse(results any) ([]Suite, error) {
	data, ok := results.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(results); err != nil {
			return nil, fmt.Errorf("encoding the results: %w", err)
		}
	}
	var root any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("reading the results: %w", err)
	}
	var suites []Suite
	walk(root, func(obj map[string]any) {
		runs, _ := obj["runs"].([]any)
		s := Suite{Name: str(obj["suite"]), Engine: str(obj["engine"]), Fields: map[string]any{}}
		for k, v := range obj {
			if k != "runs" {
				s.Fields[k] = v
			}
		}
		if !container(runs) {
			for _, r := range runs {
				if m, ok := r.(map[string]any); ok {
					s.Runs = append(s.Runs, parseRun(m, s.Name))
				}
			}
		}
		labelRuns(s.Runs)
		suites = append(suites, s)
	})
	if len(suites) == 0 {
		return nil, fmt.Errorf("the results have no runs")
	}
	return suites, nil
}

// walk calls fn for every object with "runs" in v, outermost first. An object
// whose runs are themselves reports (eval --suite all) is passed with its own
// fields (the headlines) and its reports follow it.
func walk(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if runs, ok := x["runs"].([]any); ok {
			fn(x)
			if container(runs) {
				walk(runs, fn)
			}
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(x[k], fn)
		}
	case []any:
		for _, e := range x {
			walk(e, fn)
		}
	}
}

// container is true when runs are reports with runs of their own.
func container(runs []any) bool {
	for _, r := range runs {
		if m, ok := r.(map[string]any); ok {
			if _, nested := m["runs"]; nested {
				return true
			}
		}
	}
	return false
}

func parseRun(m map[string]any, suite string) Run {
	r := Run{Fields: m, Policy: str(m["policy"]), Mode: str(m["mode"]), Workload: str(m["workload"]),
		Scheme: str(m["scheme"]), Log: str(m["log"]),
		MakespanS: num(m["makespan_s"]), AvgJCTS: num(m["avg_jct_s"]), P95JCTS: num(m["p95_jct_s"]),
		SequentialS: num(m["sequential_makespan_s"]), Improvement: num(m["improvement"]), GPUsNeeded: num(m["gpus_needed"])}
	r.Keys = orderedKeys(m)
	r.Latency = latencies(m)
	switch s := str(m["suite"]); {
	case s != "":
		suite = s
	}
	switch {
	case suite == KindTuning || r.SequentialS > 0 || has(m, "improvement"):
		r.Kind = KindTuning
	case suite == KindInference || has(m, "gpus_needed") || len(r.Latency) > 0:
		r.Kind = KindInference
	case has(m, "avg_jct_s") || r.Policy != "":
		r.Kind = KindTraining
	default:
		r.Kind = KindOther
	}
	return r
}

// latencies finds per-model latency figures in a run, as an array of objects
// with a "model" field or an object keyed by model.
func latencies(m map[string]any) []ModelLatency {
	var out []ModelLatency
	add := func(model string, o map[string]any) {
		if !has(o, "latency_mean_s") {
			return
		}
		if s := str(o["model"]); s != "" {
			model = s
		}
		out = append(out, ModelLatency{Model: model, MeanS: num(o["latency_mean_s"]),
			P99S: num(o["latency_p99_s"]), AloneS: num(o["latency_alone_s"])})
	}
	for _, k := range orderedKeys(m) {
		switch v := m[k].(type) {
		case []any:
			for _, e := range v {
				if o, ok := e.(map[string]any); ok {
					add("", o)
				}
			}
		case map[string]any:
			for _, model := range orderedKeys(v) {
				if o, ok := v[model].(map[string]any); ok {
					add(model, o)
				}
			}
		}
	}
	return out
}

// labelRuns names each run for legends: its scheme, or its policy, with what
// else tells it apart from the suite's other runs.
func labelRuns(runs []Run) {
	count := map[string]int{}
	for _, r := range runs {
		count[r.Policy]++
	}
	for i := range runs {
		r := &runs[i]
		switch {
		case r.Scheme != "":
			r.Label = r.Scheme
		case r.Policy != "" && count[r.Policy] > 1 && r.Mode != "":
			r.Label = r.Policy + "/" + r.Mode
		case r.Policy != "":
			r.Label = r.Policy
		default:
			r.Label = fmt.Sprintf("run %d", i+1)
		}
		if r.Workload != "" {
			r.Label = r.Workload + " " + r.Label
		}
	}
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// orderedKeys returns m's keys, the well-known ones first, then the rest sorted.
func orderedKeys(m map[string]any) []string {
	var keys []string
	for _, k := range knownOrder {
		if has(m, k) {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range m {
		if _, known := knownIndex[k]; !known {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

var knownOrder = []string{"suite", "workload", "scheme", "policy", "mode", "jobs", "finished", "lost", "gpus_needed",
	"makespan_s", "sequential_makespan_s", "improvement", "avg_queuing_s", "avg_jct_s", "p95_jct_s", "gpu_busy",
	"peak_memory_mib", "avg_jct_speedup_vs_fifo", "makespan_speedup_vs_fifo"}

var knownIndex = func() map[string]int {
	m := map[string]int{}
	for i, k := range knownOrder {
		m[k] = i
	}
	return m
}()
