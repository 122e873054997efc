package server

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// The framed fast path of docs/protocol.md: one connection per session, each frame a
// 4-byte big-endian length and a JSON object.

// Frame limits (docs/protocol.md).
const (
	MinFrame = 2
	MaxFrame = 64 << 10
	// ProtocolVersion is the fast path's version, checked at open.
	ProtocolVersion = 1
)

type fastRequest struct {
	Op            string  `json:"op"`
	ID            int64   `json:"id"`
	Version       int     `json:"version"`
	Job           string  `json:"job"`
	Model         string  `json:"model"`
	Kind          string  `json:"kind"`
	PersistentMiB float64 `json:"persistent_mib"`
	EphemeralMiB  float64 `json:"ephemeral_mib"`
	DeclaredS     float64 `json:"declared_s"`
	StartupS      float64 `json:"startup_s"`
	Priority      int     `json:"priority"`
	Iterations    int     `json:"iterations"`
	IterS         float64 `json:"iter_s"`
	Demand        float64 `json:"demand"`
	DurationS     float64 `json:"duration_s"`
	PeakMiB       float64 `json:"peak_mib"`
	Next          bool    `json:"next"`
	Finished      *bool   `json:"finished"`
	Token         string  `json:"token"`
	Resume        bool    `json:"resume"`
}

type fastOpenReply struct {
	ID           int64   `json:"id"`
	OK           bool    `json:"ok"`
	Session      string  `json:"session"`
	Lane         int     `json:"lane"`
	LaneMiB      float64 `json:"lane_mib"`
	StartupOnGPU bool    `json:"startup_on_gpu"`
	LeaseMS      int64   `json:"lease_ms"`
	Policy       string  `json:"policy"`
	Emulated     bool    `json:"emulated,omitempty"`
	Resumed      bool    `json:"resumed,omitempty"`
	RecoverMS    int64   `json:"recover_ms,omitempty"`
}

type fastError struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Code  string `json:"code"`
	Error string `json:"error"`
}

// ServeFast accepts fast-path connections on l until l is closed or the server shuts
// down. It returns nil after Shutdown.
func (s *Server) ServeFast(l net.Listener) error {
	if !s.track(l) {
		l.Close()
		return nil
	}
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("fast path: accept on %s: %w", l.Addr(), err)
		}
		fc := &fastConn{s: s, c: c, r: bufio.NewReaderSize(c, 4096)}
		if fc.unix = isUnix(c); fc.unix { // access.go: the socket's permissions let it in
			fc.peer = peerOf(c)
		}
		if !s.addConn(fc) {
			fc.fail(0, CodeShutdown, "the daemon is shutting down")
			c.Close()
			continue
		}
		go fc.serve()
	}
}

type fastConn struct {
	s           *Server
	c           net.Conn
	r           *bufio.Reader
	wmu         sync.Mutex
	wbuf        []byte
	outstanding atomic.Int64 // id of the request awaiting its reply, 0 when none
	sess        *Session
	closed      atomic.Bool
	unix        bool  // a Unix-socket connection: no token needed
	peer        *Peer // its process, when the kernel says
}

func (fc *fastConn) serve() {
	defer fc.s.connDone(fc)
	var body []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(fc.r, hdr[:]); err != nil {
			fc.gone(readReason(err))
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n < MinFrame || n > MaxFrame {
			fc.fail(0, CodeBadFrame, fmt.Sprintf("frame length %d is outside %d..%d: send a 4-byte big-endian length, then that many bytes of JSON", n, MinFrame, MaxFrame))
			fc.gone("protocol error: bad frame length")
			return
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(fc.r, body); err != nil {
			fc.gone("connection closed mid-frame")
			return
		}
		if fc.sess != nil {
			fc.sess.touch()
		}
		var req fastRequest
		if i := firstNonSpace(body); i < 0 || body[i] != '{' {
			fc.fail(0, CodeBadFrame, "frame body is not a JSON object")
			fc.gone("protocol error: frame body is not a JSON object")
			return
		}
		if err := json.Unmarshal(body, &req); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				fc.fail(req.ID, CodeBadRequest, fmt.Sprintf("field %q: %v", te.Field, err))
				continue
			}
			fc.fail(0, CodeBadFrame, fmt.Sprintf("frame body is not valid JSON: %v", err))
			fc.gone("protocol error: invalid JSON")
			return
		}
		if !fc.handle(&req) {
			return
		}
	}
}

func readReason(err error) string {
	if errors.Is(err, io.EOF) {
		return "connection closed"
	}
	return "connection broken: " + err.Error()
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return i
	}
	return -1
}

