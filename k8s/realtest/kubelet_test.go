//go:build linux

package realtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"sigs.k8s.io/yaml"

	"github.com/salusgo/salus/k8s/chart"
	"github.com/salusgo/salus/k8s/dra"
)

// kubeletEnv is what scripts/test-k8s-real.sh hands TestKubelet: a cluster
// with one real node, its kubelet and containerd in a private mount
// namespace (k8s/realtest/node.sh).
type kubeletEnv struct {
	kubeconfig string
	node       string // the kubelet's node name
	nodeDir    string // the node's directory: its /var/lib is var-lib, its /run is run
	salus      string // the salus binary of the image, for the local sweep and the merge
	sweepDir   string // the Indexed Job's shards (a hostPath the job's user may write)
	driverPort int    // the driver's HTTP port (the DaemonSet runs in the host's network)
	values     string // the chart's values file (deploy/e2e/values-kind.yaml)
	claimsFile string // deploy/e2e/claims.yaml
	chartDir   string
}

func loadKubeletEnv(t *testing.T) kubeletEnv {
	t.Helper()
	e := kubeletEnv{kubeconfig: os.Getenv("SALUS_REAL_KUBECONFIG"), node: os.Getenv("SALUS_REAL_KUBELET_NODE")}
	if e.kubeconfig == "" || e.node == "" {
		t.Skip("no kubelet: run SALUS_REAL_KUBELET=1 bash scripts/test-k8s-real.sh")
	}
	get := func(name string) string { return mustEnv(t, name) }
	e.nodeDir = get("SALUS_REAL_NODE_DIR")
	e.salus = get("SALUS_REAL_SALUS")
	e.sweepDir = get("SALUS_REAL_SWEEP_DIR")
	port, err := strconv.Atoi(get("SALUS_REAL_DRIVER_PORT"))
	if err != nil {
		t.Fatalf("SALUS_REAL_DRIVER_PORT: %v", err)
	}
	e.driverPort = port
	files := loadEnvDefaults()
	e.chartDir, e.values, e.claimsFile = files.chartDir, files.values, files.claimsFile
	return e
}

// loadEnvDefaults is loadEnv's files, without its cluster.
func loadEnvDefaults() env {
	var e env
	e.chartDir = cmpOr(os.Getenv("SALUS_REAL_CHART"), chart.Dir())
	e.values = cmpOr(os.Getenv("SALUS_REAL_VALUES"), filepath.Join(chart.Dir(), "..", "..", "e2e", "values-kind.yaml"))
	e.claimsFile = cmpOr(os.Getenv("SALUS_REAL_CLAIMS"), filepath.Join(chart.Dir(), "..", "..", "e2e", "claims.yaml"))
	return e
}

const (
	trainIters  = 30     // the pod that runs to its end
	forever     = 100000 // the pods that train until deleted
	sweepShards = 3
)

