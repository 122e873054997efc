package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/server"
)

func TestParseGPUs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []server.GPU
	}{
		{"", []server.GPU{{Index: 0, CapacityMiB: 100}}},
		{"1", []server.GPU{{Index: 0, CapacityMiB: 100}}},
		{"3", []server.GPU{{Index: 0, CapacityMiB: 100}, {Index: 1, CapacityMiB: 100}, {Index: 2, CapacityMiB: 100}}},
		{"0,1,3", []server.GPU{{Index: 0, CapacityMiB: 100}, {Index: 1, CapacityMiB: 100}, {Index: 3, CapacityMiB: 100}}},
		{"0:16384, 1:40960", []server.GPU{{Index: 0, CapacityMiB: 16384}, {Index: 1, CapacityMiB: 40960}}},
		{"3:", []server.GPU{{Index: 3, CapacityMiB: 100}}},
		{"5:2048", []server.GPU{{Index: 5, CapacityMiB: 2048}}},
	} {
		got, err := parseGPUs(tc.in, 100)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--gpus %q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"0":          "between 1 and",
		"-2":         "between 1 and",
		"0,0":        "listed twice",
		"a,b":        "not a device index",
		"0:-5":       "positive number of MiB",
		"0:x,1":      "positive number of MiB",
		"1,99999":    "not a device index",
		"100000":     "between 1 and",
		"0:1e12,1:1": "at most",
	} {
		if _, err := parseGPUs(in, 100); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--gpus %q: %v; want an error saying %q", in, err, want)
		}
	}
}

// TestServeNodeFlags: --gpus and --gpu-placement reach the daemon's config.
func TestServeNodeFlags(t *testing.T) {
	cmd := newServeCmd()
	if err := cmd.ParseFlags([]string{"--gpus", "0,2:40960", "--gpu-placement", "first-fit", "--capacity-mib", "16000"}); err != nil {
		t.Fatal(err)
	}
	var sf serveFlags
	sf.gpus, _ = cmd.Flags().GetString("gpus")
	sf.placement, _ = cmd.Flags().GetString("gpu-placement")
	gpus, gp, err := sf.node(deviceOf(t, 16000))
	if err != nil || gp.Name() != "first-fit" || !reflect.DeepEqual(gpus, []server.GPU{{Index: 0, CapacityMiB: 16000}, {Index: 2, CapacityMiB: 40960}}) {
		t.Errorf("node %v %v %v", gpus, gp, err)
	}
	sf.placement = "round-robin"
	if _, _, err := sf.node(deviceOf(t, 16000)); err == nil || !strings.Contains(err.Error(), "least-loaded") {
		t.Errorf("unknown placement: %v; want the choices named", err)
	}
}

func deviceOf(t *testing.T, mib float64) device.Device {
	t.Helper()
	dev, err := device.Preset("p100")
	if err != nil {
		t.Fatal(err)
	}
	dev.CapacityMiB = mib
	return dev
}

// eval --cluster runs the training suite on the cluster and says so; another
// suite refuses it.
func TestEvalOnACluster(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("shapes:\n  - {count: 2, gpus: 2, model: v100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "eval", "--cluster", file, "--policy", "fifo,pack", "--load", "4")
	if err != nil || !strings.Contains(out, "on the cluster of "+file) {
		t.Fatalf("eval --cluster: %v\n%s", err, out)
	}
	if _, err := run(t, "eval", "--cluster", file, "--suite", "overhead"); err == nil || !strings.Contains(err.Error(), "give --suite training") {
		t.Errorf("eval --cluster --suite overhead: %v, want a refusal", err)
	}
}
