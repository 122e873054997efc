package core

import (
	"fmt"
	"math"
	"time"
)

// Shares. A job's share is a scheduling weight: how much of a lane's GPU time
// it is owed beside the others, as wfair and floor read it. It is not the job's
// compute demand (how much of the GPU one of its iterations keeps busy, which
// the device model reads): a job of demand 0.3 may be owed three quarters of
// the GPU's time. Shares are relative: 1 and 3 give what 0.25 and 0.75 give.

// MinShare and MaxShare bound a job's share: beyond them an order's key, GPU
// time divided by the share, would lose its nanoseconds or overflow.
const (
	MinShare = 0.001
	MaxShare = 1000
)

// ShareOf is the share j is scheduled with: j.Share, or 1 when it gives none.
func ShareOf(j Job) float64 {
	if j.Share == 0 {
		return 1
	}
	return j.Share
}

// CheckShare refuses a share that is not 0 (none: 1) or within MinShare and
// MaxShare; what names the field in the message.
func CheckShare(what string, share float64) error {
	if share == 0 || (share >= MinShare && share <= MaxShare) {
		return nil
	}
	return fmt.Errorf("%s is %v: give a share of the GPU's time between %g and %g (shares are relative: 1 and 3 get time 1:3), or none for 1", what, share, float64(MinShare), float64(MaxShare))
}

// ByWeightedAttained runs the ready job with the least attained GPU time per
// unit of share first (wfair): over the time both are ready, jobs of shares 1
// and 3 receive GPU time 1:3. Like fair, it remembers everything a job attained:
// a job that was idle, or arrived late, runs alone until its attained time per
// share has caught up with the others'.
type ByWeightedAttained struct{}

var _ KeyOrder = ByWeightedAttained{}

// Less implements Order.
func (o ByWeightedAttained) Less(a, b JobView) bool { return o.Key(a) < o.Key(b) }

// Key implements KeyOrder: attained GPU time divided by the share, in ns.
func (ByWeightedAttained) Key(v JobView) int64 { return perShare(v.Attained, v.Share()) }

// perShare is d / share in nanoseconds, saturated at the largest int64.
func perShare(d time.Duration, share float64) int64 {
	if share <= 0 {
		share = 1
	}
	k := float64(d) / share
	if k >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(k)
}

func init() { RegisterPolicyAt(50, WeightedFair) }

// WeightedFair runs, at every iteration boundary of its one lane, the ready job
// with the least attained GPU time divided by its share.
func WeightedFair() Policy {
	return Policy{
		Name:        "wfair",
		Description: "one lane; least attained GPU time divided by the job's share first: shares 1 and 3 get time 1:3 (an idle job catches up on return, as fair)",
		Mode:        "salus",
		Placement:   OneLane{},
		Order:       ByWeightedAttained{},
	}
}