// TestKubelet runs the chart, a training pod under its claim and a sweep's
// Indexed Job on a real kubelet and containerd: each step is checked in
// what the cluster, the node's containers and the daemon's event log show.
func TestKubelet(t *testing.T) {
	e := loadKubeletEnv(t)
	c := connect(t, e.kubeconfig)
	ctx := context.Background()

	// 1. The node: registered by the kubelet, Ready (containerd's runtime
	// and network ready), the versions built.
	waitFor(t, "node "+e.node+" Ready", func() (bool, error) {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Errorf("Ready is %s: %s", cond.Status, cond.Message)
			}
		}
		return false, nil
	})
	n, err := c.cs.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s Ready: kubelet %s, %s, %s", e.node, n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion, n.Status.NodeInfo.KernelVersion)
	runtimeVersion := strings.Replace(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://v", "containerd://", 1)
	if !strings.HasPrefix(n.Status.NodeInfo.KubeletVersion, "v1.37.") || !strings.HasPrefix(runtimeVersion, "containerd://2.") {
		t.Fatalf("node %s runs kubelet %s on %s, want v1.37 on containerd v2", e.node, n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
	}

	// 2. The chart, as the kind values run it, the DaemonSet in the host's
	// network (the stage's pods have no network: cni-private.sh), so that
	// the kubelet's liveness probe reaches the driver's /healthz.
	c.namespace(t, "salus-system", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
	objs := renderWith(t, e.chartDir, e.values, map[string]any{"driverHTTPPort": e.driverPort})
	// In the host's network, the in-cluster address of the API server (the
	// kubernetes Service's cluster IP, KUBERNETES_SERVICE_HOST) leads off
	// the machine: no kube-proxy routes it here. The driver is pointed at the
	// API server's loopback address instead (a container's env wins over the
	// kubelet's service variables).
	api, err := url.Parse(c.cfg.Host)
	if err != nil || api.Hostname() != "127.0.0.1" {
		t.Fatalf("the API server is at %q, not on 127.0.0.1: the DaemonSet in the host's network could not reach it without leaving the machine", c.cfg.Host)
	}
	for _, o := range objs {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		if err := unstructured.SetNestedField(o.Object, true, "spec", "template", "spec", "hostNetwork"); err != nil {
			t.Fatal(err)
		}
		ctrs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, ct := range ctrs {
			m := ct.(map[string]any)
			env, _ := m["env"].([]any)
			m["env"] = append(env, map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
				map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": api.Port()})
		}
		if err := unstructured.SetNestedSlice(o.Object, ctrs, "spec", "template", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
	}
	c.apply(t, "salus-system", objs)
	ds := c.readyPod(t, "salus-system", "app.kubernetes.io/name=salus")
	t.Logf("the chart's DaemonSet pod %s is Ready on %s", ds.Name, ds.Spec.NodeName)
	// The security contexts, as runc applied them: read in /proc of each
	// container's process.
	for _, cs := range ds.Status.ContainerStatuses {
		st := e.procStatus(t, cs.ContainerID)
		want := map[string][2]string{
			"serve":      {"65532", "0000000000000000"},
			"dra-driver": {"0", "0000000000000004"}, // CAP_DAC_READ_SEARCH alone
		}[cs.Name]
		if uid := strings.Fields(st["Uid"]); len(uid) == 0 || uid[0] != want[0] || st["CapEff"] != want[1] || st["NoNewPrivs"] != "1" {
			t.Errorf("container %s runs with Uid %q, CapEff %s, NoNewPrivs %s; want uid %s, CapEff %s, NoNewPrivs 1", cs.Name, st["Uid"], st["CapEff"], st["NoNewPrivs"], want[0], want[1])
		}
		t.Logf("container %s: Uid %s, CapEff %s, NoNewPrivs %s", cs.Name, strings.Fields(st["Uid"])[0], st["CapEff"], st["NoNewPrivs"])
	}
	waitFor(t, "the ResourceSlice of "+e.node+" with gpu-0 and gpu-1", func() (bool, error) {
		l, err := c.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + e.node + ",spec.driver=" + dra.DriverName})
		if err != nil || len(l.Items) != 1 {
			return false, err
		}
		var names []string
		for _, d := range l.Items[0].Spec.Devices {
			names = append(names, d.Name)
		}
		return slices.Equal(names, []string{"gpu-0", "gpu-1"}), fmt.Errorf("devices %v", names)
	})

	// 3. Four pods under the example's 6 GiB claims: they fill both GPUs,
	// each trains through the socket its claim mounts, its session bound by
	// its claim's declared time and priority.
	ns := c.namespace(t, "salus-e2e", nil)
	tmpl, podSpec := e.trainObjects(t)
	want := intentOf(t, tmpl)
	c.apply(t, ns, []*unstructured.Unstructured{tmpl})
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, c.trainPod(t, ns, podSpec, fmt.Sprintf("train-%d", i), forever))
	}
	claimOf := map[string]string{} // pod -> claim UID
	gpuOf := map[string]string{}   // pod -> device
	for _, p := range pods {
		c.waitPhase(t, ns, p.Name, corev1.PodRunning)
		rc := c.claimObject(t, p)
		claimOf[p.Name], gpuOf[p.Name] = string(rc.UID), rc.Status.Allocation.Devices.Results[0].Device
		waitFor(t, "pod "+p.Name+" names its claim "+string(rc.UID), func() (bool, error) {
			out, err := c.logs(ns, p.Name, "train")
			return strings.Contains(out, "claim "+string(rc.UID)+" (secret set),"), fmt.Errorf("log: %q (%v)", out, err)
		})
		waitFor(t, "iterations of "+p.Name+" in the daemon's event log", func() (bool, error) {
			return e.journal(t).iterations(p.Name) >= 3, nil
		})
	}
	claims := c.daemonClaims(t, ds)
	for _, p := range pods {
		cl, ok := claims[claimOf[p.Name]]
		if !ok {
			t.Fatalf("salus get claims has no claim %s of pod %s: %v", claimOf[p.Name], p.Name, claims)
		}
		if cl.DeclaredS != want.declaredS || cl.Priority == nil || *cl.Priority != want.priority || cl.Session != p.Name || cl.MemoryMib != want.memoryMiB {
			t.Errorf("salus get claims: claim of %s is %+v, want %v MiB, declared %v s, priority %d, session %s (its claim's)", p.Name, cl, want.memoryMiB, want.declaredS, want.priority, p.Name)
		}
		j := e.journal(t)
		a := j.first(p.Name, "arrive")
		if a == nil || a.DeclaredS != want.declaredS || a.Priority != want.priority {
			t.Errorf("the daemon's event log: %s arrived as %+v, want declared_s %v and priority %d (its claim's)", p.Name, a, want.declaredS, want.priority)
		} else if cl.Priority != nil {
			t.Logf("%s: salus get claims: claim %s, GPU %d, %.0f MiB, declared %.1f s, priority %d, session %s; event log: arrive declared_s %v priority %d, %d iterations so far",
				p.Name, cl.Claim, cl.GPU, cl.MemoryMib, cl.DeclaredS, *cl.Priority, cl.Session, a.DeclaredS, a.Priority, j.iterations(p.Name))
		}
	}
	t.Logf("4 training pods run under their claims (declared %v s, priority %d in salus get claims and in each arrive event), 2 per GPU: %v", want.declaredS, want.priority, gpuOf)

	// 4. A fifth waits: no GPU has 6 GiB left.
	waiting := c.trainPod(t, ns, podSpec, "train-4", trainIters)
	if out := c.schedule(t, waiting); out.unschedulable == "" {
		t.Fatalf("pod train-4 was bound to %s with both GPUs full", out.node)
	} else {
		t.Logf("train-4 waits: %s", out.unschedulable)
	}

	// 5. One goes: the kubelet unprepares its claim, the daemon ends its
	// session and gives the memory back, and the waiting pod is admitted on
	// that GPU, trains to its end, and its claim is unprepared too.
	gone := pods[0]
	if err := c.cs.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim of "+gone.Name+" released by the daemon", func() (bool, error) {
		_, held := c.daemonClaims(t, ds)[claimOf[gone.Name]]
		return !held, nil
	})
	if l := e.journal(t).first(gone.Name, "lost"); l == nil {
		t.Errorf("the daemon's event log has no lost event of %s after its pod went", gone.Name)
	} else {
		t.Logf("%s gone: its claim released, its session ended (%s)", gone.Name, l.Reason)
	}
	// Its claim, read once allocated: the resourceclaim controller deletes a
	// claim made from a template as soon as its pod has ended.
	var rc *resourceapi.ResourceClaim
	waitFor(t, "train-4 bound with its claim allocated", func() (bool, error) {
		p, err := c.cs.CoreV1().Pods(ns).Get(ctx, waiting.Name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, err
		}
		rc, err = c.cs.ResourceV1().ResourceClaims(ns).Get(ctx, c.claimOf(t, waiting), metav1.GetOptions{})
		return err == nil && rc.Status.Allocation != nil, err
	})
	c.waitPhase(t, ns, waiting.Name, corev1.PodSucceeded)
	if d := rc.Status.Allocation.Devices.Results[0].Device; d != gpuOf[gone.Name] {
		t.Errorf("train-4 got %s, want %s, the GPU train-0 left", d, gpuOf[gone.Name])
	}
	out, err := c.logs(ns, waiting.Name, "train")
	if err != nil || !strings.Contains(out, fmt.Sprintf("job train-4: %d iterations", trainIters)) {
		t.Errorf("train-4's log: %q (%v), want its %d iterations", out, err, trainIters)
	}
	j := e.journal(t)
	if j.first("train-4", "finish") == nil || j.iterations("train-4") != trainIters {
		t.Errorf("the daemon's event log: train-4 has %d iterations and finish %v, want %d and a finish", j.iterations("train-4"), j.first("train-4", "finish"), trainIters)
	}
	waitFor(t, "train-4's claim unprepared once it ended", func() (bool, error) {
		_, held := c.daemonClaims(t, ds)[string(rc.UID)]
		return !held, nil
	})
	t.Logf("train-4 admitted on %s after train-0 went, trained %d iterations, its claim unprepared", gpuOf[gone.Name], trainIters)

	// The others go too: every claim released, the GPUs' memory all back.
	for _, p := range pods[1:] {
		if err := c.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every claim released by the daemon", func() (bool, error) {
		cl := c.daemonClaims(t, ds)
		return len(cl) == 0, fmt.Errorf("claims held: %v", cl)
	})

	// 6. A sweep's shards as an Indexed Job (deploy/sweep-indexed-job.yaml,
	// smaller), merged, equal to the same sweep run here.
	e.sweep(t, c, ns)
}

