// Package server is the salus daemon: it drives the scheduling core (package core)
// with the wall clock and real worker processes.
//
// It turns calls (open a session, begin and end an iteration, close) into core calls
// and the core's decisions into replies: an Admit completes the job's pending open, a
// Start completes its pending begin. It must hold no policy logic of its own; the only
// timing it adds is the grace window after an iteration ends (so a job that asks for
// its next iteration at once competes for the lane at the boundary), the lease
// that declares silent clients lost, and the idle timeout that takes a lane back
// from a job that holds it without iterating (idle.go).
//
// Who may connect, open, drive a session and call the admin operations (evict,
// drain) is decided in access.go and admin.go: Unix-socket permissions and the
// peer's credentials, tokens over TCP, per-session secrets on the connect API.
//
// What an acknowledgement means, and what the daemon does while its journal cannot
// be written (a full disk), is durable.go's: nothing is acknowledged that the
// journal does not hold.
//
// Two transports reach the same Server: the framed fast path of docs/protocol.md
// (fast.go) and the connect API of api/salus/v1 (connect.go). The server writes the
// same event log as the simulator, with engine "live".
//
// With Config.Emulate the daemon also runs the simulator's device model on the wall
// clock, for workers without a GPU (emulate.go): it then holds each iteration's end
// until the model says the iteration's work is done.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
)

// CodeBadRequest is the code CodeOf gives an error that carries none. The
// other codes are the protocol package's.
const CodeBadRequest = protocol.CodeBadRequest

// Error is a failed call: a code of package protocol and a sentence for people.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err, CodeBadRequest for errors that carry none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return protocol.CodeBadRequest
}

// Model is what the daemon knows of a named workload profile, to fill in what a
// client did not declare.
type Model struct {
	PersistentMiB float64
	EphemeralMiB  float64
	// IterS is one iteration's standalone time on the P100 the catalog was
	// measured on; an emulating daemon divides it by its device's speed.
	IterS    float64
	StartupS float64
	// Demand is the share of the GPU's compute one iteration keeps busy alone.
	Demand float64
}

// GPU is one GPU of the daemon's node.
type GPU struct {
	// Index is the GPU's physical index, as CUDA numbers it (what a client sets
	// CUDA_VISIBLE_DEVICES to). Each GPU of a node has its own.
	Index int
	// CapacityMiB is its usable memory; 0: Config.CapacityMiB.
	CapacityMiB float64
}

// MaxGPUs bounds the GPUs of one daemon's node.
const MaxGPUs = 1024

// Config sets up a Server.
type Config struct {
	Policy core.Policy
	// Device names the GPU model the daemon schedules for (salus serve --device):
	// the DRA driver publishes it.
	Device string
	// CapacityMiB is the usable memory of each GPU that does not give its own.
	CapacityMiB float64
	// GPUs are the GPUs of the node the daemon schedules, each with its own lanes;
	// empty: one GPU, index 0, of CapacityMiB. Which GPU a job goes to is the
	// core's GPU placement's choice (GPUPlacement).
	GPUs []GPU
	// GPUPlacement orders the GPUs for a job; nil: core.LeastLoaded.
	GPUPlacement core.GPUPlacement
	// Grace is how long the lane stays with a job after its iteration ended, waiting
	// for its next begin, before it is yielded to the others. Default 5 ms.
	Grace time.Duration
	// Lease is how long a client may stay silent while it owes the daemon a
	// message before its session is lost. Default 10 s.
	Lease time.Duration
	// Log receives the event log; nil discards it.
	Log eventlog.Sink
	// Models resolves a model name given at open; nil knows no models.
	Models func(name string) (Model, bool)
	// Logger for structured logs; nil uses slog.Default().
	Logger *slog.Logger
	// Trace names the trace in the log header, when there is one.
	Trace string
	// MinJobMiB is the least memory a job is accounted, persistent and ephemeral
	// each: a job that declares less (0, say) is given this much. Without a floor,
	// jobs of no memory would each get a lane of 0 MiB under pack, and lanes (and
	// their /metrics series) would grow without bound. Default 1 MiB.
	MinJobMiB float64
	// Recover, when set, is the run this daemon takes over, read from its event
	// log (ReadJournal) by a daemon restarted on the same log: the daemon's clock
	// continues from the log's last time, and the sessions open at the end of the
	// log are rebuilt and held for RecoverWindow, for their clients to resume
	// (journal.go). The server takes it over: it follows the run from it.
	Recover *Journal
	// NewRun, with Recover, begins a new run in the log after the one it holds
	// (its clock goes on from the log's last time) instead of continuing that
	// run: for a log that holds no open session (New refuses one that does: a
	// new run would lose them).
	NewRun bool
	// RunInfo, when set, goes on the run header: the run's identity, the
	// daemon's build and command line (eventlog.RunInfo).
	RunInfo *eventlog.RunInfo
	// RecoverWindow is how long recovered sessions wait for their clients to
	// resume them. Positive only for a daemon whose log is a journal (a file it
	// appends to): the open reply then says it (recover_ms), and clients whose
	// connection drops reconnect for that long. Default 0: sessions cannot be
	// resumed, and Recover's are lost at once.
	RecoverWindow time.Duration
	// Emulate, when set, is the device the daemon emulates for workers without a
	// GPU: it runs the simulator's device model (sim.GPU) on the wall clock and
	// holds each iteration's end until the model says its work is done (see
	// emulate.go). Every session then needs its iterations' standalone time and
	// compute demand, from OpenRequest or from a catalog model.
	Emulate *device.Device
	// Token, when set, is what callers must present over TCP: in the fast path's
	// open and as "Authorization: Bearer" on the connect API. Over a Unix socket
	// the socket's permissions are the check. Empty: no token is checked (an
	// embedder that listens only on a private socket); salus serve always sets one.
	Token string
	// TokenFile names where the token is kept, for the sentence that tells a
	// refused caller where to find it.
	TokenFile string
	// AdminToken grants the admin calls (ListSessions, EvictSession, Drain) on the
	// connect API; over a Unix socket the daemon's own uid and root are admins
	// without it. Empty: only they are.
	AdminToken string
	// IdleTimeout is how long a job may hold a lane without an iteration before
	// the daemon takes it back (idle.go). Default 10 min; negative disables it.
	IdleTimeout time.Duration

	// Limits that keep one client from holding the daemon's resources (see
	// transport.go and docs/protocol.md).

	// MaxConns bounds the fast-path connections open at once, over all
	// listeners, and separately the HTTP API's (LimitListener); a connection
	// beyond it is told too_many_connections and closed. Default 4096; negative:
	// no limit.
	MaxConns int
	// MaxConnsPerUser bounds the connections one user may hold, of the fast
	// path's and of the HTTP API's each: per uid over a Unix socket, per token
	// over TCP (conns.go). Default a quarter of MaxConns; negative: no limit.
	MaxConnsPerUser int
	// ReservedConns are fast-path slots a new session may not take: kept for
	// the sessions clients resume after a restart (only with RecoverWindow).
	// Default an eighth of MaxConns; negative: none.
	ReservedConns int
	// HandshakeTimeout is how long a fast-path connection may take to open its
	// session, and an HTTP request to send its header. Default 10 s.
	HandshakeTimeout time.Duration
	// ReadTimeout is how long a frame may take to arrive once its first byte came,
	// and an HTTP request its body. Default 10 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds every write to a client; a fast-path client whose
	// replies cannot be written within it is dropped (its session lost). Default
	// 10 s.
	WriteTimeout time.Duration
	// ReplyQueue bounds the bytes of replies waiting to be written to one
	// fast-path client; a client that lets it fill is dropped. Default 64 KiB.
	ReplyQueue int
	// MaxBodyBytes bounds an HTTP request's body, as sent and, for the connect
	// API, each message once decompressed. Default 1 MiB.
	MaxBodyBytes int64

	// Durability of the journal (durable.go), for a Log that says whether it
	// wrote (eventlog.Appender).

	// OnJournalError is what the daemon does while its journal cannot be
	// written: JournalStop (the default: grant no work, refuse opens with code
	// journal_unavailable, answer no iteration's end until its event is written,
	// and resume once it is) or JournalContinue (go on, and write the events
	// later).
	OnJournalError string
	// JournalRotateBytes: once the journal file has grown this much since it
	// began, it is rotated into a new one beginning with a snapshot of the open
	// sessions, which is all a restart then reads. Default
	// DefaultJournalRotateBytes; negative: never.
	JournalRotateBytes int64
	// MaxRecovered bounds the sessions a restart restores from its journal (the
	// earliest arrivals); the others are logged lost at once. Default
	// DefaultMaxRecovered; negative: no bound.
	MaxRecovered int
}

