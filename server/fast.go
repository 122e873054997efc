package server

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/salusgo/salus/protocol"
)

// The framed fast path of docs/protocol.md: one connection per session, each frame a
// 4-byte big-endian length and a JSON object.

// ServeFast accepts fast-path connections on l until l is closed or the server shuts
// down. It returns nil after Shutdown. Temporary accept errors (too many open
// files, say) are retried after a back-off, as net/http does, and logged.
func (s *Server) ServeFast(l net.Listener) error {
	if !s.track(l) {
		l.Close()
		return nil
	}
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return nil
			}
			if s.backoff(l, err, &delay) {
				continue
			}
			return fmt.Errorf("fast path: accept on %s: %w", l.Addr(), err)
		}
		delay = 0
		fc := newFastConn(s, c)
		if fc.unix = isUnix(c); fc.unix { // access.go: the socket's permissions let it in
			fc.peer = peerOf(c)
		}
		fc.acct.user = accountOf(fc.unix, fc.peer) // conns.go: whose slots it takes
		switch r, yield, limit := s.addConn(fc); r {
		case connAdded:
			if yield != nil {
				yield.yieldSlot(s.limitsFor(limit, yield.acct.user))
			}
			go fc.serve()
		case connShutdown:
			code, msg := s.tr.stopWords()
			s.refuse(c, errorFrame(code, msg))
		case connFull, connUserFull:
			s.logLimited(slog.LevelWarn, "conn-limit", "fast path: connection refused: too many connections",
				"max_conns", s.cfg.MaxConns, "max_conns_per_user", s.cfg.MaxConnsPerUser, "user", fc.acct.user, "remote", c.RemoteAddr().String())
			s.refuse(c, errorFrame(protocol.CodeTooManyConns, s.limitsFor(r, fc.acct.user)+": retry later, close connections you do not use, or ask the daemon's operator to raise the limit"))
		}
	}
}

// A fast-path connection has one reader goroutine (serve), which reads frames
// under deadlines and serves them. Its replies are often sent by other goroutines
// (a decision that grants another job's begin, the lease checker, shutdown), and
// none of them may ever wait for this client: a reply is appended to the
// connection's queue and, when nothing is waiting before it, written at once with
// a non-blocking write, which succeeds whenever the socket has room. Otherwise the
// connection's own writer goroutine writes the queue, each write under the write
// timeout. A client whose queue outgrows Config.ReplyQueue, or whose write times
// out, does not read its replies: it is dropped and its session lost.
type fastConn struct {
	s          *Server
	c          net.Conn
	raw        syscall.RawConn // for non-blocking writes; nil: the writer goroutine writes everything
	r          *bufio.Reader
	hsDeadline time.Time // the session must be open by then

	wmu        sync.Mutex
	queue      []byte // replies not yet written: whole frames, in order
	spare      []byte // the writer's other buffer
	writing    bool   // a writer goroutine owns the socket's writes
	closing    bool   // close the connection once the queue is written
	readerDone bool
	// The non-blocking write's argument and results, kept here (under wmu) so that
	// the write allocates nothing.
	rawBuf   []byte
	rawN     int
	rawErr   error
	rawWrite func(fd uintptr) bool

	closed      atomic.Bool
	unix        bool                   // a Unix-socket connection: no token needed
	peer        *Peer                  // its process, when the kernel says
	why         atomic.Pointer[string] // why the daemon dropped the client, when it did
	outstanding atomic.Int64           // id of the request awaiting its reply, 0 when none
	sess        *Session
	acct        connAcct // its slot (conns.go); guarded by s.tr.mu
}

func newFastConn(s *Server, c net.Conn) *fastConn {
	fc := &fastConn{s: s, c: c, hsDeadline: time.Now().Add(s.cfg.HandshakeTimeout)}
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			fc.raw = raw
			fc.rawWrite = fc.writeNow
		}
	}
	return fc
}

