package traceimport

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// SynthOptions shape a synthetic pod list in the 2023 schema.
type SynthOptions struct {
	Rows int
	Seed uint64
	// MeanGapS is the mean time between pod creations, seconds (default 150).
	MeanGapS float64
	// MeanRunS is the mean time a pod runs, seconds (default 120).
	MeanRunS float64
	// Specs are the gpu_spec values a pod's is drawn from, each alike likely
	// ("" is no constraint); nil: eight in ten none, one "V100M16|V100M32", one
	// "A100".
	Specs []string
}

// WriteSyntheticAlibaba2023 writes a made-up pod list in the schema of Alibaba's
// 2023 trace (openb_pod_list_*.csv), for tests, benchmarks and the README's
// figures: it is not the trace and says nothing about it. Rows are in name
// order and their creation times jitter by up to a minute, so the file is not
// quite sorted by time; about one pod in ten asks for no GPU and one in twenty
// never ran. The same options give the same file.
func WriteSyntheticAlibaba2023(w io.Writer, o SynthOptions) error {
	if o.MeanGapS <= 0 {
		o.MeanGapS = 150
	}
	if o.MeanRunS <= 0 {
		o.MeanRunS = 120
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x2023))
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintln(bw, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time")
	shares := []int{100, 200, 250, 300, 500, 700}
	specs := []string{"", "", "", "", "", "", "", "", "V100M16|V100M32", "A100"}
	if len(o.Specs) > 0 {
		specs = o.Specs
	}
	qos := []string{"BE", "LS", "Burstable", "Guaranteed"}
	now := 1e6
	for i := 0; i < o.Rows; i++ {
		now += rng.ExpFloat64() * o.MeanGapS
		created := math.Round(now + rng.Float64()*60)
		gpus, milli := 1, 1000
		switch u := rng.Float64(); {
		case u < 0.10:
			gpus, milli = 0, 0
		case u < 0.20:
			gpus = 2
		case u < 0.28:
			gpus = 4
		case u < 0.30:
			gpus = 8
		case u < 0.65:
			milli = shares[rng.IntN(len(shares))]
		}
		phase := "Succeeded"
		sched := created + float64(rng.IntN(60))
		deleted := sched + math.Max(1, math.Round(rng.ExpFloat64()*o.MeanRunS))
		// As in the trace, a pod that never ran has no scheduled time.
		scheduled := fmt.Sprintf("%.0f", sched)
		switch u := rng.Float64(); {
		case u < 0.05:
			phase, scheduled = "Pending", ""
		case u < 0.10:
			phase = "Failed"
		case u < 0.15:
			phase = "Running"
		}
		cpu := 4000 << rng.IntN(4)
		fmt.Fprintf(bw, "openb-pod-%07d,%d,%d,%d,%d,%s,%s,%s,%.0f,%.0f,%s\n", i+1, cpu, cpu*4, gpus, milli,
			specs[rng.IntN(len(specs))], qos[rng.IntN(len(qos))], phase, created, deleted, scheduled)
	}
	return bw.Flush()
}
