package traceimport

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

// convert imports files (under testdata unless absolute) and parses the result
// back as a trace, so that every output is checked to be a valid trace.
// testGPUFor stands for the command line's resolver (cmd/salus importGPUFor,
// whose tests hold these figures to the device presets): the P100 where the
// source names no type, the fixtures' V100s and T4, and for a type it does not
// know the P100's figures with an error.
func testGPUFor(gpuType string) (GPU, error) {
	switch gpuType {
	case "", "P100":
		return GPU{Name: "P100", CapacityMiB: 14336, Speed: 1}, nil
	case "V100M16":
		return GPU{Name: "V100-16GB", CapacityMiB: 14336, Speed: 1.4}, nil
	case "V100", "V100M32":
		return GPU{Name: "V100-32GB", CapacityMiB: 28672, Speed: 1.4}, nil
	case "T4":
		return GPU{Name: "T4", CapacityMiB: 14336, Speed: 0.58}, nil
	}
	return GPU{Name: gpuType, CapacityMiB: 14336, Speed: 1}, fmt.Errorf("GPU %q is no model the test knows", gpuType)
}

// withGPUs gives o the test's resolver when it has no device.
func withGPUs(o Options) Options {
	if o.Device == nil && o.GPUFor == nil {
		o.GPUFor = testGPUFor
	}
	return o
}

func convert(t *testing.T, format string, o Options, files ...string) (*workload.Trace, Stats) {
	t.Helper()
	f, err := Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range files {
		if !filepath.IsAbs(p) {
			files[i] = filepath.Join("testdata", p)
		}
	}
	var buf bytes.Buffer
	stats, err := Convert(f, files, withGPUs(o), &buf)
	if err != nil {
		t.Fatalf("import %s %v: %v", format, files, err)
	}
	name := "out.csv"
	if o.Output == "jsonl" {
		name = "out.jsonl"
	}
	tr, err := workload.ParseTrace(buf.Bytes(), name, format, workload.Default())
	if err != nil {
		t.Fatalf("the import of %s is not a valid trace: %v\n%s", format, err, buf.String())
	}
	return tr, stats
}

// want is one job's expected mapping: the profile it gets, how long it ran on
// which device (speed), its arrival and GPUs.
type want struct {
	id       string
	model    string
	batch    int
	runS     float64
	speed    float64
	arrivalS float64
	gpus     int
	// iters, when set, is the iteration count the source gave (Sia's samples).
	iters int
}

// iterations is the documented rule: (duration - start-up) / iteration time on
// the device, rounded, at least 1.
func (w want) iterations(t *testing.T) int {
	if w.iters > 0 {
		return w.iters
	}
	p, err := workload.Default().Lookup(w.model, w.batch, workload.Train)
	if err != nil {
		t.Fatal(err)
	}
	return max(1, int(math.Round((w.runS-p.StartupS)/(p.IterS/w.speed))))
}

func check(t *testing.T, tr *workload.Trace, wants []want) {
	t.Helper()
	if len(tr.Jobs) != len(wants) {
		t.Fatalf("%d jobs, want %d: %+v", len(tr.Jobs), len(wants), tr.Jobs)
	}
	for i, w := range wants {
		j := tr.Jobs[i]
		if j.ID != w.id {
			t.Errorf("job %d: id %q, want %q (jobs sorted by arrival)", i, j.ID, w.id)
			continue
		}
		if j.Model != w.model || j.Batch != w.batch {
			t.Errorf("%s: profile %s/%d, want %s/%d", w.id, j.Model, j.Batch, w.model, w.batch)
		}
		if it := w.iterations(t); j.Iterations != it {
			t.Errorf("%s: %d iterations, want %d", w.id, j.Iterations, it)
		}
		if j.ArrivalS != w.arrivalS {
			t.Errorf("%s: arrival %v s, want %v", w.id, j.ArrivalS, w.arrivalS)
		}
		if j.GPUCount() != w.gpus {
			t.Errorf("%s: %d GPUs, want %d", w.id, j.GPUCount(), w.gpus)
		}
		// A GPU share's demand is checked by checkShares.
		in := j.Inline
		in.Demand = nil
		if j.Kind != workload.Train || j.DeclaredS != 0 || !in.Empty() {
			t.Errorf("%s: kind %q, declared %v, inline %+v: want a plain training job", w.id, j.Kind, j.DeclaredS, j.Inline)
		}
	}
}

