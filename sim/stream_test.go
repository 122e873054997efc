package sim

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// streamGen are the generated traces TestStreamedRunsAreTheSame simulates:
// salus100 (overloaded) and paper.
var streamGen = []workload.GenOptions{{Kind: workload.Salus100, Seed: 3, Jobs: 120, Load: 4}, {Kind: workload.Paper, Seed: 2}}

// streamTraces are the traces TestStreamedRunsAreTheSame simulates, with the
// options that generated them (none for the last: a random mix of training and
// inference profiles).
func streamTraces(t *testing.T) ([]*workload.Trace, []*workload.GenOptions) {
	var traces []*workload.Trace
	var gens []*workload.GenOptions
	for _, o := range streamGen {
		tr, err := workload.Generate(workload.Default(), o)
		if err != nil {
			t.Fatal(err)
		}
		traces, gens = append(traces, tr), append(gens, &o)
	}
	return append(traces, simtest.RandomTrace(7, 60)), append(gens, nil)
}

var streamSchemes = [][2]string{{"exclusive", "fifo"}, {"salus", "srtf"}, {"salus", "fair"}}

// logOf simulates under ms with run and returns the event log.
func logOf(t *testing.T, ms [2]string, run func(Options) error) []byte {
	t.Helper()
	p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := eventlog.NewWriter(&buf)
	if err := run(Options{Policy: p, Device: device.DefaultDevice(), Sink: w}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return buf.Bytes()
}

// writeTraceFile writes tr to dir as CSV, its rows in the order of perm (nil: the
// trace's), and returns the file's path.
func writeTraceFile(t *testing.T, dir, name string, tr *workload.Trace, perm []int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if perm != nil {
		lines := strings.SplitAfter(buf.String(), "\n")
		rows := lines[1 : 1+len(tr.Jobs)]
		out := []string{lines[0]}
		for _, i := range perm {
			out = append(out, rows[i])
		}
		buf.Reset()
		buf.WriteString(strings.Join(out, ""))
	}
	path := filepath.Join(dir, name+".csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStreamedRunsAreTheSame: a trace simulated whole, read back from its file,
// streamed from its file (its rows in order, or reversed: then read whole and
// sorted), from itself or from its generator gives the same event log, byte for
// byte, and that log is the one pinned in testdata/stream-logs.txt (written
// by the simulator that held every trace whole, before traces streamed).
func TestStreamedRunsAreTheSame(t *testing.T) {
	dir := t.TempDir()
	var got strings.Builder
	traces, gens := streamTraces(t)
	for i, tr := range traces {
		path := writeTraceFile(t, dir, tr.Name, tr, nil)
		// The rows reversed, but for those that arrive together (their order is
		// the jobs' order: a stable sort keeps it).
		var perm []int
		for i := len(tr.Jobs) - 1; i >= 0; {
			k := i
			for k > 0 && tr.Jobs[k-1].ArrivalS == tr.Jobs[i].ArrivalS {
				k--
			}
			for m := k; m <= i; m++ {
				perm = append(perm, m)
			}
			i = k - 1
		}
		reversed := filepath.Join(dir, "reversed")
		if err := os.MkdirAll(reversed, 0o755); err != nil {
			t.Fatal(err)
		}
		unsorted := writeTraceFile(t, reversed, tr.Name, tr, perm) // the same name: the run header's
		for _, ms := range streamSchemes {
			want := logOf(t, ms, func(o Options) error { return Run(tr, o) })
			fmt.Fprintf(&got, "%s %s/%s %x\n", tr.Name, ms[0], ms[1], sha256.Sum256(want))
			// A file has no seed: the run header's is the generator's.
			fromFile := func(path string) func(Options) error {
				return func(o Options) error {
					s, err := workload.OpenTrace(path, workload.Default())
					if err != nil {
						return err
					}
					s.Seed = tr.Seed
					return RunStream(s, o)
				}
			}
			paths := map[string]func(Options) error{
				"file read whole": func(o Options) error {
					back, err := workload.ReadTraceFile(path, workload.Default())
					if err != nil {
						return err
					}
					back.Seed = tr.Seed
					return Run(back, o)
				},
				"file streamed":           fromFile(path),
				"file out of order":       fromFile(unsorted),
				"trace streamed in place": func(o Options) error { return RunStream(tr.Stream(), o) },
			}
			if gen := gens[i]; gen != nil {
				paths["generator streamed"] = func(o Options) error {
					s, err := workload.GenerateStream(workload.Default(), *gen)
					if err != nil {
						return err
					}
					return RunStream(s, o)
				}
			}
			for name, run := range paths {
				if log := logOf(t, ms, run); !bytes.Equal(log, want) {
					t.Errorf("%s under %s/%s, %s: the log differs from the whole trace's (%d bytes, want %d)", tr.Name, ms[0], ms[1], name, len(log), len(want))
				}
			}
		}
	}
	golden := filepath.Join("testdata", "stream-logs.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the logs changed from those pinned in %s:\ngot\n%s\nwant\n%s", golden, got.String(), want)
	}
}
