package traceimport

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

// importErr is the error of an import that should fail.
func importErr(t *testing.T, format string, o Options, files ...string) error {
	t.Helper()
	f, err := Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range files {
		if !strings.HasPrefix(p, "/") {
			files[i] = "testdata/" + p
		}
	}
	_, err = Convert(f, files, withGPUs(o), &bytes.Buffer{})
	if err == nil {
		t.Fatalf("import %s %v: want an error", format, files)
	}
	return err
}

// The pod list's clock starts at 0 with its first pod, which runs the longest;
// a pod Running at the cut (the file's latest time) was censored; a Pending pod
// has no scheduled time; one ran for less than its profile's start-up.
func TestImportAlibaba2023ClockCutAndShort(t *testing.T) {
	tr, s := convert(t, "alibaba2023", Options{}, "openb_pod_list_cut.csv")
	check(t, tr, []want{
		// Created and scheduled at 0: it ran, 12,500,000 s.
		{"openb-pod-0000", bigModel, bigBatch, 12500000, 1, 0, 1, 0},
		{"openb-pod-0002", bigModel, bigBatch, 1300000, 1, 9400000, 8, 0},
		// 220 milli of a P100: googlenet at 100.
		{"openb-pod-0003", "googlenet", 100, 300000, 1, 9600000, 1, 0},
		{"openb-pod-0007", bigModel, bigBatch, 1495, 1.4, 9900000, 1, 0},
	})
	checkDropped(t, s, 8, map[string]int{DropCensored: 1, DropNoGPU: 1, DropNeverRan: 1, DropShort: 1})
	checkShares(t, tr, map[string]share{"openb-pod-0000": {0, 0}, "openb-pod-0002": {2, 0}, "openb-pod-0003": {3, 0.22}, "openb-pod-0007": {1, 0}})

	// --censored keep runs pod 0001 to the cut; --short keep gives pod 0006 one
	// iteration; --max-gpus 4 drops the 8-GPU pod.
	tr, s = convert(t, "alibaba2023", Options{Censored: Keep, Short: Keep, MaxGPUs: 4}, "openb_pod_list_cut.csv")
	if ids := jobIDs(tr); ids != "openb-pod-0000 openb-pod-0001 openb-pod-0003 openb-pod-0007 openb-pod-0006" {
		t.Errorf("--censored keep --short keep --max-gpus 4: %s", ids)
	}
	checkDropped(t, s, 8, map[string]int{DropWider: 1, DropNoGPU: 1, DropNeverRan: 1})
	if s.Censored != 1 || s.Short != 1 {
		t.Errorf("censored %d, short %d kept: want 1 and 1", s.Censored, s.Short)
	}
	for _, j := range tr.Jobs {
		switch j.ID {
		case "openb-pod-0001":
			p := j.Profile
			if want := (12500000 - p.StartupS) / p.IterS; abs(float64(j.Iterations)-want) > 1 || j.Demand == nil || *j.Demand != 0.46 {
				t.Errorf("0001: %d iterations, demand %v: want %.0f (to the cut), 0.46", j.Iterations, j.Demand, want)
			}
		case "openb-pod-0006":
			if j.Iterations != 1 {
				t.Errorf("0006: %d iterations, want 1", j.Iterations)
			}
		}
	}
	var out strings.Builder
	s.Summary(&out)
	for _, w := range []string{"wider than --max-gpus", "1 kept jobs were still running when the trace was cut", "1 kept jobs ran for less than their profile's start-up"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the summary lacks %q:\n%s", w, out.String())
		}
	}

	// --qos keeps the classes named.
	tr, s = convert(t, "alibaba2023", Options{QoS: []string{"ls", "Guaranteed"}}, "openb_pod_list_cut.csv")
	if ids := jobIDs(tr); ids != "openb-pod-0000 openb-pod-0007" {
		t.Errorf("--qos LS,Guaranteed: %s", ids)
	}
	checkDropped(t, s, 8, map[string]int{DropQoS: 3})
}

