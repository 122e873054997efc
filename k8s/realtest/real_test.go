//go:build linux

package realtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/driver"
)

const (
	gpuNode  = "node-a" // the DaemonSet's node, whose driver publishes two GPUs
	bareNode = "node-b" // a node without GPUs: the scheduler must never pick it
	gib      = int64(1) << 30
	// probeSecret is the secret of the test's own reservations (64 hex digits).
	probeSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// setup installs the chart, makes the two nodes, and starts the driver of
// gpuNode with the token of the chart's DaemonSet pod there, as the kubelet
// would give it. It returns the slice the driver published.
func setup(t *testing.T, e env, c *cluster) (*driverProc, *resourceapi.ResourceSlice) {
	ctx := context.Background()
	c.namespace(t, "salus-system", nil)
	objs := render(t, e.chartDir, e.values)
	c.apply(t, "salus-system", objs)
	c.node(t, gpuNode, map[string]string{"nvidia.com/gpu.present": "true"})
	c.node(t, bareNode, nil)

	// The DaemonSet controller makes a pod per node; the scheduler binds it.
	var dsPod *corev1.Pod
	waitFor(t, "the chart's DaemonSet pod on "+gpuNode, func() (bool, error) {
		l, err := c.cs.CoreV1().Pods("salus-system").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + gpuNode})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		dsPod = &l.Items[0]
		return true, nil
	})
	kc := filepath.Join(e.work, "driver.kubeconfig")
	c.kubeconfigFor(t, kc, c.podToken(t, dsPod))
	d := startDriver(t, e, filepath.Join(e.work, "driver"), gpuNode, kc)
	return d, c.slice(t, gpuNode, d, true)
}