// OpenRequest is a job asking to be scheduled.
type OpenRequest struct {
	Job           string
	Model         string
	PersistentMiB float64
	EphemeralMiB  float64
	DeclaredS     float64
	Priority      int
	Kind          string
	Iterations    int
	StartupS      float64
	// IterS and Demand are, for an emulating daemon, one iteration's standalone
	// time on the emulated device (seconds) and the share of the GPU it keeps busy
	// alone; 0: take them from the catalog model.
	IterS  float64
	Demand float64
	// Peer is the opener's process, when it came over a Unix socket: logged, and
	// shown by ListSessions. nil otherwise.
	Peer *Peer
	// Resume asks for the session of this job that a restarted daemon recovered
	// from its log, instead of a new one.
	Resume bool
	// Batch is the job's batch size, when the client gave it: logged, and with a
	// catalog model it picks the profile of that batch.
	Batch int
	// GPUs is how many GPUs the job needs at once (a gang); 0 or 1 is one. More
	// than the node has is refused.
	GPUs int
	// Claim is the Kubernetes claim (UID) the job runs under, reserved by the DRA
	// driver (claims.go): the job goes to the claim's GPU, within its memory.
	Claim string
	// ResumeToken is, with Resume, the session's resume token (access.go): only
	// its opener may take a recovered session back. Without Resume, the token
	// the client chose for its session (then returned in the reply), so that it
	// can resume even if the daemon died before answering; "": the daemon makes
	// one.
	ResumeToken string
	// ClaimSecret is, with Claim, the claim's secret (claims.go): only the pod
	// the claim was prepared for may open under it.
	ClaimSecret string
	// Share is the job's scheduling weight under wfair and floor (core.Job.Share);
	// 0 is 1. Under a claim the claim's share binds.
	Share float64
}

// OpenReply says where the job was admitted.
type OpenReply struct {
	Session      string
	Lane         int
	LaneMiB      float64
	StartupOnGPU bool
	LeaseMS      int64
	Policy       string
	// Emulated says the daemon emulates the GPU: the client must not spend the
	// iteration's time itself, but send end as soon as its begin is granted.
	Emulated bool
	// Secret is what the connect API's later calls on this session must present
	// (empty on the fast path, where the connection is the owner).
	Secret string
	// Resumed says the open took back a session recovered after a restart.
	Resumed bool
	// RecoverMS is the daemon's recover window: after a restart it holds
	// sessions this long for their clients to resume. 0: it cannot recover.
	RecoverMS int64
	// GPUs are the physical indices of the GPUs the job was given: one, or every
	// GPU of a gang.
	GPUs []int
	// ResumeToken is what an open with resume of this session must present
	// after a restart (access.go); only a fresh open's reply has it.
	ResumeToken string
}

// BeginReply says the job may run its iteration.
type BeginReply struct {
	Lane   int
	WaitUS int64
	// ReleaseCache asks the client to return its framework's cached device memory at
	// the end of this iteration: jobs are waiting for memory to be admitted.
	ReleaseCache bool
	// IdleYielded says the job sat idle past the idle timeout holding its lane,
	// which was given to the others meanwhile (idle.go).
	IdleYielded bool
}

type phase int

const (
	pWaiting phase = iota // waiting for admission
	pIdle                 // admitted, not asking
	pReady                // asked to begin, waiting for the grant
	pRunning              // iteration runs
	pHolding              // iteration ended, within the grace window
	pGone                 // closed or lost
)

var phaseNames = [...]string{"waiting", "idle", "ready", "running", "holding", "gone"}

// Session is one job's connection to the daemon. Its fields are guarded by the
// server's mutex except lastSeen.
type Session struct {
	id        string
	job       core.Job
	model     string
	batch     int // the open's batch size, for the co-location model (modelJob)
	kind      string
	transport string

	phase        phase
	lane         int
	laneMiB      float64
	gpus         []int // the node's GPUs (core indices) of its lane, from admission on
	pendingOpen  func(OpenReply, error)
	pendingBegin func(BeginReply, error)
	asked        time.Time     // when begin was asked
	requestedAt  time.Duration // when begin was asked, on the core's clock: an inference request's latency runs from there
	granted      time.Time     // when the running iteration was granted
	gen          uint64        // counts iteration ends; stale grace timers check it
	grace        *time.Timer
	owes         bool // the client owes a message: the lease applies
	lastSeen     atomic.Int64
	drop         func(code, msg string) // transport hook: close the client's connection

	// Access: the opener's process (Unix sockets), the connect API's session
	// secret; when the session entered its idle or holding phase, and whether the
	// idle timeout took its lane since its last grant (idle.go).
	peer        *Peer
	secret      string
	since       time.Time
	idleYielded bool
	// unclaimed: a session recovered after a restart that no client has resumed
	// yet; resumed: one that a client resumed.
	unclaimed, resumed bool
	// Who may resume it after a restart (access.go): the resume token its open
	// reply gives (kept only until then; the journal has its hash) and the
	// token's SHA-256; ownerUID, the opener's uid as the journal recorded it
	// (nil: not recorded, or the opener came over TCP).
	resumeToken, resumeHash string
	ownerUID                *uint32

	// startedAt is when the running iteration was granted, on the core's clock:
	// its GPU time is measured from there.
	startedAt time.Duration

	// Emulation: the standalone work of one iteration and its compute demand; the
	// running iteration's work is done (at doneAt, the model's instant); the
	// client's end, held until it is.
	emulated bool
	work     time.Duration
	demand   float64
	parts    int // the running iteration's parts not done yet: one per GPU of its lane
	workDone bool
	doneAt   time.Duration
	held     *heldEnd

	// ended counts the iterations that ended in this session (measured.go).
	ended int
	// claim is the Kubernetes claim the session runs under (claims.go); "" none.
	// claimHash is the hash of the secret a resumed session presented for a
	// claim not reserved yet, checked when the claim is.
	claim, claimHash string
	// unacked is the session's end, processed and waiting for its event to be
	// written to the journal before it is answered (durable.go).
	unacked *heldEnd
	// unwritten are the replies to decisions (a grant, an admission) whose
	// events the journal could not write yet: answered once it has (durable.go).
	unwritten []heldReply
}