// renderWith renders the chart with the values file and the overrides.
func renderWith(t *testing.T, dir, valuesFile string, over map[string]any) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("%s: %v", valuesFile, err)
	}
	for k, v := range over {
		values[k] = v
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return render(t, dir, f)
}

// readyPod waits for the one pod of the selector to be Ready and returns it.
func (c *cluster) readyPod(t *testing.T, ns, selector string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, "a Ready pod "+selector+" in "+ns, func() (bool, error) {
		l, err := c.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(l.Items) != 1 {
			return false, err
		}
		pod = &l.Items[0]
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("pod %s is %s: %s", pod.Name, pod.Status.Phase, describeStatuses(pod))
	})
	return pod
}

// describeStatuses says what each container of the pod is doing.
func describeStatuses(p *corev1.Pod) string {
	var parts []string
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		s := "ready=" + strconv.FormatBool(cs.Ready) + " restarts=" + strconv.Itoa(int(cs.RestartCount))
		switch {
		case cs.State.Waiting != nil:
			s += " waiting " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
		case cs.State.Terminated != nil:
			s += fmt.Sprintf(" terminated %s (exit %d) %s", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
		}
		parts = append(parts, cs.Name+": "+s)
	}
	return strings.Join(parts, "; ")
}

// procStatus reads /proc/PID/status of a container's process, its PID from
// containerd's state in the node's directory.
func (e kubeletEnv) procStatus(t *testing.T, containerID string) map[string]string {
	t.Helper()
	id := strings.TrimPrefix(containerID, "containerd://")
	pid := mustRead(t, filepath.Join(e.nodeDir, "run", "containerd", "io.containerd.runtime.v2.task", "k8s.io", id, "init.pid"))
	raw := mustReadBytes(t, filepath.Join("/proc", pid, "status"))
	st := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st
}

