package core

import (
	"strings"
	"testing"
	"time"
)

func mustPolicy(t *testing.T, name string) Policy {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runOrder has two admitted jobs each run n iterations of one second, and returns
// the order in which iterations started.
func runOrder(t *testing.T, p Policy, a, b Job, n int) []string {
	t.Helper()
	s := New(p, 14000)
	var order []string
	now := time.Duration(0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	decide := func() []Decision {
		t.Helper()
		ds, err := s.Decide(now)
		must(err)
		return ds
	}
	must(s.Arrive(now, a))
	must(s.Arrive(now, b))
	must(s.Request(now, a.ID))
	must(s.Request(now, b.ID))
	left := map[string]int{a.ID: n, b.ID: n}
	for ds := decide(); len(ds) > 0; ds = decide() {
		for _, d := range ds {
			if d.Action != Start {
				continue
			}
			order = append(order, d.Job)
			now += time.Second
			must(s.IterationEnd(now, d.Job, time.Second))
			if left[d.Job]--; left[d.Job] > 0 {
				must(s.Request(now, d.Job))
			} else {
				must(s.Leave(now, d.Job))
			}
		}
	}
	return order
}

func TestPolicyOrderAtIterationBoundaries(t *testing.T) {
	long := Job{ID: "long", Persistent: 100, Ephemeral: 100, Declared: 10 * time.Second}
	short := Job{ID: "short", Persistent: 100, Ephemeral: 100, Declared: 3 * time.Second}
	cases := []struct {
		policy string
		want   string
	}{
		{"fifo", "long long long short short short"},
		{"srtf", "short short short long long long"}, // both ready at once: the shorter first
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
	a := Job{ID: "a", Persistent: 500, Ephemeral: 6000, Declared: 5 * time.Second}
	b := Job{ID: "b", Persistent: 500, Ephemeral: 6000, Declared: 5 * time.Second}
	got := strings.Join(runOrder(t, Pack(), a, b, 3), " ")
	if got != "a b a b a b" {
		t.Errorf("pack order %q, want alternation", got)
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "fifo") {
		t.Errorf("unknown policy error should list the known ones: %v", err)
	}
	// The paper's four come first, in its order; every name looks up, once.
	names := Names()
	if got := strings.Join(names[:4], ","); got != "fifo,srtf,pack,fair" {
		t.Errorf("names %s", strings.Join(names, ","))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if _, err := Lookup(n); err != nil || seen[n] {
			t.Errorf("name %s listed twice or does not look up: %v", n, err)
		}
		seen[n] = true
	}
}

func TestComposeRejectsNonsense(t *testing.T) {
	for _, c := range [][2]string{{"suspend", "pack"}, {"mps", "srtf"}, {"exclusive", "fair"}, {"salus", "fifo"}, {"warp", "fifo"}} {
		if _, err := Compose(c[0], c[1], DefaultModeParams()); err == nil {
			t.Errorf("%v accepted", c)
		}
	}
}