// ID returns the session id (the job name).
func (ss *Session) ID() string { return ss.id }

func (ss *Session) touch() { ss.lastSeen.Store(time.Now().UnixNano()) }

// Server is the daemon's scheduling state: one core.Scheduler behind one mutex.
type Server struct {
	cfg    Config
	log    eventlog.Sink // jr
	jr     *journal
	logger *slog.Logger
	start  time.Time
	met    *metrics
	// offset is the time of the log's last event when the daemon took over a
	// run (Config.Recover): its clock continues from there.
	offset       time.Duration
	recoverTimer *time.Timer
	// starveTimer fires when the core must decide with no event: a waiting job
	// starts starving (core.Scheduler.NextDeadline).
	starveTimer *time.Timer

	// gpus are the node's GPUs, by the core's index.
	gpus []GPU

	mu       sync.Mutex
	sched    *core.Scheduler
	emu      *emulator // nil: no emulation
	sessions map[string]*Session
	claims   map[string]*claim // by UID (claims.go)
	closing  bool
	// keepSessions is set by Restart: a session whose connection closes from
	// then on stays open in the journal, for the next daemon (Lose).
	keepSessions bool
	draining     bool
	stats        struct{ iterations, finished, lost, switches int64 }
	// decisions counts the core's decision passes (decide).
	decisions int64

	tr         tracker
	stopReaper chan struct{}
	reaperDone chan struct{}
	idlerDone  chan struct{}
}

// New starts a Server; call Shutdown to stop it.
func New(cfg Config) (*Server, error) {
	if cfg.Policy.Placement == nil || cfg.Policy.Order == nil {
		return nil, errors.New("server: no policy given: pass one from core.Lookup")
	}
	if cfg.Policy.Migrate {
		// A worker's process sees the GPU it was started on (CUDA_VISIBLE_DEVICES)
		// for its life: the daemon cannot move its memory to another.
		return nil, errors.New("server: migration (--migrate) is carried out by the simulator only: a worker keeps the GPU it started on; drop --migrate to serve")
	}
	gpus, err := nodeGPUs(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.CapacityMiB == 0 {
		cfg.CapacityMiB = gpus[0].CapacityMiB
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Millisecond
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if !(cfg.MinJobMiB > 0) || cfg.MinJobMiB > MaxMiB {
		cfg.MinJobMiB = 1
	}
	if cfg.Log == nil {
		cfg.Log = eventlog.Discard{}
	}
	switch cfg.OnJournalError {
	case "":
		cfg.OnJournalError = JournalStop
	case JournalStop, JournalContinue:
	default:
		return nil, fmt.Errorf("server: OnJournalError %q: use %q (grant no work while the journal cannot be written) or %q (go on without it)", cfg.OnJournalError, JournalStop, JournalContinue)
	}
	if cfg.JournalRotateBytes == 0 {
		cfg.JournalRotateBytes = DefaultJournalRotateBytes
	}
	if cfg.MaxRecovered == 0 {
		cfg.MaxRecovered = DefaultMaxRecovered
	}
	cfg.setLimits()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	caps := make([]float64, len(gpus))
	for i, g := range gpus {
		caps[i] = g.CapacityMiB
	}
	sched, err := core.NewNode(cfg.Policy, core.Devices{Capacities: caps, Placement: cfg.GPUPlacement})
	if err != nil {
		return nil, fmt.Errorf("server: %v", err)
	}
	s := &Server{
		cfg: cfg, logger: cfg.Logger, start: time.Now(), gpus: gpus,
		sched:      sched,
		sessions:   map[string]*Session{},
		claims:     map[string]*claim{},
		stopReaper: make(chan struct{}),
		reaperDone: make(chan struct{}),
		idlerDone:  make(chan struct{}),
	}
	s.jr = newJournal(s, cfg)
	s.log = s.jr
	s.met = newMetrics(s)
	s.registerAdminMetrics()
	s.registerConnMetrics() // conns.go's
	s.registerJournalMetrics()
	run := eventlog.Event{Kind: eventlog.Run, Policy: cfg.Policy.Name, Mode: cfg.Policy.Mode, Engine: "live",
		Trace: cfg.Trace, CapacityMiB: cfg.CapacityMiB, RunInfo: cfg.RunInfo}
	if len(gpus) > 1 {
		run.GPUs = len(gpus)
		run.GPUPlacement = s.sched.GPUPlacement().Name()
	}
	if cfg.Recover != nil {
		last, err := core.Seconds(max(cfg.Recover.LastS, 0))
		if err != nil {
			return nil, fmt.Errorf("server: the event log to recover from ends at %v: %v", cfg.Recover.LastS, err)
		}
		s.offset = last
		run.T = last.Seconds()
		if !cfg.NewRun {
			run.Reason = eventlog.RestartReason
		} else if n := len(cfg.Recover.open); n > 0 {
			return nil, fmt.Errorf("server: a new run on a log that holds %d open sessions would lose them: continue the log's run (a restart) instead", n)
		}
	}
	if cfg.Emulate != nil {
		s.emu = newEmulator(cfg.Policy.Compute, *cfg.Emulate, len(gpus), s.emuFire)
		run.Device = cfg.Emulate.Name
		s.logger.Info("emulating a GPU: clients send end at once, the daemon holds it until the device model says the iteration's work is done",
			"device", describeEmulation(*cfg.Emulate), "mode", cfg.Policy.Mode)
	}
	if s.emu != nil {
		s.emu.at = s.offset
	}
	s.log.Emit(run)
	if cfg.Recover != nil {
		s.recover(cfg.Recover, s.offset)
	}
	s.mu.Lock()
	s.jr.start()
	s.mu.Unlock()
	if len(gpus) > 1 {
		s.logger.Info("scheduling the GPUs of a node: every GPU has its own lanes", "gpus", describeGPUs(gpus),
			"gpu_placement", sched.GPUPlacement().Name())
	}
	go s.reaper()
	go s.idler()
	return s, nil
}

// nodeGPUs checks and completes the GPUs of cfg: one of CapacityMiB when none
// are given.
func nodeGPUs(cfg Config) ([]GPU, error) {
	gpus := slices.Clone(cfg.GPUs)
	if len(gpus) == 0 {
		gpus = []GPU{{Index: 0}}
	}
	if len(gpus) > MaxGPUs {
		return nil, fmt.Errorf("server: %d GPUs: a daemon schedules at most %d", len(gpus), MaxGPUs)
	}
	seen := map[int]bool{}
	for i := range gpus {
		g := &gpus[i]
		if g.Index < 0 || g.Index >= MaxGPUs {
			return nil, fmt.Errorf("server: GPU index %d: give a device index between 0 and %d", g.Index, MaxGPUs-1)
		}
		if seen[g.Index] {
			return nil, fmt.Errorf("server: GPU %d is given twice: list each GPU once", g.Index)
		}
		seen[g.Index] = true
		if g.CapacityMiB == 0 {
			g.CapacityMiB = cfg.CapacityMiB
		}
		if !(g.CapacityMiB > 0) || math.IsInf(g.CapacityMiB, 0) || g.CapacityMiB > MaxMiB {
			return nil, fmt.Errorf("server: GPU %d: device memory %v MiB: give a positive number of MiB, at most %d", g.Index, g.CapacityMiB, MaxMiB)
		}
	}
	return gpus, nil
}

// describeGPUs is the GPUs for logs: "0 (16384 MiB), 1 (40960 MiB)".
func describeGPUs(gpus []GPU) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("%d (%g MiB)", g.Index, g.CapacityMiB)
	}
	return strings.Join(parts, ", ")
}

