package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAdmissionLeavesNothingThatFits checks what admission by classes must keep
// from a scan of every waiting job: after each Decide, no waiting job could be
// placed (the first one, when the mode admits in order), under every registered
// mode and policy, on one GPU and on three, with gangs, through random arrivals,
// iterations and departures.
func TestAdmissionLeavesNothingThatFits(t *testing.T) {
	for _, m := range ModeNames() {
		for _, name := range Accepts(m) {
			for _, gpus := range []int{1, 3} {
				p, err := Compose(m, name, DefaultModeParams())
				if err != nil {
					t.Fatal(err)
				}
				s, err := NewNode(p, Uniform(gpus, 1000))
				if err != nil {
					t.Fatal(err)
				}
				checkAdmission(t, fmt.Sprintf("%s/%s on %d GPUs", m, name, gpus), s, uint64(len(name)*gpus))
			}
		}
	}
}

func checkAdmission(t *testing.T, name string, s *Scheduler, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	sizes := [][2]float64{{100, 50}, {300, 200}, {50, 10}, {400, 200}, {100, 50}}
	var alive []string
	now := time.Duration(0)
	for step := range 400 {
		now += time.Millisecond
		switch r := rng.IntN(10); {
		case r < 5:
			sz := sizes[rng.IntN(len(sizes))]
			j := Job{ID: fmt.Sprintf("j%d", step), Arrival: now, Persistent: sz[0], Ephemeral: sz[1], Declared: time.Second}
			if rng.IntN(8) == 0 && s.GPUCount() > 1 {
				j.GPUs = 2
			}
			if err := s.Arrive(now, j); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			alive = append(alive, j.ID)
		case len(alive) > 0:
			i := rng.IntN(len(alive))
			if err := s.Leave(now, alive[i]); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			alive = append(alive[:i], alive[i+1:]...)
		}
		if _, err := s.Decide(now); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, id := range s.Waiting() {
			if l, _ := s.place(s.jobs[id].job, s.GPUs()); l != nil {
				t.Fatalf("%s, step %d: job %s waits, but fits (waiting: %v)", name, step, id, s.Waiting())
			}
			if s.policy.AdmitInOrder {
				break
			}
		}
		if got, want := s.WaitingCount(), len(s.Waiting()); got != want {
			t.Fatalf("%s: WaitingCount %d, Waiting lists %d", name, got, want)
		}
	}
}

// A KeyOrder's Less is exactly the order of its keys: the ready queues trust it.
func TestKeyOrdersAgreeWithLess(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	view := func() JobView {
		return JobView{Seq: rng.IntN(50), Declared: time.Duration(rng.IntN(1000)), Attained: time.Duration(rng.IntN(1000)),
			RequestSeq: uint64(rng.IntN(50)), Priority: rng.IntN(3)}
	}
	// Attained times across LAS's thresholds (0 to 20 min), on the edges too.
	lasView := func() JobView {
		v := view()
		switch rng.IntN(3) {
		case 0:
			v.Attained = time.Duration(rng.Int64N(int64(20 * time.Minute)))
		case 1:
			v.Attained = []time.Duration{0, 30 * time.Second, 2 * time.Minute, 8 * time.Minute}[rng.IntN(4)] - time.Duration(rng.IntN(2))
		}
		return v
	}
	for _, o := range []KeyOrder{ByArrival{}, ByRequest{}, ByRemaining{}, ByAttained{}, DefaultLAS()} {
		gen := view
		if _, las := o.(LAS); las {
			gen = lasView
		}
		for range 2000 {
			a, b := gen(), gen()
			if o.Less(a, b) != (o.Key(a) < o.Key(b)) {
				t.Fatalf("%T: Less(%+v, %+v) = %v, keys %d and %d", o, a, b, o.Less(a, b), o.Key(a), o.Key(b))
			}
		}
	}
}
