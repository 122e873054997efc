package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	"k8s.io/utils/ptr"

	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/driver"
)

// waitFor waits for cond to hold, failing after a minute: it waits for a
// state the driver and its controller reach, not for a speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
	}
}

// stored is the node's one ResourceSlice as the fake API server holds it (nil
// before there is one).
func (r *rig) stored(t *testing.T) *resourceapi.ResourceSlice {
	t.Helper()
	list, err := r.kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		return nil
	}
	return &list.Items[0]
}

// withoutConsumableCapacity makes the fake API server store ResourceSlices as
// one with the DRAConsumableCapacity feature off does: it drops each device's
// allowMultipleAllocations and its capacities' request policies.
func withoutConsumableCapacity(kube *fake.Clientset) {
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	created := 0
	for _, verb := range []string{"create", "update"} {
		kube.PrependReactor(verb, "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
			s := a.(interface{ GetObject() runtime.Object }).GetObject().(*resourceapi.ResourceSlice).DeepCopy()
			for i := range s.Spec.Devices {
				s.Spec.Devices[i].AllowMultipleAllocations = nil
				for name, c := range s.Spec.Devices[i].Capacity {
					c.RequestPolicy = nil
					s.Spec.Devices[i].Capacity[name] = c
				}
			}
			if verb == "create" {
				if s.Name == "" {
					created++
					s.Name = fmt.Sprintf("%s%d", s.GenerateName, created)
				}
				return true, s, kube.Tracker().Create(gvr, s, "")
			}
			return true, s, kube.Tracker().Update(gvr, s, "")
		})
	}
}

// Where the API server drops the sharing fields, the driver fails loudly: its
// Fatal gets an error naming the feature gate, the Kubernetes version where it
// is on by default and the fallback flag.
func TestSharingDroppedIsFatal(t *testing.T) {
	fatal := make(chan error, 1)
	r := startWith(t, func(c *driver.Config) { c.Fatal = func(err error) { fatal <- err } }, withoutConsumableCapacity)
	var err error
	select {
	case err = <-fatal:
	case <-time.After(time.Minute):
		t.Fatal("no fatal error within a minute of publishing to an API server that drops consumable capacity")
	}
	for _, want := range []string{"DRAConsumableCapacity", "Kubernetes 1.36", "--whole-gpu-fallback", "allowMultipleAllocations"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("fatal error %q does not say %q", err, want)
		}
	}
	if r.drv.Err() == nil {
		t.Error("the driver's Err is nil after a fatal error: its liveness probe would pass")
	}
}

// With WholeGPUFallback the driver publishes whole GPUs instead, exactly what
// such an API server stores (so the controller has nothing more to write), and
// a claim of no capacity takes its GPU's whole memory with the daemon.
func TestWholeGPUFallback(t *testing.T) {
	r := startWith(t, func(c *driver.Config) {
		c.WholeGPUFallback = true
		c.Fatal = func(err error) { t.Errorf("fatal with the fallback on: %v", err) }
	}, withoutConsumableCapacity)
	select {
	case <-r.drv.Republish():
	case <-time.After(time.Minute):
		t.Fatal("the driver asked for no republish within a minute of the sharing fields being dropped")
	}
	ctx := context.Background()
	resources, err := r.drv.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := resources.Pools[node].Slices[0].Devices
	for _, d := range want {
		if d.AllowMultipleAllocations != nil || d.Capacity[dra.CapMemory].RequestPolicy != nil {
			t.Fatalf("the fallback still publishes sharing fields: %+v", d)
		}
	}
	if err := r.helper.PublishResources(ctx, resources); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stored slice equal to the whole GPUs published", func() bool {
		s := r.stored(t)
		return s != nil && equality.Semantic.DeepEqual(s.Spec.Devices, want)
	})
	if r.drv.Err() != nil {
		t.Errorf("Err with the fallback: %v", r.drv.Err())
	}
	c := claim("uid-whole", "whole", "gpu-0", 0, "")
	c.Status.Allocation.Devices.Results[0].ConsumedCapacity = nil
	if got := r.prepare(t, r.create(t, c)); got.Error != "" {
		t.Fatalf("prepare a whole GPU: %s", got.Error)
	}
	if _, err := r.daemon.ReserveClaim("other", "team-b/other", 0, 1, ""); err == nil || !strings.Contains(err.Error(), "its other claims hold 16000") {
		t.Errorf("GPU 0 after a whole-GPU claim: %v, want it full", err)
	}
}

