package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// writeLog writes events as a daemon's log.
func writeLog(t *testing.T, evs []eventlog.Event) string {
	t.Helper()
	var b bytes.Buffer
	for _, e := range evs {
		b.Write(eventlog.Append(nil, e))
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// iters adds n iterations of job, each d long, back to back from t.
func iters(job string, t, d float64, n int) []eventlog.Event {
	var out []eventlog.Event
	for i := range n {
		s := t + float64(i)*d
		out = append(out, eventlog.Event{T: s, Kind: eventlog.IterStart, Job: job}, eventlog.Event{T: s + d, Kind: eventlog.IterEnd, Job: job, GPU: d})
	}
	return out
}

func sampleLog(t *testing.T) string {
	evs := []eventlog.Event{
		{T: 10, Kind: eventlog.Run, Policy: "fifo", Mode: "exclusive", Engine: "live"},
		{T: 10, Kind: eventlog.Arrive, Job: "a", Model: "cnn", Batch: 64, PersistentMiB: 10, EphemeralMiB: 90, DeclaredS: 3},
		{T: 10, Kind: eventlog.Admit, Job: "a", HoldsGPU: true},
		{T: 11, Kind: eventlog.Arrive, Job: "b", Model: "cnn", Batch: 64, PersistentMiB: 10, EphemeralMiB: 90},
		{T: 12, Kind: eventlog.Arrive, Job: "gone", Model: "mlp", Batch: 8, PersistentMiB: 1, EphemeralMiB: 1},
		{T: 12.5, Kind: eventlog.Lost, Job: "gone", Reason: "closed early"},
	}
	evs = append(evs, iters("a", 10.5, 0.1, 5)...) // start-up 0.5 s
	evs = append(evs,
		eventlog.Event{T: 11.0, Kind: eventlog.Measured, Job: "a", IterS: 0.09, PeakMiB: 300, PersistentMiB: 40, Iterations: 5},
		eventlog.Event{T: 11.0, Kind: eventlog.Finish, Job: "a"},
		eventlog.Event{T: 11.0, Kind: eventlog.Admit, Job: "b"})
	evs = append(evs, iters("b", 11.2, 0.3, 3)...) // start-up 0.2 s after its admission
	evs = append(evs, eventlog.Event{T: 12.1, Kind: eventlog.Finish, Job: "b"})
	return writeLog(t, evs)
}

func TestProfilesFromALog(t *testing.T) {
	l, err := Read(sampleLog(t))
	if err != nil {
		t.Fatal(err)
	}
	ps := l.Profiles()
	if len(ps) != 1 {
		t.Fatalf("%d profiles, want 1 (the lost job ran nothing): %+v", len(ps), ps)
	}
	p := ps[0]
	// 5 iterations of 0.1 s and 3 of 0.3 s; the steady ones (after each job's
	// first) are 4 of 0.1 s and 2 of 0.3 s: a mean of 1/6 s.
	if p.Model != "cnn" || p.Batch != 64 || p.Kind != "train" || p.Jobs != 2 || p.Iterations != 8 || p.IterS != 0.166667 {
		t.Errorf("profile %+v", p)
	}
	// start-ups 0.5 and 0.2 (+ 0.3 - 1/6, b's first iteration's excess over the
	// mean): median 0.4167. Memory: a's measured peak (300) beats the
	// declared 100; persistent the measured 40.
	if p.StartupS != 0.416667 || *p.PeakMiB != 300 || p.PersistentMiB != 40 {
		t.Errorf("startup %v, peak %v, persistent %v; want 0.416667, 300, 40", p.StartupS, *p.PeakMiB, p.PersistentMiB)
	}
	if !strings.Contains(p.Source, "measured by 1 of the 2 jobs' clients") {
		t.Errorf("source %q", p.Source)
	}
	// The profile loads as a catalog file.
	var buf bytes.Buffer
	if err := workload.WriteCatalogYAML(&buf, workload.CatalogFile{Profiles: ps}); err != nil {
		t.Fatal(err)
	}
	cat, err := workload.ParseCatalogFile(buf.Bytes(), "p.yaml", workload.Default())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if q, err := cat.Lookup("cnn", 64, "train"); err != nil || q.EphemeralMiB != 260 {
		t.Errorf("loaded %+v %v", q, err)
	}
}

func TestTraceFromALog(t *testing.T) {
	l, err := Read(sampleLog(t))
	if err != nil {
		t.Fatal(err)
	}
	tr, skipped, err := l.Trace(workload.Default(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 || len(tr.Jobs) != 2 {
		t.Fatalf("skipped %d, %d jobs", skipped, len(tr.Jobs))
	}
	a, b := tr.Jobs[0], tr.Jobs[1]
	if a.ID != "a" || a.Iterations != 5 || a.ArrivalS != 0 || a.DeclaredS != 3 || b.ArrivalS != 1 || b.Iterations != 3 {
		t.Errorf("jobs %+v %+v", a, b)
	}
	// cnn is not in the default catalog: its own figures go inline.
	if a.Inline.IterS == nil || *a.Inline.IterS != 0.1 || *b.Inline.IterS != 0.3 || *a.Inline.PersistentMiB != 10 || *a.Inline.EphemeralMiB != 90 {
		t.Errorf("inline %+v", a.Inline)
	}
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := workload.ParseTrace(buf.Bytes(), "x.csv", "x", workload.Default())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if back.Jobs[1].Profile.IterS != 0.3 {
		t.Errorf("read back %+v", back.Jobs[1].Profile)
	}
	// With a catalog that knows cnn/64, no inline figures.
	cat, err := workload.ParseCatalogFile([]byte("profiles:\n  - {model: cnn, batch_size: 64, iter_s: 0.2, persistent_mib: 5, ephemeral_mib: 5}\n"), "c.yaml", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	tr, _, _ = l.Trace(cat, "x")
	if !tr.Jobs[0].Inline.Empty() || tr.Jobs[0].Profile.IterS != 0.2 {
		t.Errorf("with the catalog: %+v", tr.Jobs[0])
	}
}

func TestEmptyLog(t *testing.T) {
	path := writeLog(t, []eventlog.Event{{T: 0, Kind: eventlog.Run, Policy: "fair"}})
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "no job arrived") {
		t.Errorf("error %v", err)
	}
}

// The profile warns when its figures were taken under contention or without a
// measurement, and always of the demand; jobs one after another, measured, get
// only the demand's warning.
func TestProfileWarnings(t *testing.T) {
	l, err := Read(sampleLog(t)) // a then b, one at a time; a measured
	if err != nil {
		t.Fatal(err)
	}
	if w := l.Warnings(); len(w) != 1 || !strings.Contains(w[0], "demand") {
		t.Errorf("one job at a time, measured: %q", w)
	}
	evs := []eventlog.Event{
		{T: 0, Kind: eventlog.Run, Policy: "fair", Mode: "salus", Engine: "live"},
		{T: 0, Kind: eventlog.Arrive, Job: "a", Model: "lstm", Batch: 32, PersistentMiB: 10, EphemeralMiB: 10},
		{T: 0, Kind: eventlog.Arrive, Job: "b", Model: "lstm", Batch: 32, PersistentMiB: 10, EphemeralMiB: 10},
		{T: 0, Kind: eventlog.Arrive, Job: "c", Model: "lstm", Batch: 32, PersistentMiB: 10, EphemeralMiB: 10},
	}
	for i, j := range []string{"a", "b", "c"} {
		evs = append(evs, iters(j, 0.1*float64(i), 0.3, 4)...)
	}
	busy, err := Read(writeLog(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(busy.Warnings(), "\n")
	for _, want := range []string{"up to 3 jobs ran at once", "no client measured its memory", "run each job alone", "demand"} {
		if !strings.Contains(w, want) {
			t.Errorf("three jobs at once, nothing measured: warnings lack %q:\n%s", want, w)
		}
	}
}

// A job's pace alone is timed only over iterations no other job's overlapped,
// from the second on.
func TestSoloCycles(t *testing.T) {
	l, err := Read(sampleLog(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 3, "b": 1, "gone": 0}
	for _, j := range l.Jobs {
		if len(j.SoloCycleS) != want[j.ID] {
			t.Errorf("%s: %d solo cycles %v, want %d", j.ID, len(j.SoloCycleS), j.SoloCycleS, want[j.ID])
		}
		for _, c := range j.SoloCycleS {
			if d := map[string]float64{"a": 0.1, "b": 0.3}[j.ID]; c < d-1e-9 || c > d+1e-9 {
				t.Errorf("%s: cycle %g, want %g", j.ID, c, d)
			}
		}
	}
	// Two jobs whose iterations interleave: neither is ever alone.
	evs := []eventlog.Event{
		{T: 0, Kind: eventlog.Arrive, Job: "a", Model: "cnn"}, {T: 0, Kind: eventlog.Arrive, Job: "b", Model: "cnn"},
	}
	for i := range 6 {
		s := float64(i)
		evs = append(evs, eventlog.Event{T: s, Kind: eventlog.IterStart, Job: "a"}, eventlog.Event{T: s + 0.2, Kind: eventlog.IterStart, Job: "b"},
			eventlog.Event{T: s + 0.5, Kind: eventlog.IterEnd, Job: "a"}, eventlog.Event{T: s + 0.7, Kind: eventlog.IterEnd, Job: "b"})
	}
	if l, err = Read(writeLog(t, evs)); err != nil {
		t.Fatal(err)
	}
	for _, j := range l.Jobs {
		if len(j.SoloCycleS) != 0 || len(j.IterS) != 6 {
			t.Errorf("%s: solo cycles %v of %d iterations: want none", j.ID, j.SoloCycleS, len(j.IterS))
		}
	}
}
