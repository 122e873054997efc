package core

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Yeses, which halves, says yes to as many boundaries as Next does one by
// one, and leaves the probe where Next leaves it: every policy whose order
// only loses a running job its lead or only gains it, with ready jobs that
// have had more or less GPU time, of another priority, with quanta, at random.
func TestYesesIsNextBoundaryByBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 42))
	cases := [][2]string{{"salus", "fair"}, {"salus", "las"}, {"salus", "fcfs"}, {"salus", "wfair"}, {"salus", "floor"},
		{"salus", "pack"}, {"suspend", "fifo"}, {"suspend", "srtf"}, {"suspend", "fair"}, {"suspend", "las"}}
	answered, cut := 0, 0 // cut: a no came before the n-th boundary
	for _, c := range cases {
		p, err := Compose(c[0], c[1], DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 200 {
			s := New(p, 1000)
			ids := []string{"a", "b", "c"}
			for i, id := range ids {
				j := Job{ID: id, Persistent: 10, Ephemeral: 10, Declared: time.Duration(1+rng.IntN(600)) * time.Second,
					Share: float64(1 + rng.IntN(3)), Priority: rng.IntN(4) / 3}
				if err := s.Arrive(time.Duration(i), j); err != nil {
					t.Fatal(err)
				}
			}
			now := 3 * time.Nanosecond
			// Run a few iterations so that the jobs have attained different times.
			for range 1 + rng.IntN(6) {
				for _, id := range ids {
					if _, err := s.find(id, running); err == nil {
						if err := s.IterationEnd(now, id, time.Duration(1+rng.IntN(40))*time.Second); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := s.find(id, idle, holding); err == nil {
						if err := s.Request(now, id); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := s.Decide(now); err != nil {
					t.Fatal(err)
				}
				now += time.Duration(1+rng.IntN(50)) * time.Second
			}
			var run string
			for _, id := range ids {
				if _, err := s.find(id, running); err == nil {
					run = id
				}
			}
			if run == "" {
				continue
			}
			iter := time.Duration(1+rng.IntN(20000)) * time.Millisecond
			n := rng.IntN(300)
			from := now + iter*time.Duration(rng.IntN(3))
			at := func(k int) (time.Duration, time.Duration) {
				return from + time.Duration(k-1)*iter, time.Duration(k) * iter
			}
			slow, ok := s.Probe(run)
			if !ok {
				continue
			}
			fast := slow
			got, ok := fast.Yeses(n, at)
			if !ok {
				continue
			}
			answered++
			want := 0
			for ; want < n && slow.Next(from+time.Duration(want)*iter, iter); want++ {
			}
			if want < n {
				cut++
			}
			if got != want || fast.v != slow.v || fast.req != slow.req {
				t.Fatalf("%s/%s trial %d: Yeses took %d boundaries (view %+v), Next %d (view %+v)", c[0], c[1], trial, got, fast.v, want, slow.v)
			}
		}
	}
	if answered < 500 || cut < answered/10 || cut > answered*9/10 {
		t.Fatalf("Yeses answered %d probes, %d of them cut by a no: want most of 2000, and both kinds", answered, cut)
	}
	t.Logf("%d probes answered, %d cut by a no", answered, cut)
}
