package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fixedCost is a TurnCost of iterations of the same length.
type fixedCost struct {
	iter  time.Duration
	turns int
}

func (c fixedCost) Cost(_, n int) time.Duration { return time.Duration(n) * c.iter }
func (c fixedCost) Turns(int) int               { return c.turns }
func (c fixedCost) Within(_ int, d time.Duration) int {
	return min(int((d+c.iter-1)/c.iter), c.turns+1)
}

// Round-robin turns (fcfs) come out as the boundaries one by one would give
// them: the order of turns, the iterations each job ran, and who runs next;
// after Take, the next boundary goes on in the same order.
func TestTurnsGoRoundRobin(t *testing.T) {
	p, _ := Lookup("fcfs")
	s := New(p, 1000)
	for i, id := range []string{"a", "b", "c"} {
		if err := s.Arrive(time.Duration(i), Job{ID: id, Persistent: 10, Ephemeral: 10}); err != nil {
			t.Fatal(err)
		}
		if err := s.Request(time.Duration(i), id); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.Decide(2)
	if err != nil || len(ds) != 4 || ds[3].Action != Start || ds[3].Job != "a" {
		t.Fatalf("decisions %+v, %v: want a admitted with b and c, a started", ds, err)
	}
	var tu Turns
	if !s.Turns("a", &tu) {
		t.Fatal("a's lane does not take turns")
	}
	if ids := tu.Jobs(nil); len(ids) != 3 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" {
		t.Fatalf("turns of %v, want a, b, c", ids)
	}
	c := fixedCost{iter: 10, turns: 100}
	counts := make([]int, 3)
	// a's iteration ends at 12; turns b, c, a, b, c, a end by 72, b's next at 82.
	next, used := tu.Plan(c, 10, 65, counts)
	if next != 1 || used != 60 || counts[0] != 2 || counts[1] != 2 || counts[2] != 2 {
		t.Fatalf("plan: next %d, %v, counts %v; want b next after 60 ns, 2 turns each", next, used, counts)
	}
	if err := tu.Take(72, c, counts, []time.Duration{30, 20, 20}, next); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"a": 3, "b": 2, "c": 2} {
		if v, _, _, _ := s.JobInfo(id); v.Iterations != want || v.Attained != time.Duration(10*want) {
			t.Fatalf("%s: %d iterations, %v, want %d", id, v.Iterations, v.Attained, want)
		}
	}
	// b's turn ends: c goes next, then a.
	for _, want := range []string{"c", "a", "b"} {
		running := map[string]string{"c": "b", "a": "c", "b": "a"}[want]
		if err := s.IterationEnd(82, running, 10); err != nil {
			t.Fatal(err)
		}
		if err := s.Request(82, running); err != nil {
			t.Fatal(err)
		}
		ds, err := s.Decide(82)
		if err != nil || len(ds) != 1 || ds[0].Job != want || ds[0].Previous != running {
			t.Fatalf("after %s: %+v, %v; want %s to start", running, ds, err, want)
		}
	}
}

// Under fair, turns go by least attained time, ties to the earlier arrival.
func TestTurnsGoByAttained(t *testing.T) {
	p, _ := Lookup("fair")
	s := New(p, 1000)
	for i, id := range []string{"a", "b"} {
		if err := s.Arrive(0, Job{ID: id, Persistent: 10, Ephemeral: 10}); err != nil {
			t.Fatal(err)
		}
		if err := s.Request(time.Duration(i), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Decide(1); err != nil {
		t.Fatal(err)
	}
	var tu Turns
	if !s.Turns("a", &tu) {
		t.Fatal("a's lane does not take turns")
	}
	c := fixedCost{iter: 10, turns: 100}
	counts := make([]int, 2)
	// a's iteration of 10 ends: b (attained 0) goes, then a and b at 10 each:
	// a, the earlier arrival; then b, a, b, ... Four turns fit in 45 ns.
	next, used := tu.Plan(c, 10, 45, counts)
	if used != 40 || counts[0] != 2 || counts[1] != 2 || next != 1 {
		t.Fatalf("plan: next %d, %v, counts %v; want b next after 40 ns, 2 turns each", next, used, counts)
	}
}

// prefixCost is a TurnCost of given iteration lengths, job by job.
type prefixCost struct{ sums [][]time.Duration } // sums[i][n]: job i's next n

func (c prefixCost) Cost(i, n int) time.Duration { return c.sums[i][n] }
func (c prefixCost) Turns(i int) int             { return len(c.sums[i]) - 2 }
func (c prefixCost) Within(i int, d time.Duration) int {
	n := 0
	for n < len(c.sums[i]) && n <= c.Turns(i) && c.sums[i][n] < d {
		n++
	}
	return n
}

// Plan gives what taking the turns one by one gives (NextTurn, while each
// ends within the budget and none is its job's last), under round-robin, by
// attained time and by attained time per unit of share (wfair; floor, with
// credits), over lanes of 2 to 40 jobs of iterations of their own lengths,
// attained times, shares and budgets drawn from a seed.
func TestPlanIsTurnByTurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for _, policy := range []string{"fcfs", "fair", "wfair", "floor"} {
		p, _ := Lookup(policy)
		for trial := range 300 {
			s := New(p, 1e9)
			n := 2 + rng.IntN(39)
			for i := range n {
				id := fmt.Sprint("j", i)
				if err := s.Arrive(time.Duration(i), Job{ID: id, Persistent: 1, Ephemeral: 1}); err != nil {
					t.Fatal(err)
				}
				if err := s.Request(time.Duration(i), id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Decide(time.Duration(n)); err != nil {
				t.Fatal(err)
			}
			var tu Turns
			if !s.Turns("j0", &tu) {
				t.Fatal("the lane does not take turns")
			}
			for _, js := range tu.jobs {
				js.view.Attained = time.Duration(rng.IntN(5000))
				if policy == "wfair" || policy == "floor" {
					n := *js.view.need // its own, not the shared one
					n.share = 0.25 + 3.75*rng.Float64()
					js.view.need = &n
				}
				if policy == "floor" {
					js.view.Credit = time.Duration(rng.IntN(3000))
				}
			}
			if !s.Turns("j0", &tu) { // with the views drawn
				t.Fatal("the lane does not take turns")
			}
			c := prefixCost{}
			for range tu.jobs {
				iter := time.Duration(1 + rng.IntN(300))
				sums := []time.Duration{0}
				for k := range 1 + rng.IntN(60) {
					sums = append(sums, sums[k]+iter+time.Duration(rng.IntN(3)))
				}
				c.sums = append(c.sums, sums)
			}
			running, budget := time.Duration(1+rng.IntN(300)), time.Duration(rng.IntN(40000))
			counts := make([]int, n)
			next, used := tu.Plan(c, running, budget, counts)
			// One by one.
			tu.Begin(running)
			want, wantUsed, taken := make([]int, n), time.Duration(0), 0
			for {
				i := tu.NextTurn(c, want, taken)
				if want[i] == c.Turns(i) {
					break
				}
				d := c.Cost(i, want[i]+1) - c.Cost(i, want[i])
				if wantUsed+d >= budget {
					break
				}
				wantUsed += d
				want[i]++
				taken++
			}
			wantNext := tu.NextTurn(c, want, taken)
			if next != wantNext || used != wantUsed || !slices.Equal(counts, want) {
				t.Fatalf("%s trial %d (%d jobs, budget %v): plan next %d, %v, counts %v; one by one next %d, %v, counts %v",
					policy, trial, n, budget, next, used, counts, wantNext, wantUsed, want)
			}
		}
	}
}