func checkDropped(t *testing.T, s Stats, rows int, dropped map[string]int) {
	t.Helper()
	if s.Rows != rows {
		t.Errorf("%d rows read, want %d", s.Rows, rows)
	}
	for r, n := range dropped {
		if s.Dropped[r] != n {
			t.Errorf("dropped %q: %d, want %d (all: %v)", r, s.Dropped[r], n, s.Dropped)
		}
	}
	total := 0
	for _, n := range s.Dropped {
		total += n
	}
	if s.Kept+total != rows {
		t.Errorf("kept %d + dropped %d != %d rows read", s.Kept, total, rows)
	}
}

// The largest profile a whole P100 (14,336 MiB usable) holds is resnet152 at 75.
const bigModel, bigBatch = "resnet152", 75

func TestImportAlibaba2023(t *testing.T) {
	tr, s := convert(t, "alibaba2023", Options{}, "openb_pod_list_sample.csv")
	check(t, tr, []want{
		{"openb-pod-9001", bigModel, bigBatch, 3600, 1, 0, 8, 0},
		// V100M16|V100M32: the first, the 16 GB V100 (14,336 MiB usable, 1.4x),
		// half of it: 7,168 MiB; vgg19 at 50 peaks just below.
		{"openb-pod-9003", "vgg19", 50, 995, 1.4, 100, 1, 0},
		// 220 milli of a P100: 3,154 MiB; googlenet at 100 peaks at 2,534.
		{"openb-pod-9002", "googlenet", 100, 590, 1, 300, 1, 0},
		// 9006 ran 10 s, less than resnet152's 55 s start-up: dropped.
		// Two whole GPUs, gpu_milli 0.
		{"openb-pod-9007", bigModel, bigBatch, 600, 1, 600, 2, 0},
	})
	checkDropped(t, s, 7, map[string]int{DropNoGPU: 1, DropNeverRan: 1, DropShort: 1})
	// QoS classes are priorities; shares are demands.
	checkShares(t, tr, map[string]share{"openb-pod-9001": {2, 0}, "openb-pod-9003": {0, 0.5}, "openb-pod-9002": {3, 0.22}, "openb-pod-9007": {2, 0}})
}

// share is a job's expected priority and compute demand (0: the profile's).
type share struct {
	prio   int
	demand float64
}

func checkShares(t *testing.T, tr *workload.Trace, wants map[string]share) {
	t.Helper()
	for _, j := range tr.Jobs {
		w, ok := wants[j.ID]
		if !ok {
			continue
		}
		if j.Priority != w.prio {
			t.Errorf("%s: priority %d, want %d", j.ID, j.Priority, w.prio)
		}
		switch {
		case w.demand == 0 && j.Demand != nil:
			t.Errorf("%s: demand %v, want the profile's", j.ID, *j.Demand)
		case w.demand > 0 && (j.Demand == nil || *j.Demand != w.demand || j.Profile.Demand != w.demand):
			t.Errorf("%s: demand %v (profile %v), want %v", j.ID, j.Demand, j.Profile.Demand, w.demand)
		}
	}
}

func TestImportPAI2020TaskTable(t *testing.T) {
	for _, file := range []string{"pai_task_table.csv", "pai_task_table_header.csv"} {
		t.Run(file, func(t *testing.T) {
			tr, s := convert(t, "pai2020", Options{}, file)
			check(t, tr, []want{
				// plan_gpu 200 x 2 instances: 4 whole V100s.
				{"job9b02/worker", bigModel, bigBatch, 1800, 1.4, 0, 4, 0},
				// plan_gpu 50 on MISC (the P100): 7,168 MiB; vgg19 at 50 peaks just below.
				{"job9a01/tensorflow", "vgg19", 50, 600, 1, 100, 1, 0},
				{"job9c03/worker", bigModel, bigBatch, 60, 1, 300, 1, 0},
			})
			checkDropped(t, s, 6, map[string]int{DropNoGPU: 1, DropNeverRan: 1, DropCensored: 1})
		})
	}
}