// TestReal checks the chart, the driver's slice and the claims against the
// real API server, scheduler and controller manager.
func TestReal(t *testing.T) {
	e := loadEnv(t)
	if !e.gateEnabled {
		t.Skip("the API server runs with DRAConsumableCapacity=false: TestConsumableCapacityOff")
	}
	c := connect(t, e.kubeconfig)
	ctx := context.Background()
	admin := mustRead(t, e.adminToken)
	daemon := driver.NewConnectDaemon(e.daemon, admin)
	gpus, err := daemon.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, slice := setup(t, e, c)

	t.Run("chart", func(t *testing.T) {
		// The API server compiled the chart's CEL (the DeviceClass selector on
		// create, the admission policy's expressions in its type check).
		dc, err := c.cs.ResourceV1().DeviceClasses().Get(ctx, dra.DriverName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(dc.Spec.Selectors) != 1 || dc.Spec.Selectors[0].CEL == nil {
			t.Fatalf("DeviceClass %s: selectors %+v, want one CEL selector", dc.Name, dc.Spec.Selectors)
		}
		// The chart's admission policies: the driver's slices' and the claims'.
		waitFor(t, "the admission policies' type check", func() (bool, error) {
			l, err := c.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) != 2 {
				return false, err
			}
			for _, p := range l.Items {
				if p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil {
					return false, nil
				}
				if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
					t.Fatalf("policy %s: the API server's type check warns: %+v", p.Name, w)
				}
			}
			return true, nil
		})
	})

	t.Run("slice", func(t *testing.T) {
		if slice.Spec.Driver != dra.DriverName || slice.Spec.Pool.Name != gpuNode || len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].Name != gpuNode {
			t.Fatalf("slice %s: driver %q, pool %q, owners %+v; want %s's pool, owned by its Node", slice.Name, slice.Spec.Driver, slice.Spec.Pool.Name, slice.OwnerReferences, gpuNode)
		}
		if len(slice.Spec.Devices) != len(gpus) {
			t.Fatalf("slice has %d devices, the daemon %d GPUs", len(slice.Spec.Devices), len(gpus))
		}
		for i, dev := range slice.Spec.Devices {
			if dev.AllowMultipleAllocations == nil || !*dev.AllowMultipleAllocations {
				t.Errorf("device %s: allowMultipleAllocations %v as stored, want true: the GPU is not shared", dev.Name, dev.AllowMultipleAllocations)
			}
			capy, ok := dev.Capacity[dra.CapMemory]
			want := int64(gpus[i].MemoryMiB) << 20
			if !ok || capy.Value.Value() != want || capy.RequestPolicy == nil {
				t.Errorf("device %s: capacity %s = %+v, want %d bytes (the daemon's GPU %d) with a request policy", dev.Name, dra.CapMemory, capy, want, gpus[i].Index)
			}
		}
	})

	t.Run("admission", func(t *testing.T) {
		// The driver's token may publish only its own node's slices (the
		// chart's policy), and do nothing its role does not allow.
		kc, err := os.ReadFile(filepath.Join(e.work, "driver.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		drv := connectBytes(t, kc)
		other := dra.Slice(bareNode, gpus, "", 0)
		other.TypeMeta = metav1.TypeMeta{}
		_, err = drv.cs.ResourceV1().ResourceSlices().Create(ctx, other, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "may not change the ResourceSlices of node '"+bareNode+"'") {
			t.Errorf("the driver of %s creating %s's slice: %v, want the chart's policy to deny it", gpuNode, bareNode, err)
		}
		if _, err := drv.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the driver listing pods: %v, want forbidden", err)
		}
	})

	// The kubelet's side: the registration socket, then the DRA service at
	// the endpoint it names.
	var kubelet drapb.DRAPluginClient
	top := t // the DRA connection outlives the subtest
	t.Run("registration", func(t *testing.T) {
		reg := dial(t, filepath.Join(d.registrarDir, dra.DriverName+"-reg.sock"))
		rc := registerapi.NewRegistrationClient(reg)
		info, err := rc.GetInfo(ctx, &registerapi.InfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if info.Type != registerapi.DRAPlugin || info.Name != dra.DriverName || !slices.Contains(info.SupportedVersions, drapb.DRAPluginService) {
			t.Fatalf("GetInfo: %+v, want a DRA plugin %s serving %s", info, dra.DriverName, drapb.DRAPluginService)
		}
		if _, err := rc.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
			t.Fatal(err)
		}
		kubelet = drapb.NewDRAPluginClient(dial(top, info.Endpoint))
	})
	if kubelet == nil {
		t.FailNow()
	}

	ns := c.namespace(t, "claims", nil)
	templates := decodeAll(t, e.claimsFile, mustReadBytes(t, e.claimsFile))
	var tmpls []*unstructured.Unstructured
	for _, o := range templates {
		if o.GetKind() == "ResourceClaimTemplate" {
			o.SetLabels(nil)
			tmpls = append(tmpls, o)
		}
	}
	c.apply(t, ns, tmpls)

	t.Run("two-devices", func(t *testing.T) {
		// Refused at admission by the chart's claim policy, before the scheduler
		// allocates what the driver could only refuse at prepare.
		claim := sixGiB("two", ns, 2)
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{Requests: []string{"gpu"}, DistinctAttribute: ptr(resourceapi.FullyQualifiedName(dra.AttrIndex))}}
		_, err := c.cs.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "must ask for one device") {
			t.Errorf("a two-device claim: %v, want the claim policy's refusal", err)
		}
	})

	t.Run("config-past-capacity", func(t *testing.T) {
		// Allocated (6 GiB fits), refused at prepare: its hints need 7000 MiB.
		claim := sixGiB("greedy", ns, 1)
		params, _ := json.Marshal(map[string]any{"apiVersion": "gpu.salus.dev/v1alpha1", "kind": "ClaimConfig", "persistentMiB": 7000})
		claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"gpu"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: dra.DriverName, Parameters: runtime.RawExtension{Raw: params}}}}}
		mustCreate(t, c, claim)
		p := c.pod(t, ns, "greedy", "", "greedy")
		out := c.schedule(t, p)
		if out.node != gpuNode {
			t.Fatalf("not allocated: %s", out.unschedulable)
		}
		if msg := prepareErr(t, kubelet, out.claim); !strings.Contains(msg, "more than the 6144 MiB") {
			t.Errorf("prepare: %q, want the driver's refusal of hints past the capacity granted", msg)
		}
		c.forceDelete(t, p)
	})

	t.Run("admin-access", func(t *testing.T) {
		// Refused in a namespace without the admin label, by the API server.
		// With a capacity request of 1 MiB, as the chart's claim policy asks of
		// a monitoring claim (without one it would take the whole GPU).
		admin := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "monitor", Namespace: ns},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DriverName, AdminAccess: ptr(true),
					Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{dra.CapMemory: resource.MustParse("1Mi")}}}}}}}}

		if _, err := c.cs.ResourceV1().ResourceClaims(ns).Create(ctx, admin, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), resourceapi.DRAAdminNamespaceLabelKey) {
			t.Errorf("admin access in an unlabelled namespace: %v, want a refusal naming %s", err, resourceapi.DRAAdminNamespaceLabelKey)
		}
		// Allocated in a labelled one, with adminAccess in its result. (On
		// GPUs full of shares the v1.37.2 scheduler does not allocate it:
		// "cannot allocate all claims"; docs/kubernetes.md.)
		ans := c.namespace(t, "monitoring", map[string]string{resourceapi.DRAAdminNamespaceLabelKey: "true"})
		admin.Namespace = ans
		// Without a capacity request, refused by the chart's claim policy.
		noCapacity := admin.DeepCopy()
		noCapacity.Name = "monitor-whole"
		noCapacity.Spec.Devices.Requests[0].Exactly.Capacity = nil
		if _, err := c.cs.ResourceV1().ResourceClaims(ans).Create(ctx, noCapacity, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "must ask for capacity") {
			t.Errorf("admin access without a capacity request: %v, want the claim policy's refusal", err)
		}
		mustCreate(t, c, admin)
		p := c.pod(t, ans, "monitor", "", "monitor")
		out := c.schedule(t, p)
		if out.node != gpuNode {
			t.Fatalf("admin-access claim: %q, want allocated", out.unschedulable)
		}
		res := out.claim.Status.Allocation.Devices.Results
		if len(res) != 1 || res[0].AdminAccess == nil || !*res[0].AdminAccess {
			t.Fatalf("admin-access claim allocated %+v, want one device with adminAccess", res)
		}
		t.Logf("admin-access claim: %s, consumed %v", res[0].Device, res[0].ConsumedCapacity)
		c.forceDelete(t, p)
	})

	// Four 6 GiB claims on two 14 GiB GPUs: two on each.
	var four []*corev1.Pod
	var fourClaims []*resourceapi.ResourceClaim
	t.Run("sharing", func(t *testing.T) {
		perDevice := map[string]int{}
		for i := range 4 {
			p := c.pod(t, ns, "train-"+string(rune('0'+i)), "resnet50-6gib", "")
			out := c.schedule(t, p)
			if out.node != gpuNode {
				t.Fatalf("claim %d of four: %q, want allocated on %s", i, out.unschedulable, gpuNode)
			}
			res := out.claim.Status.Allocation.Devices.Results
			if len(res) != 1 || res[0].ShareID == nil {
				t.Fatalf("claim %d: results %+v, want one share of a GPU", i, res)
			}
			q := res[0].ConsumedCapacity[dra.CapMemory]
			if q.Value() != 6*gib {
				t.Errorf("claim %d consumed %s of %s, want 6Gi", i, q.String(), dra.CapMemory)
			}
			perDevice[res[0].Device]++
			four, fourClaims = append(four, p), append(fourClaims, out.claim)
		}
		if perDevice["gpu-0"] != 2 || perDevice["gpu-1"] != 2 {
			t.Errorf("claims per GPU %v, want two on each", perDevice)
		}
		checkNotOverAllocated(t, c, gpus)
	})
	if len(four) != 4 {
		t.FailNow()
	}

	var fifth *corev1.Pod
	t.Run("fifth-refused", func(t *testing.T) {
		fifth = c.pod(t, ns, "train-4", "resnet50-6gib", "")
		out := c.schedule(t, fifth)
		if out.unschedulable == "" {
			checkNotOverAllocated(t, c, gpus)
			t.Fatalf("the fifth 6 GiB claim was allocated %+v on two 14 GiB GPUs holding four", out.claim.Status.Allocation.Devices.Results)
		}
		t.Logf("the scheduler: %s", out.unschedulable)
	})

	t.Run("too-large", func(t *testing.T) {
		out := c.schedule(t, c.pod(t, ns, "too-large", "too-large-200gib", ""))
		if out.unschedulable == "" {
			t.Fatalf("a 200 GiB claim was allocated: %+v", out.claim.Status.Allocation.Devices.Results)
		}
	})

	t.Run("prepare-unprepare", func(t *testing.T) {
		for i, rc := range fourClaims {
			dev := prepare(t, kubelet, rc)
			if dev.DeviceName != rc.Status.Allocation.Devices.Results[0].Device || len(dev.CdiDeviceIds) != 1 || dev.CdiDeviceIds[0] != driver.CDIDeviceID(string(rc.UID)) {
				t.Errorf("claim %d prepared %+v", i, dev)
			}
			spec := filepath.Join(d.cd, dra.DriverName+"-"+string(rc.UID)+".json")
			st, err := os.Stat(spec)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("claim %d's CDI spec: %v, %v; want 0600", i, st, err)
			}
			if !strings.Contains(string(mustReadBytes(t, spec)), "SALUS_CLAIM="+string(rc.UID)) {
				t.Errorf("claim %d's CDI spec names no SALUS_CLAIM=%s", i, rc.UID)
			}
			if again := prepare(t, kubelet, rc); again.CdiDeviceIds[0] != dev.CdiDeviceIds[0] {
				t.Errorf("claim %d prepared again: %+v, want the same device", i, again)
			}
			// The driver wrote the claim's device status, as the chart's RBAC
			// lets it (1.37 asks for resourceclaims/driver besides the status).
			waitFor(t, "claim "+rc.Name+"'s status.devices", func() (bool, error) {
				got, err := c.cs.ResourceV1().ResourceClaims(rc.Namespace).Get(ctx, rc.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, st := range got.Status.Devices {
					if st.Driver == dra.DriverName && st.Device == dev.DeviceName {
						return true, nil
					}
				}
				return false, nil
			})
		}
		// The daemon holds the four: 6 GiB more fits on neither GPU.
		for _, g := range gpus {
			if err := daemon.Reserve(ctx, "probe", "realtest/probe", g.Index, 6144, probeSecret, driver.Intent{}); err == nil {
				daemon.Release(ctx, "probe")
				t.Errorf("the daemon took a 6 GiB probe on GPU %d, which holds two prepared 6 GiB claims of %g MiB", g.Index, g.MemoryMiB)
			}
		}
		first := fourClaims[0]
		gpu := first.Status.Allocation.Devices.Results[0].Device
		unprepare(t, kubelet, first)
		if _, err := os.Stat(filepath.Join(d.cd, dra.DriverName+"-"+string(first.UID)+".json")); !os.IsNotExist(err) {
			t.Errorf("the unprepared claim's CDI spec: %v, want removed", err)
		}
		idx := slices.IndexFunc(gpus, func(g dra.GPU) bool { return dra.DeviceName(g.Index) == gpu })
		if err := daemon.Reserve(ctx, "probe", "realtest/probe", gpus[idx].Index, 6144, probeSecret, driver.Intent{}); err != nil {
			t.Errorf("after the unprepare, the daemon refused 6 GiB on %s: %v", gpu, err)
		}
		daemon.Release(ctx, "probe")
		unprepare(t, kubelet, first) // twice is no error
		for _, rc := range fourClaims[1:] {
			unprepare(t, kubelet, rc)
		}
	})

	t.Run("fifth-after-one-leaves", func(t *testing.T) {
		c.forceDelete(t, four[0])
		// The fifth is still marked unschedulable from before: wait for its binding.
		claim := c.claimOf(t, fifth)
		waitFor(t, "the fifth pod bound, its claim allocated, once one of the four is gone", func() (bool, error) {
			p, err := c.cs.CoreV1().Pods(ns).Get(ctx, fifth.Name, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" {
				return false, err
			}
			rc, err := c.cs.ResourceV1().ResourceClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			return err == nil && rc.Status.Allocation != nil, err
		})
		checkNotOverAllocated(t, c, gpus)
	})
}

