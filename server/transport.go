package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/salusgo/salus/protocol"
)

// Bounded and deadlined I/O, for both transports: no client, however slow,
// silent or greedy, may hold the daemon's resources or delay another client.

// Default limits (Config).
const (
	DefaultMaxConns         = 4096
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultReadTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultReplyQueue       = 64 << 10
	DefaultMaxBodyBytes     = 1 << 20
)

func (c *Config) setLimits() {
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ReplyQueue <= 0 {
		c.ReplyQueue = DefaultReplyQueue
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	c.setConnLimits()
}

// backoff handles an accept error: a temporary one (the process is out of file
// descriptors or memory, the connection was reset before it was accepted) is
// logged, rate-limited, and waited out, 5 ms doubling to 1 s as net/http's
// Server.Serve does; true means accept again. Any other error ends the listener.
func (s *Server) backoff(l net.Listener, err error, delay *time.Duration) bool {
	if !temporary(err) {
		return false
	}
	if *delay == 0 {
		*delay = 5 * time.Millisecond
	} else {
		*delay = min(2**delay, time.Second)
	}
	s.logLimited(slog.LevelWarn, "accept", "accept failed, retrying", "listener", l.Addr().String(), "err", err, "retry_in", *delay)
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stopped():
	}
	return true
}

func temporary(err error) bool {
	if isTimeout(err) {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// refuseLinger bounds how long a refused connection is kept to deliver its
// refusal.
const refuseLinger = 200 * time.Millisecond

// maxLingering bounds the refused connections kept at once to deliver their
// refusal (each a goroutine and a descriptor for refuseLinger at most).
const maxLingering = 64

// refuse sends msg on a connection the daemon will not serve, and closes it. It
// waits for the client's end (within refuseLinger) on a goroutine of its own,
// because closing a socket with unread input resets it, and the reset can
// destroy the refusal before the client reads it. Those goroutines are bounded:
// beyond them a connection is refused at once (refuseNow), which still sends the
// refusal and reads what the client sent so far.
func (s *Server) refuse(c net.Conn, msg []byte) {
	s.tr.mu.Lock()
	if s.tr.refusing == nil {
		s.tr.refusing = make(chan struct{}, maxLingering)
	}
	sem := s.tr.refusing
	s.tr.mu.Unlock()
	select {
	case sem <- struct{}{}:
	default:
		refuseNow(c, msg)
		return
	}
	go func() {
		defer func() { <-sem }()
		c.SetDeadline(time.Now().Add(refuseLinger))
		c.Write(msg)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 1<<20))
		c.Close()
	}()
}

// refuseNowWrite bounds refuseNow's write. A new connection's socket buffer has
// room for a refusal, so the write does not wait; the bound is for the
// impossible case.
const refuseNowWrite = 10 * time.Millisecond

// refuseNow refuses c without waiting for the client: it writes msg, reads what
// the client has sent so far (closing a socket with unread input resets the
// connection, which can destroy the refusal before the client reads it), and
// closes, sending the end of the stream after the refusal.
func refuseNow(c net.Conn, msg []byte) {
	c.SetWriteDeadline(time.Now().Add(refuseNowWrite))
	c.Write(msg)
	drainNow(c)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.Close()
}

// drainNow reads and discards what c has received, up to 1 MiB, without
// waiting for more.
func drainNow(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	var buf [4096]byte
	raw.Read(func(fd uintptr) bool {
		for range 256 {
			n, err := syscall.Read(int(fd), buf[:]) // the socket is non-blocking: EAGAIN once it is empty
			if err == syscall.EINTR {
				continue
			}
			if n <= 0 || err != nil {
				break
			}
		}
		return true
	})
}

// errorFrame is an unsolicited error frame (id 0).
func errorFrame(code, msg string) []byte {
	b, _ := json.Marshal(protocol.ErrorReply{Code: code, Error: msg})
	return protocol.AppendFrame(nil, b)
}

// rateLimiter keeps the log readable when something happens to many connections
// at once (accept errors, refusals, timeouts, dropped clients): each kind is
// logged at most once a second, with the count of those left out.
type rateLimiter struct {
	mu      sync.Mutex
	last    map[string]time.Time
	skipped map[string]int
}

func (s *Server) logLimited(level slog.Level, key, msg string, args ...any) {
	if !s.logger.Enabled(context.Background(), level) {
		return
	}
	r := &s.tr.rl
	r.mu.Lock()
	if r.last == nil {
		r.last, r.skipped = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if t, ok := r.last[key]; ok && now.Sub(t) < time.Second {
		r.skipped[key]++
		r.mu.Unlock()
		return
	}
	n := r.skipped[key]
	r.skipped[key], r.last[key] = 0, now
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "similar_left_out", n)
	}
	s.logger.Log(context.Background(), level, msg, args...)
}

// logWriter turns net/http's error log into rate-limited slog warnings.
type logWriter struct{ s *Server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logLimited(slog.LevelWarn, "http", "HTTP API: "+strings.TrimSpace(string(p)))
	return len(p), nil
}

// checkStrings refuses strings that are not valid UTF-8, whatever the transport.
func checkStrings(req OpenRequest) error {
	for _, f := range []struct{ name, v string }{{"job", req.Job}, {"model", req.Model}, {"kind", req.Kind}, {"claim", req.Claim}} {
		if !utf8.ValidString(f.v) {
			return errorf(protocol.CodeBadRequest, "open: field %s %q is not valid UTF-8: send strings as UTF-8", f.name, bytes.ToValidUTF8([]byte(f.v), []byte("\uFFFD")))
		}
	}
	return nil
}
