//go:build linux

package realtest

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salusgo/salus/k8s/dra"
)

// TestConsumableCapacityOff checks what an API server with
// DRAConsumableCapacity=false does with the driver's slice and a claim's
// capacity request: it drops the sharing fields, and the driver says so, in
// its log, naming the feature gate, and stops with an error.
func TestConsumableCapacityOff(t *testing.T) {
	e := loadEnv(t)
	if e.gateEnabled {
		t.Skip("the API server runs with DRAConsumableCapacity on: TestReal")
	}
	c := connect(t, e.kubeconfig)
	ctx := context.Background()
	c.node(t, gpuNode, nil)
	d := startDriver(t, e, filepath.Join(e.work, "driver-gate-off"), gpuNode, e.kubeconfig)
	slice := c.slice(t, gpuNode, d, false)
	for _, dev := range slice.Spec.Devices {
		if dev.AllowMultipleAllocations != nil {
			t.Errorf("device %s: allowMultipleAllocations %v stored with the gate off, want dropped", dev.Name, *dev.AllowMultipleAllocations)
		}
		if capy := dev.Capacity[dra.CapMemory]; capy.RequestPolicy != nil {
			t.Errorf("device %s: requestPolicy %+v stored with the gate off, want dropped", dev.Name, capy.RequestPolicy)
		}
	}
	// The driver fails loudly: it names the feature gate and stops (a driver
	// that went on would publish shares every claim then takes whole).
	waitFor(t, "the driver's log naming the dropped fields' feature gate", func() (bool, error) {
		return d.logHas("the driver cannot go on") && d.logHas("DRAConsumableCapacity"), nil
	})
	waitFor(t, "the driver to stop", func() (bool, error) {
		select {
		case <-d.exited:
			return true, nil
		default:
			return false, nil
		}
	})
	if d.err == nil {
		t.Error("the driver exited with status 0 after the API server dropped the sharing fields; want an error")
	}

	claim := sixGiB("six", "default", 1)
	got, err := c.cs.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if capy := got.Spec.Devices.Requests[0].Exactly.Capacity; capy != nil {
		t.Errorf("claim's capacity request %+v stored with the gate off, want dropped (the claim then takes a whole GPU)", capy)
	}
}
