package driver

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/salusgo/salus/k8s/dra"
)

// WatchHealthStatus serves the kubelet's device health stream (the
// DRAResourceHealth service): every Config.HealthPeriod it asks the daemon for
// its GPUs and reports each GPU published as healthy when the daemon lists it,
// and unhealthy, saying why, when the daemon no longer lists it or cannot be
// reached. The kubelet shows it in the status of the pods that use the GPU.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	t := time.NewTicker(d.cfg.HealthPeriod)
	defer t.Stop()
	for {
		report := d.health(ctx)
		select {
		case <-ctx.Done():
			return nil
		case reports <- report:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// health is one report of every GPU published or listed by the daemon now, in
// device name order.
func (d *Driver) health(ctx context.Context) kubeletplugin.DeviceHealthReport {
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	gpus, err := d.cfg.Daemon.GPUs(cctx)
	cancel()
	listed := map[string]bool{}
	for _, g := range gpus {
		listed[dra.DeviceName(g.Index)] = true
	}
	d.mu.Lock()
	names := map[string]bool{}
	for name := range d.published {
		names[name] = true
	}
	d.mu.Unlock()
	for name := range listed {
		names[name] = true
	}
	now := time.Now()
	var report kubeletplugin.DeviceHealthReport
	for _, name := range slices.Sorted(maps.Keys(names)) {
		h := kubeletplugin.DeviceHealth{PoolName: d.cfg.Node, DeviceName: name, Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: now, HealthCheckTimeout: 3 * d.cfg.HealthPeriod}
		switch {
		case err != nil:
			h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, "the salus daemon cannot be reached: "+err.Error()
		case !listed[name]:
			h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, "the salus daemon no longer drives this GPU"
		}
		report.Devices = append(report.Devices, h)
	}
	return report
}