// physical returns the physical indices of the node's GPUs gpus (core indices).
func (s *Server) physical(gpus []int) []int {
	if len(gpus) == 0 {
		return nil
	}
	out := make([]int, len(gpus))
	for i, g := range gpus {
		out[i] = s.gpus[g].Index
	}
	return out
}

// GPUs returns the node's GPUs, by the core's index (the event log's "gpu").
func (s *Server) GPUs() []GPU { return slices.Clone(s.gpus) }

// Policy returns the policy in force.
func (s *Server) Policy() core.Policy { return s.cfg.Policy }

// Lease returns the lease duration.
func (s *Server) Lease() time.Duration { return s.cfg.Lease }

// now is the core's clock: the time since the daemon started, on the monotonic
// clock, after the run it took over, if any. Called under s.mu, so successive
// values never go backwards.
func (s *Server) now() time.Duration { return s.offset + time.Since(s.start) }

// decide asks the core what to do now that an event has been applied, and carries
// it out. The wall clock makes every event its own instant. Under emulation the
// device model's timer is then set for its next end (the decisions may have
// started iterations).
func (s *Server) decide(now time.Duration, out *[]func()) {
	if s.jr.paused() { // fail closed: nothing is granted until the journal is written (durable.go)
		if s.emu != nil && !s.closing {
			s.arm()
		}
		s.armDeadline()
		return
	}
	s.decisions++
	ds, err := s.sched.Decide(now)
	if err != nil {
		s.logger.Error("core refused to decide", "err", err)
		return
	}
	s.apply(now, ds, out)
	if s.emu != nil && !s.closing {
		s.arm()
	}
	s.armDeadline()
}

// armDeadline sets starveTimer for the next instant the core must decide at
// with no event (a waiting job starts starving), or stops it.
func (s *Server) armDeadline() {
	if s.closing {
		return
	}
	at, ok := s.sched.NextDeadline()
	if !ok {
		if s.starveTimer != nil {
			s.starveTimer.Stop()
		}
		return
	}
	d := max(at-s.now(), 0)
	if s.starveTimer == nil {
		s.starveTimer = time.AfterFunc(d, s.deadlineFire)
		return
	}
	s.starveTimer.Reset(d)
}

// deadlineFire is starveTimer's function: the core decides at that instant.
func (s *Server) deadlineFire() {
	var out []func()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	now := s.clock(&out)
	s.decide(now, &out)
	s.unlockRun(out)
}

