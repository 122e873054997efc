// Package client is the Go client of the salus daemon's fast path
// (docs/protocol.md): one connection per job, one request at a time, heartbeats
// sent in the background so long iterations keep the session's lease.
//
// When the connection drops without a word from the daemon (no shutdown or lost
// code: it crashed, or was killed), the client reconnects with backoff for the
// daemon's recover window and resumes its session on the restarted daemon (see
// Options.Reconnect); it can be told to carry on alone if the daemon stays away
// (Options.ContinueAlone).
//
// It holds no scheduling logic: it only asks the daemon and waits for its answers.
package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/salusgo/salus/protocol"
)

// Options describe the job at open.
type Options struct {
	Job           string  `json:"job"`
	Model         string  `json:"model,omitempty"`
	PersistentMiB float64 `json:"persistent_mib,omitempty"`
	EphemeralMiB  float64 `json:"ephemeral_mib,omitempty"`
	DeclaredS     float64 `json:"declared_s,omitempty"`
	Priority      int     `json:"priority,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	Iterations    int     `json:"iterations,omitempty"`
	StartupS      float64 `json:"startup_s,omitempty"`
	// IterS is one iteration's standalone time, seconds, and Demand the share of
	// the GPU it keeps busy alone (0 to 1). A daemon that emulates the GPU (salus
	// serve --emulate) needs both, or a catalog Model to take them from; it takes
	// IterS as already on its device. Other daemons ignore them.
	IterS  float64 `json:"iter_s,omitempty"`
	Demand float64 `json:"demand,omitempty"`
	// Resume takes back this job's session that a restarted daemon recovered
	// from its event log (same arrival, same attained GPU time) instead of
	// opening a new one, presenting ResumeToken. The client sets it itself when
	// it reconnects, with the token its first open reply gave.
	Resume bool `json:"resume,omitempty"`
	// ResumeToken is, with Resume, the session's resume token: the
	// Admission.ResumeToken of its first open (which a job that restarts itself
	// kept). The daemon refuses a resume without it (protocol.CodeResumeDenied).
	// Without Resume it is the token to give the new session; empty, the client
	// makes a random one.
	ResumeToken string `json:"-"`
	// BatchSize is the job's batch size (0: not given): the daemon logs it, so
	// that salus profile can tell a model's batch sizes apart.
	BatchSize int `json:"batch_size,omitempty"`
	// GPUs is how many GPUs the job needs at once: a gang job gets one session
	// on that many GPUs of the daemon's node. 0 or 1 is one; more than the
	// daemon has is refused.
	GPUs int `json:"gpus,omitempty"`
	// Claim is the Kubernetes claim (its UID) the job runs under: what the DRA
	// driver's CDI edits put in SALUS_CLAIM. The daemon then places the job on
	// the claim's GPU, within the claim's memory.
	Claim string `json:"claim,omitempty"`
	// ClaimSecret is the claim's secret, which the daemon requires with Claim
	// (protocol.CodeClaimDenied otherwise): what the DRA driver's CDI edits put
	// in SALUS_CLAIM_SECRET. Empty with a Claim: read from $SALUS_CLAIM_SECRET.
	ClaimSecret string `json:"-"`
	// Share is the job's scheduling weight under the wfair and floor policies:
	// its share of the GPU's time beside the others' (relative: 1 and 3 get
	// time 1:3), 0.001 to 1000; 0 is 1. Not its compute demand (Demand). Under
	// a Claim the claim's share binds, whatever is sent here.
	Share float64 `json:"share,omitempty"`

	// Reconnect is how long the client tries to reconnect when the connection
	// drops without a word from the daemon: it dials again with backoff (50 ms,
	// doubling up to 2 s) and re-opens the session with Resume, then carries on
	// (Begin and Close are sent again; an End the daemon did not answer counts
	// as done, the iteration having run; Next asks for the next iteration).
	// 0 takes the daemon's recover window from its open reply (RecoverMS; a
	// daemon that has none is not reconnected to, and a connection that drops
	// before the open reply is an error); negative never reconnects. A positive
	// value also reconnects when the connection drops while the open waits.
	Reconnect time.Duration `json:"-"`
	// ContinueAlone, when the daemon does not come back within that time,
	// carries on without it: Begin, Next and End return nil at once (iterations
	// run ungated) and Alone reports true. Otherwise they return the error.
	ContinueAlone bool `json:"-"`
	// Token is the daemon's token, which an open over TCP must present (over a
	// Unix socket none is needed). Empty: read from TokenFile, else from
	// $SALUS_TOKEN, else from the file named by $SALUS_TOKEN_FILE.
	Token     string `json:"token,omitempty"`
	TokenFile string `json:"-"`
}

// Environment variables the clients read the daemon's token from, and a
// Kubernetes claim's secret (the DRA driver sets it beside SALUS_CLAIM).
const (
	EnvToken       = "SALUS_TOKEN"
	EnvTokenFile   = "SALUS_TOKEN_FILE"
	EnvClaimSecret = "SALUS_CLAIM_SECRET"
)

// ResolveToken returns the token to present: token itself, else the contents of
// file, else $SALUS_TOKEN, else the contents of the file $SALUS_TOKEN_FILE names;
// "" when none is given. A named file that cannot be read is an error.
func ResolveToken(token, file string) (string, error) {
	if token != "" {
		return token, nil
	}
	from := "token file"
	if file == "" {
		if t := os.Getenv(EnvToken); t != "" {
			return strings.TrimSpace(t), nil
		}
		file, from = os.Getenv(EnvTokenFile), "$"+EnvTokenFile
	}
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read the salus daemon's token (%s): %w", from, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newResumeToken returns 256 random bits, hex.
func newResumeToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// Admission is the daemon's answer to open.
type Admission struct {
	Session      string  `json:"session"`
	Lane         int     `json:"lane"`
	LaneMiB      float64 `json:"lane_mib"`
	StartupOnGPU bool    `json:"startup_on_gpu"`
	LeaseMS      int64   `json:"lease_ms"`
	Policy       string  `json:"policy"`
	// Emulated says the daemon emulates the GPU: do not spend an iteration's time,
	// end it as soon as it begins; End and Next return when the emulated device
	// has done the iteration's work.
	Emulated bool `json:"emulated"`
	// Resumed says the open took back a session recovered after a restart.
	Resumed bool `json:"resumed"`
	// RecoverMS is the daemon's recover window, milliseconds: after a restart it
	// holds sessions this long for their clients to resume. 0: it cannot.
	RecoverMS int64 `json:"recover_ms"`
	// AcceptsMeasured says the daemon takes Measured (an older one does not).
	AcceptsMeasured bool `json:"accepts_measured"`
	// GPUs are the physical indices (as CUDA numbers them) of the GPUs the job
	// was given: one, or every GPU of a gang. Run the job there, for instance
	// with CUDA_VISIBLE_DEVICES set to them before CUDA starts (Device says
	// what). Empty from a daemon that does not say (before multi-GPU support).
	GPUs []int `json:"gpus,omitempty"`
	// ResumeToken is what a resume of this session after a daemon restart must
	// present (Options.ResumeToken): the Session keeps it and sends it when it
	// reconnects; a job that restarts itself and resumes its session must keep
	// it too. Keep it secret: it gives the session to whoever holds it. Empty
	// from a daemon before resume tokens.
	ResumeToken string `json:"-"`
}

// VisibleDevices is the value of CUDA_VISIBLE_DEVICES that makes the GPUs the
// job was given its devices ("1", or "0,2" for a gang); "" when the daemon did
// not say.
func (a Admission) VisibleDevices() string {
	parts := make([]string, len(a.GPUs))
	for i, g := range a.GPUs {
		parts[i] = strconv.Itoa(g)
	}
	return strings.Join(parts, ",")
}

// Error is an error reply from the daemon. Code is one of package protocol's
// codes (protocol.CodeLost, say).
type Error struct {
	Code string `json:"code"`
	Msg  string `json:"error"`
}

func (e *Error) Error() string { return fmt.Sprintf("salus daemon: %s (%s)", e.Msg, e.Code) }

// Ended reports whether err means the session is over (lost, evicted, refused by
// a draining daemon or for a missing token, or the daemon is shutting down, or
// the connection broke or was closed: refused beyond the daemon's connection
// limit, or timed out).
func Ended(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return protocol.Ends(e.Code)
	}
	return err != nil
}

// DefaultAddr is the address that names the default socket (as "" does):
// protocol.DefaultSocket, the user's own daemon, or else protocol.SystemSocket,
// a daemon run by root for the node, whichever has a socket.
const DefaultAddr = "auto"

// DefaultSocket is the socket DefaultAddr names now: the user's own default
// when a socket is there, else the system's when one is there, else the user's.
func DefaultSocket() string {
	own := defaultSockets[0]()
	for _, p := range []string{own, defaultSockets[1]()} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return p
		}
	}
	return own
}

// defaultSockets are the user's default socket and the system's (a test's hook).
var defaultSockets = [2]func() string{protocol.DefaultSocket, func() string { return protocol.SystemSocket }}

// Dial connects to a daemon's fast path. addr is "unix:/path/to.sock", a path
// containing a slash (a Unix socket), "host:port" (TCP), or "" or DefaultAddr
// (the default socket, DefaultSocket). A default socket must be served by the
// user's own uid or root (SO_PEERCRED, on Linux): one served by another user
// was taken by them, and is closed before anything is sent.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	if addr == "" || addr == DefaultAddr {
		p := DefaultSocket()
		c, err := Dial(ctx, "unix:"+p)
		if err != nil {
			return nil, err
		}
		if uid, ok := peerUID(c); ok && uid != 0 && int(uid) != os.Getuid() {
			c.Close()
			return nil, fmt.Errorf("the salus socket %s is served by uid %d, neither yours (%d) nor root: another user may have taken its name; nothing was sent to it (give the daemon's address, or stop that process)", p, uid, os.Getuid())
		}
		return c, nil
	}
	network, a := "tcp", addr
	switch {
	case strings.HasPrefix(addr, "unix:"):
		network, a = "unix", strings.TrimPrefix(addr, "unix:")
	case strings.HasPrefix(addr, "tcp:"):
		a = strings.TrimPrefix(addr, "tcp:")
	case strings.Contains(addr, "/"):
		network = "unix"
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, a)
	if err != nil {
		return nil, fmt.Errorf("connect to the salus daemon at %s: %w (is `salus serve` running there?)", addr, err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, nil
}

// Session is an open session. Its methods must be called from one goroutine at a
// time (the protocol allows one request at a time); heartbeats run on their own.
type Session struct {
	Admission
	addr   string
	opts   Options
	c      net.Conn
	r      *bufio.Reader
	wmu    sync.Mutex // guards c and wbuf: heartbeats write from their goroutine
	wbuf   []byte
	rbuf   []byte
	nextID int64
	stop   chan struct{}
	once   sync.Once
	alone  bool
	// gone is set once reconnecting failed: later requests fail at once with it
	// rather than wait for the daemon again.
	gone error
	// daemonUID is the uid that served the session's first connection over a
	// Unix socket (known: hasUID): a reconnection must find the same, or it
	// is to a process that took the socket's name meanwhile.
	daemonUID uint32
	hasUID    bool
}

// Open dials addr and opens a session; it returns once the job is admitted.
// Cancelling ctx while waiting gives up (the daemon then drops the job).
func Open(ctx context.Context, addr string, o Options) (*Session, error) {
	tok, err := ResolveToken(o.Token, o.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", o.Job, err)
	}
	o.Token = tok
	if o.Claim != "" && o.ClaimSecret == "" {
		o.ClaimSecret = strings.TrimSpace(os.Getenv(EnvClaimSecret))
	}
	s := &Session{addr: addr, opts: o, stop: make(chan struct{})}
	// The session's resume token: chosen here and sent with the first open, so
	// that the session can be resumed even if the daemon dies before answering.
	s.ResumeToken = o.ResumeToken
	if !o.Resume && s.ResumeToken == "" {
		s.ResumeToken = newResumeToken()
	}
	err = s.open(ctx, o.Resume)
	if err != nil && o.Reconnect > 0 && reconnectable(err) && ctx.Err() == nil {
		err = s.reconnect(ctx, o.Reconnect)
	}
	if err != nil {
		return nil, err
	}
	lease := time.Duration(s.LeaseMS) * time.Millisecond
	if lease <= 0 {
		lease = 10 * time.Second
	}
	go s.heartbeats(lease / 3)
	return s, nil
}

// open dials the daemon and sends the open request (with resume when asked),
// waiting for its reply.
func (s *Session) open(ctx context.Context, resume bool) error {
	o := s.opts
	c, err := Dial(ctx, s.addr)
	if err != nil {
		return err
	}
	if uid, ok := peerUID(c); ok {
		if s.hasUID && uid != s.daemonUID {
			c.Close()
			// Reconnectable: the daemon itself may yet come back there.
			return fmt.Errorf("the salus socket at %s is served by uid %d, not uid %d that served this session: another process took its name; nothing was sent to it", s.addr, uid, s.daemonUID)
		}
		s.daemonUID, s.hasUID = uid, true
	}
	s.wmu.Lock()
	if s.c != nil {
		s.c.Close()
	}
	s.c = c
	s.wmu.Unlock()
	s.r = bufio.NewReaderSize(c, 4096)
	o.Resume = resume
	req := protocol.Request{Op: protocol.OpOpen, ID: 1, Version: protocol.Version,
		Job: o.Job, Model: o.Model, Kind: o.Kind, PersistentMiB: o.PersistentMiB, EphemeralMiB: o.EphemeralMiB,
		DeclaredS: o.DeclaredS, StartupS: o.StartupS, Priority: o.Priority, Iterations: o.Iterations,
		IterS: o.IterS, Demand: o.Demand, Token: o.Token, Resume: o.Resume, BatchSize: o.BatchSize, GPUs: o.GPUs, Claim: o.Claim,
		Share: o.Share}
	req.ResumeToken = s.ResumeToken
	if o.Claim != "" {
		req.ClaimSecret = o.ClaimSecret
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	s.nextID = 1
	cancel := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })
	err = s.send(body)
	var rep []byte
	if err == nil {
		rep, err = s.read(1)
	}
	if !cancel() && ctx.Err() != nil {
		err = fmt.Errorf("open %q: %w", o.Job, ctx.Err())
	}
	if err != nil {
		c.Close()
		return err
	}
	var a protocol.OpenReply
	if err := json.Unmarshal(rep, &a); err != nil {
		c.Close()
		return fmt.Errorf("open %q: bad reply from the daemon: %v", o.Job, err)
	}
	token := s.ResumeToken // a resume's reply has none: the session keeps its first
	if a.ResumeToken != "" {
		token = a.ResumeToken
	}
	s.Admission = Admission{Session: a.Session, Lane: a.Lane, LaneMiB: a.LaneMiB, StartupOnGPU: a.StartupOnGPU,
		LeaseMS: a.LeaseMS, Policy: a.Policy, Emulated: a.Emulated, Resumed: a.Resumed, RecoverMS: a.RecoverMS,
		AcceptsMeasured: a.AcceptsMeasured, GPUs: a.GPUs, ResumeToken: token}
	return nil
}

// reconnectable reports whether err is a dropped connection, with no word from
// the daemon (an error reply, shutdown or lost among them, is a word).
func reconnectable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		// A daemon that restarts keeps the session for its successor: as after a
		// crash, reconnect and resume.
		return e.Code == protocol.CodeRestarting
	}
	return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// reconnect dials the daemon again with backoff for up to window and resumes the
// session. It returns the first error reply (there was nothing to resume, say),
// or the last connection error once the window has passed.
func (s *Session) reconnect(ctx context.Context, window time.Duration) error {
	deadline := time.Now().Add(window)
	wait := 50 * time.Millisecond
	var err error
	for {
		err = s.open(ctx, true)
		if err == nil || !reconnectable(err) || ctx.Err() != nil {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("salus daemon at %s did not come back within %v: %w", s.addr, window, err)
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, 2*time.Second)
	}
}

// recover handles a request that failed with err. When the connection dropped
// without a word and the session may reconnect, it reconnects and resumes the
// session: nil, for the caller to carry on with the resumed session. When the
// daemon stays away and ContinueAlone is set, the session goes on alone: nil too,
// with Alone true. Otherwise it returns err.
func (s *Session) recover(err error) error {
	window := s.opts.Reconnect
	if window == 0 {
		window = time.Duration(s.RecoverMS) * time.Millisecond
	}
	if !reconnectable(err) || window <= 0 {
		return err
	}
	if s.gone != nil {
		return s.gone
	}
	rerr := s.reconnect(context.Background(), window)
	if rerr == nil {
		return nil
	}
	if s.opts.ContinueAlone && reconnectable(rerr) {
		s.alone = true
		s.Abort()
		return nil
	}
	if !reconnectable(rerr) { // the daemon came back and answered: its answer is the error
		s.gone = fmt.Errorf("%v; reconnected, and %w", err, rerr)
	} else {
		s.gone = fmt.Errorf("%w (reconnecting: %v)", err, rerr)
	}
	return s.gone
}

// Alone reports whether the session carries on without the daemon, which went
// away and did not come back (Options.ContinueAlone).
func (s *Session) Alone() bool { return s.alone }

func (s *Session) heartbeats(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	hb := []byte(`{"op":"` + protocol.OpHeartbeat + `"}`)
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.send(hb) // a broken connection is noticed, and replaced, by the next request
		}
	}
}

// send writes one frame.
func (s *Session) send(body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := protocol.AppendFrame(s.wbuf[:0], body)
	s.wbuf = b
	_, err := s.c.Write(b)
	return err
}

// maxReply bounds the daemon's frames: its replies echo what the client sent (a
// job's name, say), so they may be longer than a request's protocol.MaxFrame.
const maxReply = 1 << 20

// read reads the reply to request id; an error reply becomes an *Error.
func (s *Session) read(id int64) ([]byte, error) {
	b, err := protocol.ReadFrame(s.r, s.rbuf, maxReply)
	if err != nil {
		var le *protocol.LengthError
		var te *protocol.TruncatedError
		switch {
		case errors.As(err, &le):
			return nil, fmt.Errorf("salus daemon sent a frame of %d bytes: is this the fast-path address?", le.Length)
		case errors.As(err, &te):
			err = te.Err
		}
		return nil, fmt.Errorf("salus daemon connection: %w", err)
	}
	s.rbuf = b
	// The common replies are tiny and fixed: {"id":N,"ok":true...}.
	prefix := `{"id":` + strconv.FormatInt(id, 10) + `,"ok":true`
	if len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix {
		return b, nil
	}
	var h protocol.ErrorReply
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("salus daemon sent an unreadable reply: %v", err)
	}
	if !h.OK {
		return nil, &Error{Code: h.Code, Msg: h.Error}
	}
	if h.ID != id {
		return nil, fmt.Errorf("salus daemon answered request %d while %d was waiting", h.ID, id)
	}
	return b, nil
}

func (s *Session) call(body []byte, id int64) ([]byte, error) {
	if err := s.send(body); err != nil {
		// The daemon may have said why it closed the connection (shutdown, lost).
		s.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, rerr := s.read(0); rerr != nil {
			var e *Error
			if errors.As(rerr, &e) {
				return nil, e
			}
		}
		return nil, fmt.Errorf("salus daemon connection: %w", err)
	}
	return s.read(id)
}

// Begin asks for the next iteration and returns when the policy lets the job run.
func (s *Session) Begin() error {
	for !s.alone {
		s.nextID++
		id := s.nextID
		_, err := s.call(beginRequest(id), id)
		if err == nil {
			return nil
		}
		if err := s.recover(err); err != nil {
			return err
		}
	}
	return nil
}

// End reports the end of the running iteration. d is what the client measured of
// it (0: unknown): a hint, which the daemon logs at debug level; the daemon
// counts the time it measured itself. peakMiB is the iteration's peak of GPU
// memory (0: unknown), informational.
func (s *Session) End(d time.Duration, peakMiB float64) error {
	return s.end(d, peakMiB, false)
}

// EndRelease ends the running iteration like End and gives the lane back at once
// rather than keeping it for the daemon's grace window: for a job that pauses
// before its next Begin (an inference job between requests).
func (s *Session) EndRelease(d time.Duration, peakMiB float64) error {
	if s.alone {
		return nil
	}
	s.nextID++
	id := s.nextID
	_, err := s.call(endRequest(id, d, peakMiB, false, true), id)
	if err == nil {
		return nil
	}
	return s.recover(err)
}

// Next ends the running iteration like End and asks for the next one like Begin,
// in one round trip; it returns when the next iteration may run.
func (s *Session) Next(d time.Duration, peakMiB float64) error {
	return s.end(d, peakMiB, true)
}

func (s *Session) end(d time.Duration, peakMiB float64, next bool) error {
	if s.alone {
		return nil
	}
	s.nextID++
	id := s.nextID
	_, err := s.call(endRequest(id, d, peakMiB, next, false), id)
	if err == nil {
		return nil
	}
	if err := s.recover(err); err != nil {
		return err
	}
	// The resumed session is between iterations: this one ran; ask for the next.
	if next {
		return s.Begin()
	}
	return nil
}

// Measured reports what the job measured over its first iterations: the median
// iteration time iterS (seconds), the peak memory inside an iteration and the
// memory held between iterations (MiB; 0: not measured), over iterations
// iterations. The daemon logs them as the client's figures (salus profile reads
// them back) and schedules by its own clock all the same. A daemon that does not
// take them (AcceptsMeasured false) is not asked: Measured returns nil.
func (s *Session) Measured(iterS, peakMiB, persistentMiB float64, iterations int) error {
	if s.alone || !s.AcceptsMeasured {
		return nil
	}
	s.nextID++
	id := s.nextID
	body, err := json.Marshal(protocol.Request{Op: protocol.OpMeasured, ID: id, IterS: iterS, PeakMiB: peakMiB,
		PersistentMiB: persistentMiB, Iterations: iterations})
	if err != nil {
		return err
	}
	_, err = s.call(body, id)
	return err
}

// Close ends the session; finished false tells the daemon the job did not complete
// its work (it is logged as lost). The connection is closed in any case.
func (s *Session) Close(finished bool) error {
	var err error
	for !s.alone {
		s.nextID++
		id := s.nextID
		if _, err = s.call(closeRequest(id, finished), id); err == nil {
			break
		}
		if err = s.recover(err); err != nil {
			break
		}
	}
	s.Abort()
	return err
}

// Abort drops the connection without a close: the daemon counts the session lost.
func (s *Session) Abort() {
	s.once.Do(func() {
		close(s.stop)
		s.wmu.Lock()
		s.c.Close()
		s.wmu.Unlock()
	})
}

// The requests sent once per iteration, written by hand: their fields are
// protocol.Request's.

func beginRequest(id int64) []byte {
	return append(strconv.AppendInt([]byte(`{"op":"`+protocol.OpBegin+`","id":`), id, 10), '}')
}

func endRequest(id int64, d time.Duration, peakMiB float64, next, release bool) []byte {
	b := strconv.AppendInt([]byte(`{"op":"`+protocol.OpEnd+`","id":`), id, 10)
	if next {
		b = append(b, `,"next":true`...)
	}
	if release {
		b = append(b, `,"release":true`...)
	}
	if d > 0 {
		b = append(b, `,"duration_s":`...)
		b = strconv.AppendFloat(b, d.Seconds(), 'g', -1, 64)
	}
	if peakMiB > 0 {
		b = append(b, `,"peak_mib":`...)
		b = strconv.AppendFloat(b, peakMiB, 'g', -1, 64)
	}
	return append(b, '}')
}

func closeRequest(id int64, finished bool) []byte {
	b := strconv.AppendInt([]byte(`{"op":"`+protocol.OpClose+`","id":`), id, 10)
	b = append(b, `,"finished":`...)
	b = strconv.AppendBool(b, finished)
	return append(b, '}')
}
