package chart

import (
	"flag"
	"fmt"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/manifesttest"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// deployDir holds the chart, the manifests and the kind test's files.
const deployDir = "../../deploy"

// readManifests decodes every document of a manifest file strictly.
func readManifests(t *testing.T, file string) []any {
	t.Helper()
	objs, err := manifesttest.ReadManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// kindValues are the chart's values for the kind end-to-end test.
const kindValues = deployDir + "/e2e/values-kind.yaml"

// variant is one set of values the chart is rendered with.
type variant struct {
	name   string
	values map[string]any
	kinds  []string // the kinds it renders, sorted
}

func variants(t *testing.T) []variant {
	t.Helper()
	kind, err := ReadValues(kindValues)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "DeviceClass", "ServiceAccount"}
	policy := []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	both := []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"}
	return []variant{
		{"defaults", nil, slices.Concat(base, both)},
		{"kind", kind, slices.Concat(base, both)},
		{"no slice policy", map[string]any{"validatingAdmissionPolicy": false}, slices.Concat(base, policy)},
		{"no claim policy", map[string]any{"claimPolicy": false}, slices.Concat(base, policy)},
		{"no admission policy", map[string]any{"validatingAdmissionPolicy": false, "claimPolicy": false}, base},
	}
}

// rendered is the chart rendered with v's values, every document decoded
// strictly into its API type.
func rendered(t *testing.T, v variant) []any {
	t.Helper()
	docs, err := Render(v.values)
	if err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
	var objs []any
	var kinds []string
	for _, d := range docs {
		obj, err := manifesttest.Decode(d.YAML)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", v.name, d.Template, err, d.YAML)
		}
		objs = append(objs, obj)
		kinds = append(kinds, d.Kind)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, v.kinds) {
		t.Errorf("%s: the chart renders %v, want %v", v.name, kinds, v.kinds)
	}
	return objs
}

// policy is the admission policy named name among objs, and its binding.
func policy(t *testing.T, objs []any, name string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var vap *admissionv1.ValidatingAdmissionPolicy
	var vapb *admissionv1.ValidatingAdmissionPolicyBinding
	for _, o := range objs {
		switch x := o.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			if x.Name == name {
				vap = x
			}
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			if x.Name == name {
				vapb = x
			}
		}
	}
	if vap == nil || vapb == nil {
		t.Fatalf("no admission policy %s and binding of that name", name)
	}
	if vapb.Spec.PolicyName != vap.Name || !slices.Equal(vapb.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("the binding of %s: %+v, want the policy's name and Deny", name, vapb.Spec)
	}
	return vap, vapb
}

// find is the one object of type T among objs.
func find[T any](t *testing.T, objs []any) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if x, ok := o.(T); ok {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of type %T, want 1", len(found), *new(T))
	}
	return found[0]
}

// The chart renders, with its defaults and with the kind test's values, into
// manifests that decode strictly into the Kubernetes API types.
func TestChartDecodesStrictly(t *testing.T) {
	for _, v := range variants(t) {
		rendered(t, v)
	}
}

// The driver's ClusterRole grants exactly what the kubelet plugin library
// (k8s.io/dynamic-resource-allocation v0.37.2) calls: the ResourceSlice
// controller lists and watches the slices and creates, updates and deletes its
// node's (never get or patch), the plugin gets a claim when the kubelet asks to
// prepare it (never lists or watches), and the controller gets the node for the
// UID that owns the slices; the driver itself gets its prepared claims (to
// unprepare those that are gone) and updates a claim's device status. It is bound to the service account the DaemonSet
// runs as, in the release's namespace.
func TestChartRBACIsLeastPrivilege(t *testing.T) {
	objs := rendered(t, variants(t)[0])
	role := find[*rbacv1.ClusterRole](t, objs)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/driver"}, ResourceNames: []string{"gpu.salus.dev"}, Verbs: []string{"associated-node:update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
	}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("ClusterRole rules:\n got %+v\nwant %+v", role.Rules, want)
	}
	binding := find[*rbacv1.ClusterRoleBinding](t, objs)
	sa := find[*corev1.ServiceAccount](t, objs)
	ds := find[*appsv1.DaemonSet](t, objs)
	if binding.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}) {
		t.Errorf("the binding refers to %+v, want ClusterRole %s", binding.RoleRef, role.Name)
	}
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: Namespace}}
	if !reflect.DeepEqual(binding.Subjects, wantSubject) {
		t.Errorf("the binding's subjects are %+v, want %+v", binding.Subjects, wantSubject)
	}
	if sa.Namespace != Namespace || ds.Namespace != Namespace {
		t.Errorf("service account in %q, DaemonSet in %q: both belong in the release's namespace %q", sa.Namespace, ds.Namespace, Namespace)
	}
	if ds.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the DaemonSet runs as service account %q, want %q", ds.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	// The admission policy names the same service account.
	vap, _ := policy(t, objs, Release+"-resourceslices")
	user := "system:serviceaccount:" + Namespace + ":" + sa.Name
	if len(vap.Spec.MatchConditions) != 1 || !strings.Contains(vap.Spec.MatchConditions[0].Expression, `"`+user+`"`) {
		t.Errorf("the admission policy matches %+v, want the driver's user %s", vap.Spec.MatchConditions, user)
	}
}

