package eval

import (
	"fmt"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics/clusterstudy"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// StudyPolicies are the policies a cluster study runs in Salus's mode, after
// exclusive GPUs (fifo, one job a GPU).
var StudyPolicies = []string{"srtf", "pack", "fair"}

// StudyOptions configure a cluster study.
type StudyOptions struct {
	// Policies run in Salus's mode; nil: StudyPolicies. Exclusive GPUs run first.
	Policies []string
	// NodePlacement chooses a job's node ("": core's default).
	NodePlacement string
	// Modes are the sharing modes' parameters.
	Modes core.ModeParams
	// Interference is the co-location model (sim.Options.Interference); nil:
	// one share per GPU by demands.
	Interference *interference.Model
}

// ClusterStudy simulates trace t on cluster c under exclusive GPUs and each
// policy, and studies each run (clusterstudy): utilization, allocation and
// fragmentation per node shape and GPU model, queueing per class. The
// reference device (declared and alone times, overheads) is the P100 the
// catalog was measured on.
func ClusterStudy(c *cluster.Cluster, source string, t *workload.Trace, o StudyOptions) (*clusterstudy.Report, error) {
	np, err := core.LookupNodePlacement(o.NodePlacement)
	if err != nil {
		return nil, err
	}
	policies := o.Policies
	if policies == nil {
		policies = StudyPolicies
	}
	r := &clusterstudy.Report{Cluster: source, Nodes: len(c.Nodes), GPUs: c.GPUCount(), Trace: t.Name, Jobs: len(t.Jobs)}
	runs := []struct{ name, mode, policy string }{{"exclusive", core.ModeExclusive, "fifo"}}
	for _, p := range policies {
		runs = append(runs, struct{ name, mode, policy string }{p, core.ModeSalus, p})
	}
	for _, run := range runs {
		p, err := core.Compose(run.mode, run.policy, o.Modes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", run.name, err)
		}
		s := clusterstudy.New(c, t)
		if err := sim.Run(t, sim.Options{Policy: p, Device: device.DefaultDevice(), Cluster: c, NodePlacement: np, Sink: s, Interference: o.Interference}); err != nil {
			return nil, fmt.Errorf("%s: %w", run.name, err)
		}
		res, err := s.Result(run.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", run.name, err)
		}
		r.Runs = append(r.Runs, res)
	}
	return r, nil
}
