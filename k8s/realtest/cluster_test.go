//go:build linux

package realtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/salusgo/salus/k8s/chart"
)

// env is what scripts/test-k8s-real.sh hands the tests.
type env struct {
	kubeconfig  string // the cluster's admin (system:masters)
	driver      string // the salus-dra-driver binary
	daemon      string // the daemon's connect API, http://127.0.0.1:PORT
	adminToken  string // the daemon's admin token file
	hostSocket  string // the daemon's client socket
	hostToken   string // the daemon's client token file
	work        string // a scratch directory for the driver's directories and log
	chartDir    string // the chart (a mutated copy in the script's negative checks)
	values      string // the chart's values file
	claimsFile  string // the ResourceClaimTemplates (deploy/e2e/claims.yaml)
	gateEnabled bool   // false: the API server runs with DRAConsumableCapacity=false
}

// loadEnv reads the environment, skipping the test when there is no cluster.
func loadEnv(t *testing.T) env {
	t.Helper()
	e := env{kubeconfig: os.Getenv("SALUS_REAL_KUBECONFIG")}
	if e.kubeconfig == "" {
		t.Skip("no cluster: run bash scripts/test-k8s-real.sh")
	}
	get := func(name string) string { return mustEnv(t, name) }
	e.driver = get("SALUS_REAL_DRIVER")
	e.daemon = get("SALUS_REAL_DAEMON")
	e.adminToken = get("SALUS_REAL_ADMIN_TOKEN")
	e.hostSocket = get("SALUS_REAL_HOST_SOCKET")
	e.hostToken = get("SALUS_REAL_HOST_TOKEN")
	e.work = get("SALUS_REAL_WORK")
	e.chartDir = cmpOr(os.Getenv("SALUS_REAL_CHART"), chart.Dir())
	e.values = cmpOr(os.Getenv("SALUS_REAL_VALUES"), filepath.Join(chart.Dir(), "..", "..", "e2e", "values-kind.yaml"))
	e.claimsFile = cmpOr(os.Getenv("SALUS_REAL_CLAIMS"), filepath.Join(chart.Dir(), "..", "..", "e2e", "claims.yaml"))
	e.gateEnabled = os.Getenv("SALUS_REAL_GATE_OFF") == ""
	return e
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cluster is the clients of the admin.
type cluster struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

func connect(t *testing.T, kubeconfig string) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return connectConfig(t, cfg)
}

// connectBytes is connect with the kubeconfig's text.
func connectBytes(t *testing.T, kubeconfig []byte) *cluster {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return connectConfig(t, cfg)
}

func connectConfig(t *testing.T, cfg *rest.Config) *cluster {
	t.Helper()
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{cfg: cfg, cs: cs, dyn: dyn}
}

// deadline bounds every wait: a wait ends as soon as what it waits for is
// seen, so this only decides how long a failing check takes to fail. It is
// generous because the machines these run on may be loaded.
const deadline = 3 * time.Minute