// trainObjects reads deploy/e2e/claims.yaml's training step: the claim
// template, and the pod, whose spec the training pods copy.
func (e kubeletEnv) trainObjects(t *testing.T) (*unstructured.Unstructured, corev1.PodSpec) {
	t.Helper()
	var tmpl *unstructured.Unstructured
	var spec corev1.PodSpec
	for _, o := range decodeAll(t, e.claimsFile, mustReadBytes(t, e.claimsFile)) {
		if o.GetLabels()["salus-e2e/step"] != "train" {
			continue
		}
		switch o.GetKind() {
		case "ResourceClaimTemplate":
			tmpl = o
		case "Pod":
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p); err != nil {
				t.Fatal(err)
			}
			spec = p.Spec
		}
	}
	if tmpl == nil || len(spec.Containers) != 1 {
		t.Fatalf("%s: no training step (a ResourceClaimTemplate and a Pod labelled salus-e2e/step: train)", e.claimsFile)
	}
	return tmpl, spec
}

// intent is what a claim of the template binds its session to: its declared
// GPU time and priority (its ClaimConfig) and its memory (its capacity request).
type intent struct {
	declaredS float64
	priority  int
	memoryMiB float64
}

func intentOf(t *testing.T, tmpl *unstructured.Unstructured) intent {
	t.Helper()
	var rct resourceapi.ResourceClaimTemplate
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl.Object, &rct); err != nil {
		t.Fatal(err)
	}
	spec := rct.Spec.Spec.Devices
	if len(spec.Requests) != 1 || spec.Requests[0].Exactly == nil || spec.Requests[0].Exactly.Capacity == nil || len(spec.Config) != 1 || spec.Config[0].Opaque == nil {
		t.Fatalf("template %s: want one request with a capacity and one opaque configuration", rct.Name)
	}
	var cfg struct {
		DeclaredS float64 `json:"declaredS"`
		Priority  int     `json:"priority"`
	}
	if err := json.Unmarshal(spec.Config[0].Opaque.Parameters.Raw, &cfg); err != nil {
		t.Fatalf("template %s: %v", rct.Name, err)
	}
	mem := spec.Requests[0].Exactly.Capacity.Requests[dra.CapMemory]
	in := intent{declaredS: cfg.DeclaredS, priority: cfg.Priority, memoryMiB: float64(mem.Value() >> 20)}
	if in.declaredS == 0 || in.priority == 0 || in.memoryMiB == 0 {
		t.Fatalf("template %s: %+v: the test wants a declared time, a priority and a memory request to see them bind", rct.Name, in)
	}
	return in
}