// checkNotOverAllocated checks every claim's allocation against the daemon's
// GPUs: the memory the claims (other than admin access) hold on a GPU never
// sums past what the daemon has there, whatever the slice said.
func checkNotOverAllocated(t *testing.T, c *cluster, gpus []dra.GPU) {
	t.Helper()
	l, err := c.cs.ResourceV1().ResourceClaims("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int64{}
	for _, rc := range l.Items {
		if rc.Status.Allocation == nil {
			continue
		}
		for _, r := range rc.Status.Allocation.Devices.Results {
			if r.Driver != dra.DriverName || (r.AdminAccess != nil && *r.AdminAccess) {
				continue
			}
			q, ok := r.ConsumedCapacity[dra.CapMemory]
			if !ok {
				t.Errorf("claim %s/%s holds %s with no consumed capacity: the whole GPU", rc.Namespace, rc.Name, r.Device)
				continue
			}
			held[r.Device] += q.Value()
		}
	}
	for _, g := range gpus {
		name := dra.DeviceName(g.Index)
		if have := int64(g.MemoryMiB) << 20; held[name] > have {
			t.Errorf("over-allocated: claims hold %s of %s, the daemon has %s", resource.NewQuantity(held[name], resource.BinarySI), name, resource.NewQuantity(have, resource.BinarySI))
		}
	}
}

// sixGiB is a claim of count devices of class gpu.salus.dev, 6 GiB of each.
func sixGiB(name, ns string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DriverName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{dra.CapMemory: resource.MustParse("6Gi")}}}}}}}}
}