// Open registers a job. done is called once, outside the server's lock, when the job
// is admitted (possibly before Open returns) or when the session ends before that.
// A rejected request returns an error and done is never called.
func (s *Server) Open(req OpenRequest, transport string, drop func(code, msg string), done func(OpenReply, error)) (*Session, error) {
	if req.Job == "" {
		return nil, errorf(protocol.CodeBadRequest, "open: field job is empty: give the job a unique name")
	}
	if err := checkNames(req); err != nil {
		return nil, err
	}
	if err := checkStrings(req); err != nil {
		return nil, err
	}
	if err := checkOpen(req); err != nil {
		return nil, err
	}
	if req.GPUs > len(s.gpus) {
		return nil, errorf(protocol.CodeRejected, "open %q: the job needs %d GPUs at once and this daemon has %d (salus serve --gpus): ask for at most %d, or use a daemon with more GPUs", req.Job, req.GPUs, len(s.gpus), len(s.gpus))
	}
	declaredFrom := "client"
	if req.DeclaredS == 0 {
		declaredFrom = "none"
	}
	m, known := Model{}, false
	if req.Model != "" && s.cfg.Models != nil {
		m, known = s.lookupModel(&req)
	}
	// A model with declared memory is only a label; without, it names the profile.
	if req.Model != "" && req.PersistentMiB == 0 && req.EphemeralMiB == 0 {
		if !known && req.Batch > 0 && !strings.Contains(req.Model, "/") {
			return nil, errorf(protocol.CodeRejected, "open %q: model %q has no %s profile at batch size %d in the daemon's catalog: salus models lists the batch sizes it has; name one of them, or declare persistent_mib and ephemeral_mib (and iter_s)", req.Job, req.Model, modelKind(req.Kind), req.Batch)
		}
		if !known {
			return nil, errorf(protocol.CodeRejected, "open %q: unknown model %q: give a catalog model (salus models lists them) or declare persistent_mib and ephemeral_mib", req.Job, req.Model)
		}
		req.PersistentMiB, req.EphemeralMiB = m.PersistentMiB, m.EphemeralMiB
		if req.StartupS == 0 {
			req.StartupS = m.StartupS
		}
		if req.DeclaredS == 0 && req.Iterations > 0 {
			req.DeclaredS = float64(req.Iterations) * m.IterS
			declaredFrom = "catalog: iterations x the model's iteration time"
		}
	}
	req.PersistentMiB = max(req.PersistentMiB, s.cfg.MinJobMiB)
	req.EphemeralMiB = max(req.EphemeralMiB, s.cfg.MinJobMiB)
	// What the catalog filled in is checked too: iterations x the model's time
	// may pass core.MaxSeconds.
	declared, err := checkSeconds("open", req.Job, "declared_s", req.DeclaredS)
	if err != nil {
		return nil, err
	}
	// A missing declared time is never taken as zero: under a policy that orders by
	// it, that job would run ahead of every real short job.
	// A claim's session is checked once its claim's intent is known.
	if declared == 0 && s.cfg.Policy.UsesDeclared && req.Claim == "" {
		return nil, noDeclared(req, s.cfg.Policy.Name)
	}
	switch req.Kind {
	case "":
		req.Kind = "train"
	case "train", "infer", "training", "inference":
	default:
		return nil, errorf(protocol.CodeBadRequest, "open %q: kind %q: use train or infer", req.Job, req.Kind)
	}

	ss := &Session{id: req.Job, model: req.Model, batch: req.Batch, kind: req.Kind, transport: transport, lane: -1, drop: drop, pendingOpen: done, peer: req.Peer}
	if transport == "connect" {
		ss.secret = newSecret()
	}
	if !req.Resume { // access.go: the client's resume token, or one made here
		if ss.resumeToken, err = resumeToken(req); err != nil {
			return nil, err
		}
		ss.resumeHash = hashSecret(ss.resumeToken)
	}
	workFrom := ""
	if s.emu != nil {
		var err error
		if ss.work, ss.demand, workFrom, err = s.emu.emulatedWork(req, m, known); err != nil {
			return nil, err
		}
		ss.emulated = true
	}
	ss.touch()
	var out []func()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, s.stopping("open %q", req.Job)
	}
	if s.jr.paused() && !req.Resume { // a recovered job may come back: it is no new work
		s.mu.Unlock()
		return nil, errorf(protocol.CodeJournal, "open %q: %s", req.Job, s.jr.refusal())
	}
	if s.draining && !req.Resume { // a recovered job may still come back
		s.mu.Unlock()
		return nil, errorf(protocol.CodeDraining, "open %q: the daemon is draining (an operator ran salus drain): it admits no new job; try another daemon, or later", req.Job)
	}
	if old, dup := s.sessions[req.Job]; dup {
		switch {
		case req.Resume && old.unclaimed:
			if err := s.mayResume(old, req); err != nil { // access.go, claims.go
				s.mu.Unlock()
				s.logDenied(req, err)
				return nil, err
			}
			s.resume(old, ss, &out)
			s.linkClaim(old, req.Claim, req.ClaimSecret)
			s.unlockRun(out)
			s.logger.Info("session resumed after restart", append([]any{"job", req.Job, "transport", transport,
				"arrival_s", old.job.Arrival.Seconds(), "admitted", old.phase != pWaiting}, req.Peer.logAttrs()...)...)
			return old, nil
		case old.unclaimed:
			s.mu.Unlock()
			return nil, errorf(protocol.CodeRejected, "open: job %q is a session the daemon recovered after a restart: open it with resume to take it back", req.Job)
		}
		s.mu.Unlock()
		return nil, errorf(protocol.CodeRejected, "open: job %q already has a session: give each job a unique name", req.Job)
	}
	if req.Resume {
		s.mu.Unlock()
		return nil, errorf(protocol.CodeLost, "open %q with resume: the daemon has no session of this job to resume (it did not restart on a log that had it open, or its recover window passed): open it anew, without resume", req.Job)
	}
	c, err := s.claimFor(req)
	if err != nil {
		s.mu.Unlock()
		s.logDenied(req, err)
		return nil, err
	}
	var pinned []int
	var laneCap float64
	priorityFrom, share := "client", req.Share
	if c != nil {
		// The claim's intent binds the session, whatever its client sent.
		pinned, laneCap, share = []int{c.gpu}, c.mib, c.share
		if c.intent.DeclaredS > 0 {
			req.DeclaredS, declared, declaredFrom = c.intent.DeclaredS, core.MustSeconds(c.intent.DeclaredS), "claim"
		}
		if c.intent.Priority != nil {
			req.Priority, priorityFrom = *c.intent.Priority, "claim"
		}
		if declared == 0 && s.cfg.Policy.UsesDeclared {
			s.mu.Unlock()
			return nil, noDeclared(req, s.cfg.Policy.Name)
		}
	}
	now := s.clock(&out)
	ss.job = core.Job{ID: req.Job, Arrival: now, Persistent: req.PersistentMiB, Ephemeral: req.EphemeralMiB, Declared: declared, Priority: req.Priority,
		GPUs: req.GPUs, Pinned: pinned, LaneCap: laneCap, Share: share, Model: req.Model, Batch: req.Batch}
	if err := s.sched.Arrive(now, ss.job); err != nil {
		s.unlockRun(out) // what catching up the emulated device produced still goes out
		return nil, errorf(protocol.CodeRejected, "open: %v", err)
	}
	s.sessions[req.Job] = ss
	if req.Claim != "" {
		ss.claim = req.Claim
		s.claims[req.Claim].session = req.Job
	}
	s.log.Emit(eventlog.Event{T: now.Seconds(), Kind: eventlog.Arrive, Job: req.Job, Model: req.Model, JobKind: req.Kind, Priority: req.Priority,
		Iterations: req.Iterations, StartupS: req.StartupS, DeclaredS: req.DeclaredS, AloneS: ss.aloneS(req),
		PersistentMiB: req.PersistentMiB, EphemeralMiB: req.EphemeralMiB, Batch: req.Batch, GPUs: gangSize(req.GPUs),
		ResumeSHA256: ss.resumeHash, OwnerUID: uidOf(ss.peer), IterS: ss.work.Seconds(), Demand: ss.demand, Share: share})
	s.decide(now, &out)
	s.mu.Unlock()
	attrs := []any{"job", req.Job, "model", req.Model, "persistent_mib", req.PersistentMiB,
		"ephemeral_mib", req.EphemeralMiB, "declared_s", req.DeclaredS, "declared_from", declaredFrom,
		"priority", req.Priority, "priority_from", priorityFrom, "transport", transport}
	if share != 0 {
		attrs = append(attrs, "share", share)
	}
	if c != nil {
		attrs = append(attrs, "claim", c.uid)
	}
	attrs = append(attrs, ss.peer.logAttrs()...)
	if req.GPUs > 1 {
		attrs = append(attrs, "gpus", req.GPUs)
	}
	if ss.emulated {
		attrs = append(attrs, "emulated_iter_s", ss.work.Seconds(), "demand", ss.demand, "emulated_from", workFrom)
	}
	s.logger.Info("session opened", attrs...)
	run(out)
	return ss, nil
}

// noDeclared refuses a job that declares no GPU time under a policy that orders
// by it.
func noDeclared(req OpenRequest, policy string) error {
	return errorf(protocol.CodeRejected, "open %q: policy %s orders jobs by their declared GPU time, and this job declared none: send declared_s (seconds of GPU time, start-up excluded), or iterations with a catalog model to estimate it from", req.Job, policy)
}

// Begin asks for the session's next iteration. done is called once, outside the
// lock, when the iteration is granted or the session ends first.
func (s *Server) Begin(ss *Session, done func(BeginReply, error)) error {
	var out []func()
	s.mu.Lock()
	if err := s.usable(ss); err != nil {
		s.mu.Unlock()
		return err
	}
	now := s.clock(&out)
	switch ss.phase {
	case pWaiting:
		s.unlockRun(out)
		return errorf(protocol.CodeWrongPhase, "begin %q: the job is not admitted yet: wait for the open reply", ss.id)
	case pReady:
		s.unlockRun(out)
		return errorf(protocol.CodeBusy, "begin %q: a begin is already waiting for its grant", ss.id)
	case pRunning:
		s.unlockRun(out)
		return errorf(protocol.CodeWrongPhase, "begin %q: an iteration is running: end it before beginning another", ss.id)
	}
	if err := s.request(ss, now, done); err != nil {
		s.unlockRun(out)
		return err
	}
	s.decide(now, &out)
	s.unlockRun(out)
	return nil
}

// unlockRun releases the lock, then sends the replies queued under it.
func (s *Server) unlockRun(out []func()) {
	s.mu.Unlock()
	run(out)
}

// request asks the core for the session's next iteration; done answers it once
// granted. The caller decides.
func (s *Server) request(ss *Session, now time.Duration, done func(BeginReply, error)) error {
	if err := s.sched.Request(now, ss.id); err != nil { // cannot happen when the phases agree; say so rather than hide it
		return errorf(protocol.CodeWrongPhase, "begin %q: %v", ss.id, err)
	}
	ss.gen++ // a pending grace timer is now stale
	ss.phase = pReady
	ss.owes = false
	ss.asked = time.Now()
	ss.requestedAt = now
	ss.pendingBegin = done
	return nil
}