func (fc *fastConn) serve() {
	defer fc.readerExit()
	fc.r = bufio.NewReaderSize(fc.c, 1024) // frames are small; big ones bypass the buffer
	var body []byte
	for {
		if !fc.awaitFrame() {
			return
		}
		// Once its first byte came, a frame must arrive whole within the read
		// timeout (and, before the session is open, the handshake's).
		deadline := time.Now().Add(fc.s.cfg.ReadTimeout)
		if fc.sess == nil && fc.hsDeadline.Before(deadline) {
			deadline = fc.hsDeadline
		}
		fc.c.SetReadDeadline(deadline)
		b, err := protocol.ReadFrame(fc.r, body, protocol.MaxFrame)
		if err != nil {
			var le *protocol.LengthError
			var te *protocol.TruncatedError
			switch {
			case errors.As(err, &le):
				fc.fail(0, protocol.CodeBadFrame, le.Error())
				fc.gone("protocol error: bad frame length")
			case errors.As(err, &te):
				fc.midFrame(te.Err, te.Got, te.Want)
			default: // io.EOF before the frame's first byte
				fc.midFrame(err, 0, protocol.HeaderLen)
			}
			return
		}
		body = b
		if fc.sess != nil {
			fc.sess.touch()
		}
		var req protocol.Request
		if !protocol.IsObject(body) {
			fc.fail(0, protocol.CodeBadFrame, "frame body is not a JSON object")
			fc.gone("protocol error: frame body is not a JSON object")
			return
		}
		if err := json.Unmarshal(body, &req); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				fc.fail(req.ID, protocol.CodeBadRequest, fmt.Sprintf("field %q: %v", te.Field, err))
				continue
			}
			fc.fail(0, protocol.CodeBadFrame, fmt.Sprintf("frame body is not valid JSON: %v", err))
			fc.gone("protocol error: invalid JSON")
			return
		}
		// encoding/json replaces invalid UTF-8 and matches keys whatever their
		// case; the protocol does neither.
		if err := protocol.CheckText(body); err != nil {
			fc.fail(req.ID, protocol.CodeBadRequest, err.Error())
			continue
		}
		if id, err := protocol.CheckKeys(body); err != nil {
			fc.fail(id, protocol.CodeBadRequest, err.Error())
			continue
		}
		if err := req.CheckStrings(); err != nil {
			fc.fail(req.ID, protocol.CodeBadRequest, err.Error())
			continue
		}
		if !fc.handle(&req) {
			return
		}
	}
}

// awaitFrame waits for the first byte of the next frame. Before the session is
// open it waits until the handshake deadline; after, as long as the session lives
// (the lease governs a silent client), waking now and then so that no read is
// without a deadline. false: the connection is done.
func (fc *fastConn) awaitFrame() bool {
	for fc.r.Buffered() == 0 {
		deadline := fc.hsDeadline
		if fc.sess != nil {
			deadline = time.Now().Add(max(fc.s.cfg.Lease, time.Minute))
		}
		fc.c.SetReadDeadline(deadline)
		_, err := fc.r.Peek(1)
		if err == nil {
			break
		}
		if isTimeout(err) && fc.why.Load() == nil {
			if fc.sess == nil {
				fc.timedOut(fmt.Sprintf("no session opened within %v of connecting (salus serve --handshake-timeout): send open first", fc.s.cfg.HandshakeTimeout),
					"handshake timeout")
				return false
			}
			if fc.s.alive(fc.sess) {
				continue
			}
		}
		fc.gone(fc.reason(err))
		return false
	}
	return true
}

// midFrame ends a connection whose frame stopped after got of its want bytes.
func (fc *fastConn) midFrame(err error, got, want int) {
	if w := fc.why.Load(); w != nil {
		fc.gone(*w)
		return
	}
	if !isTimeout(err) {
		fc.gone("connection closed mid-frame")
		return
	}
	if fc.sess == nil && !time.Now().Before(fc.hsDeadline) {
		fc.timedOut(fmt.Sprintf("no session opened within %v of connecting (salus serve --handshake-timeout): send open first, as one whole frame", fc.s.cfg.HandshakeTimeout),
			"handshake timeout")
		return
	}
	what := fmt.Sprintf("%d of the frame's %d bytes", got, want)
	if got < 4 {
		what = fmt.Sprintf("%d of the frame's 4 length bytes", got)
	}
	fc.timedOut(fmt.Sprintf("frame incomplete: %s came within %v of its first byte (salus serve --read-timeout): write each frame whole", what, fc.s.cfg.ReadTimeout),
		fmt.Sprintf("frame incomplete %v after its first byte", fc.s.cfg.ReadTimeout))
}

