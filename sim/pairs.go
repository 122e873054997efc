package sim

import (
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
)

// PairRates runs jobs a and b side by side on the device model of dev (its
// iterations sharing compute as compute says) under the co-location model dm,
// and returns each job's throughput beside the other over alone: the figures
// a pair file holds. Each job runs iterations of one second alone back to
// back, so that the other runs throughout the first iteration of each; an
// iteration's time beside the other over its time alone is the inverse.
func PairRates(dm *interference.DeviceModel, compute core.ComputeSharing, dev device.Device, a, b interference.Job) (float64, float64) {
	const alone = time.Second
	g := NewGPU(compute, dev)
	g.SetInterference(dm)
	works := [2]*Work{{Job: "a", Lane: 0, Model: a}, {Job: "b", Lane: 1, Model: b}}
	var took [2]time.Duration
	for _, w := range works {
		w.Left = alone
		g.Start(w)
	}
	for took[0] == 0 || took[1] == 0 {
		d, ok := g.NextEnd()
		if !ok {
			break
		}
		g.Advance(d)
		for _, w := range g.Finished() {
			i := 0
			if w == works[1] {
				i = 1
			}
			if took[i] == 0 {
				took[i] = g.now
			}
			w.Left = alone
			g.Start(w)
		}
	}
	return float64(alone) / float64(took[0]), float64(alone) / float64(took[1])
}