// A GPU type no preset matches is the P100, counted, and the summary warns of it.
func TestImportWarnsOfUnknownGPUTypes(t *testing.T) {
	_, s := convert(t, "pai2020", Options{}, "pai_task_table.csv")
	if s.UnknownGPUs["MISC"] != 1 || len(s.UnknownGPUs) != 1 {
		t.Errorf("unknown GPU types %v, want MISC once", s.UnknownGPUs)
	}
	var out strings.Builder
	s.Summary(&out)
	if !strings.Contains(out.String(), `warning: 1 jobs on GPU type "MISC": GPU "MISC" is no model the test knows; give --device`) {
		t.Errorf("summary %q does not warn of MISC", out.String())
	}
	if _, s := convert(t, "pai2020", Options{Device: &GPU{Name: "V100", CapacityMiB: 28672, Speed: 1.4}}, "pai_task_table.csv"); len(s.UnknownGPUs) != 0 {
		t.Errorf("with --device, unknown GPU types %v: want none counted", s.UnknownGPUs)
	}
}

func TestImportPAI2020JoinsTheJobTable(t *testing.T) {
	tr, s := convert(t, "pai2020", Options{Statuses: []string{"terminated"}}, "pai_task_table.csv", "pai_job_table.csv")
	// Arrivals are the jobs' submissions (850, 950); the job table's Failed status
	// filters job9c03.
	check(t, tr, []want{
		{"job9b02/worker", bigModel, bigBatch, 1800, 1.4, 0, 4, 0},
		{"job9a01/tensorflow", "vgg19", 50, 600, 1, 100, 1, 0},
	})
	checkDropped(t, s, 6, map[string]int{DropNoGPU: 1, DropNoJob: 2, DropStatus: 1})
}

func TestImportPhilly(t *testing.T) {
	tr, s := convert(t, "philly", Options{}, "cluster_job_log.json")
	check(t, tr, []want{
		{"application_9_0003", bigModel, bigBatch, 600, 1, 0, 1, 0},
		// Two attempts, 74 s and 3,600 s; the last one held 4 GPUs on two machines.
		{"application_9_0001", bigModel, bigBatch, 3674, 1, 459, 4, 0},
	})
	checkDropped(t, s, 4, map[string]int{DropNeverRan: 1, DropCensored: 1})
}

func TestImportHelios(t *testing.T) {
	tr, s := convert(t, "helios", Options{}, "cluster_log.csv")
	check(t, tr, []want{
		{"9000001", bigModel, bigBatch, 3600, 1, 0, 1, 0},
		{"9000002", bigModel, bigBatch, 300, 1, 300, 8, 0},
	})
	checkDropped(t, s, 4, map[string]int{DropNoGPU: 1, DropNeverRan: 1})
}

func TestImportTiresias(t *testing.T) {
	tr, s := convert(t, "tiresias", Options{}, "tiresias_jobs.csv")
	check(t, tr, []want{
		// A catalog model keeps its name, at its largest batch that fits the GPU.
		{"0", "resnet50", 75, 600, 1, 0, 1, 0},
		{"1", "vgg19", 100, 300, 1, 30, 4, 0},
		{"2", "inception3", 100, 1200, 1, 50, 2, 0},
	})
	checkDropped(t, s, 4, map[string]int{DropNoGPU: 1})
}

func TestImportSia(t *testing.T) {
	tr, s := convert(t, "sia", Options{Lengths: map[string]float64{"ncf": 900}}, "sia_workload.csv")
	check(t, tr, []want{
		{"cifar10-0", bigModel, bigBatch, 1800, 1, 0, 1, 0},
		// No duration: 120,000 samples at batch 12.
		{"bert-2", bigModel, bigBatch, 0, 1, 60, 2, 10000},
		// Neither: --length ncf=900.
		{"ncf-3", bigModel, bigBatch, 900, 1, 90, 1, 0},
		{"imagenet-1", bigModel, bigBatch, 36000, 1, 120, 8, 0},
	})
	checkDropped(t, s, 4, nil)
}

