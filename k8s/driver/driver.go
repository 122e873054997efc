// Package driver is the node's DRA kubelet plugin for the salus daemon: it
// publishes the daemon's GPUs as a ResourceSlice, and when the kubelet prepares a
// pod's claim it reserves the claim with the daemon (over the daemon's connect
// API, with the admin token) and writes the CDI spec that hands the container the
// daemon's socket, its token and the claim's figures; on unprepare it releases
// the claim. The pure pieces (the slice, the claim configuration, the CDI spec)
// are package dra's; this package adds the kubelet and daemon calls.
//
// Each claim has a secret, made here (256 random bits) when the claim is first
// prepared: the driver reserves the claim with it and puts it in the claim's
// container (SALUS_CLAIM_SECRET, beside SALUS_CLAIM), so that only that pod's
// job can open a session under the claim. The CDI spec and the record that hold
// it are written 0600.
//
// Every prepared claim is also recorded in a small file under the plugin's data
// directory, so that a restarted driver (or one that sees the daemon restart)
// asserts its claims with the daemon again (Resync), with the same secret, and
// can release them later; Resync also unprepares the claims whose
// ResourceClaim is gone.
//
// The driver fails loudly where the API server drops the sharing fields (the
// DRAConsumableCapacity feature off: HandleError), or publishes whole GPUs when
// asked to. It serves the kubelet's device health stream (WatchHealthStatus),
// taints the GPUs nobody serves, prepares admin-access claims for monitoring
// only, and writes a prepared claim's device status.
package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/salusgo/salus/k8s/dra"
)

// Daemon is what the driver needs of the node daemon.
type Daemon interface {
	// GPUs lists the GPUs the daemon drives, with their usable memory.
	GPUs(ctx context.Context) ([]dra.GPU, error)
	// Reserve holds memoryMiB of the GPU (physical index) for the claim, whose
	// opens must present secret; the same reservation again is a no-op.
	Reserve(ctx context.Context, uid, name string, gpu int, memoryMiB float64, secret string, intent Intent) error
	// Release drops the claim's reservation and ends its session; an unknown
	// claim is no error.
	Release(ctx context.Context, uid string) error
}

// Config says where the driver's files go and what containers are given.
type Config struct {
	Node   string // the node's name: the ResourceSlice's pool
	Daemon Daemon
	// CDIDir is where CDI specs are written (the runtime reads them): /var/run/cdi.
	CDIDir string
	// StateDir holds one record per prepared claim (the plugin's data directory).
	StateDir string
	// HostSocket and HostToken are the daemon's client socket and token file as
	// the node sees them: the CDI edits mount them into the container.
	HostSocket, HostToken string
	Logger                *slog.Logger

	// Kube, when given, is the API server: the driver writes a prepared
	// claim's device status (status.devices) and, at each Resync, releases the
	// claims whose ResourceClaim is gone (it reads each by name).
	Kube kubernetes.Interface
	// WholeGPUFallback: when the API server drops the sharing fields (the
	// DRAConsumableCapacity feature is off), publish whole GPUs, one claim each,
	// instead of failing (Fatal).
	WholeGPUFallback bool
	// Fatal is called, once, when the driver cannot go on: the API server drops
	// the sharing fields and WholeGPUFallback is off. nil: the error is logged.
	Fatal func(error)
	// HealthPeriod is how often the health service asks the daemon for its
	// GPUs (0: 10 s).
	HealthPeriod time.Duration
	// Metrics, when given, counts what the driver does (NewMetrics).
	Metrics *Metrics
}

// Driver implements kubeletplugin.DRAPlugin.
type Driver struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	gpus      map[string]dra.GPU // by device name, as the daemon last listed them
	published map[string]dra.GPU // every GPU published since the start, by device name
	reachable bool               // the daemon answered the last Refresh
	whole     bool               // publishing whole GPUs (WholeGPUFallback)
	noTaints  bool               // the API server drops device taints
	republish chan struct{}      // the slice to publish changed (Republish)
	fatalOnce sync.Once
	fatal     error // set when the driver cannot go on
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New makes a driver; call Refresh before the first prepare.
func New(cfg Config) (*Driver, error) {
	if cfg.Node == "" || cfg.Daemon == nil || cfg.CDIDir == "" || cfg.StateDir == "" {
		return nil, errors.New("driver: give the node name, the daemon, the CDI directory and the state directory")
	}
	for _, p := range []string{cfg.HostSocket, cfg.HostToken} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("driver: %q is not an absolute path: give the daemon's socket and token file as the node sees them", p)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, dir := range []string{cfg.CDIDir, cfg.StateDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("driver: %w", err)
		}
	}
	if cfg.HealthPeriod <= 0 {
		cfg.HealthPeriod = 10 * time.Second
	}
	return &Driver{cfg: cfg, log: cfg.Logger, gpus: map[string]dra.GPU{}, published: map[string]dra.GPU{},
		republish: make(chan struct{}, 1)}, nil
}