// timedOut tells the client why, then ends the connection (its session lost).
func (fc *fastConn) timedOut(msg, reason string) {
	fc.s.logLimited(slog.LevelInfo, "read-timeout", "fast path: connection closed: "+reason, "remote", fc.c.RemoteAddr().String())
	fc.fail(0, protocol.CodeTimeout, msg)
	fc.gone(reason)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// reason says why a read failed: the daemon dropped the client, or the client
// went away.
func (fc *fastConn) reason(err error) string {
	if w := fc.why.Load(); w != nil {
		return *w
	}
	return readReason(err)
}

// writeReason says why a write failed: a client that went away reads as it does
// on the read side.
func writeReason(err error) string {
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return "connection closed"
	}
	return "connection broken: " + err.Error()
}

func readReason(err error) string {
	if errors.Is(err, io.EOF) {
		return "connection closed"
	}
	return "connection broken: " + err.Error()
}

// handle serves one request; false ends the connection.
func (fc *fastConn) handle(req *protocol.Request) bool {
	s := fc.s
	if req.Op == protocol.OpHeartbeat {
		return true
	}
	if req.ID < 1 {
		fc.fail(0, protocol.CodeBadRequest, fmt.Sprintf("request %q has id %d: give every request an integer id >= 1", req.Op, req.ID))
		return true
	}
	if cur := fc.outstanding.Load(); cur != 0 {
		fc.fail(req.ID, protocol.CodeBusy, fmt.Sprintf("request %d is still waiting for its reply: send one request at a time", cur))
		return true
	}
	if req.Op != protocol.OpOpen && fc.sess == nil {
		switch req.Op {
		case protocol.OpBegin, protocol.OpEnd, protocol.OpClose, protocol.OpMeasured:
			fc.fail(req.ID, protocol.CodeNotOpen, fmt.Sprintf("%s before open: open the session first", req.Op))
			return true
		}
	}
	id := req.ID
	switch req.Op {
	case protocol.OpOpen:
		if fc.sess != nil {
			fc.fail(id, protocol.CodeAlreadyOpen, fmt.Sprintf("this connection already carries session %q: open another connection for another job", fc.sess.id))
			return true
		}
		if req.Version != protocol.Version {
			fc.fail(id, protocol.CodeBadRequest, fmt.Sprintf("protocol version %d is not supported: send \"version\": %d", req.Version, protocol.Version))
			return true
		}
		if err := s.fastOpenAllowed(fc.unix, req.Token); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			fc.gone("unauthorized open")
			return false
		}
		if err := s.opening(fc, req.Resume, req.Token); err != nil { // conns.go: its user's slots
			fc.fail(id, CodeOf(err), err.Error())
			fc.gone("too many connections")
			return false
		}
		fc.outstanding.Store(id)
		ss, err := s.Open(OpenRequest{Job: req.Job, Model: req.Model, PersistentMiB: req.PersistentMiB, EphemeralMiB: req.EphemeralMiB,
			DeclaredS: req.DeclaredS, Priority: req.Priority, Kind: req.Kind, Iterations: req.Iterations, StartupS: req.StartupS,
			IterS: req.IterS, Demand: req.Demand, Peer: fc.peer, Resume: req.Resume, Batch: req.BatchSize, GPUs: req.GPUs, Claim: req.Claim,
			ResumeToken: req.ResumeToken, ClaimSecret: req.ClaimSecret, Share: req.Share},
			"fast", fc.drop, func(r OpenReply, err error) {
				if err != nil {
					fc.fail(id, CodeOf(err), err.Error())
					return
				}
				fc.write(id, func(b []byte) ([]byte, error) {
					return appendJSON(b, protocol.OpenReply{ID: id, OK: true, Session: r.Session, Lane: r.Lane, LaneMiB: r.LaneMiB,
						StartupOnGPU: r.StartupOnGPU, LeaseMS: r.LeaseMS, Policy: r.Policy, Emulated: r.Emulated,
						Resumed: r.Resumed, RecoverMS: r.RecoverMS, AcceptsMeasured: true, GPUs: r.GPUs, ResumeToken: r.ResumeToken})
				})
			})
		if err != nil {
			s.unopened(fc)
			fc.fail(id, CodeOf(err), err.Error())
			// Without the session's resume token or the claim's secret, the caller
			// is not who it says: as for a missing token, the connection ends.
			if code := CodeOf(err); code == protocol.CodeResumeDenied || code == protocol.CodeClaimDenied {
				fc.gone("open refused: " + code)
				return false
			}
			return true
		}
		fc.sess = ss
	case protocol.OpBegin:
		fc.begin(id)
	case protocol.OpEnd:
		if req.Next { // end and begin in one round trip
			fc.outstanding.Store(id)
			if err := s.EndNext(fc.sess, req.DurationS, req.PeakMiB, fc.granted(id)); err != nil {
				fc.fail(id, CodeOf(err), err.Error())
			}
			return true
		}
		// Under emulation the reply waits for the device model: mark the request
		// outstanding first, as for begin.
		fc.outstanding.Store(id)
		end := s.End
		if req.Release {
			end = s.EndRelease
		}
		if err := end(fc.sess, req.DurationS, req.PeakMiB, func(err error) {
			if err != nil {
				fc.fail(id, CodeOf(err), err.Error())
				return
			}
			fc.ok(id)
		}); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
		}
	case protocol.OpClose:
		finished := req.Finished == nil || *req.Finished
		if err := s.Close(fc.sess, finished, "closed early"); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			return true
		}
		fc.ok(id)
		fc.closeConn()
		return false
	case protocol.OpMeasured:
		if err := s.Measured(fc.sess, Measurement{IterS: req.IterS, PeakMiB: req.PeakMiB, PersistentMiB: req.PersistentMiB,
			Iterations: req.Iterations}); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			return true
		}
		fc.ok(id)
	default:
		fc.fail(id, protocol.CodeBadRequest, fmt.Sprintf("unknown op %q: use open, begin, end, measured, close or heartbeat", req.Op))
	}
	return true
}

