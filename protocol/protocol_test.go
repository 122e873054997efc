package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/protocol"
)

var update = flag.Bool("update", false, "rewrite the generated Python constants (client/python/salus_client/codes.py)")

const pythonCodes = "../client/python/salus_client/codes.py"

// python is the Python client's constants, generated from this package.
func python() []byte {
	var b bytes.Buffer
	b.WriteString(`"""Constants of the salus fast-path protocol (docs/protocol.md).

Generated from the Go package github.com/salusgo/salus/protocol by its tests: do not
edit. Regenerate with ` + "``go test ./protocol -run TestPythonCodes -update``" + `; the Go
tests fail while this file is stale.
"""

`)
	fmt.Fprintf(&b, "VERSION = %d\nMIN_FRAME = %d\nMAX_FRAME = %d\n\n", protocol.Version, protocol.MinFrame, protocol.MaxFrame)
	b.WriteString("# Error codes: an error reply's \"code\".\n")
	for _, c := range protocol.Codes {
		fmt.Fprintf(&b, "%s = %q\n", strings.ToUpper(c.Code), c.Code)
	}
	b.WriteString("\n# What each code means.\nCODES = {\n")
	for _, c := range protocol.Codes {
		fmt.Fprintf(&b, "    %s: %s,\n", strings.ToUpper(c.Code), strconv.Quote(c.Meaning))
	}
	b.WriteString("}\n\n# Codes that end the session: the client stops (or reconnects), it does not retry.\nENDS_SESSION = frozenset([\n")
	for _, c := range protocol.Codes {
		if c.Ends {
			fmt.Fprintf(&b, "    %s,\n", strings.ToUpper(c.Code))
		}
	}
	b.WriteString("])\n")
	return b.Bytes()
}

// TestPythonCodes: the Python client's constants are this package's.
func TestPythonCodes(t *testing.T) {
	want := python()
	if *update {
		if err := os.WriteFile(pythonCodes, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(pythonCodes)
	if err != nil {
		t.Fatalf("%v: run go test ./protocol -run TestPythonCodes -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go test ./protocol -run TestPythonCodes -update", pythonCodes)
	}
}

// TestCodesComplete: Codes lists every Code constant of the package once.
func TestCodesComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			for i, n := range sp.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Code") {
					v, _ := strconv.Unquote(sp.(*ast.ValueSpec).Values[i].(*ast.BasicLit).Value)
					consts = append(consts, v)
				}
			}
		}
	}
	var listed []string
	for _, c := range protocol.Codes {
		if c.Meaning == "" {
			t.Errorf("code %s has no meaning", c.Code)
		}
		listed = append(listed, c.Code)
	}
	if !slices.Equal(consts, listed) {
		t.Errorf("constants %v, Codes %v: list every constant once, in order", consts, listed)
	}
}

// TestDocumentedCodes: docs/protocol.md's table of error codes is the fast
// path's codes, in order.
func TestDocumentedCodes(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := bytes.Cut(doc, []byte("\nError codes:\n"))
	table, _, _ = bytes.Cut(table, []byte("\n## "))
	if !ok {
		t.Fatal(`docs/protocol.md has no "Error codes:" table`)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(table, -1) {
		documented = append(documented, string(m[1]))
	}
	var fast []string
	for _, c := range protocol.Codes {
		if c.FastPath {
			fast = append(fast, c.Code)
		}
	}
	if !slices.Equal(documented, fast) {
		t.Errorf("docs/protocol.md documents %v, the fast path has %v", documented, fast)
	}
}

func TestReadFrame(t *testing.T) {
	frame := func(n uint32, body string) *bytes.Reader {
		return bytes.NewReader(append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...))
	}
	for _, tc := range []struct {
		name      string
		r         io.Reader
		limit     int
		body      string
		length    uint32 // a *LengthError's
		got, want int    // a *TruncatedError's
		eof       bool
	}{
		{name: "ok", r: frame(2, "{}"), body: "{}"},
		{name: "empty", r: bytes.NewReader(nil), eof: true},
		{name: "short header", r: bytes.NewReader([]byte{0, 0}), got: 2, want: 4},
		{name: "short body", r: frame(10, "{}"), got: 6, want: 14},
		{name: "too short", r: frame(1, "{"), length: 1},
		{name: "too long", r: frame(protocol.MaxFrame+1, ""), length: protocol.MaxFrame + 1},
		{name: "limit", r: frame(protocol.MaxFrame+1, "{}"), limit: protocol.MaxFrame + 2, got: 6, want: protocol.MaxFrame + 5},
	} {
		b, err := protocol.ReadFrame(tc.r, nil, tc.limit)
		var le *protocol.LengthError
		var te *protocol.TruncatedError
		switch {
		case tc.body != "":
			if err != nil || string(b) != tc.body {
				t.Errorf("%s: %q, %v", tc.name, b, err)
			}
		case tc.eof:
			if err != io.EOF {
				t.Errorf("%s: %v, want io.EOF", tc.name, err)
			}
		case tc.length != 0:
			if !errors.As(err, &le) || le.Length != tc.length {
				t.Errorf("%s: %v, want a length error", tc.name, err)
			}
		default:
			if !errors.As(err, &te) || te.Got != tc.got || te.Want != tc.want || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: %v, want %d of %d bytes", tc.name, err, tc.got, tc.want)
			}
		}
	}
}

