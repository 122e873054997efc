package metrics

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

func TestResultFromAHandWrittenLog(t *testing.T) {
	// Job a holds the GPU from 0 (exclusive); b arrives at 1, starts up 2 s off the GPU
	// and gets its first iteration at 10: its queuing is 10 - 2 - 1 = 7.
	log := `{"t":0,"ev":"arrive","job":"a","startup_s":1}
{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100,"holds_gpu":true}
{"t":0,"ev":"memory","lane":0,"lane_mib":100,"jobs":1}
{"t":1,"ev":"arrive","job":"b","startup_s":2}
{"t":1,"ev":"iter_start","job":"a","lane":0}
{"t":5,"ev":"iter_end","job":"a","lane":0,"gpu_s":4}
{"t":5,"ev":"finish","job":"a"}
{"t":5,"ev":"admit","job":"b","lane":1,"lane_mib":50}
{"t":5,"ev":"memory","lane":1,"lane_mib":50,"jobs":1}
{"t":10,"ev":"iter_start","job":"b","lane":1}
{"t":12,"ev":"iter_end","job":"b","lane":1,"gpu_s":2}
{"t":12,"ev":"finish","job":"b"}
`
	c := NewCollector()
	feed(t, c, log)
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("makespan", r.MakespanS, 12)
	check("avg JCT", r.AvgJCTS, (5+11)/2.0)
	check("p95 JCT", r.P95JCTS, 11) // index int(0.95*2) = 1 of [5, 11]
	check("avg queuing", r.AvgQueuingS, (0+7)/2.0)
	check("GPU busy", r.GPUBusy, 6.0/12)
	check("peak memory", r.PeakMemoryMiB, 150)
	if r.Completion[0].ID != "a" || r.Completion[1].ID != "b" {
		t.Errorf("completion order %v", r.Completion)
	}
}

func TestPercentileIsThePapersIndex(t *testing.T) {
	xs := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	if got := Percentile(xs, 0.95); got != 10 { // index int(9.5) = 9
		t.Errorf("p95 = %v", got)
	}
	if got := Percentile(xs, 0.5); got != 6 { // index 5
		t.Errorf("p50 = %v", got)
	}
}

func TestUnfinishedRunIsAnError(t *testing.T) {
	c := NewCollector()
	c.Emit(eventlog.Event{Kind: eventlog.Arrive, Job: "a"})
	if _, err := c.Result(); err == nil || !strings.Contains(err.Error(), "never finished") {
		t.Errorf("error %v", err)
	}
}

// The log of a daemon killed mid-write: the results of every event before the cut
// line, and an error that says the last line was cut off.
func TestFromFileWithACutLastLine(t *testing.T) {
	lines := []string{
		`{"t":0,"ev":"run","policy":"fair","engine":"live"}`,
		`{"t":0,"ev":"arrive","job":"a"}`,
		`{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100}`,
		`{"t":1,"ev":"iter_start","job":"a","lane":0}`,
		`{"t":2,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}`,
		`{"t":2,"ev":"finish","job":"a"}`,
		`{"t":3,"ev":"arri`,
	}
	path := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := FromFile(path)
	if !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("error %v, want eventlog.ErrTruncated", err)
	}
	if res.Finished != 1 || res.MakespanS != 2 {
		t.Errorf("results before the cut: %+v", res)
	}
}

// The log of a daemon killed under load and restarted on the same log: a second
// run header, a job that resumed (re-admitted, keeping its arrival and its first
// service) and one that did not.
func TestARestartedDaemonsLog(t *testing.T) {
	lines := []string{
		`{"t":0,"ev":"run","policy":"fifo","engine":"live"}`,
		`{"t":0,"ev":"arrive","job":"a"}`,
		`{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100,"holds_gpu":true}`,
		`{"t":0,"ev":"memory","lane":0,"lane_mib":100,"jobs":1}`,
		`{"t":1,"ev":"arrive","job":"b"}`,
		`{"t":2,"ev":"iter_start","job":"a","lane":0}`,
		`{"t":3,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}`,
		`{"t":3,"ev":"iter_start","job":"a","lane":0}`,
		`{"t":3.5,"ev":"iter_st`,
		`{"t":3.5,"ev":"run","policy":"fifo","engine":"live","reason":"restart"}`,
		`{"t":3.5,"ev":"admit","job":"a","lane":0,"lane_mib":100,"holds_gpu":true,"reason":"recovered"}`,
		`{"t":3.5,"ev":"memory","lane":0,"lane_mib":100,"jobs":1}`,
		`{"t":4,"ev":"iter_start","job":"a","lane":0}`,
		`{"t":5,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}`,
		`{"t":5,"ev":"finish","job":"a"}`,
		`{"t":5,"ev":"memory","lane":0}`,
		`{"t":5,"ev":"admit","job":"b","lane":0,"lane_mib":100,"holds_gpu":true,"reason":"recovered"}`,
		`{"t":5,"ev":"memory","lane":0,"lane_mib":100,"jobs":1}`,
		`{"t":35,"ev":"lost","job":"b","reason":"not resumed after restart"}`,
		`{"t":35,"ev":"memory","lane":0}`,
	}
	path := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := FromFile(path)
	if !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("error %v, want the cut line reported", err)
	}
	if res.Jobs != 2 || res.Finished != 1 || res.Lost != 1 || res.PeakMemoryMiB != 100 {
		t.Errorf("results %+v", res)
	}
	a := res.Completion[0]
	if a.ID != "a" || a.ArrivalS != 0 || a.ServiceS != 0 || a.JCTS != 5 || a.GPUS != 2 {
		t.Errorf("job a %+v: keeps its arrival and first service across the restart", a)
	}
	// Busy: 2 to 3.5 (the iteration the crash cut ends at the restart), 4 to 5.
	if want := 2.5 / 35; math.Abs(res.GPUBusy-want) > 1e-9 {
		t.Errorf("GPU busy %v, want %v", res.GPUBusy, want)
	}
}