// writeTemp writes content to a file named name in a temporary directory.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const openbHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func TestBadRowsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		format, name, content string
		line                  int
		field                 string
	}{
		{"alibaba2023", "openb.csv", openbHeader + "p1,1,1,1,1000,,BE,Succeeded,10,20,10\np2,1,1,1,abc,,BE,Succeeded,10,20,10\n", 3, "gpu_milli"},
		{"alibaba2023", "openb.csv", openbHeader + "p1,1,1,1,1500,,BE,Succeeded,10,20,10\n", 2, "gpu_milli"},
		{"alibaba2023", "openb.csv", openbHeader + "p1,1,1,-1,1000,,BE,Succeeded,10,20,10\n", 2, "num_gpu"},
		{"alibaba2023", "openb.csv", "name,num_gpu,gpu_milli,deletion_time,scheduled_time\np1,1,1000,20,10\n", 1, "creation_time"},
		{"pai2020", "tasks.csv", "j1,t,1.0,Terminated,1.0,2.0,1,1,50,P100\nj2,t,1.0,Terminated,1.0,2.0,1,1,lots,P100\n", 2, "plan_gpu"},
		{"philly", "log.json", "[\n{\"jobid\": \"a\", \"submitted_time\": \"2017-10-07 01:00:00\", \"attempts\": []},\n{\"jobid\": \"b\",\n \"submitted_time\": 5, \"attempts\": []}\n]\n", 3, "submitted_time"},
		{"philly", "log.json", "[\n{\"jobid\": \"a\", \"submitted_time\": \"yesterday\", \"attempts\": []}\n]\n", 2, "submitted_time"},
		{"helios", "cluster_log.csv", "job_id,gpu_num,state,submit_time,start_time,end_time,duration\n1,1,COMPLETED,2020-07-01 10:00:00,2020-07-01 10:00:00,2020-07-01 10:01:00,sixty\n", 2, "duration"},
		{"tiresias", "jobs.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1.5,0,10,resnet50,60,1\n", 2, "num_gpu"},
		{"sia", "w.csv", "name,time,application,num_replicas,batch_size,duration\na,soon,cifar10,1,128,60\n", 2, "time"},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.field, func(t *testing.T) {
			path := writeTemp(t, c.name, c.content)
			f, _ := Lookup(c.format)
			_, err := Convert(f, []string{path}, withGPUs(Options{}), &bytes.Buffer{})
			var fe *workload.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a field error, got %v", err)
			}
			if fe.File != path || fe.Line != c.line || fe.Field != c.field {
				t.Errorf("error at %s:%d field %q, want line %d field %q: %v", fe.File, fe.Line, fe.Field, c.line, c.field, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the message does not name the file: %v", err)
			}
		})
	}
}

func TestSkipBadCountsMalformedRows(t *testing.T) {
	path := writeTemp(t, "openb.csv", openbHeader+"p1,1,1,1,1000,,BE,Succeeded,10,200,10\np2,1,1,1,abc,,BE,Succeeded,10,20,10\np3,1,1,1,1000,,BE,Succeeded,15,300,15\n")
	f, _ := Lookup("alibaba2023")
	_, err := Convert(f, []string{path}, withGPUs(Options{}), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--skip-bad") {
		t.Errorf("the error should say --skip-bad goes on: %v", err)
	}
	tr, s := convert(t, "alibaba2023", Options{SkipBad: true}, path)
	if len(tr.Jobs) != 2 {
		t.Errorf("%d jobs, want 2", len(tr.Jobs))
	}
	checkDropped(t, s, 3, map[string]int{DropBad: 1})
}

