package eventlog

import (
	"bytes"
	"strconv"
)

// decodeFast decodes one line in the shape Append writes (a flat object of known
// keys with plain strings, numbers and true/false) several times faster than
// encoding/json. It reports false for anything else (an escape, an unknown key,
// null, nesting), and the caller then uses encoding/json, so the two always agree.
func decodeFast(b []byte, e *Event) bool {
	*e = Event{}
	p := parser{b: b}
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return p.end()
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') || !p.value(key, e) {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte('}') && p.end()
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *parser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) end() bool { p.ws(); return p.i == len(p.b) }

// str reads a string without escapes or control characters.
func (p *parser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	j := bytes.IndexByte(p.b[p.i:], '"')
	if j < 0 {
		return "", false
	}
	s := p.b[p.i : p.i+j]
	for _, c := range s {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	p.i += j + 1
	return string(s), true
}

// token reads a number or a literal.
func (p *parser) token() []byte {
	p.ws()
	j := p.i
	for j < len(p.b) {
		c := p.b[j]
		if c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			break
		}
		j++
	}
	t := p.b[p.i:j]
	p.i = j
	return t
}

func (p *parser) float(f *float64) bool {
	t := p.token()
	if len(t) == 0 || !numeric(t) {
		return false
	}
	v, err := strconv.ParseFloat(string(t), 64)
	*f = v
	return err == nil
}

func (p *parser) int(n *int64) bool {
	t := p.token()
	if len(t) == 0 || !numeric(t) {
		return false
	}
	v, err := strconv.ParseInt(string(t), 10, 64)
	*n = v
	return err == nil
}

// numeric is true for a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
// (strconv also takes "Inf", "01", "0x1p3" and underscores, which JSON does not).
func numeric(t []byte) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(t) && t[i] == '-' {
		i++
	}
	if i < len(t) && t[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(t)
}

func (p *parser) value(key string, e *Event) bool {
	var n int64
	switch key {
	case "t":
		return p.float(&e.T)
	case "startup_s":
		return p.float(&e.StartupS)
	case "declared_s":
		return p.float(&e.DeclaredS)
	case "alone_s":
		return p.float(&e.AloneS)
	case "persistent_mib":
		return p.float(&e.PersistentMiB)
	case "ephemeral_mib":
		return p.float(&e.EphemeralMiB)
	case "lane_mib":
		return p.float(&e.LaneMiB)
	case "gpu_s":
		return p.float(&e.GPU)
	case "latency_s":
		return p.float(&e.Latency)
	case "capacity_mib":
		return p.float(&e.CapacityMiB)
	case "iter_s":
		return p.float(&e.IterS)
	case "peak_mib":
		return p.float(&e.PeakMiB)
	case "demand":
		return p.float(&e.Demand)
	case "share":
		return p.float(&e.Share)
	case "lane", "iterations", "jobs", "seed", "gpu", "gpus", "batch_size", "priority":
		if !p.int(&n) || n != int64(int(n)) {
			return false
		}
		switch key {
		case "lane":
			e.Lane = int(n)
		case "iterations":
			e.Iterations = int(n)
		case "jobs":
			e.Jobs = int(n)
		case "gpu":
			e.GPUIndex = int(n)
		case "gpus":
			e.GPUs = int(n)
		case "batch_size":
			e.Batch = int(n)
		case "priority":
			e.Priority = int(n)
		default:
			e.Seed = n
		}
		return true
	case "holds_gpu":
		switch string(p.token()) {
		case "true":
			e.HoldsGPU = true
		case "false":
			e.HoldsGPU = false
		default:
			return false
		}
		return true
	}
	var dst *string
	switch key {
	case "gpu_placement":
		dst = &e.GPUPlacement
	case "ev":
		dst = &e.Kind
	case "job":
		dst = &e.Job
	case "model":
		dst = &e.Model
	case "kind":
		dst = &e.JobKind
	case "prev":
		dst = &e.Prev
	case "reason":
		dst = &e.Reason
	case "policy":
		dst = &e.Policy
	case "mode":
		dst = &e.Mode
	case "engine":
		dst = &e.Engine
	case "trace":
		dst = &e.Trace
	case "device":
		dst = &e.Device
	case "resume_sha256":
		dst = &e.ResumeSHA256
	case "owner_uid":
		dst = &e.OwnerUID
	default:
		return false
	}
	s, ok := p.str()
	*dst = s
	return ok
}
