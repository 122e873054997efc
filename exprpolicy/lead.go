package exprpolicy

import (
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// How an expression moves as the job it is evaluated for runs (attained and
// iterations grow, remaining falls), all else fixed: the core needs to know
// whether a running job's key can only fall (keepsLead), so that it keeps its
// lead over ready jobs once it has it, as srtf's does. The analysis is of the
// checked syntax tree, sound and simple: sums, differences, negation,
// products and quotients by constants of known sign, and conditionals whose
// condition does not move; anything else that reads a moving field is
// "unknown".
type trend int

const (
	fixed trend = iota // does not move
	falls              // never rises
	rises              // never falls
	unknown
)

func (t trend) flip() trend {
	switch t {
	case falls:
		return rises
	case rises:
		return falls
	}
	return t
}

// join is the trend of a sum, or of either branch of a conditional.
func join(a, b trend) trend {
	switch {
	case a == fixed:
		return b
	case b == fixed || a == b:
		return a
	}
	return unknown
}

// sign is a fixed value's sign, where known.
type sign int

const (
	anySign sign = iota
	nonNeg
	positive
)

// trendOf is e's trend, and its sign when fixed.
func trendOf(e celast.Expr, params map[string]any) (trend, sign) {
	switch e.Kind() {
	case celast.LiteralKind:
		return fixed, signOf(e.AsLiteral())
	case celast.IdentKind:
		name := e.AsIdent()
		if i, ok := fieldIndex[name]; ok {
			switch name {
			case "attained", "iterations":
				return rises, nonNeg
			case "remaining":
				return falls, anySign
			case "gpus":
				return fixed, positive
			case "share":
				return fixed, positive
			case "priority":
				return fixed, anySign
			}
			if fields[i].Runs {
				return unknown, anySign
			}
			return fixed, nonNeg // memory, batch, arrival, declared
		}
		if v, ok := params[name]; ok {
			if x, ok := v.(float64); ok {
				return fixed, signOf(types.Double(x))
			}
			return fixed, anySign
		}
	case celast.CallKind:
		c := e.AsCall()
		args := c.Args()
		if c.IsMemberFunction() {
			break
		}
		switch c.FunctionName() {
		case operators.Negate:
			t, _ := trendOf(args[0], params)
			return t.flip(), anySign
		case operators.Add, operators.Subtract:
			a, _ := trendOf(args[0], params)
			b, _ := trendOf(args[1], params)
			if c.FunctionName() == operators.Subtract {
				b = b.flip()
			}
			return join(a, b), anySign
		case operators.Multiply, operators.Divide:
			a, sa := trendOf(args[0], params)
			b, sb := trendOf(args[1], params)
			switch {
			case a == fixed && b == fixed:
				return fixed, anySign
			case c.FunctionName() == operators.Multiply && a == fixed && sa != anySign:
				return b, anySign
			case b == fixed && (sb == positive || c.FunctionName() == operators.Multiply && sb == nonNeg):
				return a, anySign
			}
			return unknown, anySign
		case operators.Conditional:
			if cond, _ := trendOf(args[0], params); cond == fixed {
				a, _ := trendOf(args[1], params)
				b, _ := trendOf(args[2], params)
				return join(a, b), anySign
			}
		}
	}
	if readsMoving(e) {
		return unknown, anySign
	}
	return fixed, anySign
}

func signOf(v any) sign {
	var x float64
	switch v := v.(type) {
	case types.Double:
		x = float64(v)
	case types.Int:
		x = float64(v)
	case types.Uint:
		x = float64(v)
	default:
		return anySign
	}
	switch {
	case x > 0:
		return positive
	case x == 0:
		return nonNeg
	}
	return anySign
}

// readsMoving says whether e reads a field that changes as a job runs.
func readsMoving(e celast.Expr) bool {
	moving := false
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.IdentKind {
			if i, ok := fieldIndex[x.AsIdent()]; ok && fields[i].Runs {
				moving = true
			}
		}
	}))
	return moving
}
