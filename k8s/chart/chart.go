// Package chart renders the salus Helm chart (deploy/chart/salus) with the Helm
// v3 library, as helm template would, for the tests that decode its manifests,
// compile its DeviceClass's CEL selector and check its containers' arguments
// against the salus commands. It is test support: no command imports it, and it
// talks to no cluster.
package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Release is the release name and namespace the chart is rendered for.
const (
	Release   = "salus"
	Namespace = "salus-system"
)

// KubeVersion is the Kubernetes version the chart is rendered for: the oldest
// it installs on (Chart.yaml's kubeVersion), the first with DRA's consumable
// capacity on by default.
const KubeVersion = "v1.36.0"

// Dir is the chart's directory, found beside this source file so that a test
// of any package can render it.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("chart: no caller information to find the chart")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "chart", "salus")
}

// Document is one rendered manifest.
type Document struct {
	Template string // the template it came from, e.g. salus/templates/rbac.yaml
	Kind     string // its kind, e.g. ClusterRole
	YAML     []byte
}

// separator is a YAML document separator on a line of its own.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Render renders the chart with values over its values.yaml (nil: the
// defaults) and returns its manifests, template by template in name order,
// each template's documents in their order; empty documents are left out.
func Render(values map[string]any) ([]Document, error) {
	chrt, err := loader.Load(Dir())
	if err != nil {
		return nil, fmt.Errorf("load the chart: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: KubeVersion, Major: "1", Minor: "36"}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: Release, Namespace: Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("the chart's values: %w", err)
	}
	out, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("render the chart: %w", err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		if strings.HasSuffix(name, ".yaml") { // not _helpers.tpl, nor NOTES.txt
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var docs []Document
	for _, name := range names {
		for _, part := range separator.Split(out[name], -1) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(part), &head); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if head.Kind == "" {
				if strings.TrimSpace(stripComments(part)) != "" {
					return nil, fmt.Errorf("%s: a document without a kind:\n%s", name, part)
				}
				continue
			}
			docs = append(docs, Document{Template: name, Kind: head.Kind, YAML: []byte(part)})
		}
	}
	return docs, nil
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// ReadValues reads a values file (YAML), as helm install -f FILE does.
func ReadValues(file string) (map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ReadValues(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return vals, nil
}

// DaemonSet is the chart's one DaemonSet rendered with values, decoded
// strictly (a field the API type does not have is an error).
func DaemonSet(values map[string]any) (*appsv1.DaemonSet, error) {
	docs, err := Render(values)
	if err != nil {
		return nil, err
	}
	var found *appsv1.DaemonSet
	for _, d := range docs {
		if d.Kind != "DaemonSet" {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("the chart renders more than one DaemonSet (%s)", d.Template)
		}
		found = &appsv1.DaemonSet{}
		if err := yaml.UnmarshalStrict(d.YAML, found); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Template, err)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("the chart renders no DaemonSet")
	}
	return found, nil
}

// Container is the container of the pod spec with this name.
func Container(spec *corev1.PodSpec, name string) (*corev1.Container, error) {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q in the pod", name)
}

// Daemon and Driver are the names of the DaemonSet's two containers.
const (
	Daemon = "serve"
	Driver = "dra-driver"
)

// DaemonArgs are the arguments of the rendered DaemonSet's daemon container
// (serve, then salus serve's flags).
func DaemonArgs(values map[string]any) ([]string, error) { return args(values, Daemon) }

// DriverArgs are the arguments of the rendered DaemonSet's driver container
// (salus-dra-driver's flags), for a test that parses them with the driver's own
// flag set.
func DriverArgs(values map[string]any) ([]string, error) { return args(values, Driver) }

func args(values map[string]any, container string) ([]string, error) {
	ds, err := DaemonSet(values)
	if err != nil {
		return nil, err
	}
	c, err := Container(&ds.Spec.Template.Spec, container)
	if err != nil {
		return nil, err
	}
	return c.Args, nil
}
