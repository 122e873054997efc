package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/cluster"
)

// The node list's fixture becomes a cluster file, the pods are imported onto it
// and studied: every step from the command line, the cluster's G2 in the table.
func TestTraceClusterImportAndStudy(t *testing.T) {
	dir := t.TempDir()
	yaml := filepath.Join(dir, "c.yaml")
	if msg, err := run(t, "trace", "cluster", "--format", "alibaba2023-nodes", "../../workload/traceimport/testdata/openb_node_list_gpu_node.csv", "--out", yaml); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	c, err := cluster.Load(yaml)
	if err != nil || c.GPUCount() != 35 {
		t.Fatalf("the cluster file: %v, %d GPUs (want 35)", err, c.GPUCount())
	}
	pods := filepath.Join(dir, "pods.csv")
	if msg, err := run(t, "trace", "import", "--format", "alibaba2023", "../../eval/testdata/openb_pod_list_cluster.csv", "--cluster", yaml, "--out", pods); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	out, err := run(t, "study", "--cluster", yaml, "--trace", pods, "--policy", "pack")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"8xG2-96c-384g", "exclusive", "pack", "Queueing delay per priority class"} {
		if !strings.Contains(out, w) {
			t.Errorf("the study lacks %q:\n%s", w, out)
		}
	}
	// Under the co-location model the study runs too (the cluster's GPU
	// models without pairs of their own take the V100's).
	if out, err := run(t, "study", "--cluster", yaml, "--trace", pods, "--policy", "pack", "--interference", "measured"); err != nil || !strings.Contains(out, "pack") {
		t.Errorf("study under the co-location model: %v\n%s", err, out)
	}
	// --policy as every other command names it; --policies, its old name here,
	// still works and says it is deprecated.
	for _, flag := range []string{"--policy", "--policies"} {
		out, err := run(t, "study", "--cluster", yaml, "--trace", pods, flag, "fair", "-o", "csv")
		if err != nil {
			t.Fatalf("study %s fair: %v\n%s", flag, err, out)
		}
		if strings.Contains(out, "srtf") || !strings.Contains(out, "fair") {
			t.Errorf("study %s fair ran other policies than fair (or not fair):\n%s", flag, out)
		}
		if dep := strings.Contains(out, "deprecated, use --policy"); dep != (flag == "--policies") {
			t.Errorf("study %s: a deprecation notice %v, want it only for --policies:\n%s", flag, dep, out)
		}
	}
	if _, err := run(t, "trace", "cluster", "--format", "philly-nodes", yaml); err == nil || !strings.Contains(err.Error(), "alibaba2023-nodes") {
		t.Errorf("an unknown format: %v, want the formats named", err)
	}
}
