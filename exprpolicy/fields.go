package exprpolicy

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/salusgo/salus/core"
)

// Field is one of a job's fields an order may read: a CEL variable.
type Field struct {
	Name string
	// Type is its CEL type: double (every number, so that fields mix in
	// arithmetic) or string.
	Type string
	Doc  string
	// Runs: it changes as the job runs (attained, remaining, iterations,
	// waiting). An order that reads none keeps a running job before the ready
	// ones once it is (core.LeadKeeper).
	Runs bool
	// Declared: it reads the job's declared GPU time, which the job must then
	// give (core.Policy.UsesDeclared).
	Declared bool
	get      func(v *core.JobView) ref.Val
}

// seconds is d in seconds, as CEL's double.
func seconds[T ~int64](d T) ref.Val { return types.Double(float64(d) / 1e9) }

// fields are what an order may read, in the order salus policies lists them.
var fields = []Field{
	{Name: "persistent", Type: "double", Doc: "persistent memory (MiB): what stays on the GPU across iterations",
		get: func(v *core.JobView) ref.Val { return types.Double(v.Persistent()) }},
	{Name: "ephemeral", Type: "double", Doc: "ephemeral memory (MiB): the peak within an iteration above the persistent",
		get: func(v *core.JobView) ref.Val { return types.Double(v.Ephemeral()) }},
	{Name: "memory", Type: "double", Doc: "peak memory (MiB): persistent + ephemeral",
		get: func(v *core.JobView) ref.Val { return types.Double(v.Persistent() + v.Ephemeral()) }},
	{Name: "model", Type: "string", Doc: `the job's workload, as its trace names it ("resnet50"); "" when unknown`,
		get: func(v *core.JobView) ref.Val { return types.String(v.Model()) }},
	{Name: "batch", Type: "double", Doc: "batch size; 0 when unknown",
		get: func(v *core.JobView) ref.Val { return types.Double(float64(v.Batch())) }},
	{Name: "gpus", Type: "double", Doc: "GPUs the job needs at once (1 or more)",
		get: func(v *core.JobView) ref.Val { return types.Double(float64(v.GPUs())) }},
	{Name: "priority", Type: "double", Doc: "priority, smaller more urgent (the core runs a more urgent job first whatever the order)",
		get: func(v *core.JobView) ref.Val { return types.Double(float64(v.Priority)) }},
	{Name: "share", Type: "double", Doc: "scheduling weight (1 when the job gave none)",
		get: func(v *core.JobView) ref.Val { return types.Double(v.Share()) }},
	{Name: "arrival", Type: "double", Doc: "arrival (s since the start of the run)",
		get: func(v *core.JobView) ref.Val { return seconds(v.Arrival) }},
	{Name: "waiting", Type: "double", Runs: true, Doc: "time without GPU service (s) from arrival to the job's pending request: a waiting job's place does not change while it waits",
		get: func(v *core.JobView) ref.Val { return seconds(v.Waiting()) }},
	{Name: "declared", Type: "double", Declared: true, Doc: "declared GPU time (s), start-up excluded",
		get: func(v *core.JobView) ref.Val { return seconds(v.Declared) }},
	{Name: "attained", Type: "double", Runs: true, Doc: "GPU time received so far (s)",
		get: func(v *core.JobView) ref.Val { return seconds(v.Attained) }},
	{Name: "remaining", Type: "double", Runs: true, Declared: true, Doc: "declared GPU time not yet received (s): declared - attained",
		get: func(v *core.JobView) ref.Val { return seconds(v.Remaining()) }},
	{Name: "iterations", Type: "double", Runs: true, Doc: "iterations completed",
		get: func(v *core.JobView) ref.Val { return types.Double(float64(v.Iterations)) }},
}

// fieldIndex finds a field by name.
var fieldIndex = func() map[string]int {
	m := make(map[string]int, len(fields))
	for i, f := range fields {
		m[f.Name] = i
	}
	return m
}()

// Fields are the fields an order may read, in the order salus policies lists them.
func Fields() []Field { return append([]Field(nil), fields...) }

// FieldNames are the fields' names, in Fields' order.
func FieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

func celType(name string) *cel.Type {
	if name == "string" {
		return cel.StringType
	}
	return cel.DoubleType
}
