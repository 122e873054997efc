package core

import (
	"slices"
	"testing"
	"time"
)

// fgd sends a one-GPU job to a node's leftover GPU (7, beside a gang of 3),
// not to a whole node a gang of 4 could use; first-fit and least-loaded take
// the first, idle node; best-fit the fuller one.
func TestFGDKeepsWholeNodes(t *testing.T) {
	p, _ := Lookup("fifo")
	for _, c := range []struct {
		np   NodePlacement
		want []int
	}{{FGD{}, []int{7}}, {FirstFitNode{}, []int{0}}, {BestFitNode{}, []int{7}}, {LeastLoadedNode{}, []int{0}}} {
		// Node 0: GPUs 0-3; node 1: GPUs 4-7, three of them taken by a gang.
		s, err := NewNode(p, Devices{Capacities: Uniform(8, 16000).Capacities, Placement: FirstFit{},
			Nodes: []Node{{Count: 4, Model: "a"}, {Count: 4, Model: "b"}}, NodePlacement: c.np})
		if err != nil {
			t.Fatal(err)
		}
		gang := Job{ID: "gang", Persistent: 1000, Ephemeral: 1000, GPUs: 3, GPUModels: []string{"b"}}
		if err := s.Arrive(0, gang); err != nil {
			t.Fatal(err)
		}
		// A gang of 4 in the workload: it runs on node 0 and leaves.
		if err := s.Arrive(0, Job{ID: "wide", Persistent: 1000, Ephemeral: 1000, GPUs: 4, Declared: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(0); err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(1, "wide"); err != nil {
			t.Fatal(err)
		}
		if err := s.Arrive(1, Job{ID: "one", Persistent: 1000, Ephemeral: 1000}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(1); err != nil {
			t.Fatal(err)
		}
		if got := s.JobGPUs("one"); !slices.Equal(got, c.want) {
			t.Errorf("%s: the one-GPU job got GPUs %v, want %v", c.np.Name(), got, c.want)
		}
	}
}

// fragmentation counts the idle GPUs the workload's sizes cannot use.
func TestFragmentation(t *testing.T) {
	sizes := []int{0, 3, 0, 0, 1} // three jobs of 1 GPU, one of 4
	for _, c := range []struct {
		idle int
		want float64
	}{{0, 0}, {1, 0.25}, {3, 0.75}, {4, 0}, {8, 0}} {
		if got := fragmentation(c.idle, sizes); got != c.want {
			t.Errorf("fragmentation of %d idle GPUs: %v, want %v", c.idle, got, c.want)
		}
	}
}
