package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

const header = "job_id,model,batch_size,iterations,arrival_s\n"

func TestTraceErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, file, data, want string
	}{
		{"unknown model", "t.csv", header + "a,resnet50,50,10,0\nb,gpt5,50,10,1\n", `t.csv:3: field "model": unknown model "gpt5"`},
		{"bad number", "t.csv", header + "a,resnet50,50,ten,0\n", `t.csv:2: field "iterations": "ten" is not a whole number`},
		{"negative time", "t.csv", header + "a,resnet50,50,10,-1\n", `t.csv:2: field "arrival_s": -1 is negative`},
		{"duplicate id", "t.csv", header + "a,resnet50,50,10,0\na,resnet50,50,10,1\n", `t.csv:3: field "job_id": duplicate id "a" (first on line 2)`},
		{"missing column", "t.csv", "job_id,model,batch_size,arrival_s\na,resnet50,50,0\n", `t.csv:1: field "iterations": missing column`},
		{"unknown column", "t.csv", "job_id,model,batch_size,iterations,arrival_s,colour\n", `t.csv:1: field "colour": unknown column`},
		{"bad batch", "t.csv", header + "a,resnet50,64,10,0\n", `t.csv:2: field "batch_size": model "resnet50" has no train profile at batch size 64`},
		{"short row", "t.csv", header + "a,resnet50,50\n", `t.csv:2: wrong number of fields`},
		{"declared zero", "t.csv", "job_id,model,batch_size,iterations,arrival_s,declared_s\na,resnet50,50,10,0,0\n", `t.csv:2: field "declared_s": 0: a declared GPU time must be positive`},
		{"declared negative", "t.csv", "job_id,model,batch_size,iterations,arrival_s,declared_s\na,resnet50,50,10,0,-4\n", `t.csv:2: field "declared_s": -4 is negative`},
		{"arrival past the horizon", "t.csv", header + "a,resnet50,50,10,2e9\n", `t.csv:2: field "arrival_s": 2e9 s is more than 1e+09 s`},
		{"bad kind", "t.csv", "job_id,model,batch_size,iterations,arrival_s,kind\na,resnet50,50,10,0,serve\n", `t.csv:2: field "kind"`},
		{"jsonl missing", "t.jsonl", `{"job_id":"a","model":"resnet50","batch_size":50,"arrival_s":0}` + "\n", `t.jsonl:1: field "iterations": missing field`},
		{"jsonl unknown", "t.jsonl", `{"job_id":"a","model":"resnet50","batch_size":50,"iterations":3,"arrival_s":0,"x":1}` + "\n", `t.jsonl:1: field "x": unknown field`},
		{"jsonl garbage", "t.jsonl", `{"job_id":"a","model":"resnet50","batch_size":50,"iterations":3,"arrival_s":0}` + "\nnope\n", `t.jsonl:2: not a JSON object`},
		{"jsonl negative", "t.jsonl", `{"job_id":"a","model":"resnet50","batch_size":50,"iterations":3,"arrival_s":-2}` + "\n", `t.jsonl:1: field "arrival_s"`},
		{"empty model", "t.csv", "job_id,model,batch_size,iterations,arrival_s,gpu_models\na,resnet50,50,10,0,v100||t4\n", `t.csv:2: field "gpu_models": "v100||t4": an empty model name`},
		{"empty", "t.csv", "", `t.csv:1: empty file`},
		{"no jobs", "t.csv", header, `t.csv:1: the trace has no jobs`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		_, err := ParseTrace([]byte(c.data), c.file, "t", Default())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
		// A stream gives the same error, before any job.
		path := filepath.Join(dir, c.file)
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenTrace(path, Default()); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(c.want, c.file)) {
			t.Errorf("%s: stream's error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestTraceFormatsRoundTrip(t *testing.T) {
	tr, err := Generate(Default(), GenOptions{Seed: 3, Jobs: 20})
	if err != nil {
		t.Fatal(err)
	}
	tr.Jobs[2].DeclaredS, tr.Jobs[3].Priority, tr.Jobs[4].PauseS = 99.5, 2, 10
	tr.Jobs[5].GPUModels = []string{"v100", "G2"}
	q, run := 0.0, 12.5
	tr.Jobs[6].TraceQueueS, tr.Jobs[6].TraceRunS = &q, &run
	for _, format := range []string{"csv", "jsonl"} {
		var buf bytes.Buffer
		if format == "csv" {
			err = tr.WriteCSV(&buf)
		} else {
			err = tr.WriteJSONL(&buf)
		}
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTrace(buf.Bytes(), "x."+format, tr.Name, Default())
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for i := range tr.Jobs {
			a, b := tr.Jobs[i], back.Jobs[i]
			if a.ID != b.ID || a.Model != b.Model || a.Batch != b.Batch || a.Iterations != b.Iterations ||
				a.ArrivalS != b.ArrivalS || a.DeclaredS != b.DeclaredS || a.Priority != b.Priority || a.PauseS != b.PauseS || a.Kind != b.Kind ||
				strings.Join(a.GPUModels, "|") != strings.Join(b.GPUModels, "|") ||
				fmt.Sprint(ptr(a.TraceQueueS), ptr(a.TraceRunS)) != fmt.Sprint(ptr(b.TraceQueueS), ptr(b.TraceRunS)) {
				t.Fatalf("%s: job %d changed: %+v -> %+v", format, i, a, b)
			}
		}
	}
}

// ptr shows an optional figure: nil or its value.
func ptr(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func TestGenerateIsSeeded(t *testing.T) {
	a, _ := Generate(Default(), GenOptions{Kind: Salus100, Seed: 1})
	b, _ := Generate(Default(), GenOptions{Kind: Salus100, Seed: 1})
	c, _ := Generate(Default(), GenOptions{Kind: Salus100, Seed: 2})
	var ba, bb, bc bytes.Buffer
	a.WriteCSV(&ba)
	b.WriteCSV(&bb)
	c.WriteCSV(&bc)
	if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
		t.Error("same seed, different traces")
	}
	if bytes.Equal(ba.Bytes(), bc.Bytes()) {
		t.Error("different seeds, same trace")
	}
	if len(a.Jobs) != 100 || a.Name != "salus100" || a.Jobs[0].ArrivalS != 0 {
		t.Errorf("salus100: %d jobs, name %s, first arrival %v", len(a.Jobs), a.Name, a.Jobs[0].ArrivalS)
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add([]byte(header+"a,resnet50,50,10,0\nb,vgg16,25,3,1.5\n"), true)
	f.Add([]byte(`{"job_id":"a","model":"alexnet","batch_size":25,"iterations":3,"arrival_s":0}`+"\n"), false)
	f.Add([]byte("job_id,model,batch_size,iterations,arrival_s,declared_s,kind,priority\nx,vae,64,1,0,,train,-3\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, asCSV bool) {
		name := "f.jsonl"
		if asCSV {
			name = "f.csv"
		}
		tr, err := ParseTrace(data, name, "f", Default())
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error without the file and line: %v", err)
			}
			return
		}
		// Whatever is accepted is a valid trace that survives a round trip.
		var buf bytes.Buffer
		if err := tr.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ParseTrace(buf.Bytes(), "back.csv", "f", Default())
		if err != nil {
			t.Fatalf("accepted trace does not round trip: %v\n%s", err, buf.String())
		}
		if len(back.Jobs) != len(tr.Jobs) {
			t.Fatalf("round trip lost jobs")
		}
	})
}

func TestInlineProfiles(t *testing.T) {
	data := "job_id,model,batch_size,iterations,arrival_s,gpus,iter_s,startup_s,persistent_mib,ephemeral_mib,demand\n" +
		"a,mytransformer,16,100,0,2,0.25,3,5000,2000,\n" +
		"b,resnet50,50,10,1,,0.5,,,,\n"
	tr, err := ParseTrace([]byte(data), "own.csv", "own", Default())
	if err != nil {
		t.Fatal(err)
	}
	a, b := tr.Jobs[0], tr.Jobs[1]
	if p := a.Profile; p.IterS != 0.25 || p.StartupS != 3 || p.PersistentMiB != 5000 || p.EphemeralMiB != 2000 || p.PeakMiB != 7000 || p.Demand != 1 {
		t.Errorf("own model's profile: %+v", p)
	}
	if a.GPUCount() != 2 || b.GPUCount() != 1 || a.CoreJob().GPUs != 2 {
		t.Errorf("gpus: %d %d", a.GPUCount(), b.GPUCount())
	}
	cat, _ := Default().Lookup("resnet50", 50, Train)
	if p := b.Profile; p.IterS != 0.5 || p.PersistentMiB != cat.PersistentMiB || p.StartupS != cat.StartupS || p.Source.Iter != "trace own.csv, line 3" {
		t.Errorf("override of a catalog profile: %+v", p)
	}
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ParseTrace(buf.Bytes(), "back.csv", "own", Default())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if back.Jobs[0].Profile.IterS != 0.25 || back.Jobs[0].GPUs != 2 || back.Jobs[1].Profile.IterS != 0.5 {
		t.Errorf("round trip lost the inline figures:\n%s", buf.String())
	}
	buf.Reset()
	if err := tr.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	if back, err = ParseTrace(buf.Bytes(), "back.jsonl", "own", Default()); err != nil || back.Jobs[0].Profile.EphemeralMiB != 2000 {
		t.Fatalf("jsonl round trip: %v\n%s", err, buf.String())
	}

	bad := []struct{ data, want string }{
		{"job_id,model,batch_size,iterations,arrival_s,iter_s\na,mine,1,10,0,0.1\n", `own.csv:2: field "model": unknown model "mine"`},
		{"job_id,model,batch_size,iterations,arrival_s,iter_s\na,mine,1,10,0,0.1\n", `needs [persistent_mib ephemeral_mib]`},
		{"job_id,model,batch_size,iterations,arrival_s\na,mine,1,10,0\n", `--catalog FILE`},
		{"job_id,model,batch_size,iterations,arrival_s,demand\na,resnet50,50,10,0,1.5\n", `own.csv:2: field "demand"`},
		{"job_id,model,batch_size,iterations,arrival_s,iter_s\na,resnet50,50,10,0,0\n", `own.csv:2: field "iter_s"`},
		{"job_id,model,batch_size,iterations,arrival_s,gpus\na,resnet50,50,10,0,0\n", `own.csv:2: field "gpus"`},
	}
	for _, c := range bad {
		if _, err := ParseTrace([]byte(c.data), "own.csv", "own", Default()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.data, err, c.want)
		}
	}
}

