package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/exprpolicy"
)

// writePolicyFile writes a policy file of that name and order in dir, and
// unregisters its policy when the test ends (a command that loads it
// registers it for the process).
func writePolicyFile(t *testing.T, dir, name, order string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte("name: "+name+"\norder: "+order+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exprpolicy.Unregister(name) })
	return path
}

// salus policies lists the built-in policies and those of --policy-file, each
// with where it comes from, and the fields an order may read.
func TestPoliciesListsBuiltInAndFilePolicies(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "policies", "las2d.yaml")
	t.Cleanup(func() { exprpolicy.Unregister("las2d") })
	out, err := run(t, "policies", "--policy-file", example, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Policies []struct{ Name, From, Description string }
		Fields   []struct{ Name, Type string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	from := map[string]string{}
	for _, p := range got.Policies {
		from[p.Name] = p.From
	}
	if from["srtf"] != "built-in" || from["las2d"] != example {
		t.Errorf("srtf from %q, las2d from %q; want built-in and %s", from["srtf"], from["las2d"], example)
	}
	var fields []string
	for _, f := range got.Fields {
		fields = append(fields, f.Name)
	}
	for _, want := range []string{"persistent", "ephemeral", "model", "batch", "gpus", "priority", "arrival", "waiting", "declared", "attained", "remaining"} {
		if !strings.Contains(" "+strings.Join(fields, " ")+" ", " "+want+" ") {
			t.Errorf("the fields %v lack %s", fields, want)
		}
	}
	// Without the flag, the file's policy is not listed.
	exprpolicy.Unregister("las2d")
	if out, err := run(t, "policies"); err != nil || strings.Contains(out, "las2d") || !strings.Contains(out, "fifo") {
		t.Errorf("salus policies: %v\n%s", err, out)
	}
}

// The check: a policy from a file beside the built-in ones in a
// sweep and in eval, selected by the name the file gives it.
func TestAPolicyFileInSweepAndEval(t *testing.T) {
	dir := t.TempDir()
	mine := writePolicyFile(t, dir, "MINE", "memory")
	out, err := run(t, "sweep", "--seeds", "2", "--jobs", "12", "--policy-file", mine, "--policy", "fifo,srtf,MINE", "--out", filepath.Join(dir, "sweep"))
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "sweep", "sweep.csv"))
	if err != nil || !strings.Contains(string(csv), "\nMINE,") && !strings.Contains(string(csv), ",MINE,") {
		t.Errorf("sweep.csv has no row of MINE: %v\n%s", err, csv)
	}
	fifo := figures(t, "--policy", "fifo")
	got := figures(t, "--policy-file", mine, "--policy", "MINE")
	if len(got) == 0 || strings.Join(got, ",") == strings.Join(fifo, ",") {
		t.Errorf("eval --policy MINE: %v (fifo: %v)", got, fifo)
	}
}

// salus policies says which other modes run each policy (ALSO IN): exactly the
// modes whose --mode accepts it, so that the docs can point to it instead of
// listing them.
func TestPoliciesSayWhichModesRunThem(t *testing.T) {
	out, err := run(t, "policies", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Policies []struct {
			Name, Mode string
			AlsoIn     []string `json:"also_in"`
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Policies) != len(core.Names()) {
		t.Fatalf("%d policies listed, %d registered", len(got.Policies), len(core.Names()))
	}
	for _, p := range got.Policies {
		for _, m := range core.ModeNames() {
			_, err := core.Compose(m, p.Name, core.DefaultModeParams())
			listed := slices.Contains(p.AlsoIn, m)
			switch {
			case m == p.Mode && listed:
				t.Errorf("%s: its own mode %s is listed in ALSO IN", p.Name, m)
			case m != p.Mode && listed != (err == nil):
				t.Errorf("%s: ALSO IN %v, but --mode %s --policy %s: %v", p.Name, p.AlsoIn, m, p.Name, err)
			}
		}
	}
	table, err := run(t, "policies")
	if err != nil || !strings.Contains(table, "ALSO IN") {
		t.Errorf("the table has no ALSO IN column: %v\n%s", err, table)
	}
}
