package core

import (
	"testing"
	"time"
)

// Under a quantum (suspend/resume), the job that holds the lane keeps it at
// every boundary before the quantum ends, whatever its standing: KeptBefore
// says until when, and Skip takes those boundaries at once, leaving the probe
// as that many calls of Next leave it; the first boundary after the quantum
// is decided by the order again (fair: b, which has had less, goes next).
func TestQuantumKeepsTheLane(t *testing.T) {
	p, err := Compose("suspend", "fair", DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, 1000)
	for _, id := range []string{"a", "b"} {
		if err := s.Arrive(0, Job{ID: id, Persistent: 10, Ephemeral: 10}); err != nil {
			t.Fatal(err)
		}
		if err := s.Request(0, id); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.Decide(0)
	if err != nil || len(ds) == 0 || ds[len(ds)-1].Action != Start || ds[len(ds)-1].Job != "a" {
		t.Fatalf("decisions %+v, %v: want a started", ds, err)
	}
	one, ok := s.Probe("a")
	if !ok {
		t.Fatal("a's boundaries cannot be probed")
	}
	until, ok := one.KeptBefore()
	if !ok || until != p.Quantum {
		t.Fatalf("kept before %v, %v; want the quantum's end, %v", until, ok, p.Quantum)
	}
	const iter = 10 * time.Millisecond
	n := int(p.Quantum / iter)
	if n < 2 {
		t.Fatalf("a quantum of %v holds %d iterations of %v: too few for the test", p.Quantum, n, iter)
	}
	for k := 1; k < n; k++ {
		if !one.Next(time.Duration(k)*iter, iter) {
			t.Fatalf("boundary %d at %v, within the quantum, is a no", k, time.Duration(k)*iter)
		}
	}
	all, _ := s.Probe("a")
	all.Skip(time.Duration(n-1)*iter, n-1, time.Duration(n-1)*iter)
	if all.v != one.v || all.req != one.req {
		t.Fatalf("skipped: %+v (request %d), want %+v (request %d)", all.v, all.req, one.v, one.req)
	}
	if one.Next(p.Quantum, iter) || all.Next(p.Quantum, iter) {
		t.Fatal("the boundary at the quantum's end keeps a, which has had more than b; want b next")
	}
}