// flags are a container's --name=value arguments.
func flags(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			m[name] = value
		}
	}
	return m
}

// mountOf is the volume mounted at dir in container c, and the mount.
func mountOf(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, dir string) (corev1.Volume, corev1.VolumeMount) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir {
			for _, v := range spec.Volumes {
				if v.Name == m.Name {
					return v, m
				}
			}
			t.Fatalf("container %s mounts volume %q, which the pod does not have", c.Name, m.Name)
		}
	}
	t.Fatalf("container %s mounts nothing at %s", c.Name, dir)
	return corev1.Volume{}, corev1.VolumeMount{}
}

// hostPathAt is the host directory mounted at dir in container c.
func hostPathAt(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, dir string) string {
	t.Helper()
	v, _ := mountOf(t, spec, c, dir)
	if v.HostPath == nil {
		t.Fatalf("container %s: %s is volume %q, not a host directory", c.Name, dir, v.Name)
	}
	return v.HostPath.Path
}

// The DaemonSet's two containers agree: they share the admin token through an
// emptyDir (written by the daemon, read-only for the driver); what the driver
// writes into CDI specs as the daemon's socket and token on the node is where
// the daemon's host directories put them; the driver's plugin, registration
// and CDI directories are those directories of the node; the driver knows its
// node from the downward API; the init container hands the daemon's host
// directories to the daemon's user. Only the driver and the init container run
// as root, with one capability each.
func TestChartDaemonSetWiring(t *testing.T) {
	for _, v := range variants(t)[:2] {
		ds := find[*appsv1.DaemonSet](t, rendered(t, v))
		spec := &ds.Spec.Template.Spec
		serve, err := Container(spec, Daemon)
		if err != nil {
			t.Fatal(err)
		}
		driver, err := Container(spec, Driver)
		if err != nil {
			t.Fatal(err)
		}
		if serve.Args[0] != "serve" || !slices.Equal(driver.Command, []string{"/usr/local/bin/salus-dra-driver"}) {
			t.Fatalf("%s: the containers run salus %q and %q, want serve and /usr/local/bin/salus-dra-driver", v.name, serve.Args[0], driver.Command)
		}
		sf, df := flags(serve.Args), flags(driver.Args)

		token := sf["admin-token-file"]
		if df["admin-token-file"] != token {
			t.Errorf("%s: the driver reads the admin token at %q, the daemon writes it at %q", v.name, df["admin-token-file"], token)
		}
		sv, sm := mountOf(t, spec, serve, path.Dir(token))
		dv, dm := mountOf(t, spec, driver, path.Dir(token))
		if sv.Name != dv.Name || sv.EmptyDir == nil || sm.ReadOnly || !dm.ReadOnly {
			t.Errorf("%s: the admin token's directory: daemon %+v, driver %+v; want one emptyDir, writable by the daemon, read-only for the driver", v.name, sm, dm)
		}

		for _, p := range []struct{ driverFlag, serveFlag string }{{"host-socket", "socket"}, {"host-token-file", "token-file"}} {
			inPod := sf[p.serveFlag]
			onNode := path.Join(hostPathAt(t, spec, serve, path.Dir(inPod)), path.Base(inPod))
			if df[p.driverFlag] != onNode {
				t.Errorf("%s: the driver's --%s is %q, but the daemon's --%s %s is %s on the node", v.name, p.driverFlag, df[p.driverFlag], p.serveFlag, inPod, onNode)
			}
		}
		if df["daemon"] != "http://"+sf["addr"] {
			t.Errorf("%s: the driver calls the daemon at %q, the daemon listens on %q", v.name, df["daemon"], sf["addr"])
		}

		for _, f := range []string{"plugin-dir", "registrar-dir", "cdi-dir"} {
			dir := df[f]
			if dir == "" {
				t.Errorf("%s: the driver has no --%s", v.name, f)
				continue
			}
			if host := hostPathAt(t, spec, driver, dir); host != dir {
				t.Errorf("%s: the driver's --%s %s is %s on the node: the kubelet and the runtime look at the same path", v.name, f, dir, host)
			}
		}
		if path.Base(df["plugin-dir"]) != dra.DriverName {
			t.Errorf("%s: --plugin-dir %s: the kubelet's plugin directory is named after the driver, %s", v.name, df["plugin-dir"], dra.DriverName)
		}

		// The liveness probe reaches the driver's /healthz on the port it serves.
		probe := driver.LivenessProbe
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/healthz" || len(driver.Ports) != 1 ||
			probe.HTTPGet.Port.StrVal != driver.Ports[0].Name || df["http-addr"] != fmt.Sprintf(":%d", driver.Ports[0].ContainerPort) {
			t.Errorf("%s: the driver's liveness probe %+v, ports %+v, --http-addr %q: want /healthz on the port it serves", v.name, probe, driver.Ports, df["http-addr"])
		}
		if df["node-name"] != "$(NODE_NAME)" {
			t.Errorf("%s: --node-name=%q, want $(NODE_NAME)", v.name, df["node-name"])
		}
		var nodeEnv *corev1.EnvVar
		for i := range driver.Env {
			if driver.Env[i].Name == "NODE_NAME" {
				nodeEnv = &driver.Env[i]
			}
		}
		if nodeEnv == nil || nodeEnv.ValueFrom == nil || nodeEnv.ValueFrom.FieldRef == nil || nodeEnv.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
			t.Errorf("%s: the driver's NODE_NAME is %+v, want the downward API's spec.nodeName", v.name, nodeEnv)
		}

		if len(spec.InitContainers) != 1 {
			t.Fatalf("%s: %d init containers, want 1 (host-dirs)", v.name, len(spec.InitContainers))
		}
		initC := &spec.InitContainers[0]
		want := []string{"chown", "65532:65532"}
		for _, dir := range []string{path.Dir(sf["socket"]), path.Dir(sf["events"])} {
			host := hostPathAt(t, spec, serve, dir)
			if hostPathAt(t, spec, initC, dir) != host {
				t.Errorf("%s: the init container's %s is not the daemon's", v.name, dir)
			}
			want = append(want, dir)
		}
		if !slices.Equal(initC.Command, want) {
			t.Errorf("%s: the init container runs %q, want %q", v.name, initC.Command, want)
		}

		for _, c := range []struct {
			c    *corev1.Container
			root bool
			add  []corev1.Capability
		}{{serve, false, nil}, {driver, true, []corev1.Capability{"DAC_READ_SEARCH"}}, {initC, true, []corev1.Capability{"CHOWN"}}} {
			sc := c.c.SecurityContext
			if sc == nil || sc.RunAsUser == nil || sc.RunAsNonRoot == nil || sc.AllowPrivilegeEscalation == nil || sc.ReadOnlyRootFilesystem == nil || sc.Capabilities == nil {
				t.Errorf("%s: container %s: incomplete security context %+v", v.name, c.c.Name, sc)
				continue
			}
			if (*sc.RunAsUser == 0) != c.root || *sc.RunAsNonRoot == c.root {
				t.Errorf("%s: container %s runs as uid %d (runAsNonRoot %v); root wanted: %v", v.name, c.c.Name, *sc.RunAsUser, *sc.RunAsNonRoot, c.root)
			}
			if sc.Privileged != nil && *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s: privileged, privilege escalation or a writable root", v.name, c.c.Name)
			}
			if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, c.add) {
				t.Errorf("%s: container %s: capabilities %+v, want all dropped and %v added", v.name, c.c.Name, sc.Capabilities, c.add)
			}
		}
	}
}