// End reports that the session's iteration ended. The iteration's GPU time is what
// the daemon measured, from its grant to this end on the daemon's clock (under
// emulation, the device model's work): durS, what the client measured, is only a
// hint, logged at debug level, so that a client cannot buy itself GPU time by
// under-reporting it. done is called once, outside the lock, when the end has been
// processed: at once, or, for an emulated session whose iteration the device model
// has not finished yet, when it has. A refused request returns an error, and done
// is never called.
func (s *Server) End(ss *Session, durS, peakMiB float64, done func(error)) error {
	return s.end(ss, durS, peakMiB, &heldEnd{done: done})
}

// EndNext ends the session's iteration and asks for the next one, in one call: the
// lane is not yielded in between, so no grace timer is armed. done is called once
// the next iteration is granted (after the device model finished this one, under
// emulation), or the session ends first.
func (s *Server) EndNext(ss *Session, durS, peakMiB float64, done func(BeginReply, error)) error {
	return s.end(ss, durS, peakMiB, &heldEnd{next: true, begin: done})
}

// EndRelease ends the session's iteration like End and gives its lane back at
// once, with no grace window: the client said it pauses before it asks again.
func (s *Server) EndRelease(ss *Session, durS, peakMiB float64, done func(error)) error {
	return s.end(ss, durS, peakMiB, &heldEnd{done: done, release: true})
}

func (s *Server) end(ss *Session, durS, peakMiB float64, h *heldEnd) error {
	if err := checkEnd(ss.id, durS, peakMiB); err != nil {
		return err
	}
	var dur time.Duration
	var out []func()
	s.mu.Lock()
	if err := s.usable(ss); err != nil {
		s.mu.Unlock()
		return err
	}
	// Catching the emulated device up says whether this iteration's work is done.
	now := s.clock(&out)
	if ss.phase != pRunning {
		s.unlockRun(out)
		return errorf(protocol.CodeWrongPhase, "end %q: no iteration is running (the job is %s): begin an iteration before ending it", ss.id, phaseNames[ss.phase])
	}
	if ss.held != nil {
		s.unlockRun(out)
		return errorf(protocol.CodeBusy, "end %q: an end is already waiting for the emulated device to finish the iteration", ss.id)
	}
	if ss.emulated {
		if !ss.workDone {
			ss.held = h
			ss.owes = false // the daemon owes the client its reply
			s.unlockRun(out)
			return nil
		}
		// The client's end came after the work was done: the iteration ends now.
		s.emu.lagged(now, ss.doneAt)
		dur = ss.work // the GPU time the device model gave it, as in the simulator
	} else {
		if durS != 0 && s.logger.Enabled(context.Background(), slog.LevelDebug) {
			s.logger.Debug("client reported an iteration time (a hint; the daemon's measurement counts)", "job", ss.id,
				"client_s", durS, "measured_s", (now - ss.startedAt).Seconds())
		}
		dur = now - ss.startedAt
	}
	if err := s.endIteration(ss, now, dur, !h.next && !h.release); err != nil {
		s.unlockRun(out)
		return err
	}
	s.released(ss, now, h)
	if h.next {
		if err := s.request(ss, now, h.begin); err != nil {
			s.unlockRun(out)
			return err
		}
	} else {
		s.ackEnd(ss, h, &out)
	}
	s.decide(now, &out)
	s.unlockRun(out)
	return nil
}

// endIteration records the end of the session's running iteration, which had gpu
// of GPU time, at now. With arm, the grace timer starts: the job keeps its lane for
// the grace window unless it asks for another iteration.
func (s *Server) endIteration(ss *Session, now, gpu time.Duration, arm bool) error {
	if err := s.sched.IterationEnd(now, ss.id, gpu); err != nil {
		return errorf(protocol.CodeWrongPhase, "end %q: %v", ss.id, err)
	}
	s.stats.iterations++
	ss.ended++
	s.met.iterations.Inc()
	s.log.Emit(eventlog.IterEndEvent(now, ss.id, ss.lane, gpu))
	if ss.kind == "infer" { // as the simulator does: a request's latency, from its begin to its end
		s.log.Emit(eventlog.ServedEvent(now, ss.id, now-ss.requestedAt))
	}
	ss.phase = pHolding
	ss.owes = true
	ss.since = time.Now()
	ss.touch() // the lease runs from here (an emulated end was held since the client sent it)
	ss.gen++
	gen := ss.gen
	if ss.grace != nil {
		ss.grace.Stop()
	}
	if !arm {
		return nil
	}
	// A new timer each time: a Reset timer whose function already started would
	// not know which iteration end it was armed for.
	ss.grace = time.AfterFunc(s.cfg.Grace, func() { s.graceOver(ss, gen) })
	return nil
}

// released yields at once the lane of a session whose end asked for it
// (EndRelease); under the lock, before the decision that follows the end.
func (s *Server) released(ss *Session, now time.Duration, h *heldEnd) {
	if !h.release || ss.phase != pHolding {
		return
	}
	if err := s.sched.Yield(now, ss.id); err != nil {
		s.logger.Error("core refused a yield", "job", ss.id, "err", err)
		return
	}
	ss.phase = pIdle
}

// graceOver yields the lane of a job that did not ask for its next iteration within
// the grace window.
func (s *Server) graceOver(ss *Session, gen uint64) {
	var out []func()
	s.mu.Lock()
	if ss.phase != pHolding || ss.gen != gen {
		s.mu.Unlock()
		return
	}
	now := s.clock(&out)
	if err := s.sched.Yield(now, ss.id); err != nil {
		s.logger.Error("core refused a yield", "job", ss.id, "err", err)
	} else {
		ss.phase = pIdle
		s.decide(now, &out)
	}
	s.mu.Unlock()
	run(out)
}

// Close ends a session. finished false logs it as lost with the reason given.
func (s *Server) Close(ss *Session, finished bool, reason string) error {
	var out []func()
	s.mu.Lock()
	if err := s.usable(ss); err != nil {
		s.mu.Unlock()
		return err
	}
	s.leave(ss, finished, reason, &out)
	s.mu.Unlock()
	run(out)
	return nil
}

// Heartbeat renews the session's lease.
func (s *Server) Heartbeat(ss *Session) { ss.touch() }

// Lose ends a session that went away (its connection closed, its client gave up).
// It does nothing when the session already ended.
func (s *Server) Lose(ss *Session, reason string) {
	var out []func()
	s.mu.Lock()
	if ss.phase != pGone && !s.keepSessions {
		s.leave(ss, false, reason, &out)
	}
	s.mu.Unlock()
	run(out)
}

// Lookup finds a session by id.
func (s *Server) Lookup(id string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return nil, errorf(protocol.CodeUnknown, "unknown session %q: open a session first (or it was closed or lost)", id)
	}
	if ss.unclaimed {
		return nil, errorf(protocol.CodeUnknown, "session %q was recovered after the daemon restarted: open it with resume to take it back", id)
	}
	return ss, nil
}