// Refresh asks the daemon for its GPUs and returns what to publish: one pool,
// named after the node, of one slice with a device per GPU (dra.Slice). A GPU
// published before that the daemon no longer lists stays, tainted
// dra.TaintNotServed. When the daemon cannot be reached, Refresh returns its
// error and, once GPUs were published, those GPUs tainted dra.TaintUnreachable:
// publish them, so that no new claim is allocated a GPU nobody serves.
func (d *Driver) Refresh(ctx context.Context) (resourceslice.DriverResources, error) {
	gpus, err := d.cfg.Daemon.GPUs(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg.Metrics.daemonUp(err == nil)
	if err != nil {
		err = fmt.Errorf("ask the daemon for its GPUs: %w", err)
		d.reachable = false
		if len(d.published) == 0 {
			return resourceslice.DriverResources{}, err
		}
	} else {
		d.reachable = true
		d.gpus = map[string]dra.GPU{}
		for _, g := range gpus {
			d.gpus[dra.DeviceName(g.Index)] = g
			d.published[dra.DeviceName(g.Index)] = g
		}
	}
	slice := dra.Slice(d.cfg.Node, slices.Collect(maps.Values(d.published)), "", 0)
	if d.whole {
		dra.WholeGPUs(slice)
	}
	tainted := 0
	if !d.noTaints {
		for _, dev := range slice.Spec.Devices {
			switch _, listed := d.gpus[dev.Name]; {
			case !d.reachable:
				dra.Taint(slice, dev.Name, dra.TaintUnreachable)
			case !listed:
				dra.Taint(slice, dev.Name, dra.TaintNotServed)
			default:
				continue
			}
			tainted++
		}
	}
	d.cfg.Metrics.devices(len(slice.Spec.Devices), tainted)
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		slice.Spec.Pool.Name: {Slices: []resourceslice.Slice{{Devices: slice.Spec.Devices}}},
	}}, err
}

// Republish is signalled when what the driver publishes changed for a reason
// of its own (it fell back to whole GPUs, or stopped tainting): call Refresh
// and publish again.
func (d *Driver) Republish() <-chan struct{} { return d.republish }

// Err is why the driver cannot go on (see Config.Fatal), or nil.
func (d *Driver) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fatal
}

// record is what the driver keeps of a prepared claim.
type record struct {
	UID       string  `json:"uid"`
	Name      string  `json:"name"` // namespace/name
	GPU       int     `json:"gpu"`
	MemoryMiB float64 `json:"memoryMiB"`
	// Secret is the claim's secret (its CDI spec gives it to the container);
	// empty in the record of a driver before claim secrets.
	Secret string `json:"secret,omitempty"`
	// AdminAccess: a monitoring claim (adminAccess: true), which the daemon
	// holds nothing for.
	AdminAccess bool `json:"adminAccess,omitempty"`
	// Intent is the claim's declared time and priority, which bind its session.
	Intent Intent `json:"intent,omitzero"`
}

// Intent is what a claim's configuration says of the job that runs under it:
// the daemon schedules the claim's session with it, whatever the session's
// client sends (its share of the GPU's time is its memory's share of the GPU).
type Intent struct {
	DeclaredS float64 `json:"declaredS,omitempty"`
	// Priority is the claim's priority when its configuration gives one other
	// than 0 (the configuration cannot tell 0 from none: 0 leaves the client's).
	Priority *int32 `json:"priority,omitempty"`
}

func intentOf(cfg dra.ClaimConfig) Intent {
	in := Intent{DeclaredS: cfg.DeclaredS}
	if cfg.Priority != 0 {
		p := int32(cfg.Priority)
		in.Priority = &p
	}
	return in
}

