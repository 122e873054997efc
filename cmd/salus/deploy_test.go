package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// parseArgs parses a container's arguments (a salus subcommand, then its
// flags) with that subcommand's own flag set, as the binary in the image would;
// found is false when salus has no such subcommand.
func parseArgs(args []string) (found bool, err error) {
	if len(args) == 0 {
		return false, fmt.Errorf("no arguments: want a salus subcommand")
	}
	cmd, _, err := newRoot().Find(args[:1])
	if err != nil || cmd.Name() != args[0] {
		return false, nil
	}
	if err := cmd.ParseFlags(args[1:]); err != nil {
		return true, fmt.Errorf("salus %s %v: %w", args[0], args[1:], err)
	}
	rest := cmd.Flags().Args()
	if cmd.Args == nil && len(rest) > 0 {
		return true, fmt.Errorf("salus %s takes no arguments but flags, and was given %q", args[0], rest)
	}
	if err := cmd.ValidateArgs(rest); err != nil {
		return true, fmt.Errorf("salus %s %q: %w", args[0], rest, err)
	}
	for _, a := range rest {
		if len(cmd.ValidArgs) > 0 && !slices.Contains(cmd.ValidArgs, a) {
			return true, fmt.Errorf("salus %s %s: give one of %q", args[0], a, cmd.ValidArgs)
		}
	}
	return true, nil
}

// mustParse fails the test unless args are a salus subcommand named want with
// flags it has and values its flag parser takes.
func mustParse(t *testing.T, where, want string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != want {
		t.Errorf("%s runs %q, want salus %s", where, args, want)
		return
	}
	found, err := parseArgs(args)
	if !found {
		t.Errorf("%s: salus has no command %q", where, want)
	} else if err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

// container is what these tests read of a manifest's container: the rest, and
// the whole manifest strictly in its Kubernetes API type, is the k8s module's to
// check (k8s/manifesttest), so that this module needs no Kubernetes API module.
type container struct {
	Name           string
	Args           []string
	ReadinessProbe *struct {
		Exec *struct{ Command []string }
	} `yaml:"readinessProbe"`
}

// daemonSet is what these tests read of a DaemonSet: its pod's containers.
type daemonSet struct {
	Spec struct {
		Template struct {
			Spec struct{ Containers []container }
		}
	}
}

// unmarshalStrict decodes YAML into v, refusing keys v does not have: a key the
// test reads, misspelt, fails here rather than reading as empty.
func unmarshalStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// probeArgs are the salus arguments of a container's exec readiness probe.
func probeArgs(t *testing.T, c container) []string {
	t.Helper()
	p := c.ReadinessProbe
	if p == nil || p.Exec == nil || len(p.Exec.Command) < 2 || p.Exec.Command[0] != "/usr/local/bin/salus" {
		t.Fatalf("container %s: readiness probe %+v, want an exec of /usr/local/bin/salus", c.Name, p)
	}
	return p.Exec.Command[1:]
}

// chartCommands are the chart's rendered commands for each set of values
// (deploy/testdata/chart-commands.yaml, which the k8s module's tests render the
// chart to and check; go test ./chart -update there rewrites it).
type chartCommands map[string]struct {
	Serve, Probe, Driver []string
}

func readChartCommands(t *testing.T) chartCommands {
	t.Helper()
	data, err := os.ReadFile("../../deploy/testdata/chart-commands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cc chartCommands
	if err := unmarshalStrict(data, &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc) == 0 {
		t.Fatal("deploy/testdata/chart-commands.yaml has no values set")
	}
	return cc
}

// The DaemonSet's salus serve arguments, and its readiness probe's salus get,
// are flags those commands have, with values their flag parsers take: in
// deploy/daemonset.yaml and in the chart's DaemonSet, as rendered.
func TestDaemonSetArgumentsParse(t *testing.T) {
	data, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Not strict: the DaemonSet has many fields this test does not read.
	var ds daemonSet
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("deploy/daemonset.yaml: no containers read")
	}
	serve := ds.Spec.Template.Spec.Containers[0]
	mustParse(t, "deploy/daemonset.yaml", "serve", serve.Args)
	mustParse(t, "deploy/daemonset.yaml's readiness probe", "get", probeArgs(t, serve))

	for name, c := range readChartCommands(t) {
		mustParse(t, "the chart's daemon ("+name+")", "serve", c.Serve)
		mustParse(t, "the chart's readiness probe ("+name+")", "get", c.Probe)
	}
}