// A claim with admin access (a monitoring pod) is prepared without a
// reservation and without binding: its container gets the socket and the GPU
// but no claim nor secret, the daemon holds nothing, and the claim's status
// says so. Unprepared, its files are gone.
func TestAdminAccessClaim(t *testing.T) {
	r := start(t)
	c := claim("uid-admin", "monitor", "gpu-0", 0, config)
	c.Status.Allocation.Devices.Results[0].ConsumedCapacity = nil
	c.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
	pc := r.create(t, c)
	if got := r.prepare(t, pc); got.Error != "" || len(got.Devices) != 1 || got.Devices[0].CdiDeviceIds[0] != "gpu.salus.dev/claim=uid-admin" {
		t.Fatalf("prepare an admin-access claim: %+v", got)
	}
	raw, err := os.ReadFile(filepath.Join(r.cdiDir, "gpu.salus.dev-uid-admin.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec := string(raw)
	for _, want := range []string{"SALUS_ADDR=", "SALUS_GPU=0", "CUDA_VISIBLE_DEVICES=0"} {
		if !strings.Contains(spec, want) {
			t.Errorf("the monitoring spec lacks %s:\n%s", want, spec)
		}
	}
	for _, not := range []string{"SALUS_CLAIM", "SALUS_PERSISTENT_MIB"} {
		if strings.Contains(spec, not) {
			t.Errorf("the monitoring spec has %s: its sessions would be bound to the claim:\n%s", not, spec)
		}
	}
	if _, err := r.daemon.ReserveClaim("whole", "team-b/whole", 0, 16000, ""); err != nil {
		t.Errorf("the daemon holds memory for an admin-access claim: %v", err)
	}
	got, err := r.kube.ResourceV1().ResourceClaims("team-a").Get(context.Background(), "monitor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.Devices; len(st) != 1 || st[0].Device != "gpu-0" || !strings.Contains(string(st[0].Data.Raw), `"adminAccess":true`) {
		t.Errorf("the admin-access claim's device status: %+v", st)
	}
	// Resync asserts nothing for it (the daemon's GPU 0 stays as it is).
	if n, err := r.drv.Resync(context.Background()); err != nil || n != 0 {
		t.Errorf("resync with an admin-access claim: %d, %v; want none asserted", n, err)
	}
	if msg := r.unprepare(t, pc); msg != "" {
		t.Fatal(msg)
	}
	if _, err := os.Stat(filepath.Join(r.cdiDir, "gpu.salus.dev-uid-admin.json")); !os.IsNotExist(err) {
		t.Errorf("the monitoring spec is left after unprepare: %v", err)
	}
}

// metric is the value of the metric of this name whose labels include labels.
func metric(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, l := range m.Label {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue next
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// A prepared claim's device status is on the ResourceClaim; once the claim is
// gone (its unprepare lost), the next Resync releases it with the daemon and
// removes its files, and the metrics count it.
func TestClaimStatusAndOrphans(t *testing.T) {
	metrics := driver.NewMetrics()
	r := startWith(t, func(c *driver.Config) { c.Metrics = metrics }, nil)
	ctx := context.Background()
	pc := r.create(t, claim("uid-o", "train-o", "gpu-1", 6000, config))
	if got := r.prepare(t, pc); got.Error != "" {
		t.Fatal(got.Error)
	}
	got, err := r.kube.ResourceV1().ResourceClaims("team-a").Get(ctx, "train-o", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status.Devices
	if len(st) != 1 || st[0].Driver != dra.DriverName || st[0].Pool != node || st[0].Device != "gpu-1" ||
		len(st[0].Conditions) != 1 || st[0].Conditions[0].Type != "Ready" || st[0].Conditions[0].Status != metav1.ConditionTrue {
		t.Fatalf("device status %+v", st)
	}
	var data driver.DeviceStatusData
	if err := json.Unmarshal(st[0].Data.Raw, &data); err != nil || data != (driver.DeviceStatusData{GPU: 1, MemoryMiB: 6000}) {
		t.Errorf("device status data %s (%v): want GPU 1, 6000 MiB", st[0].Data.Raw, err)
	}
	if v := metric(t, metrics.Gatherer(), "salus_dra_prepares_total", map[string]string{"kind": "job", "result": "ok"}); v != 1 {
		t.Errorf("salus_dra_prepares_total{kind=job,result=ok} = %v, want 1", v)
	}

	// Still there: asserted, not an orphan.
	if n, err := r.drv.Resync(ctx); err != nil || n != 1 {
		t.Fatalf("resync = %d, %v; want the claim asserted", n, err)
	}
	if err := r.kube.ResourceV1().ResourceClaims("team-a").Delete(ctx, "train-o", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := r.drv.Resync(ctx); err != nil || n != 0 {
		t.Fatalf("resync after the claim is gone = %d, %v; want none asserted", n, err)
	}
	if existed, _, _ := r.daemon.ReleaseClaim("uid-o"); existed {
		t.Error("the daemon still holds the orphaned claim")
	}
	for _, p := range []string{filepath.Join(r.cdiDir, "gpu.salus.dev-uid-o.json"), filepath.Join(r.stateDir, "claim-uid-o.json")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the orphan's clean-up: %v", p, err)
		}
	}
	if v := metric(t, metrics.Gatherer(), "salus_dra_orphans_unprepared_total", nil); v != 1 {
		t.Errorf("salus_dra_orphans_unprepared_total = %v, want 1", v)
	}
}

// The kubelet's health stream reports both GPUs healthy, then unhealthy when
// the daemon cannot be reached; the slice published meanwhile taints every GPU
// (NoSchedule), and the taints go once the daemon is back.
func TestHealthAndTaints(t *testing.T) {
	metrics := driver.NewMetrics()
	r := startWith(t, func(c *driver.Config) { c.HealthPeriod = 20 * time.Millisecond; c.Metrics = metrics }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := drahealthv1.NewDRAResourceHealthClient(r.conn).NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	report := func() map[string]drahealthv1.HealthStatus {
		t.Helper()
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("the health stream: %v", err)
		}
		out := map[string]drahealthv1.HealthStatus{}
		for _, d := range resp.Devices {
			if d.Device.PoolName != node {
				t.Errorf("health of %s in pool %q, want %q", d.Device.DeviceName, d.Device.PoolName, node)
			}
			out[d.Device.DeviceName] = d.Health
		}
		return out
	}
	healthy := drahealthv1.HealthStatus_HEALTHY
	if got := report(); len(got) != 2 || got["gpu-0"] != healthy || got["gpu-1"] != healthy {
		t.Fatalf("first health report %v: want gpu-0 and gpu-1 healthy", got)
	}

	r.daemonUp.Store(false)
	waitFor(t, "a health report of gpu-0 unhealthy", func() bool { return report()["gpu-0"] == drahealthv1.HealthStatus_UNHEALTHY })
	resources, err := r.drv.Refresh(ctx)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Refresh with the daemon unreachable: %v", err)
	}
	if err := r.helper.PublishResources(ctx, resources); err != nil {
		t.Fatal(err)
	}
	tainted := func(key string) bool {
		s := r.stored(t)
		if s == nil || len(s.Spec.Devices) != 2 {
			return false
		}
		for _, d := range s.Spec.Devices {
			if (key == "") != (len(d.Taints) == 0) || (key != "" && (d.Taints[0].Key != key || d.Taints[0].Effect != resourceapi.DeviceTaintEffectNoSchedule)) {
				return false
			}
		}
		return true
	}
	waitFor(t, "both GPUs tainted "+dra.TaintUnreachable, func() bool { return tainted(dra.TaintUnreachable) })
	if up := metric(t, metrics.Gatherer(), "salus_dra_daemon_up", nil); up != 0 {
		t.Errorf("salus_dra_daemon_up = %v with the daemon unreachable", up)
	}

	r.daemonUp.Store(true)
	if resources, err = r.drv.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.helper.PublishResources(ctx, resources); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the taints gone with the daemon back", func() bool { return tainted("") })
	waitFor(t, "a health report of gpu-0 healthy again", func() bool { return report()["gpu-0"] == healthy })
}
