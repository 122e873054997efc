package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

func init() {
	registerCommand(50, newServeCmd)
	registerCommand(51, newWorkerCmd)
	registerCommand(52, newReplayCmd)
}

// serveFlags configure a daemon, for `salus serve` and for the in-process daemon
// of live replays.
type serveFlags struct {
	policy      string
	device      string
	capacityMiB float64
	grace       time.Duration
	lease       time.Duration
	gpus        string
	placement   string
	// warnings are for the log, once there is one (--device auto's).
	warnings []string
}

func (f *serveFlags) register(cmd *cobra.Command, withPolicy bool) {
	fl := cmd.Flags()
	if withPolicy {
		fl.StringVar(&f.policy, "policy", "pack", "the one scheduling policy of the daemon: "+strings.Join(core.Names(), ", "))
		addPolicyFileFlag(fl)
	}
	addPresetFlag(fl, &f.device, "device preset whose usable memory to schedule (auto: the node's GPU as nvidia-smi names it, one of these)")
	addCapacityFlag(fl, &f.capacityMiB)
	fl.DurationVar(&f.grace, "grace", 5*time.Millisecond, "how long a lane waits for a job's next begin after its iteration ended")
	fl.DurationVar(&f.lease, "lease", 10*time.Second, "a client silent this long while it owes a message loses its session")
	addGPUsFlag(fl, &f.gpus, true, "")
	fl.StringVar(&f.placement, "gpu-placement", core.DefaultGPUPlacement, gpuPlacementHelp())
}

// node returns the GPUs of --gpus, each of dev's memory unless it gives its own,
// and the GPU placement of --gpu-placement.
func (f *serveFlags) node(dev device.Device) ([]server.GPU, core.GPUPlacement, error) {
	gpus, err := parseGPUs(f.gpus, dev.CapacityMiB)
	if err != nil {
		return nil, nil, err
	}
	gp, err := core.LookupGPUPlacement(f.placement)
	if err != nil {
		return nil, nil, fmt.Errorf("--gpu-placement: %v", err)
	}
	return gpus, gp, nil
}

// limitFlags bound what one client can hold of the daemon (server.Config's
// limits), for `salus serve`.
type limitFlags struct {
	maxConns         int
	maxConnsPerUser  int
	reservedConns    int
	handshakeTimeout time.Duration
	readTimeout      time.Duration
	writeTimeout     time.Duration
	maxBodyBytes     int64
}

func (f *limitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.maxConns, "max-conns", server.DefaultMaxConns, "connections served at once on the fast path (all listeners together), and on the HTTP API; beyond it a connection is refused with too_many_connections (negative: no limit)")
	fl.IntVar(&f.maxConnsPerUser, "max-conns-per-user", 0, "connections one user may hold, of the fast path's and of the HTTP API's each: per uid over the Unix sockets, per token over TCP; beyond, refused with too_many_connections (0: a quarter of --max-conns; negative: no limit)")
	fl.IntVar(&f.reservedConns, "reserved-conns", 0, "fast-path slots a new session may not take, kept for the sessions clients resume after a restart (with --events; 0: an eighth of --max-conns; negative: none)")
	fl.DurationVar(&f.handshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "a fast-path connection must open its session, and an HTTP request send its header, within this")
	fl.DurationVar(&f.readTimeout, "read-timeout", server.DefaultReadTimeout, "a frame must arrive whole this long after its first byte, an HTTP request body within this")
	fl.DurationVar(&f.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "a reply not written within this drops the client (its session is lost)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest HTTP request body, as sent and once decompressed")
}