// An unknown QoS class is a malformed row.
func TestImportAlibaba2023UnknownQoS(t *testing.T) {
	path := writeTemp(t, "openb.csv", openbHeader+"p1,1,1,1,1000,,Platinum,Succeeded,10,2000,10\n")
	var fe *workload.FieldError
	if err := importErr(t, "alibaba2023", Options{}, path); !errors.As(err, &fe) || fe.Field != "qos" || fe.Line != 2 {
		t.Errorf("want a qos field error on line 2: %v", err)
	}
}

// The multigpu pod lists give no times: said so, not "is this the right --format?".
func TestImportAlibaba2023ListWithoutTimes(t *testing.T) {
	err := importErr(t, "alibaba2023", Options{}, "openb_pod_list_multigpu50.csv")
	if !strings.Contains(err.Error(), "pod list without times") || !strings.Contains(err.Error(), "openb_pod_list_default.csv") || strings.Contains(err.Error(), "right --format") {
		t.Errorf("%v", err)
	}
}

// PAI's clock: a task started at 0.0 ran; one Running without an end is
// censored, run to the file's latest time with --censored keep.
func TestImportPAI2020ClockAndCensored(t *testing.T) {
	tr, s := convert(t, "pai2020", Options{}, "pai_task_table_clock0.csv")
	check(t, tr, []want{{"job0001/worker", bigModel, bigBatch, 3600, 1.4, 0, 1, 0}})
	checkDropped(t, s, 3, map[string]int{DropCensored: 1, DropNeverRan: 1})
	tr, s = convert(t, "pai2020", Options{Censored: Keep}, "pai_task_table_clock0.csv")
	check(t, tr, []want{
		{"job0001/worker", bigModel, bigBatch, 3600, 1.4, 0, 1, 0},
		{"job0002/worker", bigModel, bigBatch, 3480, 1.4, 120, 1, 0},
	})
	if s.Censored != 1 || s.CutS != 3600 {
		t.Errorf("censored %d to the cut %v: want 1 to 3600", s.Censored, s.CutS)
	}
}

// A file of another format with a header is named as such, not read as data.
func TestImportNamesTheFormatOfAWrongFile(t *testing.T) {
	for _, c := range []struct{ format, file, is string }{
		{"pai2020", "openb_pod_list_sample.csv", "alibaba2023"},
		{"pai2020", "cluster_log.csv", "helios"},
		{"alibaba2023", "tiresias_jobs.csv", "tiresias"},
		{"helios", "sia_workload_pollux.csv", "sia"},
	} {
		err := importErr(t, c.format, Options{}, c.file)
		if !strings.Contains(err.Error(), "give --format "+c.is) || strings.Contains(err.Error(), "--skip-bad") {
			t.Errorf("%s as %s: %v", c.file, c.format, err)
		}
	}
}

// Acme's timestamps carry their offset; its RUNNING jobs are censored.
func TestImportAcme(t *testing.T) {
	tr, s := convert(t, "helios", Options{}, "trace_seren.csv")
	check(t, tr, []want{
		{"5778001", bigModel, bigBatch, 117, 1, 0, 8, 0},
		// 00:23:58 is 336 s after 00:18:22.
		{"5778002", bigModel, bigBatch, 2693, 1, 336, 8, 0},
	})
	checkDropped(t, s, 5, map[string]int{DropNoGPU: 1, DropCensored: 1, DropNeverRan: 1})
	// Kept, the RUNNING job runs from its start (00:41:00) to the latest time of
	// the file's GPU jobs (01:09:04): 1,684 s, on 16 GPUs; --max-gpus 8 drops it.
	tr, _ = convert(t, "helios", Options{Censored: Keep}, "trace_seren.csv")
	check(t, tr, []want{
		{"5778001", bigModel, bigBatch, 117, 1, 0, 8, 0},
		{"5778002", bigModel, bigBatch, 2693, 1, 336, 8, 0},
		{"5778004", bigModel, bigBatch, 1684, 1, 1298, 16, 0},
	})
	_, s = convert(t, "helios", Options{Censored: Keep, MaxGPUs: 8}, "trace_seren.csv")
	checkDropped(t, s, 5, map[string]int{DropWider: 1})
	for _, v := range []string{"2023-03-01 00:18:22+08:00", "2023-02-28 16:18:22"} {
		if got, err := ParseTime(v); err != nil || got != 1677601102 {
			t.Errorf("ParseTime(%q) = %v, %v: want 1677601102", v, got, err)
		}
	}
}

