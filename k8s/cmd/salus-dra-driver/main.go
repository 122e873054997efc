// Command salus-dra-driver is the node's Kubernetes DRA driver (gpu.salus.dev):
// a kubelet plugin beside salus serve (docs/kubernetes.md). It is its own binary,
// in its own module, so that salus itself carries no Kubernetes client libraries.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

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
(a restarted daemon keeps no reservation) and publishes the GPUs again.`,
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
	token, err := waitForFile(ctx, f.adminTokenFile, log)
	if err != nil {
		return err
	}
	daemon := driver.NewConnectDaemon(f.daemon, token)
	daemon.DriverVersion = driver.NVIDIADriverVersion()
	drv, err := driver.New(driver.Config{Node: f.node, Daemon: daemon, CDIDir: f.cdiDir, StateDir: f.pluginDir,
		HostSocket: f.hostSocket, HostToken: f.hostToken, Logger: log})
	if err != nil {
		return err
	}
	// The daemon may still be starting: wait for its GPUs before registering.
	if mustEventually(ctx, log, "ask the daemon at "+f.daemon+" for its GPUs", func() (any, error) { return drv.Refresh(ctx) }) == nil {
		return nil // stopped meanwhile
	}
	helper, err := kubeletplugin.Start(ctx, drv, kubeletplugin.KubeClient(kube), kubeletplugin.NodeName(f.node),
		kubeletplugin.DriverName(dra.DriverName), kubeletplugin.PluginDataDirectoryPath(f.pluginDir),
		kubeletplugin.RegistrarDirectoryPath(f.registrarDir), kubeletplugin.CDIDirectory(f.cdiDir))
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if n, err := drv.Resync(ctx); err != nil {
		log.Warn("some prepared claims could not be asserted with the daemon", "asserted", n, "err", err)
	}
	return syncLoop(ctx, f.resync, log, drv, helper)
}

// syncLoop publishes the GPUs, then every period asserts the prepared claims and
// publishes the GPUs again, until ctx ends.
func syncLoop(ctx context.Context, period time.Duration, log *slog.Logger, drv *driver.Driver, helper *kubeletplugin.Helper) error {
	resources, err := drv.Refresh(ctx)
	if err == nil {
		err = helper.PublishResources(ctx, resources)
	}
	if err != nil {
		log.Error("publish the GPUs", "err", err)
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := drv.Resync(ctx); err != nil {
			log.Warn("prepared claims not all asserted with the daemon", "asserted", n, "err", err)
		}
		if resources, err := drv.Refresh(ctx); err != nil {
			log.Warn("ask the daemon for its GPUs", "err", err)
		} else if err := helper.PublishResources(ctx, resources); err != nil {
			log.Error("publish the GPUs", "err", err)
		}
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