func (f *limitFlags) apply(c *server.Config) error {
	for name, d := range map[string]time.Duration{"--handshake-timeout": f.handshakeTimeout, "--read-timeout": f.readTimeout, "--write-timeout": f.writeTimeout} {
		if d <= 0 {
			return fmt.Errorf("%s %v: give a positive duration", name, d)
		}
	}
	if f.maxConns == 0 {
		return errors.New("--max-conns 0 would refuse every connection: give a positive number (or a negative one for no limit)")
	}
	if f.maxBodyBytes <= 0 {
		return fmt.Errorf("--max-body-bytes %d: give a positive number", f.maxBodyBytes)
	}
	c.MaxConns, c.HandshakeTimeout, c.ReadTimeout, c.WriteTimeout, c.MaxBodyBytes = f.maxConns, f.handshakeTimeout, f.readTimeout, f.writeTimeout, f.maxBodyBytes
	c.MaxConnsPerUser, c.ReservedConns = f.maxConnsPerUser, f.reservedConns
	return nil
}

func (f *serveFlags) capacity() (device.Device, error) {
	var dev device.Device
	var err error
	if strings.EqualFold(f.device, "auto") {
		dev, err = f.detect()
	} else {
		dev, err = device.Preset(f.device)
	}
	if err != nil {
		return dev, err
	}
	if f.capacityMiB < 0 {
		return dev, fmt.Errorf("--capacity-mib %v: give a positive number", f.capacityMiB)
	}
	if f.capacityMiB > 0 {
		dev.CapacityMiB = f.capacityMiB
	}
	return dev, nil
}

// detect is --device auto: the device of the node's GPUs (those --gpus names) as
// nvidia-smi names them, all of one model: its preset (device.Match), or, for a
// GPU no preset matches, its own name and memory at speed 1 (device.Detect),
// with a warning in f.warnings for the log. Never another card.
func (f *serveFlags) detect() (device.Device, error) {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return device.Device{}, fmt.Errorf("--device auto: no nvidia-smi on PATH to name the node's GPU: give its preset with --device (%s)", strings.Join(device.Names(), ", "))
	}
	out, err := exec.Command(smi, device.SMIQuery...).Output()
	if err != nil {
		return device.Device{}, fmt.Errorf("--device auto: %s %s: %v: give the GPU's preset with --device", smi, strings.Join(device.SMIQuery, " "), err)
	}
	listed, err := device.ParseSMI(string(out))
	if err != nil {
		return device.Device{}, fmt.Errorf("--device auto: %w", err)
	}
	want, err := parseGPUs(f.gpus, 1) // their indices
	if err != nil {
		return device.Device{}, err
	}
	var first *device.SMIGPU
	for _, w := range want {
		i := slices.IndexFunc(listed, func(g device.SMIGPU) bool { return g.Index == w.Index })
		if i < 0 {
			return device.Device{}, fmt.Errorf("--device auto: nvidia-smi lists no GPU %d (it lists %d): give --gpus the indices it lists", w.Index, len(listed))
		}
		if g := listed[i]; first == nil {
			first = &g
		} else if g.Name != first.Name {
			return device.Device{}, fmt.Errorf("--device auto: GPU %d is a %s and GPU %d a %s: give --device and each GPU's memory with --gpus (0:16384,1:40960)",
				first.Index, first.Name, g.Index, g.Name)
		}
	}
	dev, warn := device.Detect(first.Name, first.MemoryMiB)
	if warn != nil {
		f.warnings = append(f.warnings, fmt.Sprintf("--device auto: GPU %d: %v; give --device PRESET, or --capacity-mib, to say otherwise", first.Index, warn))
	}
	return dev, nil
}

// catalogModels resolves a model name at open: "resnet50" (its first training
// profile) or a profile key such as "resnet50/50/train".
func catalogModels(cat *workload.Catalog) func(string) (server.Model, bool) {
	return func(name string) (server.Model, bool) {
		for _, p := range cat.Profiles() {
			if p.Key() == name || (p.Model == name && p.Kind == workload.Train) {
				return server.Model{PersistentMiB: p.PersistentMiB, EphemeralMiB: p.EphemeralMiB, IterS: p.IterS, StartupS: p.StartupS,
					Demand: p.Demand}, true
			}
		}
		return server.Model{}, false
	}
}

