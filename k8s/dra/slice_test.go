package dra

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var twoGPUs = []GPU{ // out of order on purpose: the slice lists them by index
	{Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, DriverVersion: "535.104.05"},
	{Index: 0, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, DriverVersion: "535.104.05"},
}

// The ResourceSlice of a node with two GPUs is the golden one, and the golden
// one decodes strictly back into the same ResourceSlice.
func TestSliceGolden(t *testing.T) {
	got, err := yaml.Marshal(Slice("node-a", twoGPUs, "", 3))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "slice-2gpus.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./dra -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the slice differs from %s (go test ./dra -update rewrites it):\n%s", golden, got)
	}
	var back resourcev1.ResourceSlice
	if err := yaml.UnmarshalStrict(want, &back); err != nil {
		t.Fatalf("%s does not decode strictly: %v", golden, err)
	}
	again, err := yaml.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Errorf("%s does not survive a round trip:\n%s", golden, again)
	}
}

func TestSlice(t *testing.T) {
	s := Slice("node-a", twoGPUs, "pool-x", 7)
	if s.Spec.Driver != DriverName || s.Spec.Pool.Name != "pool-x" || s.Spec.Pool.Generation != 7 || s.Spec.Pool.ResourceSliceCount != 1 {
		t.Errorf("spec: %+v", s.Spec)
	}
	if s.Spec.NodeName == nil || *s.Spec.NodeName != "node-a" {
		t.Errorf("nodeName: %v", s.Spec.NodeName)
	}
	if len(s.Spec.Devices) != 2 {
		t.Fatalf("%d devices, want 2", len(s.Spec.Devices))
	}
	for i, d := range s.Spec.Devices {
		if want := DeviceName(i); d.Name != want {
			t.Errorf("device %d is %q, want %q", i, d.Name, want)
		}
		if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
			t.Errorf("%s: not shareable", d.Name)
		}
		if v := d.Capacity[CapMemory].Value; v.String() != "40Gi" {
			got := v.String()
			t.Errorf("%s: memory capacity %s, want 40Gi", d.Name, got)
		}
		if got := d.Attributes[AttrIndex].IntValue; got == nil || *got != int64(i) {
			t.Errorf("%s: index attribute %v", d.Name, got)
		}
		if got := d.Attributes[AttrMemoryMiB].IntValue; got == nil || *got != 40960 {
			t.Errorf("%s: memoryMiB attribute %v", d.Name, got)
		}
	}
	// The caller's slice is left as it was.
	if twoGPUs[0].Index != 1 {
		t.Error("Slice reordered its argument")
	}
	// Fractional MiB round down to whole MiB, a multiple of the request step.
	frac := Slice("n", []GPU{{Index: 0, MemoryMiB: 16160.7}}, "", 1)
	if v := frac.Spec.Devices[0].Capacity[CapMemory].Value; v.Value() != 16160<<20 {
		got := v.Value()
		t.Errorf("memory of 16160.7 MiB is %d bytes, want %d", got, 16160<<20)
	}
}

// WholeGPUs leaves what a cluster without consumable capacity stores: no
// multiple allocations, no request policy, the memory as a plain capacity.
// Taint marks one device, or all.
func TestWholeGPUsAndTaint(t *testing.T) {
	s := Slice("node-a", twoGPUs, "", 1)
	WholeGPUs(s)
	Taint(s, "gpu-1", TaintNotServed)
	for _, d := range s.Spec.Devices {
		c := d.Capacity[CapMemory]
		if d.AllowMultipleAllocations != nil || c.RequestPolicy != nil || c.Value.Value() != 40960<<20 {
			t.Errorf("%s: allowMultipleAllocations %v, capacity %+v; want a whole GPU of 40960 MiB", d.Name, d.AllowMultipleAllocations, c)
		}
	}
	if len(s.Spec.Devices[0].Taints) != 0 || len(s.Spec.Devices[1].Taints) != 1 || s.Spec.Devices[1].Taints[0].Key != TaintNotServed ||
		s.Spec.Devices[1].Taints[0].Effect != resourcev1.DeviceTaintEffectNoSchedule {
		t.Errorf("taints %+v, %+v: want gpu-1 alone tainted %s:NoSchedule", s.Spec.Devices[0].Taints, s.Spec.Devices[1].Taints, TaintNotServed)
	}
	Taint(s, "", TaintUnreachable)
	if len(s.Spec.Devices[0].Taints) != 1 || len(s.Spec.Devices[1].Taints) != 2 {
		t.Errorf("Taint of every device: %+v", s.Spec.Devices)
	}
}
