package core

import (
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, name string) Policy {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runOrder has two admitted jobs each run n iterations of gpu seconds, and returns
// the order in which iterations started.
func runOrder(t *testing.T, p Policy, a, b Job, n int) []string {
	t.Helper()
	s := New(p, 14000)
	var order []string
	now := 0.0
	var started []Decision
	for _, j := range []Job{a, b} {
		ds, err := s.Arrive(now, j)
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, ds...)
	}
	left := map[string]int{a.ID: n, b.ID: n}
	for len(started) > 0 {
		d := started[0]
		started = started[1:]
		if d.Action == Admit {
			ds, err := s.Request(now, d.Job)
			if err != nil {
				t.Fatal(err)
			}
			started = append(started, ds...)
			continue
		}
		order = append(order, d.Job)
		now++
		if err := s.IterationEnd(now, d.Job, 1); err != nil {
			t.Fatal(err)
		}
		left[d.Job]--
		var ds []Decision
		var err error
		if left[d.Job] > 0 {
			ds, err = s.Request(now, d.Job)
		} else {
			ds, err = s.Leave(now, d.Job)
		}
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, ds...)
	}
	return order
}

func TestPolicyOrderAtIterationBoundaries(t *testing.T) {
	long := Job{ID: "long", Persistent: 100, Ephemeral: 100, Declared: 10}
	short := Job{ID: "short", Arrival: 0, Persistent: 100, Ephemeral: 100, Declared: 3}
	cases := []struct {
		policy string
		want   string
	}{
		{"fifo", "long long long short short short"},
		{"srtf", "long short short short long long"}, // short preempts at the first boundary
		{"fair", "long short long short long short"},
	}
	for _, c := range cases {
		got := strings.Join(runOrder(t, mustPolicy(t, c.policy), long, short, 3), " ")
		if got != c.want {
			t.Errorf("%s: order %q, want %q", c.policy, got, c.want)
		}
	}
}

func TestPackAlternatesWithinALane(t *testing.T) {
	// Two 9 GiB jobs cannot have a lane each on 14 GiB: the second joins the first's lane.
	a := Job{ID: "a", Persistent: 500, Ephemeral: 6000, Declared: 5}
	b := Job{ID: "b", Persistent: 500, Ephemeral: 6000, Declared: 5}
	got := strings.Join(runOrder(t, Pack(), a, b, 3), " ")
	if got != "a b a b a b" {
		t.Errorf("pack order %q, want alternation", got)
	}
}

func TestSalusLaneAdmission(t *testing.T) {
	s := New(Pack(), 14336)
	big := Job{ID: "big", Persistent: 1000, Ephemeral: 8000}
	mid := Job{ID: "mid", Persistent: 500, Ephemeral: 4100}
	huge := Job{ID: "huge", Persistent: 1000, Ephemeral: 9000}
	small := Job{ID: "small", Persistent: 100, Ephemeral: 100}
	for _, j := range []Job{big, mid, huge, small} {
		if _, err := s.Arrive(0, j); err != nil {
			t.Fatal(err)
		}
	}
	lanes := s.Lanes()
	// big gets (1.1*1000+8000)*1.05 = 9555; mid needs 4882 > 4781 free, so it joins
	// big's lane (1500 + 8000 <= 9555); huge fits nowhere; small gets its own lane.
	if len(lanes) != 2 || lanes[0].Jobs != 2 || lanes[1].Jobs != 1 {
		t.Fatalf("lanes %+v", lanes)
	}
	if w := s.Waiting(); len(w) != 1 || w[0] != "huge" {
		t.Fatalf("waiting %v, want [huge]", w)
	}
	for _, l := range lanes {
		if l.Used() > l.Size {
			t.Errorf("lane %d uses %v > size %v", l.ID, l.Used(), l.Size)
		}
	}
	// When big and mid leave, their lane closes and huge is admitted.
	s.Leave(1, "big")
	ds, _ := s.Leave(1, "mid")
	if len(ds) != 1 || ds[0].Action != Admit || ds[0].Job != "huge" || !ds[0].NewLane {
		t.Fatalf("after leave: %+v", ds)
	}
}