// handle serves one request; false ends the connection.
func (fc *fastConn) handle(req *fastRequest) bool {
	s := fc.s
	if req.Op == "heartbeat" {
		return true
	}
	if req.ID < 1 {
		fc.fail(0, CodeBadRequest, fmt.Sprintf("request %q has id %d: give every request an integer id >= 1", req.Op, req.ID))
		return true
	}
	if cur := fc.outstanding.Load(); cur != 0 {
		fc.fail(req.ID, CodeBusy, fmt.Sprintf("request %d is still waiting for its reply: send one request at a time", cur))
		return true
	}
	if req.Op != "open" && fc.sess == nil {
		switch req.Op {
		case "begin", "end", "close":
			fc.fail(req.ID, CodeNotOpen, fmt.Sprintf("%s before open: open the session first", req.Op))
			return true
		}
	}
	id := req.ID
	switch req.Op {
	case "open":
		if fc.sess != nil {
			fc.fail(id, CodeAlreadyOpen, fmt.Sprintf("this connection already carries session %q: open another connection for another job", fc.sess.id))
			return true
		}
		if req.Version != ProtocolVersion {
			fc.fail(id, CodeBadRequest, fmt.Sprintf("protocol version %d is not supported: send \"version\": %d", req.Version, ProtocolVersion))
			return true
		}
		if err := s.fastOpenAllowed(fc.unix, req.Token); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			fc.gone("unauthorized open")
			return false
		}
		fc.outstanding.Store(id)
		ss, err := s.Open(OpenRequest{Job: req.Job, Model: req.Model, PersistentMiB: req.PersistentMiB, EphemeralMiB: req.EphemeralMiB,
			DeclaredS: req.DeclaredS, Priority: req.Priority, Kind: req.Kind, Iterations: req.Iterations, StartupS: req.StartupS,
			IterS: req.IterS, Demand: req.Demand, Peer: fc.peer, Resume: req.Resume},
			"fast", fc.drop, func(r OpenReply, err error) {
				if err != nil {
					fc.fail(id, CodeOf(err), err.Error())
					return
				}
				fc.write(id, func(b []byte) ([]byte, error) {
					return appendJSON(b, fastOpenReply{ID: id, OK: true, Session: r.Session, Lane: r.Lane, LaneMiB: r.LaneMiB,
						StartupOnGPU: r.StartupOnGPU, LeaseMS: r.LeaseMS, Policy: r.Policy, Emulated: r.Emulated,
						Resumed: r.Resumed, RecoverMS: r.RecoverMS})
				})
			})
		if err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			return true
		}
		fc.sess = ss
	case "begin":
		fc.begin(id)
	case "end":
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
		if err := s.End(fc.sess, req.DurationS, req.PeakMiB, func(err error) {
			if err != nil {
				fc.fail(id, CodeOf(err), err.Error())
				return
			}
			fc.ok(id)
		}); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
		}
	case "close":
		finished := req.Finished == nil || *req.Finished
		if err := s.Close(fc.sess, finished, "closed early"); err != nil {
			fc.fail(id, CodeOf(err), err.Error())
			return true
		}
		fc.ok(id)
		fc.closeConn()
		return false
	default:
		fc.fail(id, CodeBadRequest, fmt.Sprintf("unknown op %q: use open, begin, end, close or heartbeat", req.Op))
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
			b = append(b, `{"id":`...)
			b = strconv.AppendInt(b, id, 10)
			b = append(b, `,"ok":true,"lane":`...)
			b = strconv.AppendInt(b, int64(r.Lane), 10)
			b = append(b, `,"wait_us":`...)
			b = strconv.AppendInt(b, r.WaitUS, 10)
			if r.ReleaseCache {
				b = append(b, `,"release_cache":true`...)
			}
			if r.IdleYielded {
				b = append(b, `,"idle_yielded":true`...)
			}
			return append(b, '}'), nil
		})
	}
}

// write sends one frame built by body; it clears the outstanding request first so
// the client's next request, sent as soon as it reads this reply, is not seen as busy.
func (fc *fastConn) write(id int64, body func([]byte) ([]byte, error)) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.outstanding.CompareAndSwap(id, 0)
	b := append(fc.wbuf[:0], 0, 0, 0, 0)
	b, err := body(b)
	if err != nil {
		fc.s.logger.Error("fast path: cannot encode a reply", "err", err)
		return
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	fc.wbuf = b
	if _, err := fc.c.Write(b); err != nil && !fc.closed.Load() {
		fc.s.logger.Debug("fast path: write failed", "err", err)
	}
}

func (fc *fastConn) ok(id int64) {
	fc.write(id, func(b []byte) ([]byte, error) {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, id, 10)
		return append(b, `,"ok":true}`...), nil
	})
}

func (fc *fastConn) fail(id int64, code, msg string) {
	fc.write(id, func(b []byte) ([]byte, error) {
		return appendJSON(b, fastError{ID: id, Code: code, Error: msg})
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

func (fc *fastConn) closeConn() {
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

// Connection and listener tracking, for shutdown.

type tracker struct {
	mu        sync.Mutex
	listeners map[io.Closer]struct{}
	conns     map[*fastConn]struct{}
	wg        sync.WaitGroup
	done      bool
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

func (s *Server) addConn(fc *fastConn) bool {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	if s.tr.done {
		return false
	}
	if s.tr.conns == nil {
		s.tr.conns = map[*fastConn]struct{}{}
	}
	s.tr.conns[fc] = struct{}{}
	s.tr.wg.Add(1)
	return true
}

func (s *Server) connDone(fc *fastConn) {
	s.tr.mu.Lock()
	delete(s.tr.conns, fc)
	s.tr.mu.Unlock()
	s.tr.wg.Done()
}

// closeTransports stops accepting, tells idle connections that the daemon is going
// away and closes them, then waits for their goroutines.
func (s *Server) closeTransports() {
	s.tr.mu.Lock()
	s.tr.done = true
	for l := range s.tr.listeners {
		l.Close()
	}
	conns := make([]*fastConn, 0, len(s.tr.conns))
	for fc := range s.tr.conns {
		conns = append(conns, fc)
	}
	s.tr.mu.Unlock()
	for _, fc := range conns {
		fc.drop(CodeShutdown, "the daemon is shutting down")
	}
	s.tr.wg.Wait()
}
