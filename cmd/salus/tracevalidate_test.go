package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trace validate checks every row, as the README says: each bad row is
// reported with its file, line and field, the good rows are counted, and the
// command fails; past validateShown problems it counts the rest.
func TestTraceValidateReportsEveryBadRow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.csv")
	body := "job_id,model,batch_size,iterations,arrival_s\n" +
		"a,resnet50,25,100,0\n" + // line 2: good
		"b,resnet50,32,100,1\n" + // line 3: no profile at batch 32
		"c,resnet50,25,-1,2\n" + // line 4: iterations
		"a,resnet50,25,10,3\n" + // line 5: a duplicate id
		"d,resnet50,25,10\n" + // line 6: a value short
		"e,nomodel,25,10,5\n" + // line 7: an unknown model
		"f,resnet50,25,10,x\n" + // line 8: arrival_s
		"g,resnet50,25,10,7\n" // line 9: good
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "trace", "validate", file)
	if err == nil {
		t.Fatalf("trace validate passed a trace with bad rows:\n%s", out)
	}
	for _, want := range []string{
		file + `:3: field "batch_size"`, file + `:4: field "iterations"`, file + `:5: field "job_id"`,
		file + `:6: wrong number of fields`, file + `:7: field "model"`, file + `:8: field "arrival_s"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("trace validate does not report %q:\n%s", want, out)
		}
	}
	if !strings.Contains(err.Error(), "6 problems, 2 good rows") {
		t.Errorf("the error %q does not count 6 problems and 2 good rows", err)
	}

	// Many bad rows: the first validateShown, and a count of the others.
	many := filepath.Join(dir, "many.jsonl")
	var b strings.Builder
	n := validateShown + 7
	for i := range n {
		fmt.Fprintf(&b, `{"job_id": "j%d", "model": "resnet50", "batch_size": 25, "iterations": 0, "arrival_s": %d}`+"\n", i, i)
	}
	if err := os.WriteFile(many, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "trace", "validate", many)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d problems, 0 good rows", n)) {
		t.Errorf("trace validate of %d bad rows: %v", n, err)
	}
	if got := strings.Count(out, `field "iterations"`); got != validateShown {
		t.Errorf("%d problems printed, want the first %d", got, validateShown)
	}
	if !strings.Contains(out, many+`:1: field "iterations"`) || !strings.Contains(out, "and 7 more problems") {
		t.Errorf("the first line's problem or the count of the rest is missing:\n%s", out[len(out)-min(len(out), 400):])
	}
}
