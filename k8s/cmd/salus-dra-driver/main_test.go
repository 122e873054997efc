package main

import (
	"io"
	"strings"
	"testing"

	"github.com/salusgo/salus/k8s/chart"
)

// The driver refuses to start without what it cannot guess, naming the flag.
func TestDRADriverFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-name", ""}, "--node-name is empty"},
		{[]string{"--node-name", "n1", "--resync", "0s"}, "--resync 0s"},
		{[]string{"--node-name", "n1", "--kubeconfig", "/nonexistent/kubeconfig"}, "give --kubeconfig outside a cluster"},
	} {
		cmd := newCommand()
		cmd.SetArgs(c.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("salus-dra-driver %s: %v, want an error with %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// The chart's driver container passes flags this command has, with values its
// flag parser takes, with the chart's defaults and with the kind test's values.
func TestChartDriverArgumentsParse(t *testing.T) {
	kind, err := chart.ReadValues("../../../deploy/e2e/values-kind.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]any{"defaults": nil, "kind": kind} {
		args, err := chart.DriverArgs(values)
		if err != nil {
			t.Fatal(err)
		}
		cmd := newCommand()
		if err := cmd.ParseFlags(args); err != nil {
			t.Errorf("the chart's driver (%s) %q: %v", name, args, err)
		} else if rest := cmd.Flags().Args(); len(rest) > 0 {
			t.Errorf("the chart's driver (%s): arguments %q that are not flags", name, rest)
		}
	}
}