// Helios without a state column imports; --status on it is an error saying so.
func TestImportHeliosWithoutState(t *testing.T) {
	path := writeTemp(t, "cluster_log.csv", "job_id,user,vc,gpu_num,cpu_num,node_num,submit_time,start_time,end_time,duration,queue\n"+
		"9000001,uAAAA,vcAAAA,1,2,1,2020-07-01 10:00:00,2020-07-01 10:00:30,2020-07-01 11:00:30,3600,30\n")
	tr, _ := convert(t, "helios", Options{}, path)
	check(t, tr, []want{{"9000001", bigModel, bigBatch, 3600, 1, 0, 1, 0}})
	if err := importErr(t, "helios", Options{Statuses: []string{"COMPLETED"}}, path); !strings.Contains(err.Error(), "no status column") {
		t.Errorf("--status without state: %v", err)
	}
}

// Philly: a job whose last attempt has no end is censored; --max-gpus drops the
// 4-GPU job.
func TestImportPhillyCensoredAndWide(t *testing.T) {
	tr, s := convert(t, "philly", Options{Censored: Keep, MaxGPUs: 2}, "cluster_job_log.json")
	// From 01:20:00 to the log's latest time, 02:13:30.
	check(t, tr, []want{
		{"application_9_0003", bigModel, bigBatch, 600, 1, 0, 1, 0},
		{"application_9_0004", bigModel, bigBatch, 3210, 1, 900, 1, 0},
	})
	checkDropped(t, s, 4, map[string]int{DropWider: 1, DropNeverRan: 1})
}

// Real Sia and Pollux workloads carry no length: --length sizes each
// application, and without it the import stops naming the flag.
func TestImportSiaLengths(t *testing.T) {
	err := importErr(t, "sia", Options{}, "sia_workload_pollux.csv")
	var fe *workload.FieldError
	if !errors.As(err, &fe) || fe.Line != 2 || fe.Field != "application" || !strings.Contains(err.Error(), "--length cifar10=SECONDS") {
		t.Errorf("without --length: %v", err)
	}
	err = importErr(t, "sia", Options{Lengths: map[string]float64{"cifar10": 1800}}, "sia_workload_pollux.csv")
	if !strings.Contains(err.Error(), `"imagenet"`) || !strings.Contains(err.Error(), "given for cifar10") {
		t.Errorf("an application --length lacks: %v", err)
	}
	tr, s := convert(t, "sia", Options{Lengths: siaLengths}, "sia_workload_pollux.csv")
	check(t, tr, []want{
		{"cifar10-0", bigModel, bigBatch, 1800, 1, 0, 1, 0},
		{"imagenet-1", bigModel, bigBatch, 36000, 1, 117, 4, 0},
		{"ncf-2", bigModel, bigBatch, 900, 1, 450, 1, 0},
		{"deepspeech2-3", bigModel, bigBatch, 7200, 1, 930, 2, 0},
		{"yolov3-4", bigModel, bigBatch, 14400, 1, 1288, 8, 0},
		{"bert-5", bigModel, bigBatch, 3600, 1, 1700, 1, 0},
	})
	checkDropped(t, s, 6, nil)
	if _, err := Convert(Format{}, nil, withGPUs(Options{Lengths: map[string]float64{"ncf": -1}}), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--length ncf=-1") {
		t.Errorf("a negative length: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A node list given to the importer is named as a node list, with the command
// that reads it, and the message of a header that lacks columns reads right.
func TestImportNamesANodeList(t *testing.T) {
	err := importErr(t, "alibaba2023", Options{}, "openb_node_list_gpu_node.csv")
	for _, w := range []string{"node list", "salus trace cluster --format alibaba2023-nodes", "salus trace import --cluster"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("node list as alibaba2023: %v, want %q", err, w)
		}
	}
	path := writeTemp(t, "odd.csv", "name,num_gpu,gpu_milli,creation_time\np1,1,1000,0\n")
	err = importErr(t, "alibaba2023", Options{}, path)
	if !strings.Contains(err.Error(), "lacks deletion_time, scheduled_time") || strings.Contains(err.Error(), "a alibaba2023") {
		t.Errorf("a header without times: %v", err)
	}
}