// The values reach the daemon's arguments, the image and the node selector.
func TestChartValues(t *testing.T) {
	vs := variants(t)
	for _, c := range []struct {
		v            variant
		image        string
		want         []string // daemon flags that must be there
		emulate      bool
		nodeSelector map[string]string
	}{
		{vs[0], "salus:latest", []string{"--device=h100", "--gpus=8", "--policy=pack"}, false, map[string]string{"nvidia.com/gpu.present": "true"}},
		{vs[1], "salus:e2e", []string{"--device=p100", "--gpus=2", "--policy=pack", "--emulate=p100"}, true, nil},
	} {
		ds := find[*appsv1.DaemonSet](t, rendered(t, c.v))
		spec := ds.Spec.Template.Spec
		for _, ctr := range spec.Containers {
			if ctr.Image != c.image {
				t.Errorf("%s: container %s runs image %q, want %q", c.v.name, ctr.Name, ctr.Image, c.image)
			}
		}
		args, err := DaemonArgs(c.v.values)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !slices.Contains(args, w) {
				t.Errorf("%s: the daemon's arguments %q lack %s", c.v.name, args, w)
			}
		}
		if _, ok := flags(args)["emulate"]; ok != c.emulate {
			t.Errorf("%s: --emulate given: %v, want %v", c.v.name, ok, c.emulate)
		}
		if !reflect.DeepEqual(spec.NodeSelector, c.nodeSelector) {
			t.Errorf("%s: node selector %v, want %v", c.v.name, spec.NodeSelector, c.nodeSelector)
		}
	}
}

