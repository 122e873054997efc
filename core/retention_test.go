package core

import (
	"fmt"
	"testing"
	"time"
)

// held is how many job records the scheduler's waiting lists hold, the jobs
// that no longer wait among them.
func (s *Scheduler) held() int {
	n := len(s.order) - s.orderHead + s.deadlines.Len() + s.starving.Len()
	for _, c := range s.classes {
		n += c.Len()
	}
	return n
}

// TestFinishedJobsAreNotHeld: jobs that were admitted and left are not held by
// the waiting lists (a class's heap, the arrival order, the deadlines), however
// the mode admits: they would keep their records and their lanes alive for the
// whole run (a million-job run held every finished job).
func TestFinishedJobsAreNotHeld(t *testing.T) {
	for _, sc := range [][2]string{{"exclusive", "fifo"}, {"salus", "fcfs"}, {"salus", "srtf"}, {"salus", "pack"}, {"suspend", "fair"}} {
		t.Run(sc[0]+"/"+sc[1], func(t *testing.T) {
			p, err := Compose(sc[0], sc[1], DefaultModeParams())
			if err != nil {
				t.Fatal(err)
			}
			p.Admission.ByPolicy = sc[1] == "srtf"
			s := New(p, 14000)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			const jobs = 3000
			now := time.Duration(0)
			for i := range jobs {
				mem := float64(1000 + 500*(i%3)) // three classes
				must(s.Arrive(now, Job{ID: fmt.Sprint("j", i), Persistent: mem, Ephemeral: mem, Declared: time.Duration(1+i%7) * time.Second}))
			}
			left := jobs
			for left > 0 {
				ds, err := s.Decide(now)
				must(err)
				if len(ds) == 0 {
					t.Fatalf("%d jobs left and nothing decided", left)
				}
				for _, d := range ds {
					switch d.Action {
					case Admit:
						must(s.Request(now, d.Job))
					case Start:
						now += time.Second
						must(s.IterationEnd(now, d.Job, time.Second))
						must(s.Leave(now, d.Job))
						left--
					}
				}
				// Each of the lists (the order, three classes, the deadlines and
				// the starving) holds at most twice its waiting jobs, and 64.
				if w := s.nWaiting; left < jobs/2 && s.held() > 8*w+6*64 {
					t.Fatalf("%d jobs waiting, %d left, but the waiting lists hold %d records", w, left, s.held())
				}
				if n := len(s.needs); n > 3 {
					t.Fatalf("%d needs for jobs of three", n) // shared, not one a job
				}
			}
			if h := s.held(); h > 6*64 {
				t.Errorf("every job left, but the waiting lists hold %d records", h)
			}
			if n := len(s.needs); n != 0 {
				t.Errorf("every job left, but %d needs are kept", n)
			}
		})
	}
}