func newServeCmd() *cobra.Command {
	var (
		sf        serveFlags
		lf        limitFlags
		addr      string
		socket    string
		fastAddr  string
		events    string
		logLevel  string
		logFormat string
		emulate   string
		// interferenceName is --interference: the emulated GPU's co-location model.
		interferenceName string
		acc              socketAccess
		mode             string
		apiSocket        string
		catalogs         []string
		tokenFile        string
		adminFile        string
		idle             time.Duration
		onStop           string
		jf               journalFlags
		mp               = core.DefaultModeParams()
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon that schedules real jobs on the GPUs of a node at iteration granularity",
		Long: `Run the salus daemon. Jobs (salus worker, or the Python client) open a session,
are admitted into a GPU lane, and ask before every iteration; the policy decides who runs.

--device is the preset whose usable memory each GPU has; --device auto asks nvidia-smi
for the name and memory of the GPUs --gpus names (all of one model) and takes the preset
that is that card by model, form and memory. A GPU no preset matches is scheduled by its
own name with 7/8 of its memory usable, and the log warns of it: it is never taken for
another card.

With --gpus the daemon schedules several GPUs of the node, each with its own lanes:
--gpus 4 (GPUs 0 to 3, each of the preset's or --capacity-mib's memory), --gpus 0,1,3
(those CUDA device indices) or --gpus 0:16384,1:40960 (each with its memory, MiB).
--gpu-placement chooses a job's GPU: least-loaded (default: spread the jobs),
first-fit (fill GPU 0 first) or best-fit (pack the fullest GPU first). The open reply
names the job's GPU; the Python client makes it the job's device (CUDA_VISIBLE_DEVICES)
before CUDA starts. A job may ask for several GPUs at once (gpus at open): it gets
them together, as one session, on a lane of its own.

Listens on:
  --socket     the fast path (docs/protocol.md) on a Unix socket
  --fast-addr  the fast path on TCP
  --addr       the connect API (gRPC, gRPC-Web, HTTP/JSON; api/salus/v1/salus.proto) and /metrics

With --emulate DEVICE (a preset: ` + strings.Join(device.Names(), ", ") + `) the daemon
emulates that GPU for workers that have none: it runs the simulator's device model on the
wall clock, so that jobs in concurrent lanes slow each other down by their compute demands
as they would on the device. Each job must then say what one iteration costs (iter_s and
demand at open, or a catalog model); a worker ends each iteration as soon as it begins, and
the daemon answers when the model has done the work (docs/protocol.md). Its memory is the
preset's unless --capacity-mib says otherwise.

Access: the Unix sockets are created --socket-mode (0660: the daemon's user and
--socket-group; a mode that lets others write is warned of) and the daemon logs each
peer's uid; over TCP (--fast-addr, --addr) callers present the token of --token-file
(created 0600 with a random token when absent; refused when its group or others may
read it, or write its directory); the admin calls (salus sessions, evict, drain) need
the token of --admin-token-file, or the daemon's uid or root over --api-socket. A
session recovered after a restart is given back only to the client that presents its
resume token (and over the Unix socket, from its opener's uid); an open naming a
Kubernetes claim must present the claim's secret. A job that holds a lane or memory
without iterating for --idle-timeout gives it back while others wait. One user (a uid
over the Unix sockets, a token over TCP) may hold --max-conns-per-user connections; a
connection without a session gives its slot to a newer one at a limit.

With --events FILE the event log is the daemon's journal: it is appended to, never
truncated, and every event is written as it happens (--events-flush). A daemon restarted
on the same file after a crash continues the run: its clock goes on from the log's last
time, and the sessions open at the end of the log are rebuilt (same arrival, same
attained GPU time) and held for --recover-window, for their clients to reconnect and
resume them; those not resumed are logged lost. An iteration's end is answered only once it
is in the log. While the log cannot be written (a full disk), the daemon grants no work and
refuses new jobs with journal_unavailable, and resumes by itself once it can write again
(--on-journal-error). Past --events-rotate-mib the log is renamed FILE.000001, ... and begun
anew with a snapshot of the open sessions, all a restart reads; salus report reads the
files as one run. A log whose run left no session open holds a run that is over: a daemon
started on it is refused unless --continue-events, which adds its run to the log as a run of
its own (salus report reports each run apart).

Every client is bounded: --max-conns connections at once, --handshake-timeout to open a
session, --read-timeout for a frame once begun, --write-timeout for each reply (a client
that does not read its replies is dropped, and never delays another), and HTTP request
bodies of --max-body-bytes, compressed or not (docs/protocol.md).

SIGTERM or SIGINT stops it cleanly: every client is told, the event log is flushed. With
--events the jobs stay open in the journal (--on-stop restart, the default): a daemon
restarted on it gives them back, and their clients, told "restarting", reconnect and
resume within --recover-window, as after a crash (an upgrade costs no training run).
--on-stop end ends them instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onStop != "restart" && onStop != "end" {
				return fmt.Errorf("--on-stop %q: choose restart (the jobs stay in the journal for the next daemon) or end", onStop)
			}
			if err := jf.check(cmd.Flags(), events); err != nil {
				return err
			}
			if err := checkAdmission(&mp); err != nil {
				return err
			}
			p, err := (&policyFlag{policy: sf.policy}).lookupWith("serve", mp)
			if err != nil {
				return err
			}
			if emulate != "" {
				if cmd.Flags().Changed("device") && !strings.EqualFold(sf.device, emulate) {
					return fmt.Errorf("--device %s and --emulate %s name two GPUs: give --emulate alone (its memory is scheduled)", sf.device, emulate)
				}
				sf.device = emulate
			}
			dev, err := sf.capacity()
			if err != nil {
				return err
			}
			var emulated *device.Device
			if emulate != "" {
				emulated = &dev
				if dev.CoLocation, err = loadInterference(interferenceName); err != nil {
					return err
				}
				if dev.CoLocation != nil {
					dev.CoLocationName = interferenceName
				}
			} else if cmd.Flags().Changed("interference") {
				return fmt.Errorf("--interference is how the emulated GPU (--emulate) runs jobs side by side; a real GPU runs them as it does: drop it or give --emulate")
			}
			gpus, gpuPlacement, err := sf.node(dev)
			if err != nil {
				return err
			}
			logger, err := newLogger(cmd, logLevel, logFormat)
			if err != nil {
				return err
			}
			if acc.mode, err = parseSocketMode(mode); err != nil {
				return err
			}
			if w := socketModeWarning(acc.mode); w != "" {
				logger.Warn(w)
			}
			for _, w := range sf.warnings {
				logger.Warn(w)
			}
			if idle < 0 {
				return fmt.Errorf("--idle-timeout %v: give a duration, or 0 to disable it", idle)
			}
			if idle == 0 {
				idle = -1 // the server's "disabled"; its 0 means the default
			}
			if socket == client.DefaultAddr {
				socket = defaultSocket()
			}
			if tokenFile == "" {
				tokenFile = defaultTokenPath("token", socket)
			}
			if adminFile == "" {
				adminFile = defaultTokenPath("admin-token", socket)
			}
			token, err := loadToken(tokenFile, "--token-file")
			if err != nil {
				return err
			}
			adminToken, err := loadToken(adminFile, "--admin-token-file")
			if err != nil {
				return err
			}
			if token == adminToken {
				return fmt.Errorf("--token-file %s and --admin-token-file %s hold the same token: the admin token must be another", tokenFile, adminFile)
			}
			var sink eventlog.Sink = eventlog.Discard{}
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			cfg := server.Config{Policy: p, Device: dev.Name, CapacityMiB: dev.CapacityMiB, Grace: sf.grace, Lease: sf.lease,
				Models: catalogModels(cat), Logger: logger, Emulate: emulated, GPUs: gpus, GPUPlacement: gpuPlacement}
			if err := lf.apply(&cfg); err != nil {
				return err
			}
			jf.command = commandLine(cmd, nil)
			if events != "" {
				if err := jf.configure(events, &cfg); err != nil {
					return err
				}
			}
			// The listeners first: a start that fails must fail before the
			// journal is read (and its sessions rebuilt, to be lost).
			ls, err := openListeners(addr, socket, fastAddr, listenAccess{socketAccess: acc, apiSocket: apiSocket})
			if err != nil {
				return err
			}
			file, err := jf.open(events, logger, &cfg)
			if err != nil {
				ls.close()
				return err
			}
			if file != nil {
				sink = file
			}
			cfg.Log = sink
			cfg.Token, cfg.TokenFile, cfg.AdminToken, cfg.IdleTimeout = token, tokenFile, adminToken, idle
			srv, err := server.New(cfg)
			if err != nil {
				if file != nil {
					file.Close()
				}
				ls.close()
				return err
			}
			logger.Info("access", "token_file", tokenFile, "admin_token_file", adminFile, "socket_mode", fmt.Sprintf("%04o", acc.mode), "socket_group", acc.group)
			return serve(cmd.Context(), srv, logger, file, ls, onStop)
		},
	}
	sf.register(cmd, true)
	lf.register(cmd)
	addCatalogFlag(cmd, &catalogs)
	addAdmissionFlags(cmd.Flags(), &mp)
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:7070", "TCP address of the connect API and /metrics (empty: off)")
	f.StringVar(&socket, "socket", client.DefaultAddr, "Unix socket of the fast path (empty: off); auto: $XDG_RUNTIME_DIR/salus/salus.sock, /run/salus/salus.sock for root, else $TMPDIR/salus-UID/salus.sock, in a directory only the daemon's user can write (the clients' default too)")
	f.StringVar(&fastAddr, "fast-addr", "127.0.0.1:7071", "TCP address of the fast path (empty: off)")
	f.StringVar(&events, "events", "", "append the event log (JSON Lines) to this file, the daemon's journal: a daemon restarted on it continues the run (see --recover-window)")
	jf.register(cmd)
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&mode, "socket-mode", "0660", "permission bits of the Unix sockets (octal): 0660 lets the daemon's user and --socket-group connect, nobody else")
	f.StringVar(&acc.group, "socket-group", "", "group (name or gid) of the Unix sockets (default: the daemon's primary group)")
	f.StringVar(&apiSocket, "api-socket", "", "also serve the connect API on this Unix socket: no token needed, and the daemon's uid or root are admins (empty: off)")
	f.StringVar(&tokenFile, "token-file", "", "file of the token TCP callers present (created 0600 when absent; default "+fmt.Sprintf(tokenPathHelp, "token")+")")
	f.StringVar(&adminFile, "admin-token-file", "", "file of the admin token (list sessions, evict, drain; created 0600 when absent; default "+fmt.Sprintf(tokenPathHelp, "admin-token")+")")
	f.StringVar(&onStop, "on-stop", "restart", "what SIGTERM or SIGINT does to the jobs: restart (they stay open in the --events journal, and resume with the next daemon started on it within its --recover-window; without --events it is end) or end (they are ended and logged lost)")
	f.DurationVar(&idle, "idle-timeout", 10*time.Minute, "a job that holds a lane without iterating this long gives it back while others wait for it (while jobs wait for admission, for its memory, or with an iteration begun and never ended: it is evicted); 0 disables")
	addInterferenceFlag(f, &interferenceName)
	f.StringVar(&emulate, "emulate", "", "emulate this GPU preset's compute for workers without one ("+strings.Join(device.Names(), ", ")+"): iterations take the simulator's device-model time")
	return cmd
}

func newLogger(cmd *cobra.Command, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// listenAccess says how serve's Unix sockets are made.
type listenAccess struct {
	socketAccess
	apiSocket string // the connect API on a Unix socket too; "": off
}

// daemonListeners are the daemon's listeners. serve opens them all before it
// reads its journal: whatever can fail at a start (a taken port, a held socket
// path, an unknown group, a missing folder, a bad address) fails before the
// journal is touched, so that a failed start leaves it as it was and the next
// good start restores every session.
type daemonListeners struct {
	fast, api []net.Listener
	// sockets are the Unix socket files made, removed at close; each is bound
	// at bound[i] until publish renames it there.
	sockets, bound []string
	published      int
	desc           []any // for the "serving" line of the log
}

// openListeners opens the listeners of --socket, --fast-addr, --addr and
// --api-socket; on an error it closes those it opened.
func openListeners(addr, socket, fastAddr string, acc listenAccess) (ls *daemonListeners, err error) {
	ls = &daemonListeners{desc: []any{"socket", socket, "fast_addr", fastAddr, "addr", addr, "api_socket", acc.apiSocket}}
	defer func() {
		if err != nil {
			ls.close()
			ls = nil
		}
	}()
	if socket != "" {
		l, bound, err := listenUnix(socket, "--socket", acc.socketAccess)
		if err != nil {
			return ls, err
		}
		ls.fast, ls.sockets, ls.bound = append(ls.fast, l), append(ls.sockets, socket), append(ls.bound, bound)
	}
	if fastAddr != "" {
		l, err := net.Listen("tcp", fastAddr)
		if err != nil {
			return ls, fmt.Errorf("--fast-addr: %w", err)
		}
		ls.fast = append(ls.fast, l)
	}
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return ls, fmt.Errorf("--addr: %w", err)
		}
		ls.api = append(ls.api, l)
	}
	if acc.apiSocket != "" {
		l, bound, err := listenUnix(acc.apiSocket, "--api-socket", acc.socketAccess)
		if err != nil {
			return ls, err
		}
		ls.api, ls.sockets, ls.bound = append(ls.api, l), append(ls.sockets, acc.apiSocket), append(ls.bound, bound)
	}
	if len(ls.fast) == 0 && len(ls.api) == 0 {
		return ls, errors.New("nothing to listen on: give --socket, --fast-addr or --addr")
	}
	return ls, nil
}

// close closes the listeners and removes the socket files they made.
func (ls *daemonListeners) close() {
	for _, l := range append(ls.fast, ls.api...) {
		l.Close()
	}
	for i, p := range ls.sockets {
		if i < ls.published {
			os.Remove(p)
		} else {
			os.Remove(ls.bound[i])
		}
	}
}

// publish moves the Unix sockets to their paths: clients find the daemon there
// once it serves.
func (ls *daemonListeners) publish() error {
	for i, p := range ls.sockets {
		if err := os.Rename(ls.bound[i], p); err != nil {
			return fmt.Errorf("cannot move the socket %s to %s: %w", ls.bound[i], p, err)
		}
		ls.published++
	}
	return nil
}

// serve runs the daemon on its listeners until SIGTERM/SIGINT or ctx ends.
//
// A signal stops it as onStop says: "restart" (the default) keeps the jobs for the
// next daemon on the journal (server.Restart; without a journal it is a
// shutdown), "end" ends them (server.Shutdown). A listener that fails while
// serving stops it as a restart too: no job is lost to it. ctx ending is a
// shutdown.
func serve(ctx context.Context, srv *server.Server, logger *slog.Logger, file *eventlog.Appender, ls *daemonListeners, onStop string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	defer ls.close()
	errc := make(chan error, len(ls.fast)+len(ls.api))
	for _, l := range ls.fast {
		go func() { errc <- srv.ServeFast(l) }()
	}
	var hs *http.Server
	if len(ls.api) > 0 {
		hs = srv.NewHTTPServer()
		for _, l := range ls.api {
			go func() {
				if err := hs.Serve(srv.LimitListener(l)); !errors.Is(err, http.ErrServerClosed) {
					errc <- err
				}
			}()
		}
	}
	// The event log needs no flushing here: it writes every event, or flushes
	// itself (--events-flush), and the server retries what it could not write.
	err := ls.publish()
	restart := err != nil // the jobs stay for the next daemon
	if err == nil {
		logger.Info("salus daemon serving", append([]any{"policy", srv.Policy().Name}, ls.desc...)...)
	}
loop:
	for err == nil {
		select {
		case got := <-sig:
			restart = onStop != "end"
			logger.Info("stopping: telling clients", "signal", got.String(), "keep_jobs_for_a_restart", restart)
			break loop
		case <-ctx.Done():
			logger.Info("shutting down: telling clients")
			break loop
		case err = <-errc:
			if err != nil {
				restart = onStop != "end"
				logger.Error("listener failed: stopping", "err", err, "keep_jobs_for_a_restart", restart)
				break loop
			}
		}
	}
	if restart {
		srv.Restart()
	} else {
		srv.Shutdown()
	}
	if hs != nil {
		// Every waiting call was answered by srv.Shutdown: give the responses a
		// moment, then close what is left (clients that do not read).
		sctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
		cancel()
	}
	if file != nil {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("event log: %w", cerr)
		}
	}
	return err
}

// journalFlags configure the daemon's event log as a journal.
type journalFlags struct {
	// lock holds the journal for this daemon (lockJournal) while it runs.
	lock          []*os.File
	recoverWindow time.Duration
	flushEvery    time.Duration
	onError       string
	rotateMiB     int64
	maxRecovered  int
	// continueEvents is --continue-events: a new run may go after the one the
	// log holds.
	continueEvents bool
	// command is the daemon's command line, for its run header.
	command []string
}

// runInfo is the run header's identity of a daemon run: a new run's random id
// (none for a restart, which continues the run before it), the start time, the
// build and the command line.
func runInfo(command []string, restart bool) *eventlog.RunInfo {
	p := provenance.New(command)
	ri := &eventlog.RunInfo{Started: time.Now().UTC().Format(time.RFC3339), Version: p.Version, Commit: p.Commit, Command: command}
	if p.Modified {
		ri.Commit += "+dirty"
	}
	if !restart {
		var id [8]byte
		rand.Read(id[:])
		ri.ID = hex.EncodeToString(id[:])
	}
	return ri
}

func (j *journalFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&j.recoverWindow, "recover-window", 30*time.Second, "with --events: after a restart on the same log, how long the sessions open at its end wait for their clients to resume them (0: lost at once)")
	f.DurationVar(&j.flushEvery, "events-flush", 0, "with --events: 0 writes every event as it happens (a kill -9 loses none); a duration buffers events and writes them that often (a kill -9 loses up to that much)")
	f.StringVar(&j.onError, "on-journal-error", server.JournalStop, "with --events: while the log cannot be written (a full disk): stop (grant no work, refuse opens with journal_unavailable, answer no iteration's end until it is written, resume when it can be) or continue (go on, and write the events once it can; a crash meanwhile loses them)")
	f.Int64Var(&j.rotateMiB, "events-rotate-mib", server.DefaultJournalRotateBytes>>20, "with --events: once the log has grown this many MiB, rename it FILE.000001, ... and begin FILE anew with a snapshot of the open sessions, all a restart then reads (0: never; salus report and metrics read the segments and FILE as one run)")
	f.BoolVar(&j.continueEvents, "continue-events", false, "with --events: when the log already holds a daemon's run with no session open (a restart with open sessions continues its run without it), add this daemon's run to it as a run of its own; without it such a log is refused")
	f.IntVar(&j.maxRecovered, "max-recovered", server.DefaultMaxRecovered, "with --events: a restart restores at most this many of the sessions open in the log (the earliest arrivals); the others are logged lost at once (0: no bound)")
}

// check refuses the journal's flags without --events: there is no journal then.
func (j *journalFlags) check(fs *pflag.FlagSet, events string) error {
	for _, name := range []string{"recover-window", "events-flush", "on-journal-error", "events-rotate-mib", "max-recovered", "continue-events"} {
		if events == "" && changed(fs, name) {
			return fmt.Errorf("--%s applies to the event log (--events FILE), and there is none: drop it or give --events", name)
		}
	}
	return nil
}

// configure checks the journal's flags and sets cfg's, before anything is
// opened: a start refused for a flag touches nothing.
func (j *journalFlags) configure(path string, cfg *server.Config) error {
	if strings.HasSuffix(path, ".gz") {
		return fmt.Errorf("--events %s: the daemon appends to its event log, its journal (a restart continues it), and a gzip file cannot be appended to: give a name without .gz and compress the log once the daemon has stopped", path)
	}
	if j.recoverWindow < 0 || j.flushEvery < 0 {
		return fmt.Errorf("--recover-window %v, --events-flush %v: give durations of 0 or more", j.recoverWindow, j.flushEvery)
	}
	switch j.onError {
	case server.JournalStop, server.JournalContinue:
	default:
		return fmt.Errorf("--on-journal-error %q: use %s (grant no work while the log cannot be written) or %s (go on without it)", j.onError, server.JournalStop, server.JournalContinue)
	}
	if j.rotateMiB < 0 || j.maxRecovered < 0 {
		return fmt.Errorf("--events-rotate-mib %d, --max-recovered %d: give 0 or more (--events-rotate-mib 0: never rotate; --max-recovered 0: no bound)", j.rotateMiB, j.maxRecovered)
	}
	cfg.RecoverWindow, cfg.OnJournalError = j.recoverWindow, j.onError
	cfg.JournalRotateBytes, cfg.MaxRecovered = j.rotateMiB<<20, j.maxRecovered
	if j.rotateMiB == 0 {
		cfg.JournalRotateBytes = -1 // the server's "never"; its 0 means the default
	}
	if j.maxRecovered == 0 {
		cfg.MaxRecovered = -1
	}
	return nil
}

// open opens the event log at path for the daemon (nil when path is empty): it
// appends, and when the file already holds a log, it reads it first so that the
// daemon continues the run (cfg.Recover). A gzip log cannot be appended to, and
// a file that is not an event log is not written to.
func (j *journalFlags) open(path string, logger *slog.Logger, cfg *server.Config) (*eventlog.Appender, error) {
	if path == "" {
		return nil, nil
	}
	if err := j.configure(path, cfg); err != nil {
		return nil, err
	}
	lock, real, err := lockJournal(path)
	if err != nil {
		return nil, err
	}
	j.lock = lock
	if real != path {
		logger.Info("event log: writing the journal at its real path", "events", path, "real", real)
		path = real // a rotation renames the file, never a link to it
	}
	warnReadable(path, logger)
	t0 := time.Now()
	jn, err := server.ReadJournal(path) // a rotated log: from its last snapshot on
	switch {
	case errors.Is(err, eventlog.ErrTruncated):
		logger.Warn("event log: a line was cut off by a crash; it is skipped, and the new events start on a line of their own", "err", err)
	case err != nil:
		return nil, fmt.Errorf("--events %s: it holds something that is not an event log this daemon can continue (%v): move it away or give another file", path, err)
	}
	// A log with sessions open at its end is this daemon's run, cut by a crash
	// or a stop for a restart: it continues, whatever the flags (a restart
	// never loses a session). A log with none holds a run that is over: a new
	// one goes after it only when asked (--continue-events), as a run of its
	// own that salus report tells apart.
	switch open := len(jn.Open()); {
	case jn.Events > 0 && open > 0:
		cfg.Recover = jn
		logger.Info("continuing the run of the event log", "events", path, "log_time_s", jn.LastS,
			"open_sessions", open, "read_files", len(jn.Files), "read_mib", float64(jn.Bytes)/(1<<20),
			"read_in", time.Since(t0).Round(time.Microsecond))
	case jn.Events > 0 && !j.continueEvents:
		return nil, fmt.Errorf("--events %s already holds a daemon's run (%d events, up to %.1f s of its clock) and no session open in it to recover: give a new file, or --continue-events to add this daemon's run to the log as a run of its own (salus report reports each run apart)",
			path, jn.Events, jn.LastS)
	case jn.Events > 0:
		cfg.Recover, cfg.NewRun = jn, true
		logger.Info("beginning a new run in the event log, after the one it holds (--continue-events)", "events", path, "log_time_s", jn.LastS,
			"read_files", len(jn.Files), "read_mib", float64(jn.Bytes)/(1<<20), "read_in", time.Since(t0).Round(time.Microsecond))
	}
	cfg.RunInfo = runInfo(j.command, cfg.Recover != nil && !cfg.NewRun)
	file, err := eventlog.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("--events: %w", err)
	}
	if j.flushEvery == 0 {
		file.SetFlushEach(true)
	} else {
		file.FlushEvery(j.flushEvery)
	}
	return file, nil
}
