package traceimport

import (
	"errors"
	"fmt"
	"testing"

	"github.com/salusgo/salus/workload"
)

// The node lists read as the public files have them: Alibaba 2023's with its
// header (milli-CPUs, MiB), PAI 2020's machine spec without one (cores, GB);
// a machine without GPUs has no GPU type.
func TestReadNodeLists(t *testing.T) {
	cases := []struct {
		format, file string
		want         []string
	}{
		{"alibaba2023-nodes", "openb_node_list_gpu_node.csv", []string{
			"openb-node-0000 2xP100 64c 262144MiB", "openb-node-0001 2xP100 64c 262144MiB", "openb-node-0022 8xG3 128c 786432MiB",
			"openb-node-0023 8xV100M32 96c 786432MiB", "openb-node-0025 4xV100M16 32c 131072MiB", "openb-node-0026 8xG2 96c 393216MiB",
			"openb-node-0036 2xT4 104c 524288MiB", "openb-node-1032 1xA10 128c 1048576MiB"}},
		{"alibaba2023-nodes", "openb_node_list_all_node.csv", []string{
			"openb-node-0227 0x 32c 262144MiB", "openb-node-0228 8xG3 128c 786432MiB", "openb-node-0229 8xV100M32 96c 786432MiB"}},
		{"pai2020-machines", "pai_machine_spec.csv", []string{
			"82e5af3cd5c4af3f56c62c54 2xT4 96c 524288MiB", "74e1c8457b01c76b314b22bb 8xV100M32 96c 524288MiB",
			"5b9c3a2d1e0f4a6b7c8d9e0f 2xP100 64c 262144MiB", "1a2b3c4d5e6f708192a3b4c5 8xMISC 96c 393216MiB",
			"f0e1d2c3b4a5968778695a4b 0x 96c 524288MiB"}},
	}
	for _, c := range cases {
		f, err := LookupNodes(c.format)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := f.Read("testdata/" + c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %dx%s %gc %.0fMiB", r.Name, r.GPUs, r.Model, r.CPUs, r.MemoryMiB))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.file, got, c.want)
		}
		if c.format == "alibaba2023-nodes" && rows[1].Line != 3 {
			t.Errorf("%s: the second machine is on line %d, want 3", c.file, rows[1].Line)
		}
	}
}

// A malformed machine names the file, line and field.
func TestReadNodeListErrors(t *testing.T) {
	cases := []struct{ format, data, field string }{
		{"alibaba2023-nodes", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,two,P100\n", "gpu"},
		{"alibaba2023-nodes", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,nan\n", "model"},
		{"alibaba2023-nodes", "sn,cpu_milli,memory_mib,model\nn0,64000,262144,P100\n", "gpu"},
		{"pai2020-machines", "m0,T4,96,lots,2\n", "cap_mem"},
		{"pai2020-machines", "m0,CPU,96,512,2\n", "gpu_type"},
	}
	for _, c := range cases {
		path := writeTemp(t, "nodes.csv", c.data)
		f, _ := LookupNodes(c.format)
		_, err := f.Read(path)
		var fe *workload.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.File != path {
			t.Errorf("%s %q: %v, want an error on field %s of %s", c.format, c.data, err, c.field, path)
		}
	}
	if _, err := LookupNodes("philly-nodes"); err == nil {
		t.Error("an unknown node-list format is no error")
	}
}

// A pod's gpu_spec is the job's GPU models; its own scheduling delay
// (scheduled - created) and run (deleted - scheduled) are kept beside it, in
// both output formats.
func TestImportAlibaba2023ModelsAndTraceTimes(t *testing.T) {
	for _, out := range []string{"csv", "jsonl"} {
		tr, _ := convert(t, "alibaba2023", Options{Output: out, GPUModels: true}, "openb_pod_list_sample.csv")
		got := map[string]string{}
		for _, j := range tr.Jobs {
			got[j.ID] = fmt.Sprintf("%v %v %v", j.GPUModels, *j.TraceQueueS, *j.TraceRunS)
		}
		want := map[string]string{
			"openb-pod-9001": "[] 0 3600",
			"openb-pod-9003": "[V100M16 V100M32] 5 995",
			"openb-pod-9002": "[] 10 590",
		}
		if out == "csv" {
			// Without GPUModels the jobs run anywhere: no gpu_models column.
			plain, _ := convert(t, "alibaba2023", Options{}, "openb_pod_list_sample.csv")
			for _, j := range plain.Jobs {
				if j.GPUModels != nil {
					t.Errorf("%s: gpu_models %v without Options.GPUModels", j.ID, j.GPUModels)
				}
			}
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: %s: %q, want %q", out, id, got[id], w)
			}
		}
	}
}