// A daemon's log runs on across restarts, so a job name can come again once its
// job ended: a new job. A name that arrives again while its job runs is an error.
func TestAJobNameComesAgain(t *testing.T) {
	c := NewCollector()
	for _, e := range []eventlog.Event{
		{T: 0, Kind: eventlog.Run}, {T: 0, Kind: eventlog.Arrive, Job: "a"}, {T: 1, Kind: eventlog.Finish, Job: "a"},
		{T: 5, Kind: eventlog.Run, Reason: "restart"}, {T: 5, Kind: eventlog.Arrive, Job: "a"}, {T: 8, Kind: eventlog.Finish, Job: "a"},
	} {
		c.Emit(e)
	}
	res, err := c.Result()
	if err != nil || res.Jobs != 2 || res.Finished != 2 || res.AvgJCTS != 2 {
		t.Errorf("%+v %v", res, err)
	}
	c.Emit(eventlog.Event{T: 9, Kind: eventlog.Arrive, Job: "a"})
	if _, err := c.Result(); err == nil || !strings.Contains(err.Error(), "1 of 3 jobs never finished") {
		t.Errorf("unfinished: %v", err)
	}
	c.Emit(eventlog.Event{T: 9, Kind: eventlog.Arrive, Job: "a"})
	if _, err := c.Result(); err == nil || !strings.Contains(err.Error(), "arrives twice") {
		t.Errorf("arrives twice: %v", err)
	}
}

// A split's lanes are memory like any other, and each defrag event counts once.
func TestDefragsAreCounted(t *testing.T) {
	log := `{"t":0,"ev":"arrive","job":"a"}
{"t":0,"ev":"arrive","job":"b"}
{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":300}
{"t":0,"ev":"memory","lane":0,"lane_mib":300,"jobs":1}
{"t":0,"ev":"admit","job":"b","lane":0,"lane_mib":300}
{"t":0,"ev":"memory","lane":0,"lane_mib":300,"jobs":2}
{"t":1,"ev":"defrag","lane":0,"lane_mib":200,"reason":"split","jobs":1}
{"t":1,"ev":"memory","lane":0,"lane_mib":200,"jobs":1}
{"t":1,"ev":"memory","lane":1,"lane_mib":250,"jobs":1}
{"t":1,"ev":"iter_start","job":"a","lane":0}
{"t":1,"ev":"iter_start","job":"b","lane":1}
{"t":2,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}
{"t":2,"ev":"finish","job":"a"}
{"t":2,"ev":"memory","lane":0,"jobs":0}
{"t":3,"ev":"iter_end","job":"b","lane":1,"gpu_s":2}
{"t":3,"ev":"finish","job":"b"}
{"t":3,"ev":"memory","lane":1,"jobs":0}
`
	c := NewCollector()
	feed(t, c, log)
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r.Defrags != 1 {
		t.Errorf("defrags = %d, want 1", r.Defrags)
	}
	if r.PeakMemoryMiB != 450 {
		t.Errorf("peak memory %v MiB, want 450 (the split lanes together)", r.PeakMemoryMiB)
	}
}

// feed sends the events of a hand-written log to c.
func feed(t *testing.T, c *Collector, log string) {
	t.Helper()
	if err := eventlog.Read(strings.NewReader(log), "hand", func(e eventlog.Event) error { c.Emit(e); return nil }); err != nil {
		t.Fatal(err)
	}
}
