package metrics

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

// TestClassesFromAHandWrittenLog: training job a (priority 1) and inference job q
// (priority 0) share a lane. a's second and third iterations each wait 1 s behind
// one of q's requests; q's requests, asked for at 1.5 and 4.5, start at 2 and 5
// (a's iterations run until then): each waits 0.5 s and is served in 1.5 s.
func TestClassesFromAHandWrittenLog(t *testing.T) {
	checkClasses(t, handLog, map[string]int{"a": 1, "q": 0})
}

// TestClassesFromTheLog: the priorities the arrive events carry give the same
// classes as the trace's.
func TestClassesFromTheLog(t *testing.T) {
	log := strings.Replace(handLog, `"job":"a","iterations":4`, `"job":"a","iterations":4,"priority":1`, 1)
	checkClasses(t, log, nil)
}

const handLog = `{"t":0,"ev":"arrive","job":"a","iterations":4}
{"t":0,"ev":"arrive","job":"q","kind":"infer","iterations":2}
{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100}
{"t":0,"ev":"admit","job":"q","lane":0,"lane_mib":100}
{"t":0,"ev":"iter_start","job":"a","lane":0}
{"t":2,"ev":"iter_end","job":"a","lane":0,"gpu_s":2}
{"t":2,"ev":"iter_start","job":"q","lane":0}
{"t":3,"ev":"iter_end","job":"q","lane":0,"gpu_s":1}
{"t":3,"ev":"served","job":"q","latency_s":1.5}
{"t":3,"ev":"iter_start","job":"a","lane":0}
{"t":5,"ev":"iter_end","job":"a","lane":0,"gpu_s":2}
{"t":5,"ev":"iter_start","job":"q","lane":0}
{"t":6,"ev":"iter_end","job":"q","lane":0,"gpu_s":1}
{"t":6,"ev":"served","job":"q","latency_s":1.5}
{"t":6,"ev":"finish","job":"q"}
{"t":6,"ev":"iter_start","job":"a","lane":0}
`

func checkClasses(t *testing.T, log string, priorities map[string]int) {
	t.Helper()
	c := NewCollector()
	c.SetClasses(priorities)
	feed(t, c, log)
	// a's fourth iteration follows its third at once, as a simulator's boundary.
	c.Boundary("a", 0, 0, 8, 2)
	c.Emit(eventlog.Event{T: 10, Kind: eventlog.IterEnd, Job: "a", GPU: 2})
	c.Emit(eventlog.Event{T: 10, Kind: eventlog.Finish, Job: "a"})
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 2 || r.Classes[0].Priority != 0 || r.Classes[1].Priority != 1 {
		t.Fatalf("classes %+v: want priorities 0 then 1", r.Classes)
	}
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	q, a := r.Classes[0], r.Classes[1]
	// q: requests at 1.5 and 4.5 (end less latency), started at 2 and 5.
	check("q waits", float64(q.Waits), 2)
	check("q mean wait", q.WaitMeanS, 0.5)
	check("q requests", float64(q.Requests), 2)
	check("q mean latency", q.LatencyMeanS, 1.5)
	check("q JCT", q.AvgJCTS, 6)
	check("q jobs per hour", q.JobsPerHour, 3600.0/6)
	check("q iterations per second", q.IterationsPerS, 2.0/6)
	// a: waits 1 (2 to 3), 1 (5 to 6), then 0 at the boundary at 8.
	check("a waits", float64(a.Waits), 3)
	check("a mean wait", a.WaitMeanS, 2.0/3)
	check("a p95 wait", a.WaitP95S, 1) // index int(0.95 x 3) = 2 of [0 1 1]
	check("a requests", float64(a.Requests), 0)
	check("a JCT", a.AvgJCTS, 10)
	check("a iterations per second", a.IterationsPerS, 4.0/10)
}

// TestNoClassesByDefault: without SetClasses the result has none (the default
// outputs stay as they were).
func TestNoClassesByDefault(t *testing.T) {
	c := NewCollector()
	c.Emit(eventlog.Event{Kind: eventlog.Arrive, Job: "a"})
	c.Emit(eventlog.Event{T: 1, Kind: eventlog.IterStart, Job: "a"})
	c.Emit(eventlog.Event{T: 2, Kind: eventlog.IterEnd, Job: "a", GPU: 1})
	c.Emit(eventlog.Event{T: 2, Kind: eventlog.Finish, Job: "a"})
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r.Classes != nil {
		t.Errorf("classes %+v without SetClasses", r.Classes)
	}
}

// TestWaitsOfAStretchAreNotMade: a stretch's iterations are as many waits of
// zero, counted, never made into a slice (a long trace has billions), with the
// mean and p95 those of the waits written out.
func TestWaitsOfAStretchAreNotMade(t *testing.T) {
	c := NewCollector()
	c.SetClasses(map[string]int{"a": 1})
	feed(t, c, `{"t":0,"ev":"arrive","job":"a","iterations":10000002}
{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100}
{"t":0,"ev":"iter_start","job":"a","lane":0}
{"t":1,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}
{"t":3,"ev":"iter_start","job":"a","lane":0}
{"t":10000003,"ev":"stretch","job":"a","lane":0,"iterations":10000000,"gpu_s":10000000}
{"t":10000004,"ev":"iter_end","job":"a","lane":0,"gpu_s":1}
{"t":10000004,"ev":"finish","job":"a"}
`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := c.Result()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	// 10,000,000 waits of 8 bytes would be 80 MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 10<<20 {
		t.Errorf("the result allocated %d bytes: the stretch's waits were made", alloc)
	}
	a := r.Classes[0]
	if a.Waits != 10000001 || a.WaitMeanS != 2.0/10000001 || a.WaitP95S != 0 {
		t.Errorf("waits %d, mean %v, p95 %v: want 10000001, 2/10000001, 0", a.Waits, a.WaitMeanS, a.WaitP95S)
	}
}

// TestWaitFiguresAreThoseOfTheWaits: the count, quantile and mean of waits
// taken one by one and as values with counts (a stretch's zeros, a stretch of
// turns) are those of the waits written out (Percentile), whatever the
// quantile; and the same waits taken in another order give the same figures,
// to the bit.
func TestWaitFiguresAreThoseOfTheWaits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var s classState
		var all []float64
		for range rng.IntN(20) {
			x := float64(rng.IntN(5)) / 3
			s.addWaits(x, 1)
			all = append(all, x)
		}
		for range rng.IntN(4) {
			w := eventlog.Wait{S: float64(rng.IntN(5)) / 3, N: 1 + rng.IntN(6)}
			s.addWaits(w.S, w.N)
			for range w.N {
				all = append(all, w.S)
			}
		}
		if len(all) == 0 {
			continue
		}
		q := rng.Float64()
		n, mean, quantile := waitFigures(s.waitCounts(), q)
		if n != len(all) || quantile != Percentile(all, q) || math.Abs(mean-sumOf(all)/float64(len(all))) > 1e-12 {
			t.Fatalf("%+v, q %v: %d waits, mean %v, quantile %v; want %d, %v, %v", s, q, n, mean, quantile, len(all), sumOf(all)/float64(len(all)), Percentile(all, q))
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		var ones classState
		for _, x := range all {
			ones.addWaits(x, 1)
		}
		if n2, mean2, q2 := waitFigures(ones.waitCounts(), q); n2 != n || mean2 != mean || q2 != quantile {
			t.Fatalf("%+v, q %v: %d, %v, %v one by one in another order; %d, %v, %v", s, q, n2, mean2, q2, n, mean, quantile)
		}
	}
}
