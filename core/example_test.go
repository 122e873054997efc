package core_test

import (
	"fmt"
	"time"

	"github.com/salusgo/salus/core"
)

// A scheduler for one 14 GiB device under SRTF (Salus lanes): two jobs arrive and
// ask for their first iteration; Decide admits both into one lane and starts the job
// with the least GPU time left. The caller acts on each decision (here it prints
// it), reports the iteration's end, and the job asks again.
func Example() {
	p, err := core.Lookup("srtf")
	if err != nil {
		panic(err)
	}
	s := core.New(p, 14*1024)
	at := func(sec float64) time.Duration { return core.MustSeconds(sec) }
	show := func(now time.Duration) {
		ds, err := s.Decide(now)
		if err != nil {
			panic(err)
		}
		for _, d := range ds {
			fmt.Printf("t=%v %s %s lane %d\n", now, d.Action, d.Job, d.Lane)
		}
	}

	for _, j := range []core.Job{
		{ID: "long", Persistent: 500, Ephemeral: 1500, Declared: at(600)},
		{ID: "short", Persistent: 300, Ephemeral: 1000, Declared: at(60)},
	} {
		if err := s.Arrive(0, j); err != nil {
			panic(err)
		}
		if err := s.Request(0, j.ID); err != nil {
			panic(err)
		}
	}
	show(0)

	// short's iteration ends after 0.5 s of GPU time, and it asks for the next one:
	// it still has the least time left, so it keeps the lane.
	if err := s.IterationEnd(at(0.5), "short", at(0.5)); err != nil {
		panic(err)
	}
	if err := s.Request(at(0.5), "short"); err != nil {
		panic(err)
	}
	show(at(0.5))

	// short leaves: long gets the lane.
	if err := s.IterationEnd(at(1), "short", at(0.5)); err != nil {
		panic(err)
	}
	if err := s.Leave(at(1), "short"); err != nil {
		panic(err)
	}
	show(at(1))
	// Output:
	// t=0s admit long lane 0
	// t=0s admit short lane 0
	// t=0s start short lane 0
	// t=500ms start short lane 0
	// t=1s start long lane 0
}

// Compose runs a policy within a sharing mode: here FAIR under suspend/resume, where
// only the running job is resident and the running job keeps the GPU for a quantum.
// A combination that makes no sense is an error that says why.
func ExampleCompose() {
	p, err := core.Compose(core.ModeSuspend, "fair", core.DefaultModeParams())
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name, p.Mode, p.Quantum, p.Swapped)
	_, err = core.Compose(core.ModeExclusive, "srtf", core.DefaultModeParams())
	fmt.Println(err)
	// Output:
	// fair suspend 10s true
	// mode exclusive runs only fifo (no sharing), not srtf
}

// Names lists the registered policies; Lookup returns one by name.
func ExampleLookup() {
	_, err := core.Lookup("lottery")
	fmt.Println(err != nil)
	p, _ := core.Lookup("fifo")
	fmt.Println(p.Name, p.UsesDeclared)
	// Output:
	// true
	// fifo false
}
