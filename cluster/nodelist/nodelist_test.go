package nodelist

import (
	"bytes"
	"strings"
	"testing"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/workload/traceimport"
)

func read(t *testing.T, format, file string) []traceimport.NodeRow {
	t.Helper()
	f, err := traceimport.LookupNodes(format)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Read("../../workload/traceimport/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// A node list becomes a cluster file that reads back as the same machines: the
// shapes counted, the trace's GPU types declared like their presets (the
// undisclosed G2, G3 like the default guess), GPUs numbered node by node.
func TestAlibabaNodeListBecomesACluster(t *testing.T) {
	shapes, models, err := Shapes(read(t, "alibaba2023-nodes", "openb_node_list_gpu_node.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) != 7 || shapes[0].Name != "2xP100-64c-256g" || shapes[0].Count != 2 {
		t.Fatalf("shapes %+v: want 7, the first 2 of 2xP100-64c-256g", shapes)
	}
	like := map[string]string{}
	for _, m := range models {
		like[m.Name] = m.Like
	}
	want := map[string]string{"P100": "p100", "G3": DefaultUnknown, "G2": DefaultUnknown, "V100M32": "v100", "V100M16": "v100-16g", "T4": "t4", "A10": "a10"}
	for k, v := range want {
		if like[k] != v {
			t.Errorf("model %s is like %q, want %q", k, like[k], v)
		}
	}
	var b bytes.Buffer
	if err := WriteYAML(&b, []string{"fixture"}, shapes, models); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.ParseYAML(b.Bytes(), "fixture.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if n, g := len(c.Nodes), c.GPUCount(); n != 8 || g != 2+2+8+8+4+8+2+1 {
		t.Errorf("%d nodes, %d GPUs: want 8 and 35", n, g)
	}
	// GPU 12 is the third node's (G3, GPUs 4-11) ... the fourth node's first.
	if node, local := c.NodeOf(12); c.Nodes[node].Model != "V100M32" || local != 0 {
		t.Errorf("GPU 12 is on %s (GPU %d), want the V100M32 node's first", c.Nodes[node].Model, local)
	}
	if d := c.Device(4); d.Name != "G3" || d.TotalMiB != 32*1024 {
		t.Errorf("a G3 is %s of %v MiB: want G3 with the V100's 32 GB", d.Name, d.TotalMiB)
	}
	if !strings.Contains(b.String(), "G2: {like: v100}  # unknown to the presets: a guess") {
		t.Errorf("the file does not say G2 is a guess:\n%s", b.String())
	}
}

// --like sets a type's preset; an unknown preset is an error; a machine without
// GPUs is a shape of 0 GPUs.
func TestNodeListOptions(t *testing.T) {
	rows := read(t, "pai2020-machines", "pai_machine_spec.csv")
	shapes, models, err := Shapes(rows, Options{Like: map[string]string{"MISC": "t4"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m.Name == "MISC" && (m.Like != "t4" || m.Why != "--like") {
			t.Errorf("MISC: %+v, want like t4 by --like", m)
		}
	}
	if last := shapes[len(shapes)-1]; last.GPUs != 0 || last.Name != "cpu-96c-512g" {
		t.Errorf("the CPU machine's shape: %+v", last)
	}
	if _, _, err := Shapes(rows, Options{Like: map[string]string{"MISC": "tpu"}}); err == nil {
		t.Error("--like MISC=tpu is no error")
	}
	if _, _, err := Shapes(rows, Options{Unknown: "tpu"}); err == nil {
		t.Error("--unknown-like tpu is no error")
	}
}

// The repository's Alibaba 2023 cluster is the whole cluster: 1,213 GPU nodes,
// 6,212 GPUs of seven types (the trace's README and the FGD paper).
func TestAlibaba2023ClusterFile(t *testing.T) {
	c, err := cluster.Load("../../examples/clusters/alibaba2023.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 1213 || c.GPUCount() != 6212 || len(c.Models()) != 7 {
		t.Errorf("%d nodes, %d GPUs, models %v: want 1213, 6212 and seven", len(c.Nodes), c.GPUCount(), c.Models())
	}
}
