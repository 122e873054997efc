// Package client is the Go client of the salus daemon's fast path
// (docs/protocol.md): one connection per job, one request at a time, heartbeats
// sent in the background so long iterations keep the session's lease.
//
// It holds no scheduling logic: it only asks the daemon and waits for its answers.
package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
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
}

// Error is an error reply from the daemon.
type Error struct {
	Code string `json:"code"`
	Msg  string `json:"error"`
}

func (e *Error) Error() string { return fmt.Sprintf("salus daemon: %s (%s)", e.Msg, e.Code) }

// Ended reports whether err means the session is over (lost, or the daemon is
// shutting down, or the connection broke or was closed: refused beyond the
// daemon's connection limit, or timed out).
func Ended(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Code {
		case "lost", "shutdown", "bad_frame", "timeout", "too_many_connections":
			return true
		}
		return false
	}
	return err != nil
}

// Dial connects to a daemon's fast path. addr is "unix:/path/to.sock", a path
// containing a slash (a Unix socket) or "host:port" (TCP).
func Dial(ctx context.Context, addr string) (net.Conn, error) {
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
	c      net.Conn
	r      *bufio.Reader
	wmu    sync.Mutex
	wbuf   []byte
	rbuf   []byte
	nextID int64
	stop   chan struct{}
	once   sync.Once
}

// Open dials addr and opens a session; it returns once the job is admitted.
// Cancelling ctx while waiting gives up (the daemon then drops the job).
func Open(ctx context.Context, addr string, o Options) (*Session, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, r: bufio.NewReaderSize(c, 4096), stop: make(chan struct{})}
	req := struct {
		Op      string `json:"op"`
		ID      int64  `json:"id"`
		Version int    `json:"version"`
		Options
	}{"open", 1, 1, o}
	body, err := json.Marshal(req)
	if err != nil {
		c.Close()
		return nil, err
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
		return nil, err
	}
	if err := json.Unmarshal(rep, &s.Admission); err != nil {
		c.Close()
		return nil, fmt.Errorf("open %q: bad reply from the daemon: %v", o.Job, err)
	}
	lease := time.Duration(s.LeaseMS) * time.Millisecond
	if lease <= 0 {
		lease = 10 * time.Second
	}
	go s.heartbeats(lease / 3)
	return s, nil
}

func (s *Session) heartbeats(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	hb := []byte(`{"op":"heartbeat"}`)
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.send(hb) != nil {
				return
			}
		}
	}
}

// send writes one frame.
func (s *Session) send(body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := binary.BigEndian.AppendUint32(s.wbuf[:0], uint32(len(body)))
	b = append(b, body...)
	s.wbuf = b
	_, err := s.c.Write(b)
	return err
}

// read reads the reply to request id; an error reply becomes an *Error.
func (s *Session) read(id int64) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return nil, fmt.Errorf("salus daemon connection: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("salus daemon sent a frame of %d bytes: is this the fast-path address?", n)
	}
	if cap(s.rbuf) < int(n) {
		s.rbuf = make([]byte, n)
	}
	b := s.rbuf[:n]
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, fmt.Errorf("salus daemon connection: %w", err)
	}
	// The common replies are tiny and fixed: {"id":N,"ok":true...}.
	prefix := `{"id":` + strconv.FormatInt(id, 10) + `,"ok":true`
	if len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix {
		return b, nil
	}
	var h struct {
		ID int64 `json:"id"`
		OK bool  `json:"ok"`
		Error
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("salus daemon sent an unreadable reply: %v", err)
	}
	if !h.OK {
		e := h.Error
		return nil, &e
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
	s.nextID++
	id := s.nextID
	_, err := s.call(append(strconv.AppendInt([]byte(`{"op":"begin","id":`), id, 10), '}'), id)
	return err
}

// End reports the end of the running iteration, which took d (0: let the daemon
// measure it) and peaked at peakMiB of GPU memory (0: unknown).
func (s *Session) End(d time.Duration, peakMiB float64) error {
	return s.end(d, peakMiB, false)
}

// Next ends the running iteration like End and asks for the next one like Begin,
// in one round trip; it returns when the next iteration may run.
func (s *Session) Next(d time.Duration, peakMiB float64) error {
	return s.end(d, peakMiB, true)
}

func (s *Session) end(d time.Duration, peakMiB float64, next bool) error {
	s.nextID++
	id := s.nextID
	b := strconv.AppendInt([]byte(`{"op":"end","id":`), id, 10)
	if next {
		b = append(b, `,"next":true`...)
	}
	if d > 0 {
		b = append(b, `,"duration_s":`...)
		b = strconv.AppendFloat(b, d.Seconds(), 'g', -1, 64)
	}
	if peakMiB > 0 {
		b = append(b, `,"peak_mib":`...)
		b = strconv.AppendFloat(b, peakMiB, 'g', -1, 64)
	}
	b = append(b, '}')
	_, err := s.call(b, id)
	return err
}

// Close ends the session; finished false tells the daemon the job did not complete
// its work (it is logged as lost). The connection is closed in any case.
func (s *Session) Close(finished bool) error {
	s.nextID++
	id := s.nextID
	b := strconv.AppendInt([]byte(`{"op":"close","id":`), id, 10)
	b = append(b, `,"finished":`...)
	b = strconv.AppendBool(b, finished)
	b = append(b, '}')
	_, err := s.call(b, id)
	s.Abort()
	return err
}

// Abort drops the connection without a close: the daemon counts the session lost.
func (s *Session) Abort() {
	s.once.Do(func() {
		close(s.stop)
		s.c.Close()
	})
}
