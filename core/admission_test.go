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
				checkAdmission(t, fmt.Sprintf("%s/%s on %d GPUs", m, name, gpus), s, uint64(len(name)*gpus), nil)
			}
		}
	}
}

// TestPolicyAdmission checks admission=policy (admission.go) on random seeds,
// under every registered mode and policy, on one GPU and on three, with random
// declared times (0 to 60 ms, 0 included) and priorities (0 to 2): after each
// Decide, no waiting job could be placed, or, when some job starves, the
// earliest starving job could not (it blocks every other); and whenever a job B is
// admitted at t while a job A that arrived before B still waits, A has waited
// less than K x its declared time (t - arrival(A) < K x declared(A)): no job is
// passed over after it has waited K x its length.
func TestPolicyAdmission(t *testing.T) {
	for _, k := range []float64{0.5, 2} {
		mp := DefaultModeParams()
		mp.Admission, mp.StarveFactor = AdmitByPolicy, k
		for _, m := range ModeNames() {
			for _, name := range Accepts(m) {
				for _, gpus := range []int{1, 3} {
					for seed := range uint64(4) {
						p, err := Compose(m, name, mp)
						if err != nil {
							t.Fatal(err)
						}
						s, err := NewNode(p, Uniform(gpus, 1000))
						if err != nil {
							t.Fatal(err)
						}
						rng := rand.New(rand.NewPCG(seed, 11))
						vary := func(j *Job) {
							j.Declared = time.Duration(rng.IntN(61)) * time.Millisecond
							j.Priority = rng.IntN(3)
						}
						checkAdmission(t, fmt.Sprintf("%s/%s on %d GPUs, K=%g, seed %d", m, name, gpus, k, seed), s, seed*31+uint64(gpus), vary)
					}
				}
			}
		}
	}
}

// checkAdmission drives s with random arrivals and departures and checks what
// admission must keep after each Decide; vary, when set, gives each job its
// declared time and priority (and policy-ordered admission is checked too).
func checkAdmission(t *testing.T, name string, s *Scheduler, seed uint64, vary func(*Job)) {
	t.Helper()
	type arrival struct {
		at       time.Duration
		declared time.Duration
		seq      int
	}
	arrived := map[string]arrival{}
	k := s.policy.Admission.StarveFactor
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
			if vary != nil {
				vary(&j)
			}
			arrived[j.ID] = arrival{now, j.Declared, len(arrived)}
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
		before := s.Waiting()
		ds, err := s.Decide(now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		admitted := map[string]bool{}
		for _, d := range ds {
			if d.Action != Admit {
				continue
			}
			admitted[d.Job] = true
			b := arrived[d.Job]
			for _, id := range before {
				a := arrived[id]
				if a.seq < b.seq && !admitted[id] && float64(now-a.at) >= k*float64(a.declared) && s.policy.Admission.ByPolicy {
					t.Fatalf("%s, step %d: %s admitted at %v ahead of %s, which arrived at %v with %v declared: waited %gx its length",
						name, step, d.Job, now, id, a.at, a.declared, float64(now-a.at)/float64(a.declared))
				}
			}
		}
		check := s.Waiting()
		for _, id := range check {
			if a := arrived[id]; s.policy.Admission.ByPolicy && float64(now-a.at) >= k*float64(a.declared) {
				// The earliest starving job must not fit; it blocks the others.
				check = []string{id}
				break
			}
		}
		for _, id := range check {
			js := s.jobs[id]
			if l, _ := s.place(js.job(), js.view.need.class); l != nil {
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