// The driver exits where the API server drops consumable capacity, unless the
// chart's wholeGPUFallback passes --whole-gpu-fallback.
func TestChartWholeGPUFallback(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   bool
	}{{nil, false}, {map[string]any{"wholeGPUFallback": true}, true}} {
		args, err := DriverArgs(c.values)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(args, "--whole-gpu-fallback"); got != c.want {
			t.Errorf("values %v: --whole-gpu-fallback given: %v, want %v (%q)", c.values, got, c.want, args)
		}
	}
}

// deploy/daemonset.yaml (the daemon alone) and the chart with its default
// values run the same daemon: the same container, init container, volumes
// and node selector. Change both together.
func TestDaemonSetMatchesChart(t *testing.T) {
	plain := find[*appsv1.DaemonSet](t, readManifests(t, deployDir+"/daemonset.yaml"))
	chart := find[*appsv1.DaemonSet](t, rendered(t, variants(t)[0]))
	ps, cs := &plain.Spec.Template.Spec, &chart.Spec.Template.Spec
	pServe, err := Container(ps, Daemon)
	if err != nil {
		t.Fatal(err)
	}
	cServe, err := Container(cs, Daemon)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			ya, _ := yaml.Marshal(a)
			yb, _ := yaml.Marshal(b)
			t.Errorf("%s differs:\ndeploy/daemonset.yaml:\n%s\nthe chart:\n%s", what, ya, yb)
		}
	}
	same("the daemon container", pServe, cServe)
	same("the init containers", ps.InitContainers, cs.InitContainers)
	same("the node selector", ps.NodeSelector, cs.NodeSelector)
	same("the pod security context", ps.SecurityContext, cs.SecurityContext)
	for _, m := range pServe.VolumeMounts {
		pv, _ := mountOf(t, ps, pServe, m.MountPath)
		cv, _ := mountOf(t, cs, cServe, m.MountPath)
		same("volume "+m.Name, pv, cv)
	}
}