func TestFilters(t *testing.T) {
	since, until := 1100.0, 1500.0
	tr, s := convert(t, "alibaba2023", Options{Since: &since, Until: &until}, "openb_pod_list_sample.csv")
	if ids := jobIDs(tr); ids != "openb-pod-9003 openb-pod-9002" {
		t.Errorf("window [1100, 1500): %s", ids)
	}
	// 9001 (1000) is before; 9006 (1500) is at --until, outside, 9007 after; 9004 and 9005 are
	// dropped for what they are before the window is looked at.
	checkDropped(t, s, 7, map[string]int{DropBefore: 1, DropAfter: 2, DropNoGPU: 1, DropNeverRan: 1})
	if tr.Jobs[0].ArrivalS != 0 || tr.Jobs[1].ArrivalS != 200 {
		t.Errorf("arrivals are relative to the first kept job: %v, %v", tr.Jobs[0].ArrivalS, tr.Jobs[1].ArrivalS)
	}

	tr, s = convert(t, "alibaba2023", Options{Statuses: []string{"Running", "failed"}, Limit: 2}, "openb_pod_list_sample.csv")
	if ids := jobIDs(tr); ids != "openb-pod-9003 openb-pod-9002" {
		t.Errorf("--status Running,failed --limit 2: %s", ids)
	}
	// 9006 (Failed) ran 10 s: too short, so the limit keeps all that is left.
	checkDropped(t, s, 7, map[string]int{DropStatus: 2, DropShort: 1})

	tr, _ = convert(t, "alibaba2023", Options{Model: "resnet50", Batch: 50, Device: &GPU{Name: "P100", CapacityMiB: 14336, Speed: 1}}, "openb_pod_list_sample.csv")
	for _, j := range tr.Jobs {
		if j.Model != "resnet50" || j.Batch != 50 {
			t.Errorf("--model resnet50 --batch 50: %s is %s/%d", j.ID, j.Model, j.Batch)
		}
	}
	// --device p100: the V100 pod's 995 s are P100 seconds now.
	want := int(math.Round((995 - tr.Jobs[1].Profile.StartupS) / tr.Jobs[1].Profile.IterS))
	if tr.Jobs[1].ID != "openb-pod-9003" || tr.Jobs[1].Iterations != want {
		t.Errorf("--device p100: %s has %d iterations, want %d", tr.Jobs[1].ID, tr.Jobs[1].Iterations, want)
	}
}

func jobIDs(tr *workload.Trace) string {
	var ids []string
	for _, j := range tr.Jobs {
		ids = append(ids, j.ID)
	}
	return strings.Join(ids, " ")
}

func TestMemoryRequestAndJSONL(t *testing.T) {
	tr, _ := convert(t, "alibaba2023", Options{Memory: MemoryRequest, Output: "jsonl"}, "openb_pod_list_sample.csv")
	j := tr.Jobs[2]
	if j.ID != "openb-pod-9002" || j.PersistentMiB == nil || j.EphemeralMiB == nil {
		t.Fatalf("want 9002 with inline memory: %+v", j)
	}
	// 220 milli of the P100's 14,336 MiB, split as googlenet/100 splits its peak.
	if got := *j.PersistentMiB + *j.EphemeralMiB; math.Abs(got-0.22*14336) > 0.1 {
		t.Errorf("memory %v MiB, want %v", got, 0.22*14336)
	}
	if j.Profile.PeakMiB != *j.PersistentMiB+*j.EphemeralMiB {
		t.Errorf("the job's profile should carry its own memory: %+v", j.Profile)
	}
}

