package core

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The ready queue gives the policy's first job whatever was added, taken and
// dropped before, under a KeyOrder (keys beside the jobs) and a plain order.
func TestReadyQueueGivesTheFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	s := New(mustPolicy(t, "fair"), 1000)
	for _, keyed := range []bool{true, false} {
		q := readyQueue{less: s.less}
		if keyed {
			q.key = ByAttained{}.Key
		}
		var in []*jobState
		first := func() *jobState {
			return slices.MinFunc(in, func(a, b *jobState) int {
				switch {
				case s.less(a, b):
					return -1
				case s.less(b, a):
					return 1
				}
				return 0
			})
		}
		for i := range 20000 {
			switch op := rng.IntN(10); {
			case op < 5 || len(in) == 0:
				js := &jobState{readyAt: -1, view: JobView{Seq: i, Priority: rng.IntN(3), Attained: time.Duration(rng.IntN(50))}}
				q.add(js)
				in = append(in, js)
			case op < 8:
				js := q.first()
				q.take(js)
				in = slices.DeleteFunc(in, func(x *jobState) bool { return x == js })
			default:
				k := rng.IntN(len(in))
				q.drop(in[k])
				in = slices.Delete(in, k, k+1)
			}
			if len(in) > 0 && q.first() != first() || q.Len() != len(in) {
				t.Fatalf("keyed %v, step %d: the queue's first is not the policy's", keyed, i)
			}
		}
	}
}
