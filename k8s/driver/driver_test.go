package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/driver"
	"github.com/salusgo/salus/server"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	node       = "node-1"
	adminToken = "admin-secret-for-the-test"
)

// clientToken is the daemon's user token in the tests.
const clientToken = "client-token-for-the-test"

// envValue is the value of name in a list of NAME=VALUE.
func envValue(env []string, name string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	return ""
}

// bearer makes a connect client present tok.
func bearer(tok string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+tok)
			return next(ctx, req)
		}
	}))
}

// rig is a daemon of two 16000 MiB GPUs (physical 0 and 1), the driver in front
// of it registered as a kubelet plugin with a fake clientset, and a gRPC client
// that calls the plugin as the kubelet does.
type rig struct {
	daemon   *server.Server
	kube     *fake.Clientset
	drv      *driver.Driver
	cdiDir   string
	stateDir string
	api      string // the daemon's connect API
	kubelet  drapb.DRAPluginClient
	helper   *kubeletplugin.Helper
	conn     *grpc.ClientConn // the plugin's socket
	daemonUp *atomic.Bool     // false: the driver's daemon calls fail as if it were unreachable
}

// flakyDaemon is the daemon as the driver reaches it, which the test can make
// unreachable.
type flakyDaemon struct {
	driver.Daemon
	up *atomic.Bool
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:7070: connect: connection refused")

func (f flakyDaemon) GPUs(ctx context.Context) ([]dra.GPU, error) {
	if !f.up.Load() {
		return nil, errUnreachable
	}
	return f.Daemon.GPUs(ctx)
}

func start(t *testing.T) *rig { return startWith(t, nil, nil) }

// startWith starts a rig whose driver configuration is changed by config and
// whose fake API server is changed by kube before the driver starts (each may
// be nil).
func startWith(t *testing.T, config func(*driver.Config), kube func(*fake.Clientset)) *rig {
	t.Helper()
	pol, err := core.Lookup("pack")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := server.New(server.Config{Policy: pol, Device: "H100", CapacityMiB: 16000, GPUs: []server.GPU{{Index: 0}, {Index: 1}},
		AdminToken: adminToken, Token: clientToken, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	api := httptest.NewServer(d.Handler())
	t.Cleanup(api.Close)

	dir := t.TempDir()
	r := &rig{daemon: d, cdiDir: filepath.Join(dir, "cdi"), stateDir: filepath.Join(dir, "plugin"), api: api.URL}
	r.kube = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid-1"}})
	if kube != nil {
		kube(r.kube)
	}
	connectDaemon := driver.NewConnectDaemon(api.URL, adminToken)
	connectDaemon.DriverVersion = "550.54.15"
	r.daemonUp = &atomic.Bool{}
	r.daemonUp.Store(true)
	daemon := flakyDaemon{connectDaemon, r.daemonUp}
	pluginDir, registry := r.stateDir, filepath.Join(dir, "registry")
	if err := os.MkdirAll(registry, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := driver.Config{Node: node, Daemon: daemon, CDIDir: r.cdiDir, StateDir: pluginDir,
		HostSocket: "/run/salus/salus.sock", HostToken: "/run/salus/token", Logger: quiet, Kube: r.kube}
	if config != nil {
		config(&cfg)
	}
	r.drv, err = driver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resources, err := r.drv.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	helper, err := kubeletplugin.Start(ctx, r.drv, kubeletplugin.KubeClient(r.kube), kubeletplugin.NodeName(node),
		kubeletplugin.DriverName(dra.DriverName), kubeletplugin.PluginDataDirectoryPath(pluginDir),
		kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.CDIDirectory(r.cdiDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(helper.Stop)
	r.helper = helper
	if err := helper.PublishResources(ctx, resources); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(pluginDir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r.conn = conn
	r.kubelet = drapb.NewDRAPluginClient(conn)
	return r
}

// TestPublishedSlice: the ResourceSlice the driver publishes for a daemon of two
// GPUs, as the API server stores it (golden file; -update rewrites it).
func TestPublishedSlice(t *testing.T) {
	r := start(t)
	var slices []resourceapi.ResourceSlice
	for deadline := time.Now().Add(20 * time.Second); len(slices) == 0; {
		list, err := r.kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slices = list.Items
		if time.Now().After(deadline) {
			t.Fatal("no ResourceSlice published within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(slices) != 1 {
		t.Fatalf("%d slices published, want 1", len(slices))
	}
	s := slices[0]
	if !strings.Contains(s.GenerateName, dra.DriverName+"-"+node) || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "node-uid-1" {
		t.Errorf("slice %q (generateName %q) owned by %+v: want the node's", s.Name, s.GenerateName, s.OwnerReferences)
	}
	// What the fake API server made up is not the driver's.
	s.ObjectMeta = metav1.ObjectMeta{GenerateName: s.GenerateName, OwnerReferences: s.OwnerReferences}
	s.TypeMeta = metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"}
	got, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "published-2gpus.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("published slice differs from %s (go test ./dra/driver -update rewrites it):\n%s", golden, got)
	}
}

// claim is an allocated claim of one request "gpu" on device, consuming mib of
// its memory, with an optional opaque configuration.
func claim(uid, name, device string, mib int64, config string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: dra.DriverName, Pool: node, Device: device,
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{dra.CapMemory: *resource.NewQuantity(mib<<20, resource.BinarySI)}}},
		}}},
	}
	if config != "" {
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{
			Source: resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: dra.DriverName, Parameters: runtime.RawExtension{Raw: []byte(config)}}},
		}}
	}
	return c
}