// begin asks for the next iteration; the reply goes out when it is granted.
func (fc *fastConn) begin(id int64) {
	fc.outstanding.Store(id)
	if err := fc.s.Begin(fc.sess, fc.granted(id)); err != nil {
		fc.fail(id, CodeOf(err), err.Error())
	}
}

// granted returns the callback that answers request id once its iteration may run.
func (fc *fastConn) granted(id int64) func(BeginReply, error) {
	return func(r BeginReply, err error) {
		if err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			return
		}
		fc.write(id, func(b []byte) ([]byte, error) {
			return protocol.AppendBeginReply(b, protocol.BeginReply{ID: id, OK: true, Lane: r.Lane, WaitUS: r.WaitUS,
				ReleaseCache: r.ReleaseCache, IdleYielded: r.IdleYielded}), nil
		})
	}
}

// write queues one frame built by body and sends it if the socket has room; it
// never waits for the client. It clears the outstanding request first so the
// client's next request, sent as soon as it reads this reply, is not seen as busy.
func (fc *fastConn) write(id int64, body func([]byte) ([]byte, error)) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.outstanding.CompareAndSwap(id, 0)
	if fc.closing || fc.closed.Load() {
		return
	}
	waiting := len(fc.queue)
	if waiting > fc.s.cfg.ReplyQueue {
		fc.abort(fmt.Sprintf("reply queue full: %d bytes of replies not taken by the client, over the %d allowed: the client does not read its replies", waiting, fc.s.cfg.ReplyQueue), true)
		return
	}
	b, err := body(append(fc.queue, 0, 0, 0, 0))
	if err != nil {
		fc.queue = b[:waiting]
		fc.s.logger.Error("fast path: cannot encode a reply", "err", err)
		return
	}
	binary.BigEndian.PutUint32(b[waiting:], uint32(len(b)-waiting-4))
	fc.queue = b
	if fc.writing {
		return // the writer sends it after what waits before it
	}
	if fc.raw != nil {
		n, err := fc.tryWrite(fc.queue)
		if err != nil {
			fc.queue = fc.queue[:0]
			fc.abort(writeReason(err), false)
			return
		}
		fc.queue = fc.queue[:copy(fc.queue, fc.queue[n:])]
		if len(fc.queue) == 0 {
			return
		}
	}
	fc.writing = true
	go fc.writer()
}

