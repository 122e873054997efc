package core

import "time"

// LAS orders the ready jobs of a lane by least attained service with a few
// priority queues, Tiresias' discretized LAS (Gu et al., NSDI 2019), for when job
// lengths are unknown: a job starts in queue 0 and is demoted to queue k once its
// attained GPU time reaches First x Factor^(k-1); the lowest queue (Queues-1)
// keeps everything beyond. Lower queues run first; within a queue, the earliest
// arrival first (FIFO), so jobs of one queue do not interleave iteration by
// iteration as under fair, and a long job cannot be starved by shorter jobs that
// keep a few seconds ahead of it, only by jobs in a higher queue.
//
// Tiresias measures attained service in GPUs x time (2D); here a lane's jobs each
// use one GPU (a gang job has a closed lane of its own), so time alone orders the
// same. Tiresias' starvation promotion (a job waiting longer than a multiple of
// its last run goes back to queue 0) is left out: it changes a waiting job's
// place with the time it waits, and a KeyOrder's key must not change while the
// job waits in a ready queue.
type LAS struct {
	First  time.Duration // attained service that ends queue 0
	Factor int64         // each queue covers Factor times the service of the one before
	Queues int           // number of queues, at least 1
}

// DefaultLAS is the LAS order of the policy las: 4 queues with thresholds at
// 30 s, 2 min and 8 min of attained GPU time. Geometric thresholds give each
// queue a fixed ratio of lengths (x4), so a job is demoted a logarithmic number of
// times whatever its length; 30 s to 8 min spans the lengths of the generated
// traces (1 to 11 min alone): a short job finishes in the first queues, and jobs
// past 8 min share the last one in arrival order.
func DefaultLAS() LAS { return LAS{First: 30 * time.Second, Factor: 4, Queues: 4} }

// Queue is the queue a job with attained GPU time is in, from 0 (first served).
func (o LAS) Queue(attained time.Duration) int {
	q, limit := 0, o.First
	for q < o.Queues-1 && attained >= limit {
		q++
		limit *= time.Duration(o.Factor)
	}
	return q
}

// Less implements Order: the lower queue first, then the earlier arrival.
func (o LAS) Less(a, b JobView) bool {
	qa, qb := o.Queue(a.Attained), o.Queue(b.Attained)
	if qa != qb {
		return qa < qb
	}
	return a.Seq < b.Seq
}

// lasSeqBits is how many bits of a LAS key hold the arrival order (2^40 jobs).
const lasSeqBits = 40

// Key implements KeyOrder: the queue above the arrival order.
func (o LAS) Key(v JobView) int64 { return int64(o.Queue(v.Attained))<<lasSeqBits | int64(v.Seq) }

var _ KeyOrder = LAS{}

// Las runs, at every iteration boundary of its one lane, the ready job of the
// highest LAS queue (least attained service, discretized), earliest arrival first
// within a queue. It does not read declared times.
func init() { RegisterPolicyAt(20, Las) }

func Las() Policy {
	return Policy{
		Name:        "las",
		Description: "one lane; Tiresias' discretized least attained service: queues at 30 s, 2 min, 8 min of GPU time, FIFO within each",
		Mode:        "salus",
		Placement:   OneLane{},
		Order:       DefaultLAS(),
	}
}