func TestChecks(t *testing.T) {
	for body, bad := range map[string]bool{
		`{"op":"open","job":"a"}`:             false,
		`{"op":"open","job":"é"}`:             false,
		`{"op":"open","job":"\ud83d\ude00"}`:  false,
		"{\"op\":\"open\",\"job\":\"a\xff\"}": true,
		`{"op":"open","job":"\ud800"}`:        true,
		`{"op":"open","job":"\\ud800"}`:       false, // an escaped backslash, then text
	} {
		if err := protocol.CheckText([]byte(body)); (err != nil) != bad {
			t.Errorf("CheckText(%s): %v", body, err)
		}
	}
	for _, tc := range []struct {
		body string
		bad  bool
		id   int64
	}{
		{`{"op":"open","id":3}`, false, 0}, // lower-case ASCII: not even decoded
		{`{"op":"open","ID":3}`, true, 0},
		{`{"OP":"open","id":3}`, true, 3},
		{`{"op":"open","Unknown":1}`, false, 0},
	} {
		id, err := protocol.CheckKeys([]byte(tc.body))
		if (err != nil) != tc.bad || id != tc.id {
			t.Errorf("CheckKeys(%s): %d, %v", tc.body, id, err)
		}
	}
	for body, obj := range map[string]bool{`{}`: true, " \n{}": true, `[]`: false, ``: false, `  `: false} {
		if protocol.IsObject([]byte(body)) != obj {
			t.Errorf("IsObject(%q) = %v", body, !obj)
		}
	}
}

// TestAppend: the hand-written encoders write what encoding/json does.
func TestAppend(t *testing.T) {
	for _, r := range []protocol.BeginReply{
		{ID: 1, OK: true},
		{ID: 42, OK: true, Lane: 3, WaitUS: 1234567},
		{ID: 1<<62 + 1, OK: true, Lane: -1, WaitUS: -5, ReleaseCache: true},
		{ID: 7, OK: true, Lane: 2, IdleYielded: true, ReleaseCache: true},
	} {
		want, _ := json.Marshal(r)
		if got := protocol.AppendBeginReply([]byte("x"), r); string(got) != "x"+string(want) {
			t.Errorf("AppendBeginReply(%+v) = %s, want x%s", r, got, want)
		}
	}
	for _, id := range []int64{0, 1, 99, 1 << 62} {
		want, _ := json.Marshal(struct {
			ID int64 `json:"id"`
			OK bool  `json:"ok"`
		}{id, true})
		if got := protocol.AppendOK(nil, id); string(got) != string(want) {
			t.Errorf("AppendOK(%d) = %s, want %s", id, got, want)
		}
	}
}

// TestEveryStringIsBounded: CheckStrings bounds every string field of Request,
// and its error names the field and the bound.
func TestEveryStringIsBounded(t *testing.T) {
	rt := reflect.TypeFor[protocol.Request]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		var r protocol.Request
		reflect.ValueOf(&r).Elem().Field(i).SetString(strings.Repeat("x", protocol.MaxName))
		if err := r.CheckStrings(); err != nil {
			t.Errorf("%s of %d bytes: %v", key, protocol.MaxName, err)
		}
		reflect.ValueOf(&r).Elem().Field(i).SetString(strings.Repeat("x", 65000))
		err := r.CheckStrings()
		if err == nil || !strings.Contains(err.Error(), "field "+key+" ") || !strings.Contains(err.Error(), "at most") {
			t.Errorf("%s of 65000 bytes: %v, want an error naming the field and its bound", key, err)
		}
	}
}
