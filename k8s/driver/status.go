package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/salusgo/salus/k8s/dra"
)

// DeviceStatusData is the data of a prepared claim's device status
// (status.devices[].data on the ResourceClaim): what the daemon holds for it.
type DeviceStatusData struct {
	GPU         int     `json:"gpu"`                 // the GPU's physical index
	MemoryMiB   float64 `json:"memoryMiB,omitempty"` // reserved with the daemon (0 for admin access)
	AdminAccess bool    `json:"adminAccess,omitempty"`
}

// writeStatus records on the claim (status.devices, with Config.Kube) what
// the driver prepared: the device, a Ready condition and DeviceStatusData. A
// failure is logged, not returned: the claim is prepared, and the status is
// for people and tools to read.
func (d *Driver) writeStatus(ctx context.Context, c *resourceapi.ResourceClaim, dev kubeletplugin.Device, rec record) {
	if d.cfg.Kube == nil {
		return
	}
	data, _ := json.Marshal(DeviceStatusData{GPU: rec.GPU, MemoryMiB: rec.MemoryMiB, AdminAccess: rec.AdminAccess})
	msg := fmt.Sprintf("the salus daemon holds %g MiB of GPU %d for the claim", rec.MemoryMiB, rec.GPU)
	if rec.AdminAccess {
		msg = fmt.Sprintf("admin access to GPU %d: monitoring only, nothing reserved", rec.GPU)
	}
	status := resourceapi.AllocatedDeviceStatus{
		Driver: dra.DriverName, Pool: dev.PoolName, Device: dev.DeviceName,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", Message: msg,
			ObservedGeneration: c.Generation, LastTransitionTime: metav1.Now()}},
		Data: &runtime.RawExtension{Raw: data},
	}
	if dev.ShareID != nil {
		status.ShareID = (*string)(dev.ShareID)
	}
	claims := d.cfg.Kube.ResourceV1().ResourceClaims(c.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := claims.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != c.UID {
			return fmt.Errorf("the claim was made again under UID %s", cur.UID)
		}
		devices := cur.Status.Devices[:0:0]
		for _, s := range cur.Status.Devices {
			if s.Driver != status.Driver || s.Pool != status.Pool || s.Device != status.Device || !sameShare(s.ShareID, status.ShareID) {
				devices = append(devices, s)
			}
		}
		cur.Status.Devices = append(devices, status)
		_, err = claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		d.log.Warn("the claim's device status is not written", "claim", c.UID, "name", c.Namespace+"/"+c.Name, "err", err)
	}
}

func sameShare(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// claimGone says whether the claim of a record no longer exists (with
// Config.Kube): not found by its name, or found under another UID.
func (d *Driver) claimGone(ctx context.Context, rec record) (bool, error) {
	if d.cfg.Kube == nil {
		return false, nil
	}
	ns, name, ok := strings.Cut(rec.Name, "/")
	if !ok {
		return false, fmt.Errorf("record of claim %s names no namespace/name (%q)", rec.UID, rec.Name)
	}
	c, err := d.cfg.Kube.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return string(c.UID) != rec.UID, nil
}
