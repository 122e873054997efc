// Command salus-dra-driver is the node's Kubernetes DRA driver (gpu.salus.dev):
// a kubelet plugin beside salus serve (docs/kubernetes.md). It is its own binary,
// in its own module, so that salus itself carries no Kubernetes client libraries.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/salusgo/salus/k8s/dra"
	"github.com/salusgo/salus/k8s/driver"
)

func main() {
	cmd := newCommand()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "salus-dra-driver:", err)
		os.Exit(1)
	}
}

// draDriverFlags are the driver's flags; deploy/chart's DaemonSet passes them.
type draDriverFlags struct {
	node, daemon, adminTokenFile, kubeconfig string
	cdiDir, pluginDir, registrarDir          string
	hostSocket, hostToken                    string
	resync                                   time.Duration
	httpAddr                                 string
	wholeGPUFallback                         bool
}

func newCommand() *cobra.Command {
	var f draDriverFlags
	cmd := &cobra.Command{
		Use:           "salus-dra-driver",
		SilenceUsage:  true,
		SilenceErrors: true,
		Short:         "Run the node's Kubernetes DRA driver (gpu.salus.dev) beside salus serve",
		Long: `Run the Kubernetes Dynamic Resource Allocation driver of one node, as a kubelet
plugin beside the node's salus serve (docs/kubernetes.md).

It publishes the daemon's GPUs as a ResourceSlice: one shareable device per GPU,
named gpu-<index>, with its usable memory as consumable capacity. When the kubelet
prepares a pod's claim, it reserves the claim's share of the GPU with the daemon
(ReserveClaim, with the admin token) and writes a CDI spec that mounts the
daemon's socket and token into the container and sets SALUS_ADDR,
SALUS_TOKEN_FILE, SALUS_CLAIM, SALUS_CLAIM_SECRET (the claim's secret, without
which the daemon refuses an open naming the claim), the claim's declared figures
and CUDA_VISIBLE_DEVICES. A claim the daemon refuses fails with the daemon's words,
which the pod's events show. On unprepare it releases the claim, which ends its
session. Every --resync it asserts its prepared claims with the daemon again
(a restarted daemon keeps no reservation), unprepares the claims whose
ResourceClaim is gone, and publishes the GPUs again, tainted when the daemon
cannot be reached. It serves the kubelet's device health stream.

Sharing needs consumable capacity (the DRAConsumableCapacity feature, on by
default from Kubernetes 1.36). Where the API server drops it, the driver exits
with an error naming the feature gate, unless --whole-gpu-fallback: then it
publishes whole GPUs, one claim each. --http-addr serves /healthz (the liveness
probe) and /metrics (Prometheus).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runDRADriver(ctx, f, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.node, "node-name", os.Getenv("NODE_NAME"), "node this driver serves (default $NODE_NAME: set it from the downward API's spec.nodeName)")
	fl.StringVar(&f.daemon, "daemon", "http://127.0.0.1:7070", "the node daemon's connect API (its --addr; the same pod's other container)")
	fl.StringVar(&f.adminTokenFile, "admin-token-file", "/var/lib/salus/admin-token", "the daemon's admin token (its --admin-token-file)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (empty: the in-cluster configuration)")
	fl.StringVar(&f.cdiDir, "cdi-dir", "/var/run/cdi", "where CDI specs are written for the container runtime")
	fl.StringVar(&f.pluginDir, "plugin-dir", kubeletplugin.KubeletPluginsDir+"/"+dra.DriverName, "the kubelet plugin's directory: its socket and the records of prepared claims")
	fl.StringVar(&f.registrarDir, "registrar-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	fl.StringVar(&f.hostSocket, "host-socket", "/run/salus/salus.sock", "the daemon's client socket as the node sees it, mounted into pods")
	fl.StringVar(&f.hostToken, "host-token-file", "/run/salus/token", "the daemon's client token as the node sees it, mounted into pods")
	fl.DurationVar(&f.resync, "resync", 30*time.Second, "how often prepared claims are asserted with the daemon again, and its GPUs published again")
	fl.StringVar(&f.httpAddr, "http-addr", "", "serve /healthz and /metrics on this address (such as :8081; empty: none)")
	fl.BoolVar(&f.wholeGPUFallback, "whole-gpu-fallback", false, "where the API server drops consumable capacity (Kubernetes before 1.36, or the DRAConsumableCapacity gate off), publish whole GPUs, one claim each, instead of exiting")
	return cmd
}

func runDRADriver(ctx context.Context, f draDriverFlags, log *slog.Logger) error {
	if f.node == "" {
		return errors.New("--node-name is empty: give the node's name (in a pod: NODE_NAME from the downward API's spec.nodeName)")
	}
	if f.resync <= 0 {
		return fmt.Errorf("--resync %v: give a positive duration, such as 30s", f.resync)
	}
	kube, err := kubeClient(f.kubeconfig)
	if err != nil {
		return err
	}
	var lis net.Listener
	if f.httpAddr != "" {
		if lis, err = net.Listen("tcp", f.httpAddr); err != nil {
			return fmt.Errorf("--http-addr %s: %w", f.httpAddr, err)
		}
		defer lis.Close()
	}
	token, err := waitForFile(ctx, f.adminTokenFile, log)
	if err != nil {
		return err
	}
	// A fatal error (the API server drops the sharing fields) ends the driver:
	// the pod's container exits with it, which its status and logs show.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	daemon := driver.NewConnectDaemon(f.daemon, token)
	daemon.DriverVersion = driver.NVIDIADriverVersion()
	metrics := driver.NewMetrics()
	drv, err := driver.New(driver.Config{Node: f.node, Daemon: daemon, CDIDir: f.cdiDir, StateDir: f.pluginDir,
		HostSocket: f.hostSocket, HostToken: f.hostToken, Logger: log,
		Kube: kube, WholeGPUFallback: f.wholeGPUFallback, Fatal: cancel, Metrics: metrics})
	if err != nil {
		return err
	}
	probe := &health{drv: drv}
	if lis != nil {
		mux := http.NewServeMux()
		mux.Handle("/healthz", probe)
		mux.Handle("/metrics", metrics.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(lis)
		defer srv.Close()
	}
	// The daemon may still be starting: wait for its GPUs before registering.
	if mustEventually(ctx, log, "ask the daemon at "+f.daemon+" for its GPUs", func() (any, error) { return drv.Refresh(ctx) }) == nil {
		return context.Cause(ctx) // stopped meanwhile
	}
	helper, err := kubeletplugin.Start(ctx, drv, kubeletplugin.KubeClient(kube), kubeletplugin.NodeName(f.node),
		kubeletplugin.DriverName(dra.DriverName), kubeletplugin.PluginDataDirectoryPath(f.pluginDir),
		kubeletplugin.RegistrarDirectoryPath(f.registrarDir), kubeletplugin.CDIDirectory(f.cdiDir))
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	probe.helper.Store(helper)
	if n, err := drv.Resync(ctx); err != nil {
		log.Warn("some prepared claims could not be asserted with the daemon", "asserted", n, "err", err)
	}
	syncLoop(ctx, f.resync, log, drv, helper)
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// health is the liveness probe (/healthz): 200 unless the driver cannot go on
// or the kubelet refused its registration. An unreachable daemon is not a
// failure here: restarting the driver would not bring it back (the published
// GPUs are tainted meanwhile, and /metrics says it).
type health struct {
	drv    *driver.Driver
	helper atomic.Pointer[kubeletplugin.Helper]
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if err := h.drv.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if helper := h.helper.Load(); helper != nil {
		if st := helper.RegistrationStatus(); st != nil && !st.PluginRegistered {
			http.Error(w, "the kubelet refused the plugin's registration: "+st.Error, http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// publisher publishes the driver's resources: the kubelet plugin's helper.
type publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

// syncLoop publishes the GPUs, then every period asserts the prepared claims
// (unpreparing those whose claim is gone) and publishes the GPUs again, and
// publishes them when the driver asks to (drv.Republish), until ctx ends. It
// publishes only what differs from what it published last, so that a slice
// the API server stores differently is not written again and again.
func syncLoop(ctx context.Context, period time.Duration, log *slog.Logger, drv *driver.Driver, helper publisher) {
	var last *resourceslice.DriverResources
	publish := func() {
		resources, err := drv.Refresh(ctx)
		if err != nil {
			log.Warn("ask the daemon for its GPUs", "err", err)
		}
		if resources.Pools == nil || (last != nil && equality.Semantic.DeepEqual(*last, resources)) {
			return
		}
		if err := helper.PublishResources(ctx, resources); err != nil {
			log.Error("publish the GPUs", "err", err)
			return
		}
		last = &resources
	}
	publish()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-drv.Republish():
			publish()
			continue
		case <-t.C:
		}
		if n, err := drv.Resync(ctx); err != nil {
			log.Warn("prepared claims not all asserted with the daemon", "asserted", n, "err", err)
		}
		publish()
	}
}

// mustEventually calls fn with backoff (1 s doubling to 30 s) until it succeeds
// or ctx ends (then nil), logging each failure.
func mustEventually(ctx context.Context, log *slog.Logger, what string, fn func() (any, error)) any {
	wait := time.Second
	for {
		v, err := fn()
		if err == nil {
			return v
		}
		log.Warn(what, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// waitForFile reads a token file, waiting for the daemon to create it.
func waitForFile(ctx context.Context, path string, log *slog.Logger) (string, error) {
	v := mustEventually(ctx, log, "read the admin token "+path, func() (any, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("%s is empty", path)
		}
		return tok, nil
	})
	tok, _ := v.(string)
	if tok == "" {
		return "", fmt.Errorf("--admin-token-file %s: stopped before the daemon wrote it", path)
	}
	return tok, nil
}

// kubeClient is the clientset of the kubeconfig file, or in-cluster without one.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("the Kubernetes client: %w (give --kubeconfig outside a cluster)", err)
	}
	return kubernetes.NewForConfig(cfg)
}
