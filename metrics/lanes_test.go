package metrics

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

// A lane that closed (its memory 0, no job) leaves nothing in the collector: a
// run of a lane a job (exclusive) would keep an entry for every job. Its
// memory still counts at its peak.
func TestClosedLanesAreNotKept(t *testing.T) {
	c := NewCollector()
	c.Emit(eventlog.Event{Kind: eventlog.Run})
	for i := range 100 {
		id, at := fmt.Sprint("j", i), float64(i)
		for _, e := range []eventlog.Event{
			{T: at, Kind: eventlog.Arrive, Job: id},
			{T: at, Kind: eventlog.Admit, Job: id, Lane: i},
			{T: at, Kind: eventlog.Memory, Lane: i, LaneMiB: 1000, Jobs: 1},
			{T: at, Kind: eventlog.IterStart, Job: id, Lane: i},
			{T: at + 1, Kind: eventlog.IterEnd, Job: id, Lane: i, GPU: 1},
			{T: at + 1, Kind: eventlog.Finish, Job: id},
			{T: at + 1, Kind: eventlog.Memory, Lane: i},
		} {
			c.Emit(e)
		}
	}
	if len(c.lanes) != 0 || len(c.laneGPUs) != 0 {
		t.Errorf("every lane closed, but the collector keeps %d lanes and the GPUs of %d", len(c.lanes), len(c.laneGPUs))
	}
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakMemoryMiB != 1000 || r.Finished != 100 {
		t.Errorf("peak memory %v MiB, %d finished; want 1000 MiB, 100", r.PeakMemoryMiB, r.Finished)
	}
}