// tryWrite writes what the socket takes now, without waiting; called under wmu.
func (fc *fastConn) tryWrite(b []byte) (int, error) {
	fc.rawBuf, fc.rawN, fc.rawErr = b, 0, nil
	err := fc.raw.Write(fc.rawWrite)
	n, werr := max(fc.rawN, 0), fc.rawErr
	fc.rawBuf = nil
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil // a deadline of the writer's: let the writer write
	case err != nil:
		return 0, err
	case errors.Is(werr, syscall.EAGAIN):
		return 0, nil
	case werr != nil:
		return n, werr
	}
	return n, nil
}

// writeNow is the non-blocking write: returning true, it never waits for room.
func (fc *fastConn) writeNow(fd uintptr) bool {
	for {
		fc.rawN, fc.rawErr = syscall.Write(int(fd), fc.rawBuf)
		if fc.rawErr != syscall.EINTR {
			return true
		}
	}
}

// writer writes the queue until it is empty, each write under the write timeout;
// then it closes the connection if asked to, and exits.
func (fc *fastConn) writer() {
	var done []byte
	for {
		fc.wmu.Lock()
		if cap(done) <= 64<<10 { // a burst's big buffer goes back to the heap
			fc.spare = done[:0]
		}
		if len(fc.queue) == 0 || fc.closed.Load() {
			fc.writing = false
			closeNow := fc.closing || fc.closed.Load()
			last := fc.readerDone
			fc.queue = nil
			fc.wmu.Unlock()
			if closeNow {
				fc.closeSocket()
			}
			if last {
				fc.s.connDone(fc)
			}
			return
		}
		buf := fc.queue
		fc.queue = fc.spare
		fc.wmu.Unlock()
		fc.c.SetWriteDeadline(time.Now().Add(fc.s.cfg.WriteTimeout))
		_, err := fc.c.Write(buf)
		// Non-blocking writes must not meet this deadline once it has passed.
		fc.c.SetWriteDeadline(time.Time{})
		if err != nil {
			if isTimeout(err) {
				fc.abort(fmt.Sprintf("reply not written within %v (salus serve --write-timeout): the client does not read its replies", fc.s.cfg.WriteTimeout), true)
			} else {
				fc.abort(writeReason(err), false)
			}
		}
		done = buf
	}
}

func (fc *fastConn) ok(id int64) {
	fc.write(id, func(b []byte) ([]byte, error) {
		return protocol.AppendOK(b, id), nil
	})
}

func (fc *fastConn) fail(id int64, code, msg string) {
	fc.write(id, func(b []byte) ([]byte, error) {
		return appendJSON(b, protocol.ErrorReply{ID: id, Code: code, Error: msg})
	})
}

func appendJSON(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	return append(b, m...), err
}

// drop is the session's transport hook: tell the client why and close.
func (fc *fastConn) drop(code, msg string) {
	fc.fail(0, code, msg)
	fc.closeConn()
}

// closeConn closes the connection once the replies queued are written (within the
// write timeout).
func (fc *fastConn) closeConn() {
	fc.wmu.Lock()
	fc.closing = true
	now := !fc.writing
	fc.wmu.Unlock()
	if now {
		fc.closeSocket()
	}
}