// waitFor polls cond until it reports done, failing the test with what was
// awaited and cond's last error at the deadline.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	end := time.Now().Add(deadline)
	var last error
	for {
		done, err := cond()
		if done {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not seen within %v (last: %v)", what, deadline, last)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// render renders the chart in dir with the values file, for Kubernetes 1.37,
// and returns its documents as unstructured objects.
func render(t *testing.T, dir, valuesFile string) []*unstructured.Unstructured {
	t.Helper()
	chrt, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("load the chart %s: %v", dir, err)
	}
	raw, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("%s: %v", valuesFile, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: chart.Release, Namespace: chart.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		t.Fatalf("the chart's values: %v", err)
	}
	out, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	var objs []*unstructured.Unstructured
	for name, text := range out {
		if strings.HasSuffix(name, ".yaml") {
			objs = append(objs, decodeAll(t, name, []byte(text))...)
		}
	}
	return objs
}

// decodeAll decodes a file of YAML documents, leaving out empty ones.
func decodeAll(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("%s: %v", name, err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// apply server-side applies the objects, as kubectl apply --server-side does,
// namespaced ones in ns when they name none.
func (c *cluster) apply(t *testing.T, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.cs.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: the API server serves no such kind: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = c.dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
			ri = c.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "salus-realtest", Force: true}); err != nil {
			t.Fatalf("server-side apply %s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
}

// node creates a Node with no kubelet behind it: Ready, with room for pods,
// and without the not-ready taint the API server's TaintNodesByCondition
// admission puts on a new node (the node lifecycle controller, which would
// take it off once the kubelet reports, is off: there is no kubelet to renew
// the node's lease).
func (c *cluster) node(t *testing.T, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := c.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	// Controllers annotate a new node meanwhile: retry on conflicts.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if n, err = c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{Capacity: room, Allocatable: room, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "SalusRealTest",
			Message: "a fake node: no kubelet", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}}
		_, err = c.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err = c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = nil
		n, err = c.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// podToken is a token of the service account bound to the pod, as the
// kubelet projects into the pod's containers: it names the pod's node, which
// the chart's admission policy on ResourceSlices reads.
func (c *cluster) podToken(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	tr, err := c.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(context.Background(), pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr(int64(3600)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s for pod %s: %v", pod.Spec.ServiceAccountName, pod.Name, err)
	}
	return tr.Status.Token
}

// kubeconfigFor writes a kubeconfig of the cluster with the token.
func (c *cluster) kubeconfigFor(t *testing.T, path, token string) {
	t.Helper()
	ca := c.cfg.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(c.cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["real"] = &clientcmdapi.Cluster{Server: c.cfg.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["driver"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["real"] = &clientcmdapi.Context{Cluster: "real", AuthInfo: "driver"}
	cfg.CurrentContext = "real"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// driverProc is a salus-dra-driver the test started.
type driverProc struct {
	cmd                         *exec.Cmd
	log                         string
	pluginDir, registrarDir, cd string
	exited                      chan struct{} // closed when the driver's process has ended
	err                         error         // its exit, once exited is closed
}

// startDriver runs the driver binary for the node with the kubeconfig, its
// directories under dir, until the test ends. It dies with the test's process
// (Pdeathsig) should the test be killed.
func startDriver(t *testing.T, e env, dir, node, kubeconfig string) *driverProc {
	t.Helper()
	d := &driverProc{log: filepath.Join(dir, "driver.log"), pluginDir: filepath.Join(dir, "plugins", "gpu.salus.dev"),
		registrarDir: filepath.Join(dir, "plugins_registry"), cd: filepath.Join(dir, "cdi")}
	for _, p := range []string{d.pluginDir, d.registrarDir, d.cd} {
		if err := os.MkdirAll(p, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(e.driver, "--node-name", node, "--daemon", e.daemon, "--admin-token-file", e.adminToken,
		"--kubeconfig", kubeconfig, "--cdi-dir", d.cd, "--plugin-dir", d.pluginDir, "--registrar-dir", d.registrarDir,
		"--host-socket", e.hostSocket, "--host-token-file", e.hostToken, "--resync", "10s")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.exited = make(chan struct{})
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			d.cmd.Process.Kill()
			<-d.exited
		}
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(d.log)
			t.Logf("the driver's log:\n%s", out)
		}
	})
	return d
}

// logHas reports whether the driver's log has s.
func (d *driverProc) logHas(s string) bool {
	out, _ := os.ReadFile(d.log)
	return bytes.Contains(out, []byte(s))
}

// slice waits for the driver's ResourceSlice of the node and returns it.
// When failFast, an error in the driver's log ends the wait at once.
func (c *cluster) slice(t *testing.T, node string, d *driverProc, failFast bool) *resourceapi.ResourceSlice {
	t.Helper()
	var got *resourceapi.ResourceSlice
	waitFor(t, "the ResourceSlice of "+node, func() (bool, error) {
		if failFast && d.logHas("level=ERROR") {
			t.Fatalf("the driver logged an error before its slice was seen:\n%s", mustReadBytes(t, d.log))
		}
		l, err := c.cs.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node + ",spec.driver=gpu.salus.dev"})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		got = &l.Items[0]
		return true, nil
	})
	return got
}

// namespace creates a namespace of the test, deleted at its end after its
// pods are force-deleted (no kubelet would ever confirm they stopped).
func (c *cluster) namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the default service account of "+name, func() (bool, error) {
		_, err := c.cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	t.Cleanup(func() {
		c.cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}, metav1.ListOptions{})
		c.cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// pod creates a pod of one container using one claim: made from the template,
// or the claim itself.
func (c *cluster) pod(t *testing.T, ns, name, template, claim string) *corev1.Pod {
	t.Helper()
	rc := corev1.PodResourceClaim{Name: "gpu"}
	if template != "" {
		rc.ResourceClaimTemplateName = &template
	} else {
		rc.ResourceClaimName = &claim
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyNever,
			ResourceClaims: []corev1.PodResourceClaim{rc},
			Containers: []corev1.Container{{Name: "train", Image: "salus-e2e-client:e2e",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
	p, err := c.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return p
}

// claimOf waits for the pod's claim to exist (the resourceclaim controller
// makes it from the template) and returns its name.
func (c *cluster) claimOf(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	if n := p.Spec.ResourceClaims[0].ResourceClaimName; n != nil {
		return *n
	}
	var name string
	waitFor(t, "the claim of pod "+p.Name, func() (bool, error) {
		got, err := c.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range got.Status.ResourceClaimStatuses {
			if s.ResourceClaimName != nil {
				name = *s.ResourceClaimName
				return true, nil
			}
		}
		return false, nil
	})
	return name
}

// outcome is what the scheduler did with a pod: bound with its claim
// allocated, or found unschedulable.
type outcome struct {
	claim         *resourceapi.ResourceClaim
	node          string // bound to
	unschedulable string // the PodScheduled condition's message, when it is
}

// schedule waits until the scheduler has either bound the pod (with its claim
// allocated) or marked it unschedulable.
func (c *cluster) schedule(t *testing.T, p *corev1.Pod) outcome {
	t.Helper()
	ctx := context.Background()
	claim := c.claimOf(t, p)
	var out outcome
	waitFor(t, "the scheduler's decision on pod "+p.Name, func() (bool, error) {
		got, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rc, err := c.cs.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		out.claim = rc
		if got.Spec.NodeName != "" && rc.Status.Allocation != nil {
			out.node = got.Spec.NodeName
			return true, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				out.unschedulable = cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	return out
}

// forceDelete deletes the pod at once and waits for its claim (from a
// template) to be gone, or (a claim of its own) to be deallocated.
func (c *cluster) forceDelete(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	claim := c.claimOf(t, p)
	if err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim "+claim+" freed after pod "+p.Name+" is gone", func() (bool, error) {
		rc, err := c.cs.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return rc.Status.Allocation == nil, fmt.Errorf("claim %s still allocated, reserved for %v", claim, rc.Status.ReservedFor)
	})
}

func ptr[T any](v T) *T { return &v }

// mustEnv is the variable name, which scripts/test-k8s-real.sh sets; t fails
// where it is empty.
func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is empty: scripts/test-k8s-real.sh sets it", name)
	}
	return v
}