func (r *rig) create(t *testing.T, c *resourceapi.ResourceClaim) *drapb.Claim {
	t.Helper()
	if _, err := r.kube.ResourceV1().ResourceClaims(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
}

// prepare calls NodePrepareResources as the kubelet does and returns the claim's
// answer.
func (r *rig) prepare(t *testing.T, c *drapb.Claim) *drapb.NodePrepareResourceResponse {
	t.Helper()
	resp, err := r.kubelet.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{c}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Claims[c.Uid]
}

func (r *rig) unprepare(t *testing.T, c *drapb.Claim) string {
	t.Helper()
	resp, err := r.kubelet.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{c}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Claims[c.Uid].GetError()
}

const config = `{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","declaredS":600,"persistentMiB":2000,"ephemeralMiB":3000}`

// TestPrepareAndUnprepare: a claim prepared through the kubelet's gRPC call is
// reserved with the daemon, gets a valid CDI spec naming its GPU, and a retry is
// a no-op; unprepared, the reservation and the spec are gone.
func TestPrepareAndUnprepare(t *testing.T) {
	r := start(t)
	c := r.create(t, claim("0b7e-uid-1", "train-1", "gpu-1", 6000, config))
	got := r.prepare(t, c)
	if got.Error != "" {
		t.Fatalf("prepare: %s", got.Error)
	}
	if len(got.Devices) != 1 || got.Devices[0].DeviceName != "gpu-1" || got.Devices[0].PoolName != node ||
		len(got.Devices[0].CdiDeviceIds) != 1 || got.Devices[0].CdiDeviceIds[0] != "gpu.salus.dev/claim=0b7e-uid-1" {
		t.Fatalf("prepare gave devices %+v", got.Devices)
	}
	// The CDI spec: valid JSON of the spec's version and kind, one device named
	// by the claim, the environment for GPU 1 and the claim.
	raw, err := os.ReadFile(filepath.Join(r.cdiDir, "gpu.salus.dev-0b7e-uid-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		CDIVersion string `json:"cdiVersion"`
		Kind       string `json:"kind"`
		Devices    []struct {
			Name           string `json:"name"`
			ContainerEdits struct {
				Env    []string `json:"env"`
				Mounts []struct {
					HostPath      string   `json:"hostPath"`
					ContainerPath string   `json:"containerPath"`
					Options       []string `json:"options"`
				} `json:"mounts"`
			} `json:"containerEdits"`
		} `json:"devices"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		t.Fatalf("CDI spec: %v\n%s", err, raw)
	}
	if spec.CDIVersion != dra.CDIVersion || spec.Kind != "gpu.salus.dev/claim" || len(spec.Devices) != 1 || spec.Devices[0].Name != "0b7e-uid-1" {
		t.Fatalf("CDI spec: %s", raw)
	}
	// The CDI library the runtimes use reads and validates it, and applies the
	// device's edits to a container.
	parsed, err := cdi.ReadSpec(filepath.Join(r.cdiDir, "gpu.salus.dev-0b7e-uid-1.json"), 0)
	if err != nil {
		t.Fatalf("the CDI library refuses the spec: %v", err)
	}
	dev := parsed.GetDevice("0b7e-uid-1")
	if dev == nil || dev.GetQualifiedName() != "gpu.salus.dev/claim=0b7e-uid-1" {
		t.Fatalf("the CDI library finds no device gpu.salus.dev/claim=0b7e-uid-1 in the spec")
	}
	container := &oci.Spec{Process: &oci.Process{}}
	if err := dev.ApplyEdits(container); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(container.Process.Env, "SALUS_CLAIM=0b7e-uid-1") || len(container.Mounts) != 2 || container.Mounts[1].Destination != dra.ContainerToken {
		t.Errorf("the edits applied to a container: env %q, mounts %+v", container.Process.Env, container.Mounts)
	}
	env := strings.Join(spec.Devices[0].ContainerEdits.Env, " ")
	for _, want := range []string{"SALUS_CLAIM=0b7e-uid-1", "SALUS_GPU=1", "CUDA_VISIBLE_DEVICES=1", "SALUS_DECLARED_S=600", "SALUS_PERSISTENT_MIB=2000"} {
		if !strings.Contains(env, want) {
			t.Errorf("CDI env %q lacks %s", env, want)
		}
	}
	if m := spec.Devices[0].ContainerEdits.Mounts; len(m) != 2 || m[0].HostPath != "/run/salus/salus.sock" {
		t.Errorf("CDI mounts %+v", m)
	}
	// The daemon holds 6000 of GPU 1's 16000 MiB for it: 10000 are left for others.
	if _, err := r.daemon.ReserveClaim("other", "team-b/big", 1, 10001, ""); err == nil || !strings.Contains(err.Error(), "its other claims hold 6000") {
		t.Errorf("a claim past what is left: %v", err)
	}
	// The claim's secret is in its container's environment and nowhere else a
	// pod can read: the spec and the driver's record are 0600. The pod's job
	// opens under the claim with it; another job without it is refused.
	secret := envValue(spec.Devices[0].ContainerEdits.Env, "SALUS_CLAIM_SECRET")
	if len(secret) != 64 {
		t.Fatalf("SALUS_CLAIM_SECRET %q: want 64 hex digits", secret)
	}
	for _, p := range []string{filepath.Join(r.cdiDir, "gpu.salus.dev-0b7e-uid-1.json"), filepath.Join(r.stateDir, "claim-0b7e-uid-1.json")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600 (it holds the claim's secret)", p, fi.Mode(), err)
		}
	}
	sc := salusv1connect.NewSchedulerServiceClient(http.DefaultClient, r.api, bearer(clientToken))
	ctx := context.Background()
	if _, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "thief", PersistentMib: 10, EphemeralMib: 10, Claim: "0b7e-uid-1"})); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "claim_denied") {
		t.Errorf("an open naming the claim without its secret: %v, want permission_denied (claim_denied)", err)
	}
	op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "pod", PersistentMib: 2000, EphemeralMib: 3000, DeclaredS: 600, Claim: "0b7e-uid-1", ClaimSecret: secret}))
	if err != nil {
		t.Fatalf("the pod's open with its claim's secret: %v", err)
	}
	if len(op.Msg.Gpus) != 1 || op.Msg.Gpus[0] != 1 {
		t.Errorf("the claim's job runs on GPU %v, want its claim's GPU 1", op.Msg.Gpus)
	}
	// The kubelet retries: the same answer, the same secret, nothing doubled.
	if again := r.prepare(t, c); again.Error != "" || len(again.Devices) != 1 {
		t.Fatalf("prepare again: %+v", again)
	}
	raw, _ = os.ReadFile(filepath.Join(r.cdiDir, "gpu.salus.dev-0b7e-uid-1.json"))
	if !strings.Contains(string(raw), "SALUS_CLAIM_SECRET="+secret) {
		t.Errorf("the retry changed the claim's secret:\n%s", raw)
	}
	if _, err := r.daemon.ReserveClaim("other", "team-b/big", 1, 10000, ""); err != nil {
		t.Errorf("after the retry, GPU 1 should still have 10000 MiB: %v", err)
	}
	if msg := r.unprepare(t, c); msg != "" {
		t.Fatalf("unprepare: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(r.cdiDir, "gpu.salus.dev-0b7e-uid-1.json")); !os.IsNotExist(err) {
		t.Errorf("CDI spec left after unprepare: %v", err)
	}
	if existed, _, _ := r.daemon.ReleaseClaim("0b7e-uid-1"); existed {
		t.Error("the daemon still held the claim after unprepare")
	}
	// Unprepared twice (the kubelet restarted): no error.
	if msg := r.unprepare(t, c); msg != "" {
		t.Errorf("unprepare again: %s", msg)
	}
}

// TestPrepareRefuses: a claim whose configuration asks for more memory than a
// GPU has, or than it was granted, fails with words for the pod's events, and
// nothing is reserved nor written.
func TestPrepareRefuses(t *testing.T) {
	r := start(t)
	for _, tc := range []struct {
		uid, config string
		mib         int64
		want        string
	}{
		{"uid-big", `{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","persistentMiB":15000,"ephemeralMiB":5000}`, 16000, "more than the 16000 MiB of GPU 0"},
		{"uid-more", `{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","persistentMiB":3000,"ephemeralMiB":2000}`, 4000, "more than the 4000 MiB of capacity gpu.salus.dev/memory"},
		{"uid-bad", `{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","persistentMiB":-1}`, 4000, "field persistentMiB"},
		{"uid-gpu", "", 20000, "asks for 20000 MiB of GPU 0, which has 16000 MiB usable"},
	} {
		got := r.prepare(t, r.create(t, claim(tc.uid, tc.uid, "gpu-0", tc.mib, tc.config)))
		if !strings.Contains(got.Error, tc.want) || !strings.Contains(got.Error, "team-a/"+tc.uid) {
			t.Errorf("%s: prepare error %q, want one naming the claim and %q", tc.uid, got.Error, tc.want)
		}
		if _, err := os.Stat(filepath.Join(r.cdiDir, "gpu.salus.dev-"+tc.uid+".json")); !os.IsNotExist(err) {
			t.Errorf("%s: a CDI spec was written for a refused claim", tc.uid)
		}
	}
	// Nothing was reserved: the whole of GPU 0 is free for a claim.
	if _, err := r.daemon.ReserveClaim("whole", "team-b/whole", 0, 16000, ""); err != nil {
		t.Errorf("GPU 0 after refused claims: %v", err)
	}
}

// TestResyncAfterDaemonRestart: a restarted daemon holds no reservation; the
// driver's resync asserts its prepared claims again from its records.
func TestResyncAfterDaemonRestart(t *testing.T) {
	r := start(t)
	c := r.create(t, claim("uid-r", "train-r", "gpu-0", 5000, ""))
	if got := r.prepare(t, c); got.Error != "" {
		t.Fatal(got.Error)
	}
	// The daemon "restarts": its reservations are gone.
	if existed, _, err := r.daemon.ReleaseClaim("uid-r"); err != nil || !existed {
		t.Fatal(existed, err)
	}
	n, err := r.drv.Resync(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("resync = %d, %v; want 1 claim asserted", n, err)
	}
	// As before: with the same secret, the one in the claim's container.
	secret := r.claimSecret(t, "uid-r")
	if res, err := r.daemon.ReserveClaim("uid-r", "team-a/train-r", 0, 5000, secret); err != nil || !res.Existed {
		t.Errorf("after resync the daemon should hold the claim as before, with its secret: %+v, %v", res, err)
	}
	if _, err := r.daemon.ReserveClaim("uid-r", "team-a/train-r", 0, 5000, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "another secret") {
		t.Errorf("after resync the claim should hold the secret of its container: %v", err)
	}
}

// TestClaimIntentBindsTheSession: a claim whose configuration declares 3600 s
// and priority 1 is reserved with them, and its pod's session runs with them
// although its client sends 2.5 s and no priority (issue: the intent once
// travelled only as environment variables the worker ignored).
func TestClaimIntentBindsTheSession(t *testing.T) {
	r := start(t)
	const intent = `{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","declaredS":3600,"priority":1,"persistentMiB":2000,"ephemeralMiB":3000}`
	c := r.create(t, claim("uid-intent", "train-i", "gpu-0", 6000, intent))
	if got := r.prepare(t, c); got.Error != "" {
		t.Fatalf("prepare: %s", got.Error)
	}
	var held *server.ClaimInfo
	for _, ci := range r.daemon.ListClaims() {
		if ci.UID == "uid-intent" {
			held = &ci
		}
	}
	if held == nil || held.Intent.DeclaredS != 3600 || held.Intent.Priority == nil || *held.Intent.Priority != 1 {
		t.Fatalf("the daemon holds %+v; want the claim with declared 3600 s and priority 1", held)
	}
	secret := r.claimSecret(t, "uid-intent")
	sc := salusv1connect.NewSchedulerServiceClient(http.DefaultClient, r.api, bearer(clientToken))
	if _, err := sc.OpenSession(context.Background(), connect.NewRequest(&salusv1.OpenSessionRequest{Job: "pod-i",
		PersistentMib: 2000, EphemeralMib: 3000, DeclaredS: 2.5, Claim: "uid-intent", ClaimSecret: secret})); err != nil {
		t.Fatalf("open under the claim: %v", err)
	}
	// The priority binds the same way (server's TestClaimIntentBindsItsSession
	// reads it in the event log); a session lists its declared time.
	found := false
	for _, s := range r.daemon.Sessions() {
		if s.Job == "pod-i" {
			found = true
			if s.DeclaredS != 3600 {
				t.Errorf("the session runs with declared %g s; want the claim's 3600 s", s.DeclaredS)
			}
		}
	}
	if !found {
		t.Error("no session pod-i on the daemon")
	}
}

// claimSecret is the claim's secret as its CDI spec gives it to the container.
func (r *rig) claimSecret(t *testing.T, uid string) string {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join(r.cdiDir, "gpu.salus.dev-"+uid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Devices []struct {
			ContainerEdits struct{ Env []string } `json:"containerEdits"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(spec, &parsed); err != nil || len(parsed.Devices) == 0 {
		t.Fatalf("CDI spec of %s: %v\n%s", uid, err, spec)
	}
	return envValue(parsed.Devices[0].ContainerEdits.Env, "SALUS_CLAIM_SECRET")
}
