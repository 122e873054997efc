package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// fixedDaemon lists two GPUs, or fails when down, counting the calls.
type fixedDaemon struct {
	driver.Daemon
	calls atomic.Int64
	down  atomic.Bool
}

func (f *fixedDaemon) GPUs(context.Context) ([]dra.GPU, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("connection refused")
	}
	return []dra.GPU{{Index: 0, MemoryMiB: 16000}, {Index: 1, MemoryMiB: 16000}}, nil
}

func (f *fixedDaemon) Reserve(context.Context, string, string, int, float64, string, driver.Intent) error {
	return nil
}

// countingPublisher counts what it is asked to publish.
type countingPublisher struct {
	mu   sync.Mutex
	last []resourceslice.DriverResources
}

func (p *countingPublisher) PublishResources(_ context.Context, r resourceslice.DriverResources) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = append(p.last, r)
	return nil
}

func (p *countingPublisher) published() []resourceslice.DriverResources {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.last)
}

// The sync loop publishes a slice only when it differs from the last one
// published: resync after resync with the same GPUs, once; with the daemon
// unreachable, once more (the GPUs tainted).
func TestSyncLoopPublishesChangesOnly(t *testing.T) {
	dir := t.TempDir()
	daemon := &fixedDaemon{}
	drv, err := driver.New(driver.Config{Node: "n1", Daemon: daemon, CDIDir: dir + "/cdi", StateDir: dir + "/plugin",
		HostSocket: "/run/salus/salus.sock", HostToken: "/run/salus/token", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	pub := &countingPublisher{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		syncLoop(ctx, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), drv, pub)
		close(done)
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("%s: not within a minute", what)
			}
		}
	}
	wait("ten resyncs", func() bool { return daemon.calls.Load() >= 10 })
	if n := len(pub.published()); n != 1 {
		t.Errorf("%d publishes after ten resyncs of the same GPUs, want 1", n)
	}
	daemon.down.Store(true)
	start := daemon.calls.Load()
	wait("ten resyncs with the daemon down", func() bool { return daemon.calls.Load() >= start+10 })
	cancel()
	<-done
	got := pub.published()
	if len(got) != 2 {
		t.Fatalf("%d publishes, want 2 (the GPUs, then the GPUs tainted)", len(got))
	}
	for _, d := range got[1].Pools["n1"].Slices[0].Devices {
		if len(d.Taints) != 1 || d.Taints[0].Key != dra.TaintUnreachable {
			t.Errorf("device %s published with taints %+v, want %s", d.Name, d.Taints, dra.TaintUnreachable)
		}
	}
}