func (s *Server) usable(ss *Session) error {
	if ss.phase == pGone {
		return errorf(protocol.CodeLost, "session %q has ended (closed or lost): open a new session", ss.id)
	}
	if s.closing {
		return s.stopping("session %q", ss.id)
	}
	return nil
}

// leave removes ss from the core, logs it and fails whatever it was waiting for
// with code lost.
func (s *Server) leave(ss *Session, finished bool, reason string, out *[]func()) {
	s.leaveWith(ss, finished, protocol.CodeLost, reason, out)
}

// leaveWith is leave, failing what the session waited for with code.
func (s *Server) leaveWith(ss *Session, finished bool, code, reason string, out *[]func()) {
	now := s.clock(out)
	if lane, in := s.depart(ss, now, finished, code, reason, true, out); in {
		s.emitMemory(now, lane)
	}
	s.decide(now, out)
}

// leaveAll removes sessions in one step, as lost for reason: what leaveWith does
// for each, at one instant, but with one memory event per lane they leave, one
// log line and one decision (many sessions leaving one by one, each followed by a
// decision, cost time quadratic in their number: minutes for 100,000).
func (s *Server) leaveAll(gone []*Session, code, reason string, out *[]func()) {
	if len(gone) == 0 {
		return
	}
	slices.SortFunc(gone, func(a, b *Session) int {
		return cmp.Or(cmp.Compare(a.job.Arrival, b.job.Arrival), strings.Compare(a.id, b.id))
	})
	now := s.clock(out)
	s.jr.batch(func() {
		var lanes []int
		for _, ss := range gone {
			if ss.phase == pGone {
				continue
			}
			if lane, in := s.depart(ss, now, false, code, reason, false, out); in {
				lanes = append(lanes, lane)
			}
		}
		slices.Sort(lanes)
		for _, lane := range slices.Compact(lanes) {
			s.emitMemory(now, lane)
		}
	})
	s.logger.Warn("sessions lost", "sessions", len(gone), "reason", reason)
	s.decide(now, out)
}

// depart removes ss from the core and the server at now, logs it and fails what
// it waited for; the caller logs its lane's memory (lane, when it had one: in)
// and decides. logIt logs the departure in the daemon's log.
func (s *Server) depart(ss *Session, now time.Duration, finished bool, code, reason string, logIt bool, out *[]func()) (lane int, in bool) {
	if err := s.sched.Leave(now, ss.id); err != nil {
		s.logger.Error("core refused a leave", "job", ss.id, "err", err)
	}
	lane, wasIn := ss.lane, ss.phase != pWaiting
	if ss.emulated && ss.phase == pRunning {
		s.emu.remove(ss) // its work leaves the device model, which clock brought to now
	}
	ss.phase = pGone
	ss.gen++
	delete(s.sessions, ss.id)
	if c := s.claims[ss.claim]; c != nil && c.session == ss.id {
		c.session = ""
	}
	if ss.grace != nil {
		ss.grace.Stop()
	}
	if finished {
		s.stats.finished++
		s.met.finished.Inc()
		s.log.Emit(eventlog.EndEvent(now, ss.id, true, ""))
		if logIt {
			s.logger.Info("session finished", "job", ss.id)
		}
	} else {
		s.stats.lost++
		s.met.lost.Inc()
		s.log.Emit(eventlog.EndEvent(now, ss.id, false, reason))
		if logIt {
			s.logger.Warn("session lost", append([]any{"job", ss.id, "reason", reason}, ss.peer.logAttrs()...)...)
		}
	}
	gone := errorf(code, "session %q ended: %s", ss.id, reason)
	if s.closing {
		gone = s.stopping("session %q", ss.id)
	}
	if f := ss.pendingOpen; f != nil {
		ss.pendingOpen = nil
		*out = append(*out, func() { f(OpenReply{}, gone) })
	}
	if f := ss.pendingBegin; f != nil {
		ss.pendingBegin = nil
		*out = append(*out, func() { f(BeginReply{}, gone) })
	}
	if h := ss.held; h != nil {
		ss.held = nil
		s.failHeld(h, gone, out)
	}
	if h := ss.unacked; h != nil { // its end never reached the journal: not acknowledged
		ss.unacked = nil
		s.failHeld(h, gone, out)
	}
	for _, r := range ss.unwritten { // nor its grant or admission
		*out = append(*out, func() { r.fail(gone) })
	}
	ss.unwritten = nil
	return lane, wasIn
}

// apply carries out the core's decisions: it logs them and queues the replies they
// complete, to be sent once the lock is released.
func (s *Server) apply(now time.Duration, ds []core.Decision, out *[]func()) {
	if s.closing { // every session is leaving: admit and start nothing more
		return
	}
	for _, d := range ds {
		if d.Action == core.Defrag {
			s.regroup(now, d)
			continue
		}
		ss := s.sessions[d.Job]
		if ss == nil {
			s.logger.Error("core decided for a job the server does not know", "job", d.Job, "action", d.Action)
			continue
		}
		switch d.Action {
		case core.Admit:
			ss.phase, ss.lane, ss.laneMiB, ss.gpus = pIdle, d.Lane, d.LaneSize, slices.Clone(d.GPUs)
			ss.owes = !ss.unclaimed // a recovered session waits for its client within the recover window
			ss.since = time.Now()
			ss.touch()
			reason := ""
			if ss.unclaimed || ss.resumed {
				reason = "recovered"
			}
			s.log.Emit(eventlog.AdmitEvent(now, d, s.cfg.Policy.StartupOnGPU, reason))
			s.emitMemoryOf(now, d.After[0])
			// Logged once the lock is released, like the replies: a slow log never
			// holds the scheduler.
			job, lane, size, wait, gpus := d.Job, d.Lane, d.LaneSize, now-ss.job.Arrival, s.physical(ss.gpus)
			*out = append(*out, func() {
				s.logger.Info("session admitted", "job", job, "lane", lane, "lane_mib", size, "gpus", gpus, "waited", wait)
			})
			rep := s.openReply(ss)
			ss.resumeToken = "" // given once, in this reply; the journal keeps its hash
			if f := ss.pendingOpen; f != nil {
				ss.pendingOpen = nil
				s.ackDecision(ss, heldReply{ok: func() { f(rep, nil) }, fail: func(err error) { f(OpenReply{}, err) }}, out)
			}
		case core.Start:
			ss.phase = pRunning
			ss.owes = true
			ss.touch()
			ss.granted = time.Now()
			ss.startedAt = now
			wait := ss.granted.Sub(ss.asked)
			s.met.grant.Observe(wait.Seconds())
			if d.Previous != "" {
				s.stats.switches++
				s.met.switches.Inc()
			}
			s.log.Emit(eventlog.StartEvent(now, d, 0))
			if s.logger.Enabled(context.Background(), slog.LevelDebug) {
				job, lane, prev := d.Job, d.Lane, d.Previous
				*out = append(*out, func() {
					if prev != "" {
						s.logger.Debug("switch", "lane", lane, "from", prev, "to", job)
					}
					s.logger.Debug("iteration granted", "job", job, "lane", lane, "waited", wait)
				})
			}
			if ss.emulated {
				s.startWork(now, ss)
			}
			rep := BeginReply{Lane: d.Lane, WaitUS: wait.Microseconds(), ReleaseCache: s.sched.WaitingCount() > 0, IdleYielded: ss.idleYielded}
			ss.idleYielded = false
			if f := ss.pendingBegin; f != nil {
				ss.pendingBegin = nil
				s.ackDecision(ss, heldReply{ok: func() { f(rep, nil) }, fail: func(err error) { f(BeginReply{}, err) }}, out)
			}
		}
	}
}

