package traceimport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

func synthFile(tb testing.TB, rows int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "openb_pod_list_synthetic.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := WriteSyntheticAlibaba2023(f, SynthOptions{Rows: rows, Seed: 7}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestGeneratedAlibaba2023ImportsAndSimulates imports a 5,000-row synthetic pod
// list (not sorted by time, with pods that asked for no GPU or never ran) and
// runs the result through the simulator under FIFO on a node of 8 P100s.
func TestGeneratedAlibaba2023ImportsAndSimulates(t *testing.T) {
	path := synthFile(t, 5000)
	f, _ := Lookup("alibaba2023")
	var a, b bytes.Buffer
	// Its pods run 2 min on average, many less than their profile's start-up:
	// kept, at one iteration.
	o := withGPUs(Options{Short: Keep})
	stats, err := Convert(f, []string{path}, o, &a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(f, []string{path}, o, &b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two imports of one file differ (err %v)", err)
	}
	if stats.Kept < 4000 || stats.Dropped[DropNoGPU] == 0 || stats.Dropped[DropNeverRan] == 0 {
		t.Errorf("kept %d of 5000, dropped %v: the synthetic file has ~10%% CPU pods and ~5%% pending", stats.Kept, stats.Dropped)
	}
	tr, err := workload.ParseTrace(a.Bytes(), "synthetic.csv", "synthetic", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, err := core.Lookup("fifo")
	if err != nil {
		t.Fatal(err)
	}
	// The pod list asks for up to 8 GPUs at once: a node of 8, as in the cluster.
	if err := sim.Run(tr, sim.Options{Policy: p, Device: device.DefaultDevice(), GPUs: 8}); err != nil {
		t.Fatalf("simulating the imported trace: %v", err)
	}
}

// BenchmarkImportAlibaba2023_500k imports a 500,000-row synthetic pod list (the
// file is written once, outside the timing). The README reports the figure.
func BenchmarkImportAlibaba2023_500k(b *testing.B) {
	path := synthFile(b, 500_000)
	f, _ := Lookup("alibaba2023")
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for range b.N {
		var out discard
		stats, err := Convert(f, []string{path}, withGPUs(Options{}), &out)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(stats.Kept), "jobs")
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
