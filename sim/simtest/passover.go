package simtest

import (
	"fmt"

	"github.com/salusgo/salus/eventlog"
)

// PassOvers watches an event log for admissions that pass over waiting jobs: a
// job admitted while a job that arrived before it still waits. MaxPassedOver is
// the largest wait, in multiples of its declared GPU time, at which a job was
// passed over (policy-ordered admission bounds it by K); MaxWait the largest wait
// for admission in those multiples, passed over or not. Jobs that declare no time
// are left out of both.
type PassOvers struct {
	MaxPassedOver, MaxWait float64
	Worst                  string // the pass-over of MaxPassedOver, in words
	waiting                map[string]waiter
	seq                    int
}

type waiter struct {
	at, declared float64
	seq          int
}

// NewPassOvers returns an empty watch.
func NewPassOvers() *PassOvers { return &PassOvers{waiting: map[string]waiter{}} }

// Emit implements eventlog.Sink.
func (p *PassOvers) Emit(e eventlog.Event) {
	switch e.Kind {
	case eventlog.Arrive:
		p.waiting[e.Job] = waiter{e.T, e.DeclaredS, p.seq}
		p.seq++
	case eventlog.Admit:
		me, ok := p.waiting[e.Job]
		if !ok {
			return
		}
		delete(p.waiting, e.Job)
		if me.declared > 0 {
			p.MaxWait = max(p.MaxWait, (e.T-me.at)/me.declared)
		}
		for id, w := range p.waiting {
			if w.seq < me.seq && w.declared > 0 {
				if r := (e.T - w.at) / w.declared; r > p.MaxPassedOver {
					p.MaxPassedOver = r
					p.Worst = fmt.Sprintf("%s admitted at %.3fs ahead of %s, waiting since %.3fs with %.3fs declared", e.Job, e.T, id, w.at, w.declared)
				}
			}
		}
	case eventlog.Finish, eventlog.Lost:
		delete(p.waiting, e.Job)
	}
}
