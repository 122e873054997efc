package chart

import (
	"context"
	"testing"

	"github.com/salusgo/salus/k8s/dra"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
)

// celDevice is what a CEL selector sees of a published device.
func celDevice(driver string, d resourcev1.Device) cel.Device {
	return cel.Device{Driver: driver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
}

// The DeviceClass selectors of deploy/dra-example.yaml and of the chart compile
// with the scheduler's own CEL compiler (k8s.io/dynamic-resource-allocation/cel,
// consumable capacity on), match every device of the ResourceSlice the driver
// publishes (dra.Slice), and match no device of another driver that has the
// same attributes.
func TestDeviceClassSelectors(t *testing.T) {
	classes := map[string]*resourcev1.DeviceClass{}
	for _, o := range readManifests(t, deployDir+"/dra-example.yaml") {
		if c, ok := o.(*resourcev1.DeviceClass); ok {
			classes["dra-example.yaml"] = c
		}
	}
	classes["the chart"] = find[*resourcev1.DeviceClass](t, rendered(t, variants(t)[0]))
	if len(classes) != 2 {
		t.Fatalf("DeviceClasses: %v", classes)
	}

	slice := dra.Slice("node-a", []dra.GPU{
		{Index: 0, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, DriverVersion: "550.54.15"},
		{Index: 1, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, DriverVersion: "550.54.15"},
	}, "", 1)
	other := resourcev1.Device{
		Name:       "gpu-0",
		Attributes: slice.Spec.Devices[0].Attributes,
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"gpu.nvidia.com/memory": {Value: resource.MustParse("80Gi")}},
	}

	compiler := cel.GetCompiler(cel.Features{EnableConsumableCapacity: true})
	ctx := context.Background()
	for where, class := range classes {
		if class.Name != dra.DriverName || len(class.Spec.Selectors) == 0 {
			t.Errorf("%s: DeviceClass %q with %d selectors, want %s with at least one", where, class.Name, len(class.Spec.Selectors), dra.DriverName)
		}
		for _, sel := range class.Spec.Selectors {
			if sel.CEL == nil {
				t.Errorf("%s: a selector without a CEL expression", where)
				continue
			}
			res := compiler.CompileCELExpression(sel.CEL.Expression, cel.Options{})
			if res.Error != nil {
				t.Errorf("%s: %q does not compile: %v", where, sel.CEL.Expression, res.Error)
				continue
			}
			for _, d := range slice.Spec.Devices {
				ok, _, err := res.DeviceMatches(ctx, celDevice(slice.Spec.Driver, d))
				if err != nil || !ok {
					t.Errorf("%s: %q on the driver's %s: match %v, %v; want a match", where, sel.CEL.Expression, d.Name, ok, err)
				}
			}
			ok, _, err := res.DeviceMatches(ctx, celDevice("gpu.nvidia.com", other))
			if err != nil || ok {
				t.Errorf("%s: %q on another driver's device: match %v, %v; want no match", where, sel.CEL.Expression, ok, err)
			}
		}
	}
	if a, b := classes["dra-example.yaml"].Spec, classes["the chart"].Spec; len(a.Selectors) != len(b.Selectors) || a.Selectors[0].CEL.Expression != b.Selectors[0].CEL.Expression {
		t.Errorf("the example's DeviceClass %+v and the chart's %+v differ", a, b)
	}
}