// PrepareResourceClaims reserves each claim with the daemon and writes its CDI
// spec. A claim that cannot be prepared gets its own error, which the kubelet
// shows in the pod's events and retries; preparing a claim again is a no-op.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		devices, rec, err := d.prepare(ctx, c)
		d.cfg.Metrics.prepared(rec, err)
		if err != nil {
			d.log.Warn("claim not prepared", "claim", c.UID, "name", c.Namespace+"/"+c.Name, "err", err)
			out[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("gpu.salus.dev: claim %s/%s: %w", c.Namespace, c.Name, err)}
			continue
		}
		if rec != nil {
			d.writeStatus(ctx, c, devices[0], *rec)
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

// prepare prepares one claim: the devices for the kubelet and the claim's
// record (nil, with no device, for a claim with no device of this driver).
func (d *Driver) prepare(ctx context.Context, c *resourceapi.ResourceClaim) ([]kubeletplugin.Device, *record, error) {
	if c.Status.Allocation == nil {
		return nil, nil, errors.New("the claim is not allocated")
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == dra.DriverName {
			results = append(results, r)
		}
	}
	switch len(results) {
	case 0:
		return nil, nil, nil
	case 1:
	default:
		return nil, nil, fmt.Errorf("the claim was allocated %d GPUs: this driver gives a claim one GPU (a gang across claims is not supported yet); request one device", len(results))
	}
	res := results[0]
	d.mu.Lock()
	gpu, ok := d.gpus[res.Device]
	d.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("device %s is not one of the daemon's GPUs on this node: the ResourceSlice is stale; the driver publishes it again", res.Device)
	}
	device := kubeletplugin.Device{Requests: []string{res.Request}, PoolName: res.Pool, DeviceName: res.Device,
		CDIDeviceIDs: []string{CDIDeviceID(string(c.UID))}, ShareID: res.ShareID}
	if ptr.Deref(res.AdminAccess, false) {
		rec, err := d.prepareMonitor(c, gpu)
		if err != nil {
			return nil, nil, err
		}
		return []kubeletplugin.Device{device}, rec, nil
	}
	cfg, err := claimConfig(c, res.Request)
	if err != nil {
		return nil, nil, err
	}
	granted := gpu.MemoryMiB
	if q, ok := res.ConsumedCapacity[dra.CapMemory]; ok {
		granted = float64(q.Value()) / (1 << 20)
	}
	if need := cfg.PersistentMiB + cfg.EphemeralMiB; need > granted {
		if need > gpu.MemoryMiB {
			return nil, nil, dra.Fits(gpu, cfg)
		}
		return nil, nil, fmt.Errorf("the claim's configuration needs %g MiB (persistentMiB %g + ephemeralMiB %g), more than the %g MiB of capacity %s it was granted: request more capacity, or lower them", need, cfg.PersistentMiB, cfg.EphemeralMiB, granted, dra.CapMemory)
	}
	rec := record{UID: string(c.UID), Name: c.Namespace + "/" + c.Name, GPU: gpu.Index, MemoryMiB: granted, Intent: intentOf(cfg)}
	// A claim prepared before (the kubelet retries) keeps its secret: its
	// container may already have it, and the daemon holds the claim with it.
	if old, err := d.readRecord(d.statePath(rec.UID)); err == nil && old.Secret != "" {
		rec.Secret = old.Secret
	} else {
		rec.Secret = newSecret()
	}
	if err := d.cfg.Daemon.Reserve(ctx, rec.UID, rec.Name, rec.GPU, rec.MemoryMiB, rec.Secret, rec.Intent); err != nil {
		return nil, nil, err
	}
	// A claim the daemon holds must be one the driver can assert again, with
	// its secret: without its record, it is released.
	state, _ := json.Marshal(rec)
	if err := writeAtomically(d.statePath(rec.UID), state); err != nil {
		if rerr := d.cfg.Daemon.Release(ctx, rec.UID); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, nil, err
	}
	spec, err := dra.CDISpec(rec.UID, rec.Secret, gpu, d.cfg.HostSocket, d.cfg.HostToken, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := writeAtomically(d.cdiPath(rec.UID), spec); err != nil {
		return nil, nil, err
	}
	d.log.Info("claim prepared", "claim", rec.UID, "name", rec.Name, "gpu", rec.GPU, "memory_mib", rec.MemoryMiB)
	return []kubeletplugin.Device{device}, &rec, nil
}

// prepareMonitor prepares a claim with admin access (a monitoring pod, which
// Kubernetes lets share a device whatever else holds it): its container sees
// the GPU and the daemon's socket, but the daemon reserves nothing for it and
// no session is bound to it (dra.MonitorCDISpec). Its record is kept so that
// Resync can find it once its claim is gone.
func (d *Driver) prepareMonitor(c *resourceapi.ResourceClaim, gpu dra.GPU) (*record, error) {
	rec := record{UID: string(c.UID), Name: c.Namespace + "/" + c.Name, GPU: gpu.Index, AdminAccess: true}
	state, _ := json.Marshal(rec)
	if err := writeAtomically(d.statePath(rec.UID), state); err != nil {
		return nil, err
	}
	spec, err := dra.MonitorCDISpec(rec.UID, gpu, d.cfg.HostSocket, d.cfg.HostToken)
	if err != nil {
		return nil, err
	}
	if err := writeAtomically(d.cdiPath(rec.UID), spec); err != nil {
		return nil, err
	}
	d.log.Info("monitoring claim prepared (admin access: nothing reserved)", "claim", rec.UID, "name", rec.Name, "gpu", rec.GPU)
	return &rec, nil
}

// claimConfig is the claim's opaque configuration for this driver that applies
// to request (the last one given wins, as Kubernetes orders them: class first,
// then claim); none is the zero configuration.
func claimConfig(c *resourceapi.ResourceClaim, request string) (dra.ClaimConfig, error) {
	var cfg dra.ClaimConfig
	for _, ac := range c.Status.Allocation.Devices.Config {
		op := ac.Opaque
		if op == nil || op.Driver != dra.DriverName {
			continue
		}
		if len(ac.Requests) > 0 && !slices.Contains(ac.Requests, request) && !slices.Contains(ac.Requests, strings.Split(request, "/")[0]) {
			continue
		}
		parsed, err := dra.ParseClaimConfig(op.Parameters.Raw)
		if err != nil {
			return dra.ClaimConfig{}, err
		}
		cfg = parsed
	}
	return cfg, nil
}

// CDIDeviceID is the CDI device of a prepared claim: gpu.salus.dev/claim=<uid>.
func CDIDeviceID(uid string) string { return dra.CDIKind + "=" + uid }

func (d *Driver) cdiPath(uid string) string {
	return filepath.Join(d.cfg.CDIDir, dra.DriverName+"-"+uid+".json")
}

func (d *Driver) statePath(uid string) string {
	return filepath.Join(d.cfg.StateDir, "claim-"+uid+".json")
}

// UnprepareResourceClaims releases each claim with the daemon (ending its
// session) and removes its CDI spec and record. A claim not prepared is no error.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.unprepare(ctx, string(c.UID))
		d.cfg.Metrics.unprepared(out[c.UID])
	}
	return out, nil
}

