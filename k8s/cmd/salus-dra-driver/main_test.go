package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/salusgo/salus/k8s/chart"
	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/driver"
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
	for name, values := range map[string]map[string]any{"defaults": nil, "kind": kind, "whole-GPU fallback": {"wholeGPUFallback": true}} {
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

// nopDaemon is a daemon the health test never calls.
type nopDaemon struct{ driver.Daemon }

// /healthz answers 200 while the driver can go on, and 503 with the reason
// once it cannot (the API server dropped the sharing fields).
func TestHealthz(t *testing.T) {
	dir := t.TempDir()
	drv, err := driver.New(driver.Config{Node: "n1", Daemon: nopDaemon{}, CDIDir: dir + "/cdi", StateDir: dir + "/plugin",
		HostSocket: "/run/salus/salus.sock", HostToken: "/run/salus/token", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Fatal: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	h := &health{drv: drv}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != 200 {
		t.Fatalf("/healthz of a working driver: %d %s", code, body)
	}
	sharing := dra.Slice("n1", []dra.GPU{{Index: 0, MemoryMiB: 16000}}, "", 0)
	stored := sharing.DeepCopy()
	dra.WholeGPUs(stored)
	drv.HandleError(context.Background(), &resourceslice.DroppedFieldsError{PoolName: "n1", DesiredSlice: sharing, ActualSlice: stored}, "update ResourceSlice")
	if code, body := get(); code != 503 || !strings.Contains(body, "DRAConsumableCapacity") {
		t.Errorf("/healthz once the sharing fields are dropped: %d %s, want 503 naming DRAConsumableCapacity", code, body)
	}
}
