package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestAppendMatchesEncodingJSON(t *testing.T) {
	events := []Event{
		{T: 0, Kind: Run, Policy: "fair", Engine: "sim", Trace: "salus100", Seed: 7, CapacityMiB: 14336},
		{T: 1.5, Kind: Arrive, Job: "j\"1", Model: "vgg16", Iterations: 10, StartupS: 4.25, DeclaredS: 9, AloneS: 12.5, PersistentMiB: 1.5, EphemeralMiB: 300},
		{T: 1.75, Kind: Arrive, Job: "urgent", Priority: -2},
		{T: 1.8, Kind: Arrive, Job: "later", Priority: 3},
		{T: 2, Kind: Admit, Job: "j1", Lane: 0, LaneMiB: 14336, HoldsGPU: true},
		{T: 3.000001, Kind: IterStart, Job: "j1", Lane: 2, Prev: "j0"},
		{T: 4, Kind: IterEnd, Job: "j1", Lane: 0, GPU: 0.1},
		{T: 5, Kind: Lost, Job: "j1", Reason: "lease expired: no call for 3s"},
		{T: 6, Kind: Defrag, Lane: 0, LaneMiB: 7455, Reason: "split", Jobs: 1},
		{T: 8, Kind: Stretch, Job: "b", Lane: 1, Turns: []Turn{{Job: "a", Iterations: 3, GPU: 0.25}, {Job: "b\"", Iterations: 1, GPU: 0.125}}},
		{T: 7, Kind: Snapshot, Open: []SessionState{{Job: "a", ArrivalS: 1, Ended: 3, AttainedS: 0.3, OnGPUs: []int{0, 1}}, {Job: "b\"", ArrivalS: 2}}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range events {
		w.Emit(e)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []Event
	if err := Read(&buf, "mem", func(e Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, events)
	}
	for _, e := range events {
		var viaJSON, viaAppend map[string]any
		b, _ := json.Marshal(e)
		json.Unmarshal(b, &viaJSON)
		json.Unmarshal(Append(nil, e), &viaAppend)
		delete(viaJSON, "lane")
		delete(viaAppend, "lane")
		if !reflect.DeepEqual(viaJSON, viaAppend) {
			t.Errorf("hand encoding differs from encoding/json:\n%v\n%v", viaAppend, viaJSON)
		}
	}
}

func TestReadNamesTheLine(t *testing.T) {
	err := Read(strings.NewReader("{\"t\":1,\"ev\":\"arrive\"}\n{\"t\":2}\n"), "run.jsonl", func(Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "run.jsonl:2") {
		t.Fatalf("error %v should name run.jsonl:2", err)
	}
}

// Every finite number is written as a JSON number, however large, and the log
// reads back.
func TestHugeNumbersStayJSON(t *testing.T) {
	for _, f := range []float64{1e302, -1e302, 1.7976931348623157e308, 1e15, 123456789012345.678, 5e-324} {
		e := Event{T: f, Kind: Arrive, Job: "a", DeclaredS: f, StartupS: f, GPU: f}
		line := Append(nil, e)
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Errorf("%v: %s is not JSON: %v", f, line, err)
		}
		var got Event
		if err := Read(bytes.NewReader(append(line, '\n')), "mem", func(x Event) error { got = x; return nil }); err != nil {
			t.Errorf("%v: %v", f, err)
		}
		if tol := 1e-6 + 1e-15*math.Abs(f); math.Abs(got.DeclaredS-f) > tol {
			t.Errorf("%v: read back %v", f, got.DeclaredS)
		}
	}
}

// A writer killed mid-line leaves a last line without its end: the reader passes
// on every event before it and says the last line is cut off.
func TestTruncatedLastLine(t *testing.T) {
	var buf bytes.Buffer
	for i := range 3 {
		buf.Write(Append(nil, Event{T: float64(i), Kind: IterStart, Job: "a"}))
		buf.WriteByte('\n')
	}
	whole := buf.Bytes()
	for cut := len(whole) - 2; cut > len(whole)-25; cut-- { // inside the last line
		n := 0
		err := Read(bytes.NewReader(whole[:cut]), "crash.jsonl", func(Event) error { n++; return nil })
		if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "crash.jsonl:3") {
			t.Fatalf("cut at %d: error %v, want ErrTruncated at line 3", cut, err)
		}
		if n != 2 {
			t.Fatalf("cut at %d: %d events read before the cut line, want 2", cut, n)
		}
	}
	// A complete last line without its newline is an event, not a cut.
	n := 0
	if err := Read(bytes.NewReader(whole[:len(whole)-1]), "x", func(Event) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("no final newline: %d events, %v", n, err)
	}
	// A bad line in the middle is still an error, not a truncation.
	bad := append([]byte("{\"t\":1,\"ev\":\"a\"}\n{oops\n"), whole...)
	if err := Read(bytes.NewReader(bad), "x", func(Event) error { return nil }); err == nil || errors.Is(err, ErrTruncated) {
		t.Fatalf("bad middle line: %v", err)
	}
	// Long lines are read whole.
	long := Append(nil, Event{T: 1, Kind: Lost, Job: "a", Reason: strings.Repeat("x", 200000)})
	if err := Read(bytes.NewReader(append(long, '\n')), "x", func(e Event) error {
		if len(e.Reason) != 200000 {
			t.Errorf("long line: reason of %d bytes", len(e.Reason))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// OpenAppend never truncates: a second writer adds its events after the first's.
// Every event goes out at once with SetFlushEach.
func TestOpenAppendKeepsWhatIsThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	for run := range 3 {
		f, err := OpenAppend(path)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		f.SetFlushEach(true)
		f.Emit(Event{T: float64(run), Kind: Run, Engine: "live"})
		f.Emit(Event{T: float64(run), Kind: Arrive, Job: fmt.Sprint("j", run)})
		after, _ := os.ReadFile(path) // no Flush: each event went out whole
		if !bytes.HasPrefix(after, before) || bytes.Count(after, []byte("\n")) != 2*(run+1) {
			t.Fatalf("run %d: file went from %q to %q", run, before, after)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []string
	if err := ReadFile(path, func(e Event) error { jobs = append(jobs, e.Job); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(jobs, ",") != ",j0,,j1,,j2" {
		t.Errorf("events %q", jobs)
	}
	if _, err := OpenAppend(path + ".gz"); err == nil || !strings.Contains(err.Error(), "cannot be appended") {
		t.Errorf("gzip log: %v", err)
	}
}

// A log whose writer was killed in the middle of a line, then appended to by a
// restarted daemon: the cut line keeps a line of its own, and the reader passes on
// every event before and after it, then says which line it skipped.
func TestOpenAppendAfterACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	head := `{"t":0,"ev":"run","engine":"live"}` + "\n" + `{"t":1,"ev":"arrive","job":"a"}` + "\n" + `{"t":2,"ev":"iter_st`
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := ReadFile(path, func(Event) error { n++; return nil }); !errors.Is(err, ErrTruncated) || n != 2 {
		t.Fatalf("before the restart: %d events, %v", n, err)
	}
	f, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Emit(Event{T: 2, Kind: Run, Engine: "live", Reason: "restart"})
	f.Emit(Event{T: 3, Kind: Finish, Job: "a"})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, []byte(head+"\n")) {
		t.Fatalf("the old log changed: %q", b)
	}
	var kinds []string
	err = ReadFile(path, func(e Event) error { kinds = append(kinds, e.Kind); return nil })
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "live.jsonl:3") {
		t.Errorf("error %v, want ErrTruncated naming line 3", err)
	}
	if strings.Join(kinds, " ") != "run arrive run finish" {
		t.Errorf("events %v", kinds)
	}
	// A line that is not an event and is not followed by a run header is an error.
	bad := head + "\n" + `{"t":3,"ev":"finish","job":"a"}` + "\n"
	if err := Read(strings.NewReader(bad), "x", func(Event) error { return nil }); err == nil || errors.Is(err, ErrTruncated) {
		t.Errorf("a bad line in the middle: %v", err)
	}
}

// A run header's RunInfo goes into the log and comes back, and only a header
// without the restart reason begins a run.
func TestRunInfoRoundTrip(t *testing.T) {
	e := Event{T: 12.5, Kind: Run, Policy: "fair", RunInfo: &RunInfo{ID: "ab12", Started: "2026-01-02T03:04:05Z", Version: "devel", Commit: "0123abc", Command: []string{"salus", "serve", "--events=x"}}}
	var got []Event
	if err := Read(strings.NewReader(string(Append(nil, e))+"\n"), "x", func(e Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].RunInfo == nil || !reflect.DeepEqual(*got[0].RunInfo, *e.RunInfo) || got[0].Policy != "fair" {
		t.Fatalf("read back %+v, want %+v", got, e)
	}
	restart := Event{Kind: Run, Reason: RestartReason}
	if !BeginsRun(e) || BeginsRun(restart) || BeginsRun(Event{Kind: Arrive}) {
		t.Error("BeginsRun: want a new run's header only")
	}
}
