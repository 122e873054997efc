// Package exprpolicy is scheduling policies written without recompiling: a
// YAML file gives a policy's name, its description, and its order, an
// expression in CEL (the Common Expression Language, cel.dev/cel-go, which
// Kubernetes uses for its admission rules) over a job's fields (Fields): the
// least value runs first, ties to the earlier arrival. The expression is
// parsed and type-checked when the file loads, and every error names the
// file, the line and column, and the field; a loaded policy is registered in
// core's policy registry (Register), so that every command, engine and the
// conformance suite runs it as they run the built-in ones.
//
// A policy from a file runs in one Salus lane per GPU (as srtf, fair and las
// do), in whatever mode accepts it. Its order is a core.KeyOrder: the
// expression is evaluated once when a job joins its lane's queue, into a key,
// not at each comparison. What it reads decides what it declares to the
// core: UsesDeclared when it reads declared or remaining time, and that a
// running job keeps its lead (core.LeadKeeper) when its key can only fall as
// it runs (lead.go: memory * remaining does, as srtf's).
//
// It must not hold scheduling state of its own: the order is a pure function
// of the job's view, which the core gives.
package exprpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"github.com/salusgo/salus/core"
	"go.yaml.in/yaml/v3"
)

// Policy is a policy file, loaded and compiled.
type Policy struct {
	Name        string
	Description string
	// Order is the expression, as the file wrote it.
	Order string
	// Params are the file's named constants, which the order may read.
	Params map[string]any
	// Path is the file it came from ("" when parsed from bytes).
	Path string
	// Reads are the job's fields the order reads, in Fields' order.
	Reads []string
	order *Order
}

// Order is a compiled order: a core.KeyOrder and core.LeadKeeper.
type Order struct {
	prg      cel.Program
	lead     bool // a running job's key never rises (lead.go)
	isDouble bool // the expression gives a double (else int, uint or bool)
	where    string
	warned   atomic.Bool
}

var (
	_ core.KeyOrder   = (*Order)(nil)
	_ core.LeadKeeper = (*Order)(nil)
)

// The file's fields.
var fileFields = []string{"name", "description", "order", "params"}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Load reads and compiles the policy file path.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	p, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	p.Path = path
	return p, nil
}

// Parse compiles a policy file's contents; file names it in errors.
func Parse(file string, data []byte) (*Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: a policy file has %s", file, strings.Join(fileFields, ", "))
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a policy file is a mapping of %s", file, root.Line, strings.Join(fileFields, ", "))
	}
	p := &Policy{Params: map[string]any{}}
	var orderNode, paramsNode *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, fmt.Errorf("%s:%d: field %s given twice", file, k.Line, k.Value)
		}
		seen[k.Value] = true
		str := func() (string, error) {
			if v.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("%s:%d: field %s: want a string", file, v.Line, k.Value)
			}
			return v.Value, nil
		}
		var err error
		switch k.Value {
		case "name":
			p.Name, err = str()
		case "description":
			p.Description, err = str()
		case "order":
			p.Order, err = str()
			orderNode = v
		case "params":
			paramsNode = v
		default:
			err = fmt.Errorf("%s:%d: unknown field %q: a policy file has %s", file, k.Line, k.Value, strings.Join(fileFields, ", "))
		}
		if err != nil {
			return nil, err
		}
	}
	line := func(f string) int {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == f {
				return root.Content[i].Line
			}
		}
		return root.Line
	}
	switch {
	case p.Name == "":
		return nil, fmt.Errorf("%s:%d: field name is missing or empty: name the policy, as --policy will select it", file, line("name"))
	case !nameRE.MatchString(p.Name):
		return nil, fmt.Errorf("%s:%d: field name %q: use a letter, then letters, digits, - or _", file, line("name"), p.Name)
	case strings.TrimSpace(p.Order) == "":
		return nil, fmt.Errorf("%s:%d: field order is missing or empty: give an expression over the job's fields (%s); the least value runs first",
			file, line("order"), strings.Join(FieldNames(), ", "))
	}
	if p.Description == "" {
		p.Description = "one lane; the order " + strings.Join(strings.Fields(p.Order), " ")
	}
	var opts []cel.EnvOption
	if paramsNode != nil {
		if paramsNode.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: field params: want a mapping of names to numbers, lists of numbers, strings or booleans", file, paramsNode.Line)
		}
		for i := 0; i+1 < len(paramsNode.Content); i += 2 {
			k, v := paramsNode.Content[i], paramsNode.Content[i+1]
			val, t, err := param(v)
			if err == nil && !nameRE.MatchString(k.Value) {
				err = fmt.Errorf("a name is a letter, then letters, digits or _")
			}
			if _, field := fieldIndex[k.Value]; err == nil && field {
				err = fmt.Errorf("it is a job's field: name the parameter otherwise")
			}
			if _, dup := p.Params[k.Value]; err == nil && dup {
				err = fmt.Errorf("given twice")
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d: field params.%s: %v", file, k.Line, k.Value, err)
			}
			p.Params[k.Value] = val.Value()
			opts = append(opts, cel.Constant(k.Value, t, val))
		}
	}
	o, reads, err := compile(p.Order, opts, p.Params)
	if err != nil {
		var ce *celError
		if errors.As(err, &ce) {
			l, c, snippet := position(data, orderNode, ce)
			return nil, fmt.Errorf("%s:%d:%d: field order: %s\n | %s\n | %s^", file, l, c+1, ce.msg, snippet, strings.Repeat(".", c))
		}
		return nil, fmt.Errorf("%s:%d: field order: %v", file, line("order"), err)
	}
	o.where = fmt.Sprintf("policy %s (%s)", p.Name, file)
	p.order, p.Reads = o, reads
	return p, nil
}