// abort closes the connection at once, unwritten replies and all: why says why,
// and becomes the reason its session is lost. logIt logs the drop (rate-limited).
// It may be called under wmu.
func (fc *fastConn) abort(why string, logIt bool) {
	if fc.why.CompareAndSwap(nil, &why) && logIt {
		fc.s.logLimited(slog.LevelWarn, "drop", "fast path: client dropped", "reason", why, "remote", fc.c.RemoteAddr().String())
	}
	fc.closeSocket()
}

func (fc *fastConn) closeSocket() {
	if fc.closed.CompareAndSwap(false, true) {
		fc.c.Close()
	}
}

// gone ends the connection; an open session on it is lost.
func (fc *fastConn) gone(reason string) {
	if fc.sess != nil {
		fc.s.Lose(fc.sess, reason)
	}
	fc.closeConn()
}

// readerExit counts the connection done when neither of its goroutines runs.
func (fc *fastConn) readerExit() {
	fc.wmu.Lock()
	fc.readerDone = true
	last := !fc.writing
	fc.wmu.Unlock()
	if last {
		fc.s.connDone(fc)
	}
}

// Connection and listener tracking, for the connection limit and shutdown.

type tracker struct {
	mu        sync.Mutex
	listeners map[io.Closer]struct{}
	conns     map[*fastConn]struct{}
	wg        sync.WaitGroup
	done      bool
	// stopCode and stopMsg are what the daemon says to a connection it refuses
	// once it stops: shutdown, or restarting (Restart).
	stopCode, stopMsg string
	stop              chan struct{} // closed at shutdown: ends accept back-offs
	refusing          chan struct{} // a semaphore: connections being refused
	rl                rateLimiter
	acct              accounts // the connections by user and state (conns.go)
}

// stopWords are the code and sentence of a connection refused while the daemon
// stops.
func (t *tracker) stopWords() (string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopCode == "" {
		return protocol.CodeShutdown, "the daemon is shutting down"
	}
	return t.stopCode, t.stopMsg
}

// stopped returns the channel closed at shutdown.
func (s *Server) stopped() <-chan struct{} {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	if s.tr.stop == nil {
		s.tr.stop = make(chan struct{})
	}
	return s.tr.stop
}

func (s *Server) isClosing() bool {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	return s.tr.done
}

func (s *Server) track(l io.Closer) bool {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	if s.tr.done {
		return false
	}
	if s.tr.listeners == nil {
		s.tr.listeners = map[io.Closer]struct{}{}
	}
	s.tr.listeners[l] = struct{}{}
	return true
}

// alive reports whether ss has not ended.
func (s *Server) alive(ss *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ss.phase != pGone
}

// shutdownFlush is how long shutdown lets the connections' last frames drain
// before it closes the connections of clients that do not read.
const shutdownFlush = 100 * time.Millisecond

// closeTransports stops accepting, tells every connection that the daemon is going
// away and closes it, then waits for their goroutines. A client that does not read
// holds its connection for shutdownFlush at most.
func (s *Server) closeTransports(code, msg string) {
	s.tr.mu.Lock()
	s.tr.done = true
	s.tr.stopCode, s.tr.stopMsg = code, msg
	if s.tr.stop == nil {
		s.tr.stop = make(chan struct{})
	}
	close(s.tr.stop)
	for l := range s.tr.listeners {
		l.Close()
	}
	conns := make([]*fastConn, 0, len(s.tr.conns))
	for fc := range s.tr.conns {
		conns = append(conns, fc)
	}
	s.tr.mu.Unlock()
	for _, fc := range conns {
		fc.drop(code, msg)
	}
	waited := make(chan struct{})
	go func() { s.tr.wg.Wait(); close(waited) }()
	select {
	case <-waited:
		return
	case <-time.After(shutdownFlush):
	}
	for _, fc := range conns {
		fc.abort("daemon shut down", false)
	}
	<-waited
}
