// Package dra is the Dynamic Resource Allocation side of the node daemon: what it
// publishes about the node's GPUs (a ResourceSlice), how a claim's opaque
// configuration is read and checked, and how an allocated claim maps to a daemon
// session (a CDI spec that hands the container the daemon's socket, its token and
// the numbers the session declares). Everything here is a pure function of its
// arguments: there are no Kubernetes client calls in this package.
package dra

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DriverName is the DRA driver's name, and the domain of its attributes and
// capacities.
const DriverName = "gpu.salus.dev"

// GPU is one GPU the daemon drives.
type GPU struct {
	Index         int     // physical index (nvidia-smi's, PCI bus order)
	Model         string  // e.g. "NVIDIA H100 80GB HBM3"
	MemoryMiB     float64 // total memory
	DriverVersion string  // e.g. "550.54.15"
}

// Attribute and capacity names, all in the driver's domain (DriverName): a CEL
// selector reads them as device.attributes["gpu.salus.dev"].model, or
// device.capacity["gpu.salus.dev"].memory.
const (
	AttrModel         resourcev1.QualifiedName = DriverName + "/model"
	AttrIndex         resourcev1.QualifiedName = DriverName + "/index"
	AttrMemoryMiB     resourcev1.QualifiedName = DriverName + "/memoryMiB"
	AttrDriverVersion resourcev1.QualifiedName = DriverName + "/driverVersion"
	CapMemory         resourcev1.QualifiedName = DriverName + "/memory"
)

const mib = 1 << 20

// DeviceName is the name of the device that stands for the GPU with this physical
// index: gpu-<index>.
func DeviceName(index int) string { return fmt.Sprintf("gpu-%d", index) }

// memoryBytes is the GPU's memory in bytes, in whole MiB (rounded down), so that
// the capacity is a whole number of the request policy's step.
func memoryBytes(g GPU) int64 {
	if math.IsNaN(g.MemoryMiB) || g.MemoryMiB <= 0 {
		return 0
	}
	return int64(math.Floor(min(g.MemoryMiB, math.MaxInt64/mib))) * mib
}

// Slice is the ResourceSlice that publishes the node's GPUs in one pool (named
// after the node when pool is empty) at the given generation: one device per GPU,
// named gpu-<index> and in index order whatever the order of gpus. Each device
// may be allocated to many claims at once (the daemon shares a GPU between
// sessions), and its memory is a consumable capacity: a claim asks for a share of
// it in whole MiB, and one that asks for none takes the whole GPU. The result
// depends on nothing but its arguments.
func Slice(node string, gpus []GPU, pool string, generation int64) *resourcev1.ResourceSlice {
	if pool == "" {
		pool = node
	}
	sorted := slices.Clone(gpus)
	slices.SortStableFunc(sorted, func(a, b GPU) int { return cmp.Compare(a.Index, b.Index) })
	devices := make([]resourcev1.Device, 0, len(sorted))
	for _, g := range sorted {
		mem := memoryBytes(g)
		devices = append(devices, resourcev1.Device{
			Name: DeviceName(g.Index),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				AttrModel:         {StringValue: ptr(g.Model)},
				AttrIndex:         {IntValue: ptr(int64(g.Index))},
				AttrMemoryMiB:     {IntValue: ptr(mem / mib)},
				AttrDriverVersion: {StringValue: ptr(g.DriverVersion)}, // a string: driver versions are not all semver ("535.104.05")
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				CapMemory: {
					Value: *resource.NewQuantity(mem, resource.BinarySI),
					RequestPolicy: &resourcev1.CapacityRequestPolicy{
						Default: resource.NewQuantity(mem, resource.BinarySI),
						ValidRange: &resourcev1.CapacityRequestPolicyRange{
							Min:  resource.NewQuantity(mib, resource.BinarySI),
							Step: resource.NewQuantity(mib, resource.BinarySI),
						},
					},
				},
			},
			AllowMultipleAllocations: ptr(true),
		})
	}
	return &resourcev1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + DriverName},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   DriverName,
			Pool:     resourcev1.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1},
			NodeName: ptr(node),
			Devices:  devices,
		},
	}
}

func ptr[T any](v T) *T { return &v }

// WholeGPUs turns a slice of shareable devices (Slice) into one of whole GPUs,
// for a cluster without consumable capacity (the DRAConsumableCapacity feature,
// on by default from Kubernetes 1.36): each device is allocated to one claim at
// a time, and its memory is a plain capacity with no request policy. This is
// what such an API server stores of a Slice anyway; publishing it as such keeps
// the driver's slice and the stored one equal. It changes slice in place.
func WholeGPUs(slice *resourcev1.ResourceSlice) {
	for i := range slice.Spec.Devices {
		d := &slice.Spec.Devices[i]
		d.AllowMultipleAllocations = nil
		for name, c := range d.Capacity {
			c.RequestPolicy = nil
			d.Capacity[name] = c
		}
	}
}

// Device taints the driver puts on the devices it publishes (resource.k8s.io/v1
// device taints, generally available in Kubernetes 1.37). Both are NoSchedule:
// no new claim is allocated the GPU, and pods running on it are left alone (the
// daemon, when it is back, still holds their sessions).
const (
	// TaintUnreachable: the driver cannot reach the node's daemon.
	TaintUnreachable = DriverName + "/daemon-unreachable"
	// TaintNotServed: the daemon no longer lists this GPU.
	TaintNotServed = DriverName + "/not-served"
)

// Taint puts a NoSchedule taint of key on the device of slice named device
// (every device when device is empty). It changes slice in place.
func Taint(slice *resourcev1.ResourceSlice, device, key string) {
	for i := range slice.Spec.Devices {
		d := &slice.Spec.Devices[i]
		if device == "" || d.Name == device {
			d.Taints = append(d.Taints, resourcev1.DeviceTaint{Key: key, Effect: resourcev1.DeviceTaintEffectNoSchedule})
		}
	}
}