// param is a parameter's value and CEL type.
func param(v *yaml.Node) (ref.Val, *cel.Type, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, nil, err
		}
		switch x := x.(type) {
		case int:
			return types.Double(float64(x)), cel.DoubleType, nil
		case float64:
			return types.Double(x), cel.DoubleType, nil
		case string:
			return types.String(x), cel.StringType, nil
		case bool:
			return types.Bool(x), cel.BoolType, nil
		}
	case yaml.SequenceNode:
		var xs []float64
		if err := v.Decode(&xs); err != nil {
			return nil, nil, fmt.Errorf("a list holds numbers only")
		}
		return types.DefaultTypeAdapter.NativeToValue(xs), cel.ListType(cel.DoubleType), nil
	}
	return nil, nil, fmt.Errorf("want a number, a list of numbers, a string or a boolean")
}

// The CEL environment, with every field declared: made once.
var (
	envOnce sync.Once
	baseEnv *cel.Env
	envErr  error
)

func env() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := []cel.EnvOption{cel.CrossTypeNumericComparisons(true), ext.Math(), ext.Strings(), ext.Bindings()}
		for _, f := range fields {
			opts = append(opts, cel.Variable(f.Name, celType(f.Type)))
		}
		baseEnv, envErr = cel.NewEnv(opts...)
	})
	return baseEnv, envErr
}

// celError is a CEL error at a line (1-based) and column (0-based) of the
// expression.
type celError struct {
	line, col int
	msg       string
	snippet   string
}

func (e *celError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col+1, e.msg) }

// compile parses and checks the expression, with the parameters' constants.
func compile(src string, params []cel.EnvOption, values map[string]any) (*Order, []string, error) {
	base, err := env()
	if err != nil {
		return nil, nil, err
	}
	e, err := base.Extend(params...)
	if err != nil {
		return nil, nil, err
	}
	ast, iss := e.Compile(src)
	if iss != nil && iss.Err() != nil {
		first := iss.Errors()[0]
		msg := strings.TrimSuffix(first.Message, " (in container '')")
		if strings.HasPrefix(msg, "undeclared reference") {
			msg += ": an order reads the job's fields (" + strings.Join(FieldNames(), ", ") + ") and its params"
		}
		if strings.Contains(msg, "no matching overload") && strings.Contains(msg, "int") {
			msg += ": every field is a double; write numbers with a point (2.0) in arithmetic"
		}
		var snippet string
		if lines := strings.Split(src, "\n"); first.Location.Line() >= 1 && first.Location.Line() <= len(lines) {
			snippet = lines[first.Location.Line()-1]
		}
		return nil, nil, &celError{line: first.Location.Line(), col: first.Location.Column(), msg: msg, snippet: snippet}
	}
	out := ast.OutputType()
	o := &Order{}
	switch {
	case out.IsExactType(cel.DoubleType):
		o.isDouble = true
	case out.IsExactType(cel.IntType), out.IsExactType(cel.UintType), out.IsExactType(cel.BoolType):
	default:
		return nil, nil, fmt.Errorf("the expression gives a %s; an order gives a number (double or int) or a bool, the least running first", out)
	}
	// The fields it reads, from the checked AST's references.
	read := map[string]bool{}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if _, ok := fieldIndex[r.Name]; ok && r.Value == nil {
			read[r.Name] = true
		}
	}
	var reads []string
	for _, f := range fields {
		if read[f.Name] {
			reads = append(reads, f.Name)
		}
	}
	t, _ := trendOf(ast.NativeRep().Expr(), values)
	o.lead = t == fixed || t == falls
	o.prg, err = e.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, nil, err
	}
	return o, reads, nil
}

