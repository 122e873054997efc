package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
)

func TestYAMLShapesNumberGPUsNodeByNode(t *testing.T) {
	c, err := ParseYAML([]byte(`
models:
  G1: {like: v100-16g}
shapes:
  - {name: a, count: 2, gpus: 8, model: a100}
  - {name: cpu, count: 1, gpus: 0, cpus: 64}
  - {name: g1, count: 1, gpus: 2, model: G1, memory_gib: 512}
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.GPUCount(); got != 18 {
		t.Fatalf("GPUs = %d, want 18", got)
	}
	for g, want := range map[int][2]int{0: {0, 0}, 7: {0, 7}, 8: {1, 0}, 15: {1, 7}, 16: {3, 0}, 17: {3, 1}} {
		if n, l := c.NodeOf(g); n != want[0] || l != want[1] {
			t.Errorf("NodeOf(%d) = %d,%d, want %v", g, n, l, want)
		}
	}
	if d := c.Device(16); d.Name != "G1" || d.TotalMiB != 16<<10 {
		t.Errorf("G1 = %+v, want the 16 GB V100's figures under its own name", d)
	}
	if got := len(c.Shapes()); got != 3 {
		t.Errorf("shapes = %d", got)
	}
	if c.MaxNodeGPUs() != 8 {
		t.Errorf("max node GPUs = %d", c.MaxNodeGPUs())
	}
}

func TestCSVAndErrorsNameLineAndField(t *testing.T) {
	c, err := ParseCSV(strings.NewReader("shape,count,gpus,model\nx,3,4,t4\n"), "c.csv", nil)
	if err != nil || c.GPUCount() != 12 || c.Device(11).Name != mustPreset(t, "t4").Name {
		t.Fatalf("csv: %v %+v", err, c)
	}
	for _, bad := range []string{
		"shape,count,gpus,model\nx,3,4,zz9\n",
		"shape,count,gpus,model\nx,three,4,t4\n",
	} {
		_, err := ParseCSV(strings.NewReader(bad), "c.csv", nil)
		if err == nil || !strings.Contains(err.Error(), "c.csv:2: field") {
			t.Errorf("%q: %v, want c.csv:2: field ...", bad, err)
		}
	}
	if _, err := ParseYAML([]byte("shapes:\n  - {count: 1, gpus: 2}\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "c.yaml:2: field model") {
		t.Errorf("missing model: %v", err)
	}
}

func mustPreset(t *testing.T, k string) device.Device {
	d, err := device.Preset(k)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A trace's raw node list given as a cluster file says that salus trace
// cluster makes the cluster file, with the list's format when it is known.
func TestNodeListIsNotAClusterFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ file, text, want string }{
		{"nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n", "salus trace cluster --format alibaba2023-nodes"},
		{"pai_machine_spec.csv", "82e5af3cd5c4af3f56c62c54,T4,96,512,2\n", "salus trace cluster --format"},
		{"nodes.txt", "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n", "salus trace cluster --format alibaba2023-nodes"},
	} {
		path := filepath.Join(dir, c.file)
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want the file and %q", c.file, err, c.want)
		}
	}
}
