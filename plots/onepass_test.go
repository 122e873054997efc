package plots

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
)

var restarted = []eventlog.Event{
	{Kind: eventlog.Run, Policy: "fifo", Engine: "live"},
	{T: 0, Kind: eventlog.Arrive, Job: "a", Model: "m"},
	{T: 0, Kind: eventlog.Admit, Job: "a", Lane: 0, LaneMiB: 100},
	{T: 0, Kind: eventlog.Memory, Lane: 0, LaneMiB: 100, Jobs: 1},
	{T: 1, Kind: eventlog.Arrive, Job: "b", Model: "m"},
	{T: 2, Kind: eventlog.IterStart, Job: "a", Lane: 0},
	{T: 3, Kind: eventlog.IterEnd, Job: "a", Lane: 0, GPU: 1},
	{T: 3, Kind: eventlog.IterStart, Job: "a", Lane: 0},
	{T: 3.5, Kind: eventlog.Run, Policy: "fifo", Engine: "live", Reason: "restart"},
	{T: 3.5, Kind: eventlog.Admit, Job: "a", Lane: 0, LaneMiB: 100, Reason: "recovered"},
	{T: 3.5, Kind: eventlog.Memory, Lane: 0, LaneMiB: 100, Jobs: 1},
	{T: 4, Kind: eventlog.IterStart, Job: "a", Lane: 0},
	{T: 5, Kind: eventlog.IterEnd, Job: "a", Lane: 0, GPU: 1},
	{T: 5, Kind: eventlog.Finish, Job: "a"},
	{T: 5, Kind: eventlog.Memory, Lane: 0},
	{T: 35, Kind: eventlog.Lost, Job: "b", Reason: "not resumed after restart"},
}

// One pass over a run's events gives both its metrics and its pictures: a Recorder
// rides along with the Collector (and the file) in one eventlog.Sinks, and draws
// what reading the file back would.
func TestOnePassGivesMetricsAndPictures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl.gz")
	f, err := eventlog.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	c, r := metrics.NewCollector(), NewRecorder()
	sinks := eventlog.Sinks{c, r, f}
	for _, e := range restarted {
		sinks.Emit(e)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Log()
	if err != nil {
		t.Fatal(err)
	}
	read, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, read) {
		t.Errorf("one pass %+v\nread back %+v", got, read)
	}
	res, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := metrics.FromFile(path)
	if err != nil || !reflect.DeepEqual(res, fromFile) {
		t.Errorf("one pass %+v\nread back %+v (%v)", res, fromFile, err)
	}
	// The iteration the crash cut ends at the restart, as the metrics count it.
	a := got.Jobs[0]
	want := []Stretch{{FromS: 2, ToS: 3.5}, {FromS: 4, ToS: 5}}
	if !reflect.DeepEqual(a.Stretches, want) {
		t.Errorf("stretches of a %+v, want %+v", a.Stretches, want)
	}
	if b := got.Jobs[1]; !b.Lost || b.EndS != 35 || len(b.Stretches) != 0 {
		t.Errorf("job b %+v", b)
	}
}
