package eval

import (
	"bytes"
	"testing"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/cluster/nodelist"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
	"github.com/salusgo/salus/workload/traceimport"
)

// fixtureCluster is the cluster of the node-list fixture (the real schema),
// through salus trace cluster's steps.
func fixtureCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	f, _ := traceimport.LookupNodes("alibaba2023-nodes")
	rows, err := f.Read("../workload/traceimport/testdata/openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	shapes, models, err := nodelist.Shapes(rows, nodelist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := nodelist.WriteYAML(&b, nil, shapes, models); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.ParseYAML(b.Bytes(), "fixture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// importOnCluster imports a pod list in Alibaba 2023's schema as salus trace
// import --cluster does: each pod timed on its type's model in c, a pod without
// one on the P100.
func importOnCluster(t *testing.T, c *cluster.Cluster, file string) *workload.Trace {
	t.Helper()
	f, _ := traceimport.Lookup("alibaba2023")
	fallback := func(string) (traceimport.GPU, error) {
		d := device.DefaultDevice()
		return traceimport.GPU{Name: d.Name, CapacityMiB: d.CapacityMiB, Speed: d.Speed}, nil
	}
	var buf bytes.Buffer
	o := traceimport.Options{GPUFor: nodelist.GPUFor(c, fallback), GPUModels: true}
	if _, err := traceimport.Convert(f, []string{file}, o, &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ParseTrace(buf.Bytes(), "pods.csv", "pods", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A trace replayed on the cluster it came from, with room enough, runs as it
// ran: each pod, timed on its gpu_spec's model and run on it, completes in
// its own run in the trace (scheduled to end), median 1.00, p95 at most 1.05,
// under exclusive GPUs and under every policy sharing them. The fixture is in
// the trace's schemas: its node list and a pod list whose pods name the GPU
// types they ran on (pods without one: TestUntypedPodsReplayTheirRunsOnAnyNode).
func TestTraceOnItsClusterReproducesItsRuns(t *testing.T) {
	c := fixtureCluster(t)
	tr := importOnCluster(t, c, "testdata/openb_pod_list_cluster.csv")
	if len(tr.Jobs) != 10 {
		t.Fatalf("%d jobs imported, want the fixture's 10", len(tr.Jobs))
	}
	r, err := ClusterStudy(c, "fixture.yaml", tr, StudyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 1+len(StudyPolicies) {
		t.Fatalf("%d runs, want exclusive and %v", len(r.Runs), StudyPolicies)
	}
	for _, run := range r.Runs {
		rr := run.RunRatio
		p95 := 1.05
		if rr.N != 10 || rr.Median < 0.995 || rr.Median > 1.005 || rr.P95 > p95 {
			t.Errorf("%s: simulated JCT over the trace's run %+v: want 10 jobs, median 1.00, p95 <= %v", run.Run, rr, p95)
		}
		// The trace's own delays are beside the simulated ones: LS's pods waited
		// 0, 5 and 0 s in the trace.
		if c := run.Classes[0]; c.Priority != 0 || c.Trace.N != 3 || c.Trace.Mean != 5.0/3 {
			t.Errorf("%s: class %+v: want LS (0) with the trace's delays 0, 5, 0", run.Run, c)
		}
	}
}

// A pod that names no GPU type ran its recorded run on whatever model it was
// on: replayed on its own cluster, wherever the node placement puts it (the
// fixture's G2 and G3 nodes are taken like the V100, 1.4 times the P100), it
// runs as long as it ran: with room enough (the placements that spread pods),
// JCT over its run 1.000 for every pod, exclusive GPUs and every policy.
func TestUntypedPodsReplayTheirRunsOnAnyNode(t *testing.T) {
	c := fixtureCluster(t)
	tr := importOnCluster(t, c, "testdata/openb_pod_list_untyped.csv")
	if len(tr.Jobs) != 10 {
		t.Fatalf("%d jobs imported, want the fixture's 10", len(tr.Jobs))
	}
	for _, j := range tr.Jobs {
		if len(j.GPUModels) != 0 || j.TimedOn != workload.TimedOnReference {
			t.Fatalf("job %s: gpu_models %v, timed_on %q: want none and %q", j.ID, j.GPUModels, j.TimedOn, workload.TimedOnReference)
		}
	}
	for _, np := range []string{"least-loaded"} {
		r, err := ClusterStudy(c, "fixture.yaml", tr, StudyOptions{NodePlacement: np})
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range r.Runs {
			if rr := run.RunRatio; rr.N != 10 || rr.Median < 0.999 || rr.Median > 1.001 || rr.P95 > 1.001 {
				t.Errorf("%s, %s: simulated JCT over the trace's run %+v: want 10 jobs, median and p95 1.000", np, run.Run, rr)
			}
		}
	}
}
