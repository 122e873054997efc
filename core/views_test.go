package core

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// checkViews compares the views the scheduler keeps (views.go) with what
// computing them afresh from every lane gives, as the scheduler did before it
// kept them: bit for bit, so that placements decide exactly as they did.
func (s *Scheduler) checkViews() error {
	for _, l := range s.lanes {
		if want := l.compute(s.policy.Swapped); !reflect.DeepEqual(l.view, want) {
			return fmt.Errorf("lane %d: view %+v, computed %+v", l.id, l.view, want)
		}
	}
	for g, c := range s.gpus {
		free, jobs := c, 0
		var lanes []LaneInfo
		for _, l := range s.lanes {
			for _, lg := range l.gpus {
				if lg == g {
					free -= l.size
					jobs += l.live
					lanes = append(lanes, l.compute(s.policy.Swapped))
				}
			}
		}
		got := s.gpuInfo(g)
		if got.Free != free || got.Jobs != jobs || len(got.Lanes) != len(lanes) || len(lanes) > 0 && !reflect.DeepEqual(got.Lanes, lanes) {
			return fmt.Errorf("GPU %d: free %v, jobs %d, lanes %+v; computed free %v, jobs %d, lanes %+v", g, got.Free, got.Jobs, got.Lanes, free, jobs, lanes)
		}
		if len(s.gv[g].sizes) != len(lanes) {
			return fmt.Errorf("GPU %d: %d sizes for %d lanes", g, len(s.gv[g].sizes), len(lanes))
		}
		for i, l := range lanes {
			if s.gv[g].sizes[i] != l.Size {
				return fmt.Errorf("GPU %d: size %d is %v, lane %d's %v", g, i, s.gv[g].sizes[i], l.ID, l.Size)
			}
		}
	}
	return nil
}

// TestViewsStayExact drives every policy of every mode, on one to three GPUs,
// with random events (arrivals of odd sizes, gangs, requests, ends, yields,
// leaves in any phase), and checks after every event and decision that the
// views the scheduler keeps are what computing them afresh gives.
func TestViewsStayExact(t *testing.T) {
	mp := DefaultModeParams()
	mp.MPSMaxClients = 4
	for _, mode := range ModeNames() {
		for _, name := range Names() {
			p, err := Compose(mode, name, mp)
			if err != nil {
				continue
			}
			for gpus := 1; gpus <= 3; gpus++ {
				for seed := range uint64(4) {
					t.Run(fmt.Sprintf("%s/%s/gpus=%d/seed=%d", mode, name, gpus, seed), func(t *testing.T) {
						randomRun(t, p, gpus, seed)
					})
				}
			}
		}
	}
}

func randomRun(t *testing.T, p Policy, gpus int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 21))
	d := Uniform(gpus, 1000+r.Float64()*3000)
	d.Placement = []GPUPlacement{FirstFit{}, LeastLoaded{}, BestFit{}}[r.IntN(3)]
	s, err := NewNode(p, d)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	var jobs []string
	n := 0
	check := func(what string) {
		t.Helper()
		if err := s.checkViews(); err != nil {
			t.Fatalf("after %s at %v: %v", what, now, err)
		}
	}
	for step := range 400 {
		now += time.Duration(r.IntN(3)) * time.Millisecond
		var what string
		switch k := r.IntN(10); {
		case k < 3 || len(jobs) == 0:
			id := fmt.Sprintf("j%d", n)
			n++
			j := Job{ID: id, Arrival: now, Persistent: 1 + r.Float64()*300, Ephemeral: r.Float64() * 400,
				Declared: time.Duration(1+r.IntN(100)) * time.Second / 10, Priority: r.IntN(2)}
			if r.IntN(8) == 0 {
				j.GPUs = 1 + r.IntN(gpus)
			}
			if s.Arrive(now, j) == nil {
				jobs = append(jobs, id)
			}
			what = "arrive " + id
		default:
			id := jobs[r.IntN(len(jobs))]
			switch r.IntN(5) {
			case 0, 1:
				s.Request(now, id)
				what = "request " + id
			case 2:
				s.IterationEnd(now, id, time.Duration(r.IntN(50))*time.Millisecond)
				what = "end " + id
			case 3:
				s.Yield(now, id)
				what = "yield " + id
			case 4:
				if r.IntN(2) == 0 {
					s.Leave(now, id)
					for i, x := range jobs {
						if x == id {
							jobs = append(jobs[:i], jobs[i+1:]...)
							break
						}
					}
					what = "leave " + id
				} else {
					s.Request(now, id)
					what = "request " + id
				}
			}
		}
		check(what)
		if _, err := s.Decide(now); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("decide (step %d)", step))
	}
}

// BenchmarkOpenBesideIdleLanes is the core's cost of an open (arrive, admit
// into a new lane) and of the leave that closes its lane, beside idle admitted
// jobs in lanes of their own (pack, ample memory): it must not grow with them.
//
//	go test -run '^$' -bench OpenBesideIdleLanes ./core
func BenchmarkOpenBesideIdleLanes(b *testing.B) {
	for _, idle := range []int{0, 10000} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			s := New(Pack(), 1e9)
			now := time.Duration(0)
			for i := range idle {
				if err := s.Arrive(now, Job{ID: fmt.Sprintf("idle%d", i), Persistent: 1, Ephemeral: 1}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.Decide(now); err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 64)
			for i := range ids {
				ids[i] = fmt.Sprintf("open%d", i)
			}
			b.ResetTimer()
			for i := range b.N {
				now += time.Microsecond
				id := ids[i%len(ids)]
				s.Arrive(now, Job{ID: id, Arrival: now, Persistent: 1, Ephemeral: 1})
				if ds, _ := s.Decide(now); len(ds) != 1 || ds[0].Action != Admit {
					b.Fatalf("decisions %v", ds)
				}
				s.Leave(now, id)
				s.Decide(now)
			}
		})
	}
}