// position maps the error's line (1-based) and column (0-based) in the
// expression of node n to the file's line and column (0-based), with the
// line to show: exact for a literal block (order: |) and for an expression
// on one line; otherwise the expression's own line and column, counted from
// the order's first line, and the expression's line.
func position(data []byte, n *yaml.Node, e *celError) (int, int, string) {
	lines := bytes.Split(data, []byte("\n"))
	in := func(l int) bool { return l >= 1 && l <= len(lines) }
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		// The block's indentation is its first non-empty line's.
		for i := n.Line; i < len(lines); i++ {
			if t := bytes.TrimLeft(lines[i], " "); len(t) > 0 {
				l, c := n.Line+e.line, len(lines[i])-len(t)+e.col
				if !in(l) {
					return l, c, ""
				}
				return l, c, string(lines[l-1])
			}
		}
	case e.line == 1 && !strings.Contains(n.Value, "\n") && in(n.Line):
		c := n.Column - 1 + e.col
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			c++
		}
		return n.Line, c, string(lines[n.Line-1])
	}
	return n.Line + e.line - 1, e.col, e.snippet
}

// Key implements core.KeyOrder: the expression's value for the job, as an
// integer in the same order. A value that cannot be computed (an error at run
// time, NaN) runs last, and the first such error is logged.
func (o *Order) Key(v core.JobView) int64 {
	val, _, err := o.prg.Eval(&activation{v: &v})
	if err != nil {
		if !o.warned.Swap(true) {
			slog.Warn("policy order failed: the job runs last", "policy", o.where, "job", v.ID, "err", err)
		}
		return math.MaxInt64
	}
	switch x := val.(type) {
	case types.Double:
		return keyOfDouble(float64(x))
	case types.Int:
		return int64(x)
	case types.Uint:
		return int64(min(uint64(x), math.MaxInt64))
	case types.Bool:
		if x {
			return 1
		}
		return 0
	}
	return math.MaxInt64
}

// keyOfDouble maps doubles to integers in the same order: -0 as 0, NaN last.
func keyOfDouble(f float64) int64 {
	if f != f {
		return math.MaxInt64
	}
	if f == 0 {
		f = 0 // -0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return int64(^b ^ 1<<63) // negative: the larger its magnitude, the smaller
	}
	return int64(b)
}

// Less implements core.Order: exactly Key(a) < Key(b).
func (o *Order) Less(a, b core.JobView) bool { return o.Key(a) < o.Key(b) }

// KeepsLead implements core.LeadKeeper: a running job's key never rises as
// it runs (lead.go), so that once before the ready jobs it stays before them.
func (o *Order) KeepsLead() bool { return o.lead }

// activation gives the expression the job's fields.
type activation struct{ v *core.JobView }

func (a *activation) ResolveName(name string) (any, bool) {
	i, ok := fieldIndex[name]
	if !ok {
		return nil, false
	}
	return fields[i].get(a.v), true
}

func (a *activation) Parent() interpreter.Activation { return nil }

// UsesDeclared says whether the order reads the job's declared GPU time.
func (p *Policy) UsesDeclared() bool {
	for _, r := range p.Reads {
		if fields[fieldIndex[r]].Declared {
			return true
		}
	}
	return false
}

// KeepsLead says whether a running job's key never rises as it runs: the
// core then keeps a job that leads its lane running without asking at each
// boundary (core.LeadKeeper).
func (p *Policy) KeepsLead() bool { return p.order.lead }

// Core is the policy as core's registry makes it: one lane per GPU, the
// file's order.
func (p *Policy) Core() core.Policy {
	return core.Policy{
		Name:         p.Name,
		Description:  p.Description,
		Mode:         core.ModeSalus,
		Placement:    core.OneLane{},
		Order:        p.order,
		UsesDeclared: p.UsesDeclared(),
	}
}

// The policies registered from files, by name (lower case): where each came from.
var (
	mu    sync.Mutex
	files = map[string]*Policy{}
)

// Register loads the policy file path and registers its policy in core's
// registry, after the built-in ones. The same file loaded again replaces
// what it registered; a name another file or a built-in policy holds is an
// error.
func Register(path string) (*Policy, error) {
	p, err := Load(path)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	key := strings.ToLower(p.Name)
	if prev, ok := files[key]; ok {
		if prev.Path != path {
			return nil, fmt.Errorf("%s: policy %s is already loaded from %s: name one of them otherwise", path, p.Name, prev.Path)
		}
		core.UnregisterPolicy(key)
	} else if slices.Contains(core.Names(), key) {
		return nil, fmt.Errorf("%s: policy name %s is taken by a built-in policy: name yours otherwise", path, p.Name)
	}
	core.RegisterPolicy(p.Core)
	files[key] = p
	return p, nil
}

// Unregister removes a policy registered from a file (for tests).
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	key := strings.ToLower(name)
	if _, ok := files[key]; ok {
		delete(files, key)
		core.UnregisterPolicy(key)
	}
}

// Lookup returns the file policy registered under name.
func Lookup(name string) (*Policy, bool) {
	mu.Lock()
	defer mu.Unlock()
	p, ok := files[strings.ToLower(name)]
	return p, ok
}

// Paths are the files of the policies registered, in the order of their names.
func Paths() []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		out = append(out, files[name].Path)
	}
	return out
}
