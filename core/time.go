package core

import (
	"fmt"
	"math"
	"time"
)

// MaxSeconds is the longest time, in seconds, that the engines accept for any one
// figure of a trace or a client (an arrival, a declared time, an iteration): about
// 31.7 years. Keeping every input this far below time.Duration's limit of 292 years
// leaves room for a run's clock to add many of them up.
const MaxSeconds = 1e9

// Seconds converts a time in seconds, as traces, clients and the event log give it,
// to the engines' integer time, rounded to the nearest nanosecond. It is an error
// for a figure that is not a finite number in [0, MaxSeconds].
func Seconds(s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s > MaxSeconds {
		return 0, fmt.Errorf("%v s is not a time between 0 and %g s", s, float64(MaxSeconds))
	}
	return time.Duration(math.Round(s * 1e9)), nil
}

// MustSeconds is Seconds for figures the program itself computed and checked.
func MustSeconds(s float64) time.Duration {
	d, err := Seconds(s)
	if err != nil {
		panic("core: " + err.Error())
	}
	return d
}