// TestJobsShareTheirProfile: the jobs of one catalog profile point to the
// catalog's one copy; a job with figures of its own has its own profile, and
// WithProfile changes a copy, never the shared one.
func TestJobsShareTheirProfile(t *testing.T) {
	data := "job_id,model,batch_size,iterations,arrival_s,iter_s\n" +
		"a,resnet50,50,10,0,\n" +
		"b,resnet50,50,20,1,\n" +
		"c,resnet50,50,30,2,0.5\n"
	tr, err := ParseTrace([]byte(data), "share.csv", "share", Default())
	if err != nil {
		t.Fatal(err)
	}
	shared, err := Default().Shared("resnet50", 50, Train)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := tr.Jobs[0], tr.Jobs[1], tr.Jobs[2]
	if a.Profile != shared || b.Profile != shared {
		t.Errorf("jobs a and b of the catalog profile hold copies of it")
	}
	if c.Profile == shared || c.Profile.IterS != 0.5 || shared.IterS == 0.5 {
		t.Errorf("job c's own iter_s: profile %p (shared %p), iter_s %v, the catalog's %v", c.Profile, shared, c.Profile.IterS, shared.IterS)
	}
	before := *shared
	changed := a.WithProfile(func(p *Profile) { p.IterS *= 2 })
	if changed.Profile == shared || changed.Profile.IterS != 2*before.IterS || shared.IterS != before.IterS || a.Profile != shared {
		t.Errorf("WithProfile changed the shared profile: %v, catalog %v (was %v)", changed.Profile.IterS, shared.IterS, before.IterS)
	}
	g, err := Generate(Default(), GenOptions{Kind: Salus100, Seed: 1, Jobs: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range g.Jobs {
		if s, _ := Default().Shared(j.Model, j.Batch, j.Kind); j.Profile != s {
			t.Fatalf("generated job %s holds a copy of its profile", j.ID)
		}
	}
}

// drain reads a stream to its end.
func drain(t *testing.T, s *Stream) []Job {
	t.Helper()
	var out []Job
	for j, ok := s.Next(); ok; j, ok = s.Next() {
		out = append(out, *j)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStreamsGiveTheTracesJobs: a trace file streamed gives the jobs that
// reading it whole gives, in arrival order, whether its rows are in that order or
// not (rows out of order are sorted stably: jobs that arrive together keep the
// file's order); a generated trace streamed is the trace Generate builds.
func TestStreamsGiveTheTracesJobs(t *testing.T) {
	dir := t.TempDir()
	sorted := header + "a,resnet50,50,10,0\nb,vgg16,25,20,1\nc,resnet50,50,30,1\nd,vgg16,25,5,7.5\n"
	unsorted := header + "d,vgg16,25,5,7.5\nb,vgg16,25,20,1\na,resnet50,50,10,0\nc,resnet50,50,30,1\n"
	for name, data := range map[string]string{"sorted.csv": sorted, "unsorted.csv": unsorted} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		whole, err := ReadTraceFile(path, Default())
		if err != nil {
			t.Fatal(err)
		}
		s, err := OpenTrace(path, Default())
		if err != nil {
			t.Fatal(err)
		}
		streamed := drain(t, s)
		if !reflect.DeepEqual(streamed, whole.Jobs) || s.Name != whole.Name {
			t.Errorf("%s: streamed %+v, read whole %+v", name, streamed, whole.Jobs)
		}
		var ids []string
		for _, j := range streamed {
			ids = append(ids, j.ID)
		}
		if strings.Join(ids, " ") != "a b c d" {
			t.Errorf("%s: jobs in the order %v, want a b c d", name, ids)
		}
	}
	for _, kind := range Kinds() {
		o := GenOptions{Kind: kind, Seed: 5, Jobs: 150, Load: 2}
		whole, err := Generate(Default(), o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := GenerateStream(Default(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(t, s); !reflect.DeepEqual(got, whole.Jobs) || s.Name != whole.Name || s.Seed != whole.Seed {
			t.Errorf("%s: the stream is not the trace Generate builds", kind)
		}
	}
	// A stream closed early stops.
	s, err := GenerateStream(Default(), GenOptions{Kind: Salus100, Jobs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Next(); !ok {
		t.Fatal("no first job")
	}
	s.Close()
	if _, ok := s.Next(); ok {
		t.Error("a job after Close")
	}
	s.Close()
}

// CheckTraceFile goes past bad rows where ReadTraceFile stops at the first; a
// problem of the whole file (its header, no jobs) is its one problem.
func TestCheckTraceFileGoesOn(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		jobs       int
		first      float64
		last       float64
		lines      []int // of the problems, in order
	}{
		{"good.csv", "job_id,model,batch_size,iterations,arrival_s\na,resnet50,25,10,4\nb,resnet50,25,10,1\n", 2, 1, 4, nil},
		{"rows.csv", "job_id,model,batch_size,iterations,arrival_s\na,resnet50,25,0,0\nb,resnet50,25,10,1\nb,resnet50,25,10,2\nc,resnet50,25,10\n", 1, 1, 1, []int{2, 4, 5}},
		{"rows.jsonl", "{\"job_id\": \"a\"}\nnot json\n{\"job_id\": \"b\", \"model\": \"resnet50\", \"batch_size\": 25, \"iterations\": 3, \"arrival_s\": 9}\n", 1, 9, 9, []int{1, 2}},
		{"header.csv", "job_id,model,batch,iterations,arrival_s\na,resnet50,25,10,0\nb,resnet50,25,0,0\n", 0, 0, 0, []int{1}},
		{"empty.csv", "job_id,model,batch_size,iterations,arrival_s\n", 0, 0, 0, []int{1}},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		tc, err := CheckTraceFile(path, Default(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var lines []int
		for _, p := range tc.Problems {
			var fe *FieldError
			if !errors.As(p, &fe) {
				t.Errorf("%s: problem %v names no line", c.name, p)
				continue
			}
			lines = append(lines, fe.Line)
		}
		if tc.Jobs != c.jobs || tc.FirstS != c.first || tc.LastS != c.last || tc.Count != len(c.lines) || fmt.Sprint(lines) != fmt.Sprint(c.lines) {
			t.Errorf("%s: %d jobs from %v to %v, problems on lines %v (count %d); want %d from %v to %v, lines %v",
				c.name, tc.Jobs, tc.FirstS, tc.LastS, lines, tc.Count, c.jobs, c.first, c.last, c.lines)
		}
		// The first problem is the error ReadTraceFile stops at.
		if _, rerr := ReadTraceFile(path, Default()); (rerr == nil) != (tc.Count == 0) || rerr != nil && rerr.Error() != tc.Problems[0].Error() {
			t.Errorf("%s: ReadTraceFile says %v, CheckTraceFile's first problem %v", c.name, rerr, tc.Problems)
		}
	}
	// A limit keeps the first problems and counts them all.
	tc, err := CheckTraceFile(filepath.Join(dir, "rows.csv"), Default(), 2)
	if err != nil || len(tc.Problems) != 2 || tc.Count != 3 {
		t.Errorf("with a limit of 2: %d kept of %d (%v), want 2 of 3", len(tc.Problems), tc.Count, err)
	}
}