func TestUnknownOptionsAreErrors(t *testing.T) {
	f, _ := Lookup("alibaba2023")
	file := filepath.Join("testdata", "openb_pod_list_sample.csv")
	for _, o := range []Options{{Memory: "lots"}, {Output: "xml"}, {Model: "resnet50", Batch: 33}, {Device: &GPU{Name: "k80"}}, {Limit: -1}} {
		if _, err := Convert(f, []string{file}, withGPUs(o), &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
	if _, err := Lookup("borg"); err == nil || !strings.Contains(err.Error(), "alibaba2023") {
		t.Errorf("an unknown format should list the known ones: %v", err)
	}
}

// lineReader turns offsets into lines also after it has let go of the bytes
// before its window.
func TestLineReader(t *testing.T) {
	defer func(w int) { lineWindow = w }(lineWindow)
	lineWindow = 64
	var text strings.Builder
	var starts []int64 // offset where each line begins
	for i := range 500 {
		starts = append(starts, int64(text.Len()))
		text.WriteString(strings.Repeat("x", i%13) + "\n")
	}
	lr := &lineReader{r: strings.NewReader(text.String()), curLine: 1}
	buf := make([]byte, 7)
	read := int64(0)
	for i, off := range starts {
		for read <= off {
			n, _ := lr.Read(buf)
			read += int64(n)
		}
		if got := lr.lineAt(off); got != i+1 {
			t.Fatalf("offset %d: line %d, want %d", off, got, i+1)
		}
		if i > 0 && off-starts[i-1] < 32 {
			if got := lr.lineAt(starts[i-1]); got != i {
				t.Fatalf("back to offset %d: line %d, want %d", starts[i-1], got, i)
			}
		}
	}
	if lr.lineAt(0) != 0 {
		t.Error("an offset no longer held should give line 0")
	}
}

// Writing to a file streams a sorted source and starts over, buffered, on an
// unsorted one; either way the file holds what a buffer gets, and the counts agree.
func TestStreamingToAFileMatchesBuffered(t *testing.T) {
	fixtures := map[string][]string{
		"alibaba2023": {"openb_pod_list_sample.csv"},
		"pai2020":     {"pai_task_table.csv", "pai_job_table.csv"},
		"philly":      {"cluster_job_log.json"},
		"helios":      {"cluster_log.csv"},
		"tiresias":    {"tiresias_jobs.csv"},
		"sia":         {"sia_workload.csv"},
	}
	sorted := map[string]bool{"helios": true, "tiresias": true}
	for format, names := range fixtures {
		for _, o := range []Options{{Lengths: siaLengths}, {Limit: 1, Lengths: siaLengths}, {Output: "jsonl", Memory: MemoryRequest, Lengths: siaLengths}, {Censored: Keep, Short: Keep, Lengths: siaLengths}} {
			var files []string
			for _, n := range names {
				files = append(files, filepath.Join("testdata", n))
			}
			f, _ := Lookup(format)
			var buf bytes.Buffer
			want, err := Convert(f, files, withGPUs(o), &buf)
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Convert(f, files, withGPUs(o), out)
			out.Close()
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(out.Name())
			if !bytes.Equal(data, buf.Bytes()) {
				t.Errorf("%s %+v: the file differs from the buffer:\n%s\nwant\n%s", format, o, data, buf.String())
			}
			if got.Streamed != sorted[format] {
				t.Errorf("%s %+v: streamed %v, want %v", format, o, got.Streamed, sorted[format])
			}
			got.Streamed = false
			if got.Rows != want.Rows || got.Kept != want.Kept || got.FirstSubmitS != want.FirstSubmitS || len(got.Dropped) != len(want.Dropped) {
				t.Errorf("%s %+v: counts %+v, buffered %+v", format, o, got, want)
			}
			for r, n := range want.Dropped {
				if got.Dropped[r] != n {
					t.Errorf("%s %+v: dropped %q %d, buffered %d", format, o, r, got.Dropped[r], n)
				}
			}
		}
	}
}

// siaLengths sizes the fixtures' Sia applications.
var siaLengths = map[string]float64{"cifar10": 1800, "imagenet": 36000, "ncf": 900, "bert": 3600, "deepspeech2": 7200, "yolov3": 14400}

// Under --memory request every job's memory adds up to its share of its device.
func TestMemoryRequestPerFormat(t *testing.T) {
	const p100, v100 = 14336, 28672
	cases := []struct {
		format string
		files  []string
		mib    map[string]float64
	}{
		{"alibaba2023", []string{"openb_pod_list_sample.csv"}, map[string]float64{"openb-pod-9001": p100,
			"openb-pod-9003": p100 / 2, "openb-pod-9002": 0.22 * p100, "openb-pod-9007": p100}},
		{"pai2020", []string{"pai_task_table.csv"}, map[string]float64{"job9b02/worker": v100, "job9a01/tensorflow": p100 / 2, "job9c03/worker": p100}},
		{"philly", []string{"cluster_job_log.json"}, map[string]float64{"application_9_0001": p100, "application_9_0003": p100}},
		{"helios", []string{"cluster_log.csv"}, map[string]float64{"9000001": p100, "9000002": p100}},
		{"tiresias", []string{"tiresias_jobs.csv"}, map[string]float64{"0": p100, "1": p100, "2": p100}},
		{"sia", []string{"sia_workload.csv"}, map[string]float64{"cifar10-0": p100, "bert-2": p100, "imagenet-1": p100, "ncf-3": p100}},
	}
	for _, c := range cases {
		tr, _ := convert(t, c.format, Options{Memory: MemoryRequest, Lengths: siaLengths}, c.files...)
		if len(tr.Jobs) != len(c.mib) {
			t.Errorf("%s: %d jobs, want %d", c.format, len(tr.Jobs), len(c.mib))
		}
		for _, j := range tr.Jobs {
			if j.PersistentMiB == nil || j.EphemeralMiB == nil {
				t.Errorf("%s %s: no inline memory", c.format, j.ID)
				continue
			}
			if got, want := *j.PersistentMiB+*j.EphemeralMiB, c.mib[j.ID]; math.Abs(got-want) > 0.11 {
				t.Errorf("%s %s: %v MiB, want %v", c.format, j.ID, got, want)
			}
		}
	}
}

// Alibaba's gpu_spec "nan" (or empty) is no constraint, as the trace's README
// says: such a pod is timed on the resolver's default GPU, and neither counted
// as an unknown type nor warned of.
func TestImportGPUSpecNaNIsNoConstraint(t *testing.T) {
	src := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"p1,8000,16384,1,1000,nan,BE,Succeeded,0,3600,0\n" +
		"p2,8000,16384,1,1000,NaN,BE,Succeeded,10,3610,10\n" +
		"p3,8000,16384,1,1000,,BE,Succeeded,20,3620,20\n" +
		"p4,8000,16384,1,1000,V100M32,BE,Succeeded,30,3630,30\n"
	file := filepath.Join(t.TempDir(), "pods.csv")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	gpuFor := func(gpuType string) (GPU, error) {
		asked = append(asked, gpuType)
		return testGPUFor(gpuType)
	}
	tr, s := convert(t, "alibaba2023", Options{GPUFor: gpuFor, GPUModels: true}, file)
	if len(s.UnknownGPUs) != 0 {
		t.Errorf("unknown GPU types %v: want none (nan is no constraint)", s.UnknownGPUs)
	}
	var summary strings.Builder
	s.Summary(&summary)
	if strings.Contains(summary.String(), "warning") {
		t.Errorf("the summary warns:\n%s", summary.String())
	}
	for _, a := range asked {
		if a != "" && a != "V100M32" {
			t.Errorf("the resolver was asked for GPU type %q: want \"\" (the default) for nan", a)
		}
	}
	if len(tr.Jobs) != 4 {
		t.Fatalf("%d jobs, want 4", len(tr.Jobs))
	}
	// The same length on the P100 (nan, empty) gives the same iterations; on
	// the V100 it does not; only p4 is constrained.
	byID := map[string]workload.Job{}
	for _, j := range tr.Jobs {
		byID[j.ID] = j
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		if j := byID[id]; j.Iterations != byID["p3"].Iterations || len(j.GPUModels) != 0 {
			t.Errorf("%s: %d iterations, models %v; want p3's %d and none", id, j.Iterations, j.GPUModels, byID["p3"].Iterations)
		}
	}
	if j := byID["p4"]; j.Iterations == byID["p3"].Iterations || len(j.GPUModels) != 1 {
		t.Errorf("p4 (V100M32): %d iterations, models %v; want other than p3's %d (the P100's) and [V100M32]", j.Iterations, j.GPUModels, byID["p3"].Iterations)
	}
}