func mustCreate(t *testing.T, c *cluster, rc *resourceapi.ResourceClaim) {
	t.Helper()
	if _, err := c.cs.ResourceV1().ResourceClaims(rc.Namespace).Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim %s: %v", rc.Name, err)
	}
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func claimRef(rc *resourceapi.ResourceClaim) *drapb.Claim {
	return &drapb.Claim{Namespace: rc.Namespace, Name: rc.Name, Uid: string(rc.UID)}
}

// prepareErr calls NodePrepareResources as the kubelet does and returns the
// claim's error ("" when it was prepared).
func prepareErr(t *testing.T, k drapb.DRAPluginClient, rc *resourceapi.ResourceClaim) string {
	t.Helper()
	resp, err := k.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claimRef(rc)}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	return resp.Claims[string(rc.UID)].GetError()
}

// prepare prepares the claim as the kubelet does and returns its one device.
func prepare(t *testing.T, k drapb.DRAPluginClient, rc *resourceapi.ResourceClaim) *drapb.Device {
	t.Helper()
	resp, err := k.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claimRef(rc)}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := resp.Claims[string(rc.UID)]
	if r.GetError() != "" || len(r.GetDevices()) != 1 {
		t.Fatalf("prepare claim %s: %+v, want one device", rc.Name, r)
	}
	return r.Devices[0]
}

func unprepare(t *testing.T, k drapb.DRAPluginClient, rc *resourceapi.ResourceClaim) {
	t.Helper()
	resp, err := k.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{claimRef(rc)}})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	if msg := resp.Claims[string(rc.UID)].GetError(); msg != "" {
		t.Fatalf("unprepare claim %s: %s", rc.Name, msg)
	}
}

func mustReadBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, path string) string {
	return strings.TrimSpace(string(mustReadBytes(t, path)))
}