// The kind test's claims: its 6 GiB template is the example's, and fits on the
// GPU the kind values emulate; its too-large claim exceeds every GPU preset, in
// its capacity request and in its hints, so no node of the chart can run it.
func TestE2EClaims(t *testing.T) {
	templates := func(file string) map[string]*resourcev1.ResourceClaimTemplate {
		m := map[string]*resourcev1.ResourceClaimTemplate{}
		for _, o := range readManifests(t, file) {
			if tmpl, ok := o.(*resourcev1.ResourceClaimTemplate); ok {
				m[tmpl.Name] = tmpl
			}
		}
		return m
	}
	example, e2e := templates(deployDir+"/dra-example.yaml"), templates(deployDir+"/e2e/claims.yaml")
	fits, big := e2e["resnet50-6gib"], e2e["too-large-200gib"]
	if fits == nil || big == nil || example["resnet50-6gib"] == nil {
		t.Fatalf("templates: example %v, e2e %v", example, e2e)
	}
	if !reflect.DeepEqual(fits.Spec, example["resnet50-6gib"].Spec) {
		t.Errorf("e2e/claims.yaml's resnet50-6gib is not dra-example.yaml's")
	}
	request := func(tmpl *resourcev1.ResourceClaimTemplate) float64 {
		q := tmpl.Spec.Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapMemory]
		return float64(q.Value()) / (1 << 20)
	}
	vals, err := ReadValues(kindValues)
	if err != nil {
		t.Fatal(err)
	}
	emulated, err := device.Preset(vals["device"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if request(fits) > emulated.CapacityMiB {
		t.Errorf("resnet50-6gib asks for %v MiB, more than the kind test's %s (%v MiB)", request(fits), emulated.Name, emulated.CapacityMiB)
	}
	cfg, err := dra.ParseClaimConfig(big.Spec.Spec.Devices.Config[0].Opaque.Parameters.Raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range device.Names() {
		d, _ := device.Preset(name)
		if request(big) <= d.TotalMiB {
			t.Errorf("too-large-200gib asks for %v MiB, which a %s (%v MiB) has", request(big), name, d.TotalMiB)
		}
		if dra.Fits(dra.GPU{MemoryMiB: d.TotalMiB, Model: name}, cfg) == nil {
			t.Errorf("too-large-200gib's hints fit on a %s: the driver would prepare it", name)
		}
	}
}

// Values the chart does not have, or of the wrong kind, are refused by its
// schema (values.schema.json) with an error naming the value, as helm install
// refuses them, rather than rendered into a DaemonSet that fails on the nodes.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		names  string
	}{
		{map[string]any{"emulated": "p100"}, "emulated"},
		{map[string]any{"gpus": "0;1"}, "gpus"},
		{map[string]any{"gpus": 0}, "gpus"},
		{map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		{map[string]any{"kubeletDir": "var/lib/kubelet"}, "kubeletDir"},
		{map[string]any{"validatingAdmissionPolicy": "yes"}, "validatingAdmissionPolicy"},
		{map[string]any{"claimPolicy": "yes"}, "claimPolicy"},
		{map[string]any{"wholeGPUFallback": "yes"}, "wholeGPUFallback"},
		{map[string]any{"driverHTTPPort": 0}, "driverHTTPPort"},
		{map[string]any{"resources": map[string]any{"serve": map[string]any{}}}, "serve"},
	} {
		_, err := Render(c.values)
		if err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("values %v: error %v, want one naming %s", c.values, err, c.names)
		}
	}
	for _, ok := range []map[string]any{{"gpus": 4}, {"gpus": "0,1,3"}, {"gpus": "0:16384,1:40960"}, {"image": map[string]any{"tag": 1.2}}} {
		if _, err := Render(ok); err != nil {
			t.Errorf("values %v: %v", ok, err)
		}
	}
}

// The chart's rendered commands, for each set of values, are
// deploy/testdata/chart-commands.yaml (go test ./chart -update rewrites it):
// the root module's tests parse them with the salus commands' own flags, and
// ../cmd/salus-dra-driver's with the driver's.
func TestChartCommandsGolden(t *testing.T) {
	type commands struct {
		Serve  []string `json:"serve"`
		Probe  []string `json:"probe"`
		Driver []string `json:"driver"`
	}
	all := map[string]commands{}
	for _, v := range variants(t)[:2] { // defaults and kind; the others differ in no container
		ds, err := DaemonSet(v.values)
		if err != nil {
			t.Fatal(err)
		}
		serve, err := Container(&ds.Spec.Template.Spec, Daemon)
		if err != nil {
			t.Fatal(err)
		}
		driver, err := Container(&ds.Spec.Template.Spec, Driver)
		if err != nil {
			t.Fatal(err)
		}
		if serve.ReadinessProbe == nil || serve.ReadinessProbe.Exec == nil || len(serve.ReadinessProbe.Exec.Command) < 2 {
			t.Fatalf("%s: the daemon's readiness probe %+v is not an exec of salus", v.name, serve.ReadinessProbe)
		}
		all[v.name] = commands{Serve: serve.Args, Probe: serve.ReadinessProbe.Exec.Command[1:], Driver: driver.Args}
	}
	got, err := yaml.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	golden := deployDir + "/testdata/chart-commands.yaml"
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
		t.Errorf("the chart's commands differ from %s (go test ./chart -update in k8s/ rewrites it):\n%s", golden, got)
	}
}

var update = flag.Bool("update", false, "rewrite deploy/testdata/chart-commands.yaml")
