package server_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
)

// TestFairIgnoresLyingDurations: under fair, a job that reports tiny iteration
// durations must not get more of the GPU than an honest job whose iterations
// take as long. The daemon's own clock (grant to end) is what counts, so the two
// alternate. Before, the liar got hundreds of iterations for each of the honest
// job's.
func TestFairIgnoresLyingDurations(t *testing.T) {
	d := start(t, "fair", 14000, nil)
	honest := open(t, d, "honest", 10, 10, 1)
	liar := open(t, d, "liar", 10, 10, 1)
	const iter = 3 * time.Millisecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(s *client.Session, report time.Duration) {
		defer wg.Done()
		if err := s.Begin(); err != nil {
			t.Error(err)
			return
		}
		for {
			client.Wait(iter)
			select {
			case <-stop:
				s.End(report, 0)
				s.Close(true)
				return
			default:
			}
			if err := s.Next(report, 0); err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(2)
	go loop(honest, iter)
	go loop(liar, time.Nanosecond)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	var order []string
	n := map[string]int{}
	var attained = map[string]float64{}
	d.log.mu.Lock()
	for _, e := range d.log.ev {
		if e.Kind == eventlog.IterStart {
			order = append(order, e.Job)
			n[e.Job]++
		}
		if e.Kind == eventlog.IterEnd {
			attained[e.Job] += e.GPU
		}
	}
	d.log.mu.Unlock()
	if n["honest"] < 10 {
		t.Fatalf("honest job ran %d iterations in 1 s of 3 ms iterations", n["honest"])
	}
	// fair evens out the GPU time the daemon measured, whatever the liar said:
	// had it believed the liar's 1 ns, the liar would have run nearly every
	// iteration and its measured time would be many times the honest job's. The
	// time, not the count: on a loaded machine a worker descheduled in the middle
	// of an iteration makes that iteration long, and fair then gives the other
	// job a few in a row.
	if r := attained["liar"] / attained["honest"]; r > 2 || r < 0.5 {
		t.Errorf("liar %d iterations, %.3f s; honest %d, %.3f s (ratio %.2f): fair must share by the daemon's clock",
			n["liar"], attained["liar"], n["honest"], attained["honest"], r)
	}
	// They alternate: the lane goes to the other job at some boundaries.
	switches := 0
	for i := 1; i < len(order); i++ {
		if order[i] != order[i-1] {
			switches++
		}
	}
	if switches < 4 {
		t.Errorf("the lane switched jobs %d times in %d iteration boundaries; two equal jobs under fair alternate", switches, len(order)-1)
	}
	// Attained GPU time is what the daemon measured: at least the 3 ms each
	// iteration took, whatever the liar said.
	if a := attained["liar"] / float64(n["liar"]); a < iter.Seconds()*0.9 {
		t.Errorf("liar's logged GPU time %.6f s per iteration; the daemon measured at least %v", a, iter)
	}
}

// TestZeroMemoryJobsHaveAFloor: jobs that declare no memory are given the floor
// (1 MiB each of persistent and ephemeral) under pack, so they cannot open lanes
// without bound: on 100 MiB, at most 100 / ((1.1 + 1) * 1.05) = 45 lanes.
func TestZeroMemoryJobsHaveAFloor(t *testing.T) {
	d := start(t, "pack", 100, nil)
	for i := range 60 {
		c := rawConn(t, d)
		c.sendBytes(frame(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"z%d","persistent_mib":0,"ephemeral_mib":0}`, i)))
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(d.Sessions()) < 60 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	d.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, "\nsalus_lanes 45\n") || !strings.Contains(body, "\nsalus_admission_queue 15\n") {
		t.Errorf("want 45 lanes and 15 jobs waiting:\n%s", grep(body, "salus_lanes ", "salus_admission_queue "))
	}
	if e, ok := d.log.find(eventlog.Arrive, "z0"); !ok || e.PersistentMiB != 1 || e.EphemeralMiB != 1 {
		t.Errorf("arrive event %+v: the log should show the floor the daemon accounts", e)
	}
}

func grep(text string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