// trainPod creates a pod of the training step's spec, its job named as the
// pod, for iters iterations.
func (c *cluster) trainPod(t *testing.T, ns string, spec corev1.PodSpec, name string, iters int) *corev1.Pod {
	t.Helper()
	spec = *spec.DeepCopy()
	spec.Containers[0].Args = []string{name, strconv.Itoa(iters)}
	p, err := c.cs.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return p
}

// waitPhase waits for the pod to reach the phase, failing at once should it
// fail.
func (c *cluster) waitPhase(t *testing.T, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	waitFor(t, "pod "+name+" "+string(phase), func() (bool, error) {
		p, err := c.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed && phase != corev1.PodFailed {
			out, _ := c.logs(ns, name, "")
			t.Fatalf("pod %s failed: %s\n%s", name, describeStatuses(p), out)
		}
		return p.Status.Phase == phase, fmt.Errorf("%s: %s", p.Status.Phase, describeStatuses(p))
	})
}

// claimObject returns the pod's allocated claim.
func (c *cluster) claimObject(t *testing.T, p *corev1.Pod) *resourceapi.ResourceClaim {
	t.Helper()
	rc, err := c.cs.ResourceV1().ResourceClaims(p.Namespace).Get(context.Background(), c.claimOf(t, p), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Status.Allocation == nil || len(rc.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("claim %s of pod %s: allocation %+v, want one device", rc.Name, p.Name, rc.Status.Allocation)
	}
	return rc
}

// logs is the container's log, read through the API server from the kubelet.
func (c *cluster) logs(ns, pod, container string) (string, error) {
	out, err := c.cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	return string(out), err
}

// exec runs the command in the container, as kubectl exec does (the API
// server, the kubelet, containerd's streaming server).
func (c *cluster) exec(ns, pod, container string, cmd ...string) (string, error) {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// daemonClaim is a row of salus get claims -o json.
type daemonClaim struct {
	Claim     string  `json:"claim"`
	Name      string  `json:"name"`
	GPU       int     `json:"gpu"`
	MemoryMib float64 `json:"memoryMib"`
	DeclaredS float64 `json:"declaredS"`
	Priority  *int    `json:"priority"`
	Session   string  `json:"session"`
}

// daemonClaims runs salus get claims -o json in the daemon's container, by
// claim UID.
func (c *cluster) daemonClaims(t *testing.T, ds *corev1.Pod) map[string]daemonClaim {
	t.Helper()
	out, err := c.exec(ds.Namespace, ds.Name, "serve", "/usr/local/bin/salus", "get", "claims", "-o", "json", "--admin-token-file=/var/run/salus-admin/admin-token")
	if err != nil {
		t.Fatalf("salus get claims in %s: %v", ds.Name, err)
	}
	var res struct {
		Claims []daemonClaim `json:"claims"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("salus get claims -o json: %v\n%s", err, out)
	}
	m := map[string]daemonClaim{}
	for _, cl := range res.Claims {
		m[cl.Claim] = cl
	}
	return m
}

// journalEvent is the part of an event of the daemon's log read here.
type journalEvent struct {
	Kind      string  `json:"ev"`
	Job       string  `json:"job"`
	DeclaredS float64 `json:"declared_s"`
	Priority  int     `json:"priority"`
	Reason    string  `json:"reason"`
	// stretch: iterations back to back (its Turns: each job's)
	Iterations int `json:"iterations"`
	Turns      []struct {
		Job        string `json:"job"`
		Iterations int    `json:"iterations"`
	} `json:"turns"`
}

type journal []journalEvent

// journal reads the daemon's event log (serve --events, the chart's
// /var/lib/salus/journal.jsonl), from the node's directory.
func (e kubeletEnv) journal(t *testing.T) journal {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e.nodeDir, "var-lib", "salus", "journal.jsonl"))
	if err != nil {
		return nil
	}
	var j journal
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		var ev journalEvent
		if json.Unmarshal(line, &ev) == nil && ev.Kind != "" {
			j = append(j, ev)
		}
	}
	return j
}

// iterations counts the job's iterations that ended: its iter_end events
// and its iterations in stretch events, should the daemon write any.
func (j journal) iterations(job string) int {
	n := 0
	for _, ev := range j {
		switch {
		case ev.Kind == "iter_end" && ev.Job == job:
			n++
		case ev.Kind == "stretch" && len(ev.Turns) > 0:
			for _, tu := range ev.Turns {
				if tu.Job == job {
					n += tu.Iterations
				}
			}
		case ev.Kind == "stretch" && ev.Job == job:
			n += ev.Iterations
		}
	}
	return n
}

func (j journal) first(job, kind string) *journalEvent {
	for i, ev := range j {
		if ev.Job == job && ev.Kind == kind {
			return &j[i]
		}
	}
	return nil
}

// sweepArgs is the grid of the Indexed Job and of the local sweep it is
// compared with: small, so that each shard takes seconds.
var sweepArgs = []string{"--seeds", "2", "--load", "1,2", "--jobs", "20", "--policy", "fifo,srtf", "--workers", "1"}

// sweep runs deploy/sweep-indexed-job.yaml's Job, smaller and on a hostPath,
// merges its shards here, and compares the merged sweep.csv with a local
// sweep of the same grid.
func (e kubeletEnv) sweep(t *testing.T, c *cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(chart.Dir(), "..", "..", "sweep-indexed-job.yaml")
	objs := decodeAll(t, file, mustReadBytes(t, file))
	if len(objs) != 1 || objs[0].GetKind() != "Job" {
		t.Fatalf("%s: want one Job", file)
	}
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &job); err != nil {
		t.Fatal(err)
	}
	job.Namespace = ns
	job.Spec.Completions, job.Spec.Parallelism = ptr(int32(sweepShards)), ptr(int32(sweepShards))
	pod := &job.Spec.Template.Spec
	ctr := &pod.Containers[0]
	ctr.Image, ctr.ImagePullPolicy = "salus:e2e", corev1.PullNever
	ctr.Command = append([]string{"/usr/local/bin/salus", "sweep", "--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", sweepShards)}, sweepArgs...)
	ctr.Command = append(ctr.Command, "--out", "/sweeps/shard-$(JOB_COMPLETION_INDEX)")
	ctr.Resources = corev1.ResourceRequirements{}
	pod.Volumes = []corev1.Volume{{Name: "sweeps", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: e.sweepDir}}}}
	if _, err := c.cs.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the Indexed Job: %v", err)
	}
	waitFor(t, "the Indexed Job "+job.Name+" complete", func() (bool, error) {
		j, err := c.cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				t.Fatalf("the Indexed Job failed: %s", cond.Message)
			}
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("succeeded %d of %d, completed indexes %q", j.Status.Succeeded, sweepShards, j.Status.CompletedIndexes)
	})
	l, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string]bool{}
	for _, p := range l.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			indexes[p.Annotations["batch.kubernetes.io/job-completion-index"]] = true
		}
	}
	shards := make([]string, sweepShards)
	for i := range sweepShards {
		if !indexes[strconv.Itoa(i)] {
			t.Errorf("no pod of index %d succeeded: %v", i, indexes)
		}
		shards[i] = filepath.Join(e.sweepDir, fmt.Sprintf("shard-%d", i))
	}
	work := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(e.salus, args...)
		// Outside the repository, as in the pods: a binary without VCS
		// stamps takes its salus_commit from a git checkout it runs in.
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("salus %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	merged, local := filepath.Join(work, "merged"), filepath.Join(work, "local")
	run(append(append([]string{"sweep", "merge"}, shards...), "--out", merged)...)
	run(append(append([]string{"sweep"}, sweepArgs...), "--out", local)...)
	m, lo := sweepCSV(t, filepath.Join(merged, "sweep.csv")), sweepCSV(t, filepath.Join(local, "sweep.csv"))
	if !slices.EqualFunc(m, lo, slices.Equal) {
		t.Fatalf("the Indexed Job's merged sweep.csv differs from a local sweep's (the command column aside):\n--- merged\n%v\n--- local\n%v", m, lo)
	}
	t.Logf("the Indexed Job's %d shards (pods of indexes %v) merged: sweep.csv (%d rows) equal to a local salus sweep %s, but for its command column", sweepShards, slices.Sorted(maps.Keys(indexes)), len(m)-1, strings.Join(sweepArgs, " "))
}

// sweepCSV reads a sweep.csv with its command column emptied: it records the
// command that wrote the file (salus sweep merge, or salus sweep), and so
// differs by design between a merge and a sweep of the same grid.
func sweepCSV(t *testing.T, path string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(mustReadBytes(t, path))).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v, %d rows", path, err, len(rows))
	}
	col := slices.Index(rows[0], "command")
	if col < 0 {
		t.Fatalf("%s: no command column in %v", path, rows[0])
	}
	for _, r := range rows[1:] {
		r[col] = ""
	}
	return rows
}
