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

// streamTraces are the traces TestStreamedRunsAreTheSame simulates: generated
// salus100 (overloaded) and paper traces, and a random mix of training and
// inference profiles.
func streamTraces(t *testing.T) []*workload.Trace {
	s100, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 3, Jobs: 120, Load: 4})
	if err != nil {
		t.Fatal(err)
	}
	paper, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Paper, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	return []*workload.Trace{s100, paper, simtest.RandomTrace(7, 60)}
}

var streamSchemes = [][2]string{{"exclusive", "fifo"}, {"salus", "srtf"}, {"salus", "fair"}, {"salus", "pack"}}

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

// TestStreamedRunsAreTheSame: a trace simulated whole, read back from its file, or
// (below) streamed from its file or its generator gives the same event log, byte
// for byte, and that log is the one pinned in testdata/stream-logs.txt (written
// by the simulator that held every trace whole, before traces streamed).
func TestStreamedRunsAreTheSame(t *testing.T) {
	dir := t.TempDir()
	var got strings.Builder
	for _, tr := range streamTraces(t) {
		path := writeTraceFile(t, dir, tr.Name, tr, nil)
		for _, ms := range streamSchemes {
			want := logOf(t, ms, func(o Options) error { return Run(tr, o) })
			fmt.Fprintf(&got, "%s %s/%s %x\n", tr.Name, ms[0], ms[1], sha256.Sum256(want))
			paths := map[string]func(Options) error{
				"file read whole": func(o Options) error {
					back, err := workload.ReadTraceFile(path, workload.Default())
					if err != nil {
						return err
					}
					back.Seed = tr.Seed // a file has no seed: the run header's is the generator's
					return Run(back, o)
				},
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
