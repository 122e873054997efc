package sim

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-logs.txt")

// TestGoldenEventLogs pins the event log of every scheme on salus100 (seeds 1 and
// 2, loads 1 and 4) by its SHA-256, so that a refactor that must not change
// behaviour shows any event it moves. After an intended change:
//
//	go test ./sim -run TestGoldenEventLogs -update
//
// goldenSchemes are the schemes the golden file was written with: a fixed list, so
// that registering a policy or a mode does not change the file.
var goldenSchemes = [][2]string{
	{"exclusive", "fifo"}, {"salus", "srtf"}, {"salus", "pack"}, {"salus", "fair"}, {"salus", "fcfs"},
	{"mps", "fifo"}, {"timeslice", "fifo"}, {"suspend", "fifo"}, {"suspend", "srtf"}, {"suspend", "fair"},
}

func TestGoldenEventLogs(t *testing.T) {
	var got strings.Builder
	for _, seed := range []int64{1, 2} {
		for _, load := range []float64{1, 4} {
			trace, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed, Load: load})
			if err != nil {
				t.Fatal(err)
			}
			for _, ms := range goldenSchemes {
				p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				w := eventlog.NewWriter(&buf)
				if err := Run(trace, Options{Policy: p, Device: device.DefaultDevice(), PerIteration: true, Sink: w}); err != nil {
					t.Fatal(err)
				}
				w.Flush()
				dumpGolden(t, fmt.Sprintf("seed%d-load%g-%s-%s.jsonl", seed, load, ms[0], ms[1]), buf.Bytes())
				fmt.Fprintf(&got, "seed=%d load=%g %s/%s %x\n", seed, load, ms[0], ms[1], sha256.Sum256(buf.Bytes()))
			}
		}
	}
	// A node of 4 GPUs, with every seventh job a gang of 2.
	trace, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 1, Load: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range trace.Jobs {
		if i%7 == 3 {
			trace.Jobs[i].GPUs = 2
		}
	}
	for _, ms := range goldenSchemes {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := eventlog.NewWriter(&buf)
		if err := Run(trace, Options{Policy: p, Device: device.DefaultDevice(), GPUs: 4, PerIteration: true, Sink: w}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		dumpGolden(t, fmt.Sprintf("gpus4-gangs-%s-%s.jsonl", ms[0], ms[1]), buf.Bytes())
		fmt.Fprintf(&got, "gpus=4 gangs seed=1 load=4 %s/%s %x\n", ms[0], ms[1], sha256.Sum256(buf.Bytes()))
	}
	const path = "testdata/golden-logs.txt"
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if got.String() != string(want) {
		t.Errorf("event logs changed:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
}

// dumpGolden writes a golden log to $SALUS_GOLDEN_DUMP, when set: the logs
// themselves, to see what a change moved (the golden file holds their hashes).
func dumpGolden(t *testing.T, name string, b []byte) {
	dir := os.Getenv("SALUS_GOLDEN_DUMP")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