func (d *Driver) unprepare(ctx context.Context, uid string) error {
	if err := d.cfg.Daemon.Release(ctx, uid); err != nil {
		return fmt.Errorf("gpu.salus.dev: release claim %s with the daemon: %w", uid, err)
	}
	for _, p := range []string{d.cdiPath(uid), d.statePath(uid)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gpu.salus.dev: claim %s: %w", uid, err)
		}
	}
	d.log.Info("claim unprepared", "claim", uid)
	return nil
}

// Resync reserves every claim this node's driver has prepared with the daemon
// again: after the daemon restarted, its reservations (kept in memory) are back.
// With Config.Kube it first reads each claim from the API server, by name: a
// claim that is gone, or was made again under another UID, is an orphan (its
// unprepare was lost, say while the driver was down), and is unprepared here.
// It returns how many claims it asserted.
func (d *Driver) Resync(ctx context.Context) (int, error) {
	files, err := filepath.Glob(filepath.Join(d.cfg.StateDir, "claim-*.json"))
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, f := range files {
		rec, err := d.readRecord(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if gone, err := d.claimGone(ctx, rec); err != nil {
			d.log.Warn("cannot tell whether a prepared claim still exists; it is kept", "claim", rec.UID, "name", rec.Name, "err", err)
		} else if gone {
			if err := d.unprepare(ctx, rec.UID); err != nil {
				errs = append(errs, err)
			} else {
				d.cfg.Metrics.orphan()
				d.log.Info("orphaned claim unprepared: its ResourceClaim is gone", "claim", rec.UID, "name", rec.Name)
			}
			continue
		}
		if rec.AdminAccess {
			continue // the daemon holds nothing for it
		}
		if rec.Secret == "" {
			d.log.Warn("claim prepared by a driver before claim secrets: its container has none, so its job cannot open a session; delete the pod to prepare the claim again", "claim", rec.UID, "name", rec.Name)
		}
		if err := d.cfg.Daemon.Reserve(ctx, rec.UID, rec.Name, rec.GPU, rec.MemoryMiB, rec.Secret, rec.Intent); err != nil {
			errs = append(errs, fmt.Errorf("claim %s (%s): %w", rec.UID, rec.Name, err))
			continue
		}
		n++
	}
	d.cfg.Metrics.claims(len(files))
	return n, errors.Join(errs...)
}

// readRecord reads a prepared claim's record.
func (d *Driver) readRecord(path string) (record, error) {
	var rec record
	raw, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w: remove the file if its claim is gone", path, err)
	}
	return rec, nil
}