// regroup carries out a split or merge of lanes (pack-defrag): the sessions that
// changed lane take their new one, those of a lane that changed size its size;
// it is logged with the lanes' memory.
func (s *Server) regroup(now time.Duration, d core.Decision) {
	r := d.Regroup
	for i, id := range r.Jobs {
		if ss := s.sessions[id]; ss != nil {
			ss.lane = d.Lane
			if r.Kind == "split" {
				ss.lane = r.Lanes[i]
			}
		}
	}
	for _, ss := range s.sessions {
		if slices.Contains(r.Changed, ss.lane) && ss.phase != pWaiting {
			if info, open := s.sched.Lane(ss.lane); open {
				ss.laneMiB = info.Size
			}
		}
	}
	s.log.Emit(eventlog.DefragEvent(now, d))
	for _, l := range d.After {
		s.emitMemoryOf(now, l)
	}
}

// emitMemory logs lane's memory (zero once it closed). The daemon keeps every job
// of a lane resident (it has no suspend/resume).
func (s *Server) emitMemory(now time.Duration, lane int) {
	info, open := s.sched.Lane(lane)
	info.ID = lane // a closed lane's info is empty
	s.emitMemoryOf(now, core.LaneAfter{LaneInfo: info, Open: open})
}

// emitMemoryOf logs a lane's memory as a decision left it (Decision.After).
func (s *Server) emitMemoryOf(now time.Duration, l core.LaneAfter) {
	var lanes []core.LaneInfo
	if l.Open {
		lanes = []core.LaneInfo{l.LaneInfo}
	}
	s.log.Emit(eventlog.MemoryEvent(now, lanes, l.ID, false))
}

func run(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// reaper loses sessions whose client stayed silent past the lease while it owed the
// daemon a message. It wakes when the earliest lease can next expire, so a session
// is lost within about a millisecond of its lease: whenever a session starts to
// owe, it is touched, so its lease ends no earlier than a lease from then, and the
// reaper never sleeps longer than one.
func (s *Server) reaper() {
	defer close(s.reaperDone)
	t := time.NewTimer(s.cfg.Lease)
	defer t.Stop()
	for {
		select {
		case <-s.stopReaper:
			return
		case <-t.C:
		}
		now := time.Now()
		cut := now.Add(-s.cfg.Lease).UnixNano()
		next := now.Add(s.cfg.Lease).UnixNano()
		var expired []*Session
		s.mu.Lock()
		for _, ss := range s.sessions {
			if !ss.owes {
				continue
			}
			if seen := ss.lastSeen.Load(); seen <= cut {
				expired = append(expired, ss)
			} else {
				next = min(next, seen+s.cfg.Lease.Nanoseconds())
			}
		}
		s.mu.Unlock()
		for _, ss := range expired {
			reason := fmt.Sprintf("lease expired: silent for more than %v", s.cfg.Lease)
			s.Lose(ss, reason)
			if ss.drop != nil {
				ss.drop(protocol.CodeLost, fmt.Sprintf("session %q lost: %s", ss.id, reason))
			}
		}
		// At least a millisecond: a lease renewed at the last instant must not
		// make the reaper spin.
		t.Reset(max(time.Until(time.Unix(0, next)), time.Millisecond))
	}
}

// Shutdown ends every session (each is logged as lost with reason "daemon shut
// down"), answers what they were waiting for with code shutdown, tells every
// fast-path connection, closes the fast-path listeners and stops the reaper. The
// caller shuts its HTTP server down itself.
func (s *Server) Shutdown() { s.stop(false) }

// Restart stops the daemon for a restart (an upgrade, a new configuration) and
// keeps its jobs: no session is logged lost, so the journal ends with them open,
// and every client is told protocol.CodeRestarting and closed. A daemon started
// on the same journal restores them and holds them for its recover window, as
// after a crash, and the clients reconnect and resume: their jobs go on with
// their iterations and attained time. Without a journal there is nothing to
// restart from: Restart is then Shutdown.
func (s *Server) Restart() { s.stop(s.cfg.Log != nil && s.cfg.RecoverWindow > 0) }

// stopping is the error of a request that comes while the daemon stops: code
// restarting when it keeps the sessions for the next daemon (Restart), so that the
// client reconnects and resumes, else shutdown. Called with s.mu held.
func (s *Server) stopping(format string, args ...any) *Error {
	what := fmt.Sprintf(format, args...)
	if s.keepSessions {
		return errorf(protocol.CodeRestarting, "%s: the daemon is restarting: reconnect and resume the session within its recover window", what)
	}
	return errorf(protocol.CodeShutdown, "%s: the daemon is shutting down", what)
}

// stop is Shutdown, or with keep Restart.
func (s *Server) stop(keep bool) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.keepSessions = keep
	var out []func()
	var drops []*Session
	for _, ss := range s.sessions {
		drops = append(drops, ss)
	}
	if !keep {
		s.leaveAll(drops, protocol.CodeLost, "daemon shut down", &out)
	}
	if s.emu != nil {
		s.emu.timer.Stop()
	}
	if s.recoverTimer != nil {
		s.recoverTimer.Stop()
	}
	if s.starveTimer != nil {
		s.starveTimer.Stop()
	}
	if s.jr.timer != nil {
		s.jr.timer.Stop()
	}
	s.mu.Unlock()
	run(out)
	if keep {
		s.closeTransports(protocol.CodeRestarting, "the daemon is restarting: reconnect and resume the session within its recover window")
	} else {
		s.closeTransports(protocol.CodeShutdown, "the daemon is shutting down")
	}
	close(s.stopReaper)
	<-s.reaperDone
	<-s.idlerDone
	if keep {
		s.logger.Info("daemon stopped for a restart: its sessions stay open in the journal", "sessions_kept", len(drops))
		return
	}
	s.logger.Info("daemon stopped", "sessions_ended", len(drops))
}

// gangSize is the event log's "gpus" of a job: absent for one GPU.
func gangSize(n int) int {
	if n > 1 {
		return n
	}
	return 0
}

// lookupModel resolves an open's model in the daemon's catalog: with a batch size,
// the profile of that model at that batch ("resnet50/50/train"), and no other,
// so that a job is never given another batch's memory and time; without, the
// name as given (a model's first training profile, or a profile key).
func (s *Server) lookupModel(req *OpenRequest) (Model, bool) {
	if req.Batch > 0 && !strings.Contains(req.Model, "/") {
		return s.cfg.Models(fmt.Sprintf("%s/%d/%s", req.Model, req.Batch, modelKind(req.Kind)))
	}
	return s.cfg.Models(req.Model)
}

// modelKind is the catalog's kind of an open's kind.
func modelKind(kind string) string {
	if kind == "infer" || kind == "inference" {
		return "infer"
	}
	return "train"
}
