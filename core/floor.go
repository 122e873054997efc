package core

import "time"

// A Rejoiner is an Order under which a job that comes back to a lane's ready
// queue after being idle (admitted and not asking, or yielded) does not get back
// the time it was idle: the scheduler asks it for the job's new Credit (see
// JobView.Credit) given the lane's clock, the key of the job the lane started
// last. A job that asks again at once after its iteration is not rejoining.
type Rejoiner interface {
	KeyOrder
	Rejoin(v JobView, clock int64) time.Duration
}

// ByFloor is wfair's order without the catching up: a job's key is its attained
// GPU time plus its credit, per unit of share, and a job that rejoins after being
// idle is credited up to the lane's clock. This is start-time fair queueing
// (Goyal et al., SIGCOMM 1996) at iteration granularity: while jobs are busy,
// each receives GPU time in proportion to its share, so at least share / the sum
// of the lane's shares (its floor; its share itself when a GPU's shares sum to 1,
// as a GPU's Kubernetes claims do); the time an idle job leaves goes to the busy
// ones in proportion to their shares, and is not paid back when it returns.
type ByFloor struct{}

var _ Rejoiner = ByFloor{}

// Less implements Order.
func (o ByFloor) Less(a, b JobView) bool { return o.Key(a) < o.Key(b) }

// Key implements KeyOrder: (attained + credit) / share, in ns.
func (ByFloor) Key(v JobView) int64 { return perShare(v.Attained+v.Credit, v.Share()) }

// Rejoin implements Rejoiner: the credit that puts the job's key at the lane's
// clock, or its credit as it is when its key is already there or past.
func (o ByFloor) Rejoin(v JobView, clock int64) time.Duration {
	if o.Key(v) >= clock {
		return v.Credit
	}
	share := v.Share()
	if share <= 0 {
		share = 1
	}
	// Rounded up, so that the key is not below the clock.
	return time.Duration(float64(clock)*share+1) - v.Attained
}

func init() { RegisterPolicyAt(51, Floor) }

// Floor runs, at every iteration boundary of its one lane, the ready job with the
// least (attained + credit) GPU time per unit of share: each busy job is
// guaranteed its share of the GPU's time, and an idle job's is lent to the others.
func Floor() Policy {
	return Policy{
		Name:        "floor",
		Description: "one lane; every busy job gets at least its share of GPU time (share / the lane's shares), and an idle job's is lent to the others, not paid back",
		Mode:        "salus",
		Placement:   OneLane{},
		Order:       ByFloor{},
	}
}