// newSecret is a claim's secret: 256 random bits, hex.
func newSecret() string {
	var b [32]byte
	rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// HandleError handles the errors met in the background, publishing the
// slice. When the API server dropped the sharing fields (the
// DRAConsumableCapacity feature is off: every claim would take a whole GPU,
// whatever memory it asks for), the driver falls back to whole GPUs if it was
// asked to (Config.WholeGPUFallback), and otherwise cannot go on (Config.Fatal).
// Dropped device taints (the DRADeviceTaints feature is off) are given up,
// with a warning. Either way the slice then published is what the API server
// stores, so that it is not written again at every resync. Other errors are
// logged: the controller retries.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	var dropped *resourceslice.DroppedFieldsError
	if !errors.As(err, &dropped) {
		d.log.Error(msg, "err", err, "recoverable", errors.Is(err, kubeletplugin.ErrRecoverable))
		return
	}
	disabled := dropped.DisabledFeatures()
	changed := false
	d.mu.Lock()
	if slices.Contains(disabled, "DRADeviceTaints") && !d.noTaints {
		d.noTaints, changed = true, true
		d.log.Warn("the API server drops device taints (feature DRADeviceTaints, generally available from Kubernetes 1.37): GPUs the daemon cannot serve are published untainted")
	}
	if slices.Contains(disabled, "DRAConsumableCapacity") && !d.whole {
		if d.cfg.WholeGPUFallback {
			d.whole, changed = true, true
			d.log.Warn("the API server drops consumable capacity (feature gate DRAConsumableCapacity, on by default from Kubernetes 1.36): publishing whole GPUs, one claim each (--whole-gpu-fallback)")
		} else {
			d.fatal = fmt.Errorf("the API server dropped the sharing fields of the ResourceSlice (allowMultipleAllocations, the memory's request policy): "+
				"the DRAConsumableCapacity feature gate is off, and every claim would take a whole GPU. Turn the gate on "+
				"(on by default from Kubernetes 1.36; alpha in 1.34, --feature-gates=DRAConsumableCapacity=true on the API server, scheduler and kubelet), "+
				"or publish whole GPUs, one claim each, with --whole-gpu-fallback (the chart's wholeGPUFallback: true) (%w)", err)
		}
	}
	fatal := d.fatal
	d.mu.Unlock()
	if fatal != nil {
		d.fatalOnce.Do(func() {
			d.log.Error("the driver cannot go on", "err", fatal)
			if d.cfg.Fatal != nil {
				d.cfg.Fatal(fatal)
			}
		})
		return
	}
	if !changed {
		d.log.Warn(msg, "err", err)
		return
	}
	select {
	case d.republish <- struct{}{}:
	default:
	}
}

// writeAtomically writes data to path through a temporary file and a rename, so
// that the runtime never reads half a spec. The file is 0600: the spec and the
// record hold the claim's secret, and the runtime that reads the spec is root.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
