package sim_test

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// Simulate a two-job trace on the default device (the reference P100) under each of
// two policies, and compute the makespan and average JCT from the event log the
// simulator writes (package metrics reads it, as it would a daemon's). Under fifo the
// short job waits for the long one; srtf gives it the lane at its first iteration
// boundary.
func Example() {
	trace, err := workload.ParseTrace([]byte(`job_id,model,batch_size,iterations,arrival_s
long,resnet50,50,2000,0
short,alexnet,25,500,10
`), "two.csv", "two", workload.Default())
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"fifo", "srtf"} {
		p, err := core.Lookup(name)
		if err != nil {
			panic(err)
		}
		c := metrics.NewCollector()
		if err := sim.Run(trace, sim.Options{Policy: p, Device: device.DefaultDevice(), Sink: c}); err != nil {
			panic(err)
		}
		r, err := c.Result()
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: makespan %.1f s, average JCT %.1f s\n", name, r.MakespanS, r.AvgJCTS)
	}
	// Output:
	// fifo: makespan 487.5 s, average JCT 475.0 s
	// srtf: makespan 476.6 s, average JCT 245.9 s
}