func TestBadCallsChangeNothing(t *testing.T) {
	s := New(Fair(), 1000)
	if _, err := s.Arrive(0, Job{ID: "a", Persistent: 10, Ephemeral: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Arrive(0, Job{ID: "a"}); err == nil {
		t.Error("duplicate id accepted")
	}
	if _, err := s.Arrive(0, Job{ID: "x", Persistent: 900, Ephemeral: 200}); err == nil {
		t.Error("job larger than the device accepted")
	}
	if err := s.IterationEnd(1, "a", 1); err == nil || !strings.Contains(err.Error(), "idle") {
		t.Errorf("ending an iteration never begun: %v", err)
	}
	if _, err := s.Request(1, "nobody"); err == nil {
		t.Error("unknown job accepted")
	}
	if _, err := s.Request(1, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Request(1, "a"); err == nil {
		t.Error("two requests at once accepted")
	}
	if _, err := s.Yield(0.5, "a"); err == nil {
		t.Error("time going backwards accepted")
	}
	if v, _, admitted, _ := s.JobInfo("a"); !admitted || v.Iterations != 0 {
		t.Errorf("state changed by bad calls: %+v", v)
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "fifo") {
		t.Errorf("unknown policy error should list the known ones: %v", err)
	}
	if got := strings.Join(Names(), ","); got != "fifo,srtf,pack,fair,fcfs" {
		t.Errorf("names %s", got)
	}
}

func TestPerProcessAdmitsInOrderUpToTheClientLimit(t *testing.T) {
	p, err := Compose(ModeMPS, "fifo", ModeParams{MPSContextMiB: 100, MPSMaxClients: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, 10100)
	for _, j := range []Job{{ID: "a", Persistent: 100, Ephemeral: 100}, {ID: "big", Persistent: 9000, Ephemeral: 800}, {ID: "c", Persistent: 10, Ephemeral: 10}} {
		if _, err := s.Arrive(0, j); err != nil {
			t.Fatal(err)
		}
	}
	// big does not fit beside a, and c may not pass it: processes start in order.
	if lanes := s.Lanes(); len(lanes) != 1 || lanes[0].Size != 300 {
		t.Fatalf("lanes %+v", lanes)
	}
	ds, _ := s.Leave(1, "a")
	if len(ds) != 2 || ds[0].Job != "big" || ds[1].Job != "c" {
		t.Fatalf("after a leaves: %+v", ds)
	}
	s.Arrive(1, Job{ID: "d"})
	if w := s.Waiting(); len(w) != 1 || w[0] != "d" {
		t.Errorf("client limit 2: waiting %v", w)
	}
}

func TestQuantumKeepsTheRunningJob(t *testing.T) {
	p, _ := Compose(ModeSuspend, "fair", ModeParams{SuspendQuantumS: 2.5})
	a := Job{ID: "a", Persistent: 10, Ephemeral: 10}
	b := Job{ID: "b", Persistent: 10, Ephemeral: 10}
	// Iterations of 1 s: a keeps the lane for 3 iterations (0-1, 1-2, 2-3) before b.
	got := strings.Join(runOrder(t, p, a, b, 4), " ")
	if got != "a a a b b b a b" {
		t.Errorf("order %q", got)
	}
}

func TestComposeRejectsNonsense(t *testing.T) {
	for _, c := range [][2]string{{"suspend", "pack"}, {"mps", "srtf"}, {"exclusive", "fair"}, {"salus", "fifo"}, {"warp", "fifo"}} {
		if _, err := Compose(c[0], c[1], DefaultModeParams()); err == nil {
			t.Errorf("%v accepted", c)
		}
	}
}
